/* png_encode.c - PNG out through libdeflate (see png_encode.h). */
#include "codec/png_encode.h"

#include <glib.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "codec/metadata.h"
#include "codec/png_paeth.h"
#include "codec/thread_buf.h"
#include "core/error.h"

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A chunk at p: length, type, the `n` data bytes already at p + 8, CRC. */
static size_t chunk(uint8_t *p, const char type[4], size_t n) {
  put32(p, (uint32_t)n);
  memcpy(p + 4, type, 4);
  put32(p + 8 + n, libdeflate_crc32(0, p + 4, n + 4));
  return n + 12;
}

static unsigned long cost(const uint8_t *v, size_t n) {
  unsigned long sum = 0;
  for (size_t i = 0; i < n; i++) sum += (unsigned)abs((int8_t)v[i]);
  return sum;
}

/* Filters one row (`prev` the row above, zeros for the first) with each
 * PNG filter and keeps the one with the smallest sum of absolute signed
 * bytes, the heuristic of libpng and Pillow; `out` gets the filter byte,
 * then the row. `t` has room for 4 rows. */
static void filter_row(const uint8_t *row, const uint8_t *prev, size_t n, unsigned bpp,
                       uint8_t *out, uint8_t *t) {
  uint8_t *sub = t, *up = t + n, *avg = t + 2 * n, *pae = t + 3 * n;
  for (size_t i = 0; i < bpp; i++) {
    sub[i] = row[i];
    up[i] = (uint8_t)(row[i] - prev[i]);
    avg[i] = (uint8_t)(row[i] - prev[i] / 2);
    pae[i] = (uint8_t)(row[i] - prev[i]);
  }
  for (size_t i = bpp; i < n; i++) {
    sub[i] = (uint8_t)(row[i] - row[i - bpp]);
    up[i] = (uint8_t)(row[i] - prev[i]);
    avg[i] = (uint8_t)(row[i] - (row[i - bpp] + prev[i]) / 2);
    pae[i] = (uint8_t)(row[i] - ib_png_paeth(row[i - bpp], prev[i], prev[i - bpp]));
  }
  const uint8_t *rows[5] = {row, sub, up, avg, pae};
  unsigned long best = cost(row, n);
  uint8_t f = 0;
  for (uint8_t k = 1; k < 5; k++) {
    unsigned long c = cost(rows[k], n);
    if (c < best) best = c, f = k;
  }
  out[0] = f;
  memcpy(out + 1, rows[f], n);
}

static const char XMP_KEY[] = "XML:com.adobe.xmp", ICC_NAME[] = "ICC Profile";

static size_t meta_bound(struct libdeflate_compressor *c, const ib_meta_keep *m) {
  if (!m) return 0;
  size_t n = 0;
  if (m->icc_len) n += 12 + sizeof ICC_NAME + 1 + libdeflate_zlib_compress_bound(c, m->icc_len);
  if (m->exif_len) n += 12 + m->exif_len;
  if (m->xmp_len) n += 12 + sizeof XMP_KEY + 4 + m->xmp_len;
  return n;
}

/* The metadata chunks at p; their total length, 0 when deflate fails. */
static size_t meta_chunks(struct libdeflate_compressor *c, const ib_meta_keep *m, uint8_t *p,
                          size_t bound) {
  size_t o = 0;
  if (!m) return 0;
  if (m->icc_len) {
    uint8_t *d = p + o + 8;
    memcpy(d, ICC_NAME, sizeof ICC_NAME); /* name, its NUL */
    d[sizeof ICC_NAME] = 0;               /* compression method: deflate */
    size_t head = sizeof ICC_NAME + 1;
    size_t z = libdeflate_zlib_compress(c, m->icc, m->icc_len, d + head, bound - o - 12 - head);
    if (!z) return 0;
    o += chunk(p + o, "iCCP", head + z);
  }
  if (m->exif_len) {
    memcpy(p + o + 8, m->exif, m->exif_len);
    o += chunk(p + o, "eXIf", m->exif_len);
  }
  if (m->xmp_len) {
    /* keyword, NUL, uncompressed (0, 0), empty language and translation. */
    uint8_t *d = p + o + 8;
    memcpy(d, XMP_KEY, sizeof XMP_KEY);
    memset(d + sizeof XMP_KEY, 0, 4);
    memcpy(d + sizeof XMP_KEY + 4, m->xmp, m->xmp_len);
    o += chunk(p + o, "iTXt", sizeof XMP_KEY + 4 + m->xmp_len);
  }
  return o;
}

ib_status ib_png_encode(const uint8_t *px, uint32_t width, uint32_t height, unsigned channels,
                        size_t stride, int level, const ib_meta_keep *meta, uint8_t **out,
                        size_t *len, ib_error *err) {
  static const uint8_t color_type[5] = {0, 0, 4, 2, 6};
  if (channels < 1 || channels > 4 || !width || !height || level < 1 || level > 9)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE,
                        "encode png: %u channels, %ux%u, level %d", channels, width, height, level);
  struct libdeflate_compressor *c = ib_tbuf_compressor(level);
  size_t row = (size_t)width * channels, raw = (row + 1) * height;
  /* The filtered rows, then room for four trial rows and a row of zeros. */
  uint8_t *filtered = ib_tbuf_get(IB_TBUF_PNG_FILTERED, raw + 5 * row);
  if (!c || !filtered) {
    ib_tbuf_put(IB_TBUF_PNG_FILTERED, filtered);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode png: out of memory");
  }
  memset(filtered + raw + 4 * row, 0, row);
  for (uint32_t y = 0; y < height; y++)
    filter_row(px + y * stride, y ? px + (y - 1) * stride : filtered + raw + 4 * row, row, channels,
               filtered + y * (row + 1), filtered + raw);
  size_t bound = libdeflate_zlib_compress_bound(c, raw);
  size_t mb = meta_bound(c, meta);
  /* Signature, IHDR (13 bytes), the metadata chunks, one IDAT, IEND. */
  uint8_t *png = g_try_malloc(8 + 25 + mb + 12 + bound + 12);
  if (!png) {
    ib_tbuf_put(IB_TBUF_PNG_FILTERED, filtered);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode png: out of memory");
  }
  memcpy(png, "\x89PNG\r\n\x1a\n", 8);
  size_t o = 8;
  uint8_t *ihdr = png + o + 8;
  put32(ihdr, width);
  put32(ihdr + 4, height);
  ihdr[8] = 8; /* bit depth */
  ihdr[9] = color_type[channels];
  ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filters, no interlace */
  o += chunk(png + o, "IHDR", 13);
  size_t mo = meta_chunks(c, meta, png + o, mb);
  if (mb && !mo) {
    ib_tbuf_put(IB_TBUF_PNG_FILTERED, filtered);
    g_free(png);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode png: deflate failed (iCCP)");
  }
  o += mo;
  size_t z = libdeflate_zlib_compress(c, filtered, raw, png + o + 8, bound);
  ib_tbuf_put(IB_TBUF_PNG_FILTERED, filtered);
  if (!z) {
    g_free(png);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode png: deflate failed");
  }
  o += chunk(png + o, "IDAT", z);
  o += chunk(png + o, "IEND", 0);
  *out = png;
  *len = o;
  return IB_OK;
}
