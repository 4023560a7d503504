/*
 * pnggen.h - PNG files of every colour type, bit depth and interlace, with
 * random pixels, written by libpng into memory: the inputs of the PNG
 * decode differential test and of bench/harness/codec_bench.c. Also chunk-level
 * surgery for hostile variants. Header-only, tools and tests only.
 */
#ifndef IB_TOOLS_PNGGEN_H
#define IB_TOOLS_PNGGEN_H

#include <libdeflate.h>
#include <png.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pg_buf {
  uint8_t *p;
  size_t len, cap;
} pg_buf;

static inline void pg_put(pg_buf *b, const void *data, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) abort();
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static inline void pg_put32(pg_buf *b, uint32_t v) {
  uint8_t q[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  pg_put(b, q, 4);
}

/* A chunk with a correct CRC. */
static inline void pg_chunk(pg_buf *b, const char type[4], const void *data, uint32_t n) {
  pg_put32(b, n);
  pg_put(b, type, 4);
  if (n) pg_put(b, data, n);
  uint32_t crc = libdeflate_crc32(0, type, 4);
  if (n) crc = libdeflate_crc32(crc, data, n);
  pg_put32(b, crc);
}

static inline uint32_t pg_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (uint32_t)(*s >> 16);
}

typedef struct pg_spec {
  uint32_t width, height;
  int color; /* PNG_COLOR_TYPE_* */
  int depth; /* 1, 2, 4, 8, 16 as the colour type allows */
  bool interlace;
  bool trns;   /* a tRNS chunk (palette: alpha for half the entries) */
  int palette; /* palette entries (0: all 2^depth) */
  int level;   /* zlib level (0..9) */
  bool smooth; /* a gradient instead of noise (compresses like a photo) */
  uint64_t seed;
} pg_spec;

static void pg_write_fn(png_structp png, png_bytep data, size_t n) {
  pg_put(png_get_io_ptr(png), data, n);
}
static void pg_flush_fn(png_structp png) { (void)png; }

/* libpng's writer, alone in its function for its setjmp. */
static inline bool pg_encode(const pg_spec *s, png_bytep *rows, png_color *pal, png_byte *alpha,
                             int npal, png_color_16 *trns, pg_buf *b) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, b, pg_write_fn, pg_flush_fn);
  png_set_compression_level(png, s->level);
  png_set_IHDR(png, info, s->width, s->height, s->depth, s->color,
               s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (s->color == PNG_COLOR_TYPE_PALETTE) {
    png_set_PLTE(png, info, pal, npal);
    png_set_check_for_invalid_index(png, 0); /* short palettes on purpose */
  }
  if (s->trns && s->color == PNG_COLOR_TYPE_PALETTE)
    png_set_tRNS(png, info, alpha, npal / 2 ? npal / 2 : 1, NULL);
  else if (s->trns && (s->color == PNG_COLOR_TYPE_GRAY || s->color == PNG_COLOR_TYPE_RGB))
    png_set_tRNS(png, info, NULL, 0, trns);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return true;
}

/* The file, malloc'ed into *out; false where libpng refused the spec. */
static inline bool pg_make(const pg_spec *s, uint8_t **out, size_t *len) {
  pg_buf b = {0};
  uint64_t rng = s->seed * 0x9E3779B97F4A7C15ull + 1;
  int channels = s->color == PNG_COLOR_TYPE_GRAY         ? 1
                 : s->color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                 : s->color == PNG_COLOR_TYPE_RGB        ? 3
                 : s->color == PNG_COLOR_TYPE_RGB_ALPHA  ? 4
                                                         : 1;
  size_t rowbytes = ((size_t)s->width * (size_t)channels * (size_t)s->depth + 7) / 8;
  uint8_t *px = calloc(rowbytes * s->height + 8, 1); /* +8: the tRNS colour reads 6 */
  png_bytep *rows = malloc(sizeof *rows * (s->height ? s->height : 1));
  if (!px || !rows) abort();
  int npal = s->palette ? s->palette : 1 << s->depth;
  for (uint32_t y = 0; y < s->height; y++) {
    uint8_t *row = px + y * rowbytes;
    rows[y] = row;
    for (size_t i = 0; i < rowbytes; i++)
      row[i] =
          s->smooth ? (uint8_t)((i * 3 + y * 5) / 4 + (pg_rand(&rng) & 3)) : (uint8_t)pg_rand(&rng);
    if (s->color == PNG_COLOR_TYPE_PALETTE && s->depth == 8)
      for (size_t i = 0; i < rowbytes; i++) row[i] = (uint8_t)(row[i] % npal);
  }
  png_color pal[256];
  png_byte alpha[256];
  for (int i = 0; i < 256; i++) {
    pal[i].red = (png_byte)pg_rand(&rng), pal[i].green = (png_byte)pg_rand(&rng);
    pal[i].blue = (png_byte)pg_rand(&rng), alpha[i] = (png_byte)pg_rand(&rng);
  }
  /* A transparent colour that occurs: the first pixel's. */
  png_color_16 c = {0};
  int maxv = (1 << s->depth) - 1;
  const uint8_t *p0 = px;
  int v0 = s->depth == 16 ? (p0[0] << 8 | p0[1]) : s->depth == 8 ? p0[0] : p0[0] >> (8 - s->depth);
  c.gray = c.red = (png_uint_16)(v0 & maxv);
  c.green = (png_uint_16)((s->depth == 16  ? (p0[2] << 8 | p0[3])
                           : s->depth == 8 ? p0[1]
                                           : 0) &
                          maxv);
  c.blue = (png_uint_16)((s->depth == 16  ? (p0[4] << 8 | p0[5])
                          : s->depth == 8 ? p0[2]
                                          : 0) &
                         maxv);
  bool ok = pg_encode(s, rows, pal, alpha, npal, &c, &b);
  free(rows);
  free(px);
  if (!ok) {
    free(b.p);
    return false;
  }
  *out = b.p;
  *len = b.len;
  return true;
}

/* The chunks of a PNG: offsets of their length fields, up to `max`. */
static inline size_t pg_chunks(const uint8_t *p, size_t len, size_t *at, size_t max) {
  size_t n = 0;
  for (size_t i = 8; i + 12 <= len && n < max;) {
    uint32_t clen =
        (uint32_t)p[i] << 24 | (uint32_t)p[i + 1] << 16 | (uint32_t)p[i + 2] << 8 | p[i + 3];
    at[n++] = i;
    if (clen > len - i - 12) break;
    i += 12 + clen;
  }
  return n;
}

static inline uint32_t pg_chunk_len(const uint8_t *p, size_t at) {
  return (uint32_t)p[at] << 24 | (uint32_t)p[at + 1] << 16 | (uint32_t)p[at + 2] << 8 | p[at + 3];
}

#endif
