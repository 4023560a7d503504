/* run_frame.h - one Result as a varint-delimited frame in three pieces for
 * writev: the packed bytes before the image data, the image data where it
 * lies (a lent executor image or an encoded buffer: never copied), and the
 * packed bytes after it. The bytes are those of ib_result_msg_pack framed
 * by ib_frame_write. */
#ifndef IB_RUN_FRAME_H
#define IB_RUN_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "result/result_msg.h"

typedef struct ib_run_frame {
  uint8_t *packed;     /* owned: head then tail */
  struct iovec iov[3]; /* head, image data (borrowed from the message), tail */
  int iovcnt;
} ib_run_frame;

/* False when out of memory. The frame borrows the message's image data
 * until it is written. */
bool ib_run_frame_pack(ib_run_frame *f, const ib_result_msg *rm);
void ib_run_frame_clear(ib_run_frame *f);

#endif
