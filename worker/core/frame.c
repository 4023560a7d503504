/* Varint-length-delimited framing for the run command's streams. */
#include "core/frame.h"

#include <stdlib.h>

ib_frame_status ib_frame_read_len(FILE *f, size_t max_len, size_t *len) {
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
  *len = (size_t)n;
  return IB_FRAME_OK;
}

ib_frame_status ib_frame_read_body(FILE *f, uint8_t *dst, size_t len) {
  return len == 0 || fread(dst, 1, len, f) == len ? IB_FRAME_OK : IB_FRAME_TRUNCATED;
}

ib_frame_status ib_frame_skip_body(FILE *f, size_t len) {
  uint8_t chunk[4096];
  while (len > 0) {
    size_t k = len < sizeof chunk ? len : sizeof chunk;
    if (fread(chunk, 1, k, f) != k) return IB_FRAME_TRUNCATED;
    len -= k;
  }
  return IB_FRAME_OK;
}

ib_frame_status ib_frame_read(FILE *f, size_t max_len, uint8_t **buf, size_t *cap, size_t *len) {
  size_t n = 0;
  ib_frame_status fs = ib_frame_read_len(f, max_len, &n);
  if (fs != IB_FRAME_OK) return fs;
  if (n > *cap || !*buf) {
    uint8_t *p = realloc(*buf, n ? n : 1);
    if (!p) return IB_FRAME_TOO_LARGE;
    *buf = p;
    *cap = n;
  }
  fs = ib_frame_read_body(f, *buf, n);
  if (fs == IB_FRAME_OK) *len = n;
  return fs;
}

size_t ib_frame_varint(uint8_t *out, uint64_t v) {
  size_t k = 0;
  do {
    out[k] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) out[k] |= 0x80;
    k++;
  } while (v);
  return k;
}

bool ib_frame_write(FILE *f, const uint8_t *msg, size_t len) {
  uint8_t hdr[10];
  size_t k = ib_frame_varint(hdr, len);
  return fwrite(hdr, 1, k, f) == k && fwrite(msg, 1, len, f) == len;
}
