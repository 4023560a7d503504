/* frame.h - varint-length-delimited message framing (protobuf's
 * writeDelimitedTo), used by `imgbatch run` streams. */
#ifndef IB_FRAME_H
#define IB_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { IB_FRAME_OK, IB_FRAME_EOF, IB_FRAME_TRUNCATED, IB_FRAME_TOO_LARGE } ib_frame_status;

/* Reads one frame into *buf (grown as needed, capacity *cap). */
ib_frame_status ib_frame_read(FILE *f, size_t max_len, uint8_t **buf, size_t *cap, size_t *len);
bool ib_frame_write(FILE *f, const uint8_t *msg, size_t len);

#endif
