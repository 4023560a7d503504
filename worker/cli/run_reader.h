/* run_reader.h - the input side of `imgbatch run`: a thread that reads
 * varint-delimited Job frames, each straight into an executor buffer
 * (pinned on CUDA), ahead of the driving thread, which parses them. It
 * never makes the driver block on input: while the input has nothing (a
 * pipe left open), the stream still writes every Result as its job
 * completes. Frames are read ahead into a queue of up to
 * IB_RUN_READ_AHEAD_ITEMS frames and, past the first, `ahead_bytes` of
 * them; besides the queue the reader holds the frame it is reading and,
 * within the same budget, one spare buffer for the next (run_spare.h). */
#ifndef IB_RUN_READER_H
#define IB_RUN_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "imgbatch.h"

#define IB_RUN_READ_AHEAD_ITEMS 16u

typedef struct ib_run_reader ib_run_reader;

/* Seconds the reader thread spent reading frame bodies, getting their
 * buffers and waiting for room in the queue; frames and bytes read. */
typedef struct ib_run_reader_prof {
  double read_s, alloc_s, full_s;
  uint64_t frames, bytes;
} ib_run_reader_prof;

/* Starts the thread reading `in` into buffers of `ex` (which must outlive
 * the reader). `profile`: time the thread. NULL when a thread could not
 * be started or out of memory. */
ib_run_reader *ib_run_reader_start(ib_executor *ex, FILE *in, size_t ahead_bytes, bool profile);

/* The next frame read, in input order, without blocking. IB_OK: *buf (an
 * executor buffer, now the caller's) of *len bytes. IB_AGAIN: none read
 * yet. IB_END: the input ended. Anything else: the frame's error (*err),
 * e.g. a framing error, after which the input ends, or a frame without a
 * buffer (read past). */
ib_status ib_run_reader_take(ib_run_reader *r, uint8_t **buf, size_t *len, ib_error *err);

/* Blocks until a frame (or the end) can be taken. */
void ib_run_reader_wait(ib_run_reader *r);

/* True once a framing error ended the input. */
bool ib_run_reader_failed(ib_run_reader *r);

/* Tells the reader to read no further and, when the input is a regular
 * file (whose reads always return), waits for its thread to return. True
 * when it has: then ib_run_reader_free may be called. False: the thread
 * may sit in a read that never returns (a pipe left open) and the reader
 * must be left alone (the process is about to exit). */
bool ib_run_reader_stop(ib_run_reader *r, bool regular);

/* Joins the thread, gives back the buffers still queued and frees the
 * reader (before the executor is destroyed). `prof` (may be NULL) gets
 * the thread's times. */
void ib_run_reader_free(ib_run_reader *r, ib_run_reader_prof *prof);

#endif
