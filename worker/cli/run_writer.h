/* run_writer.h - the output side of `imgbatch run`: a thread that writes
 * finished Results while the driving thread goes on driving the executor,
 * and encoder threads for the results whose output runs a codec (PNG,
 * JPEG, WebP, TIFF). Results are written in the order they were put (the
 * stream's completion order), each as one writev of its frame around the
 * image bytes where they lie; a result (and with it a lent image's arena
 * charge) is freed only after its bytes were written. */
#ifndef IB_RUN_WRITER_H
#define IB_RUN_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "imgbatch.h"

typedef struct ib_run_writer ib_run_writer;

/* Starts the thread writing to `fd` and `encoders` encoder threads (0:
 * every message is built on the caller's thread). At most max_items
 * results, and past the first at most max_bytes of pixels, wait in it.
 * NULL when out of memory or a thread could not be started. */
ib_run_writer *ib_run_writer_start(int fd, size_t max_items, size_t max_bytes, int encoders);

/* Takes *res (zeroed; the writer frees it once written). Its Result message
 * is built on the caller's thread, or on an encoder thread when it runs a
 * codec. Blocks while the writer is full. False once a write has failed:
 * the result is dropped, as every later one. */
bool ib_run_writer_put(ib_run_writer *w, ib_result *res);

/* Results taken and not yet written. */
size_t ib_run_writer_pending(ib_run_writer *w);

/* Blocks until every result taken was written (or dropped after a
 * failure). */
void ib_run_writer_drain(ib_run_writer *w);

/* Seconds the writer thread spent writing, freeing written results (a lent
 * image goes back to its arena) and waiting for the next ready result. */
typedef struct ib_run_writer_prof {
  double write_s, free_s, idle_s;
} ib_run_writer_prof;

/* Writes what it holds (drops it after a failure), stops the thread and
 * frees the writer. False when any write failed; `why` then says how.
 * `prof` (may be NULL) gets the writer thread's times. */
bool ib_run_writer_finish(ib_run_writer *w, char *why, size_t why_len, ib_run_writer_prof *prof);

#endif
