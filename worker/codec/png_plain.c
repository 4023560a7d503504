/* png_plain.c - the plain PNG through libdeflate (see png_plain.h). */
#include "codec/png_plain.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "codec/png_paeth.h"
#include "codec/thread_buf.h"
#include "imgbatch.h"

/* The most filtered-row bytes inflated at once: a 4096^2 RGBA image's. The
 * inflated rows are scratch outside the host credits (as libpng's row
 * buffers are), so a larger image goes to libpng, which streams its rows. */
#define PLAIN_ROWS_MAX ((size_t)4096 * (4096 * 4 + 1))

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool letters(const uint8_t *t) {
  for (int i = 0; i < 4; i++)
    if (!((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z'))) return false;
  return true;
}

/* The IDAT data of a plain file: its first chunk's offset and the run's
 * chunk count and data bytes; false when the file is not plain up to its
 * last IDAT. IHDR is checked against the shape. */
typedef struct idat_run {
  size_t first, chunks, bytes;
} idat_run;

static bool walk(const uint8_t *p, size_t len, const ib_shape *shape, idat_run *run) {
  int color; /* the IHDR colour type of the shape's mode */
  switch (shape->mode) {
    case IB_MODE_L: color = 0; break;
    case IB_MODE_LA: color = 4; break;
    case IB_MODE_RGB: color = 2; break;
    case IB_MODE_RGBA: color = 6; break;
    default: return false;
  }
  *run = (idat_run){0};
  bool ihdr = false;
  for (size_t i = 8; i + 12 <= len;) {
    const uint32_t n = be32(p + i);
    const uint8_t *t = p + i + 4, *d = p + i + 8;
    if (n > 0x7fffffffu || n > len - i - 12 || !letters(t)) return false;
    const bool is_idat = memcmp(t, "IDAT", 4) == 0;
    if (n > IB_PNG_CHUNK_MAX && !is_idat) return false;
    if (libdeflate_crc32(0, t, (size_t)n + 4) != be32(d + n)) return false;
    if (run->chunks && !is_idat) return true; /* past the run: libpng never reads it */
    if (!ihdr) {
      if (memcmp(t, "IHDR", 4) != 0 || n != 13) return false;
      /* width, height, depth 8, colour type, compression 0, filter 0,
       * no interlace */
      if (be32(d) != shape->width || be32(d + 4) != shape->height || d[8] != 8 || d[9] != color ||
          d[10] || d[11] || d[12])
        return false;
      ihdr = true;
    } else if (is_idat) {
      if (!run->chunks) run->first = i;
      run->chunks++;
      run->bytes += n;
    } else if (!(t[0] & 0x20) || memcmp(t, "tRNS", 4) == 0) {
      return false; /* a critical chunk (PLTE too), or what changes the mode */
    }
    i += 12 + (size_t)n;
  }
  return run->chunks > 0; /* else no IDAT, or the file ended inside the run */
}

/* One row: f (filter type, then the filtered bytes) over prev (the row
 * above, unfiltered; zeros for the first) into row. bpp is a constant at
 * each call site, so the compiler unrolls the bands. */
static inline void unfilter_row(uint8_t *row, const uint8_t *f, const uint8_t *prev, size_t n,
                                size_t bpp) {
  const uint8_t type = f[0];
  f++;
  switch (type) {
    case 0: memcpy(row, f, n); break;
    case 1:
      for (size_t i = 0; i < bpp; i++) row[i] = f[i];
      for (size_t i = bpp; i < n; i++) row[i] = (uint8_t)(f[i] + row[i - bpp]);
      break;
    case 2:
      for (size_t i = 0; i < n; i++) row[i] = (uint8_t)(f[i] + prev[i]);
      break;
    case 3:
      for (size_t i = 0; i < bpp; i++) row[i] = (uint8_t)(f[i] + (prev[i] >> 1));
      for (size_t i = bpp; i < n; i++) row[i] = (uint8_t)(f[i] + ((row[i - bpp] + prev[i]) >> 1));
      break;
    default: /* 4, Paeth (the types were checked) */
      for (size_t i = 0; i < bpp; i++) row[i] = (uint8_t)(f[i] + prev[i]);
      for (size_t i = bpp; i < n; i++)
        row[i] = (uint8_t)(f[i] + ib_png_paeth(row[i - bpp], prev[i], prev[i - bpp]));
      break;
  }
}

static void unfilter(uint8_t *dst, const uint8_t *src, const uint8_t *zeros, size_t stride,
                     uint32_t height, unsigned bpp) {
  const uint8_t *prev = zeros;
  for (uint32_t y = 0; y < height; y++) {
    uint8_t *row = dst + (size_t)y * stride;
    const uint8_t *f = src + (size_t)y * (stride + 1);
    switch (bpp) {
      case 1: unfilter_row(row, f, prev, stride, 1); break;
      case 2: unfilter_row(row, f, prev, stride, 2); break;
      case 3: unfilter_row(row, f, prev, stride, 3); break;
      default: unfilter_row(row, f, prev, stride, 4); break;
    }
    prev = row;
  }
}

/* The run's data, inflated into rows (height x (stride + 1) bytes); false
 * when it is not one 32 KiB-window stream ending exactly with the run and
 * the rows, or memory ran out. */
static bool inflate_run(const uint8_t *p, const idat_run *run, uint8_t *rows, size_t n_rows) {
  const uint8_t *in = p + run->first + 8;
  uint8_t *joined = NULL;
  if (run->chunks > 1) { /* libdeflate takes its input in one piece */
    if (!(joined = ib_tbuf_get(IB_TBUF_PNG_IDAT, run->bytes))) return false;
    size_t at = 0;
    for (size_t i = run->first, k = 0; k < run->chunks; k++) {
      const uint32_t n = be32(p + i);
      memcpy(joined + at, p + i + 8, n);
      at += n;
      i += 12 + (size_t)n;
    }
    in = joined;
  }
  bool ok = false;
  /* CMF: deflate with a 32 KiB window (see png_plain.h) */
  if (run->bytes >= 2 && in[0] == 0x78) {
    struct libdeflate_decompressor *d = ib_tbuf_decompressor();
    size_t used = 0, got = 0;
    ok = d &&
         libdeflate_zlib_decompress_ex(d, in, run->bytes, rows, n_rows, &used, &got) ==
             LIBDEFLATE_SUCCESS &&
         used == run->bytes && got == n_rows;
  }
  ib_tbuf_put(IB_TBUF_PNG_IDAT, joined);
  return ok;
}

bool ib_png_plain_decode(const uint8_t *bytes, size_t len, const ib_shape *shape, uint8_t *dst) {
  if (len < 8 || !shape->width || !shape->height) return false;
  idat_run run;
  if (!walk(bytes, len, shape, &run)) return false;
  const unsigned bpp = ib_mode_bands(shape->mode);
  const size_t stride = (size_t)shape->width * bpp, n_rows = (size_t)shape->height * (stride + 1);
  if (n_rows > PLAIN_ROWS_MAX) return false;
  uint8_t *rows = ib_tbuf_get(IB_TBUF_PNG_ROWS, n_rows), *zeros = calloc(1, stride);
  bool ok = rows && zeros && inflate_run(bytes, &run, rows, n_rows);
  for (size_t y = 0; ok && y < shape->height; y++) ok = rows[y * (stride + 1)] <= 4;
  if (ok) unfilter(dst, rows, zeros, stride, shape->height, bpp);
  ib_tbuf_put(IB_TBUF_PNG_ROWS, rows);
  free(zeros);
  return ok;
}
