/* frame.h - varint-length-delimited message framing (protobuf's
 * writeDelimitedTo), used by `imgbatch run` streams. */
#ifndef IB_FRAME_H
#define IB_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { IB_FRAME_OK, IB_FRAME_EOF, IB_FRAME_TRUNCATED, IB_FRAME_TOO_LARGE } ib_frame_status;

/* Reads one frame's length prefix: EOF at a clean end of stream, TRUNCATED
 * when the stream ends inside it, TOO_LARGE for a prefix over 64 bits or a
 * length over max_len (nothing of the body is read). */
ib_frame_status ib_frame_read_len(FILE *f, size_t max_len, size_t *len);
/* Reads exactly `len` body bytes into dst (the caller's memory, e.g. an
 * executor buffer); TRUNCATED when the stream ends first. */
ib_frame_status ib_frame_read_body(FILE *f, uint8_t *dst, size_t len);
/* Reads and drops `len` body bytes (a frame with nowhere to go);
 * TRUNCATED when the stream ends first. */
ib_frame_status ib_frame_skip_body(FILE *f, size_t len);
/* Both: one frame into *buf (grown as needed, capacity *cap). */
ib_frame_status ib_frame_read(FILE *f, size_t max_len, uint8_t **buf, size_t *cap, size_t *len);
bool ib_frame_write(FILE *f, const uint8_t *msg, size_t len);
/* Writes v as a protobuf varint into out (at most 10 bytes); its length. */
size_t ib_frame_varint(uint8_t *out, uint64_t v);

#endif
