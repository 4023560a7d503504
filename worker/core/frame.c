/* Varint-length-delimited framing for the run command's streams. */
#include <stdlib.h>

#include "core/frame.h"

ib_frame_status ib_frame_read(FILE *f, size_t max_len, uint8_t **buf, size_t *cap, size_t *len) {
  uint64_t n = 0;
  int shift = 0, c;
  for (;;) {
    c = fgetc(f);
    if (c == EOF) return shift == 0 ? IB_FRAME_EOF : IB_FRAME_TRUNCATED;
    if (shift > 63) return IB_FRAME_TOO_LARGE;
    n |= (uint64_t)(c & 0x7f) << shift;
    shift += 7;
    if (!(c & 0x80)) break;
  }
  if (n > max_len) return IB_FRAME_TOO_LARGE;
  if (n > *cap || !*buf) {
    uint8_t *p = realloc(*buf, n ? n : 1);
    if (!p) return IB_FRAME_TOO_LARGE;
    *buf = p;
    *cap = n;
  }
  if (n && fread(*buf, 1, n, f) != n) return IB_FRAME_TRUNCATED;
  *len = n;
  return IB_FRAME_OK;
}

bool ib_frame_write(FILE *f, const uint8_t *msg, size_t len) {
  uint8_t hdr[10];
  size_t k = 0;
  uint64_t n = len;
  do {
    hdr[k] = (uint8_t)(n & 0x7f);
    n >>= 7;
    if (n) hdr[k] |= 0x80;
    k++;
  } while (n);
  return fwrite(hdr, 1, k, f) == k && fwrite(msg, 1, len, f) == len;
}
