/* PNG decode through libpng (codec/png_decode.c) against the libvips path
 * it replaced (ib_codec_*_vips, vips_pngload_buffer): the same status,
 * stage, message, shape and bytes for every colour type, bit depth,
 * interlace and tRNS, and for hostile files (truncated, corrupt, oversized
 * headers, zlib bombs, chunk floods). Where the new decoder differs on
 * purpose, the test says so. */
#include <criterion/criterion.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "codec/codec.h"
#include "codec/png_decode.h"
#include "tools/pnggen.h"

/* Under the sanitizer build, a test ends by asking LeakSanitizer for memory
 * it leaked (criterion's workers would only print it at exit): what a
 * longjmp out of libpng left behind fails the test. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define NO_LEAKS() cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "leaked (see above)")
#else
#define NO_LEAKS() ((void)0)
#endif

typedef struct outcome {
  ib_status st;
  ib_error err;
  ib_shape shape;
  uint8_t *px;
  size_t n;
} outcome;

/* Pixels are decoded only below this (the bombs' 4096^2 included). */
#define MAX_DECODE_PIXELS (4096u * 4096u)

static void through(bool vips, const uint8_t *b, size_t len, outcome *o) {
  memset(o, 0, sizeof *o);
  o->st = vips ? ib_codec_header_vips(b, len, &o->shape, &o->err)
               : ib_png_header(b, len, &o->shape, &o->err);
  if (o->st != IB_OK) return;
  if ((uint64_t)o->shape.width * o->shape.height > MAX_DECODE_PIXELS) return;
  o->n = (size_t)o->shape.width * o->shape.height * ib_mode_bands(o->shape.mode);
  o->px = malloc(o->n ? o->n : 1);
  cr_assert_not_null(o->px);
  memset(o->px, vips ? 0x11 : 0x22, o->n); /* so an unwritten byte differs */
  o->err = (ib_error){0};
  o->st = vips ? ib_codec_decode_into_vips(b, len, &o->shape, o->px, &o->err)
               : ib_png_decode_into(b, len, &o->shape, o->px, &o->err);
}

static size_t n_compared, n_ok;

/* Both paths agree on everything; returns the new decoder's status. */
static ib_status same(const uint8_t *b, size_t len, const char *what) {
  outcome v, p;
  through(true, b, len, &v);
  through(false, b, len, &p);
  n_compared++;
  cr_assert_eq(p.st, v.st, "%s: status %d (%s), libvips %d (%s)", what, p.st, p.err.message, v.st,
               v.err.message);
  if (v.st != IB_OK) {
    cr_assert_eq(p.err.stage, v.err.stage, "%s", what);
    cr_assert_str_eq(p.err.message, v.err.message, "%s", what);
  } else {
    n_ok++;
    cr_assert_eq(memcmp(&p.shape, &v.shape, sizeof p.shape), 0, "%s: shape", what);
    cr_assert_eq(p.n, v.n, "%s", what);
    cr_assert(p.n == 0 || memcmp(p.px, v.px, p.n) == 0, "%s: pixels differ", what);
  }
  free(v.px);
  free(p.px);
  return p.st;
}

static const int colors[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                             PNG_COLOR_TYPE_RGB_ALPHA, PNG_COLOR_TYPE_PALETTE};

static bool depth_ok(int color, int depth) {
  if (color == PNG_COLOR_TYPE_GRAY) return true;
  if (color == PNG_COLOR_TYPE_PALETTE) return depth <= 8;
  return depth >= 8;
}

static void make(const pg_spec *s, uint8_t **b, size_t *len) {
  cr_assert(pg_make(s, b, len), "libpng refused %ux%u colour %d depth %d", s->width, s->height,
            s->color, s->depth);
}

Test(png_decode, every_colour_type_depth_interlace_and_trns_gives_libvips_bytes) {
  static const uint32_t sizes[][2] = {{1, 1},  {1, 9},   {9, 1},     {2, 3},    {7, 5},
                                      {17, 9}, {33, 65}, {128, 128}, {301, 203}};
  static const int depths[] = {1, 2, 4, 8, 16};
  uint64_t seed = 1;
  for (size_t c = 0; c < 5; c++)
    for (size_t d = 0; d < 5; d++) {
      if (!depth_ok(colors[c], depths[d])) continue;
      for (int lace = 0; lace < 2; lace++)
        for (int trns = 0; trns < 2; trns++) {
          if (trns && (colors[c] & PNG_COLOR_MASK_ALPHA)) continue;
          for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            pg_spec s = {.width = sizes[z][0],
                         .height = sizes[z][1],
                         .color = colors[c],
                         .depth = depths[d],
                         .interlace = lace,
                         .trns = trns,
                         .level = (int)(seed % 10),
                         .smooth = seed % 3 == 0,
                         .seed = seed};
            /* Palettes shorter than the depth allows: indexes past the end. */
            if (colors[c] == PNG_COLOR_TYPE_PALETTE && seed % 4 == 0)
              s.palette = 1 + (int)(seed % (1u << depths[d]));
            seed++;
            uint8_t *b;
            size_t len;
            make(&s, &b, &len);
            char what[120];
            snprintf(what, sizeof what, "%ux%u colour %d depth %d interlace %d trns %d pal %d",
                     s.width, s.height, s.color, s.depth, lace, trns, s.palette);
            ib_status st = same(b, len, what);
            cr_assert_eq(st, depths[d] == 16 ? IB_UNSUPPORTED : IB_OK, "%s", what);
            free(b);
          }
        }
    }
  cr_assert_gt(n_ok, 300, "%zu decoded alike", n_ok);
  NO_LEAKS();
}

/* Files with several IDAT chunks (level 0, noise) and a few ancillary
 * chunks, for the hostile variants. */
static void hostile_bases(uint8_t **b, size_t *len) {
  pg_spec s[] = {
      {.width = 150, .height = 90, .color = PNG_COLOR_TYPE_RGB, .depth = 8, .level = 0, .seed = 7},
      {.width = 33,
       .height = 17,
       .color = PNG_COLOR_TYPE_PALETTE,
       .depth = 4,
       .trns = true,
       .interlace = true,
       .level = 6,
       .seed = 8},
      {.width = 200,
       .height = 64,
       .color = PNG_COLOR_TYPE_GRAY,
       .depth = 1,
       .interlace = true,
       .level = 0,
       .seed = 9},
      {.width = 64,
       .height = 64,
       .color = PNG_COLOR_TYPE_RGB_ALPHA,
       .depth = 8,
       .level = 9,
       .smooth = true,
       .seed = 10},
  };
  for (size_t i = 0; i < 4; i++) make(&s[i], &b[i], &len[i]);
}

Test(png_decode, truncated_at_every_chunk_boundary_and_at_random_points) {
  uint8_t *b[4];
  size_t len[4];
  hostile_bases(b, len);
  uint64_t rng = 42;
  for (size_t f = 0; f < 4; f++) {
    size_t at[256];
    size_t n = pg_chunks(b[f], len[f], at, 256);
    cr_assert_gt(n, 2);
    char what[80];
    for (size_t k = 0; k < n; k++) {
      uint32_t clen = pg_chunk_len(b[f], at[k]);
      size_t cuts[] = {
          at[k], at[k] + 4, at[k] + 8, at[k] + 8 + clen / 2, at[k] + 8 + clen, at[k] + 10 + clen};
      for (size_t c = 0; c < 6; c++) {
        if (cuts[c] >= len[f]) continue;
        snprintf(what, sizeof what, "file %zu cut at %zu of %zu", f, cuts[c], len[f]);
        same(b[f], cuts[c], what);
      }
    }
    for (int r = 0; r < 60; r++) {
      size_t cut = 8 + pg_rand(&rng) % (len[f] - 8);
      snprintf(what, sizeof what, "file %zu cut at %zu of %zu", f, cut, len[f]);
      same(b[f], cut, what);
    }
    free(b[f]);
  }
  NO_LEAKS();
}

Test(png_decode, corrupt_crc_or_data_in_every_chunk) {
  uint8_t *b[4];
  size_t len[4];
  hostile_bases(b, len);
  uint64_t rng = 43;
  for (size_t f = 0; f < 4; f++) {
    size_t at[256];
    size_t n = pg_chunks(b[f], len[f], at, 256);
    uint8_t *bad = malloc(len[f]);
    char what[80];
    for (size_t k = 0; k < n; k++) {
      uint32_t clen = pg_chunk_len(b[f], at[k]);
      /* The CRC, then data bytes (three random ones), then the length. */
      for (int v = 0; v < 5; v++) {
        memcpy(bad, b[f], len[f]);
        size_t pos = v == 0   ? at[k] + 8 + clen
                     : v == 4 ? at[k] + 3
                     : clen   ? at[k] + 8 + pg_rand(&rng) % clen
                              : at[k] + 4;
        bad[pos] ^= (uint8_t)(1 + pg_rand(&rng) % 255);
        snprintf(what, sizeof what, "file %zu chunk %zu byte %zu flipped", f, k, pos);
        same(bad, len[f], what);
      }
    }
    free(bad);
    free(b[f]);
  }
  NO_LEAKS();
}

/* A file from its IHDR fields and raw (filtered) row bytes. */
static void with_ihdr(pg_buf *o, uint32_t w, uint32_t h, int depth, int color, int lace,
                      const uint8_t *idat, size_t idat_len) {
  pg_put(o, "\x89PNG\r\n\x1a\n", 8);
  uint8_t ihdr[13] = {(uint8_t)(w >> 24),
                      (uint8_t)(w >> 16),
                      (uint8_t)(w >> 8),
                      (uint8_t)w,
                      (uint8_t)(h >> 24),
                      (uint8_t)(h >> 16),
                      (uint8_t)(h >> 8),
                      (uint8_t)h,
                      (uint8_t)depth,
                      (uint8_t)color,
                      0,
                      0,
                      (uint8_t)lace};
  pg_chunk(o, "IHDR", ihdr, 13);
  if (idat_len) pg_chunk(o, "IDAT", idat, (uint32_t)idat_len);
  pg_chunk(o, "IEND", NULL, 0);
}

/* zlib-wraps n bytes. */
static uint8_t *zlib_of(const uint8_t *raw, size_t n, size_t *out_len) {
  struct libdeflate_compressor *c = libdeflate_alloc_compressor(6);
  size_t cap = libdeflate_zlib_compress_bound(c, n);
  uint8_t *z = malloc(cap);
  *out_len = libdeflate_zlib_compress(c, raw, n, z, cap);
  libdeflate_free_compressor(c);
  cr_assert_gt(*out_len, 0);
  return z;
}

Test(png_decode, hostile_headers) {
  uint8_t zeros[64] = {0};
  size_t zlen;
  uint8_t *z = zlib_of(zeros, sizeof zeros, &zlen);
  struct {
    uint32_t w, h;
    int depth, color, lace;
  } cases[] = {
      {0, 10, 8, 2, 0},
      {10, 0, 8, 2, 0},
      {30000, 30000, 8, 2, 0},
      {10000000, 1, 8, 6, 0},
      {10000001, 1, 8, 0, 0},
      {0x80000000u, 1, 8, 0, 0},
      {0xFFFFFFFFu, 0xFFFFFFFFu, 8, 2, 1},
      {8, 8, 3, 0, 0},
      {8, 8, 8, 5, 0},
      {8, 8, 8, 2, 2},
      {8, 8, 16, 3, 0},
      {8, 8, 2, 2, 0},
      {4097, 1, 8, 0, 0},
      {1, 4097, 8, 0, 0},
  };
  char what[80];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pg_buf o = {0};
    with_ihdr(&o, cases[i].w, cases[i].h, cases[i].depth, cases[i].color, cases[i].lace, z, zlen);
    snprintf(what, sizeof what, "IHDR %ux%u depth %d colour %d interlace %d", cases[i].w,
             cases[i].h, cases[i].depth, cases[i].color, cases[i].lace);
    same(o.p, o.len, what);
    free(o.p);
  }
  /* A header past the max side is reported, not refused: parse's check_side
   * answers IB_LIMIT before any pixel is allocated (tests/py hostile). */
  pg_buf o = {0};
  with_ihdr(&o, 30000, 30000, 8, 2, 0, z, zlen);
  ib_shape s;
  ib_error e = {0};
  cr_assert_eq(ib_png_header(o.p, o.len, &s, &e), IB_OK, "%s", e.message);
  cr_assert_eq(s.width, 30000);
  free(o.p);
  /* The signature alone and a few bytes more. */
  const uint8_t sig[] = "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR";
  for (size_t n = 8; n <= 16; n++) same(sig, n, "signature only");
  free(z);
  NO_LEAKS();
}

Test(png_decode, zlib_bombs) {
  /* 4096 x 4096 grey of zeros from ~16 KB: decoded alike. */
  size_t raw_n = 4096u * 4097u;
  uint8_t *raw = calloc(1, raw_n);
  size_t zlen;
  uint8_t *z = zlib_of(raw, raw_n, &zlen);
  cr_assert_lt(zlen, 64 * 1024);
  pg_buf o = {0};
  with_ihdr(&o, 4096, 4096, 8, 0, 0, z, zlen);
  cr_assert_eq(same(o.p, o.len, "4096^2 zeros"), IB_OK);
  free(o.p), free(z), free(raw);

  /* An 8x8 RGB image whose IDAT inflates far past its 200 bytes. A few MB
   * past: libvips and the new decoder both inflate the rest and accept. */
  size_t rows = 8 * (1 + 8 * 3);
  size_t small = rows + (4u << 20), big = rows + (200u << 20);
  raw = calloc(1, big);
  for (int bomb = 0; bomb < 2; bomb++) {
    z = zlib_of(raw, bomb ? big : small, &zlen);
    o = (pg_buf){0};
    with_ihdr(&o, 8, 8, 8, 2, 0, z, zlen);
    if (!bomb) {
      cr_assert_eq(same(o.p, o.len, "8x8 + 4 MB of inflate"), IB_OK);
    } else {
      /* 200 MB past (~200 KB of compressed zeros): libvips inflates it all
       * (1000x the file: a CPU bomb at the 256 MiB source limit) and
       * accepts; the new decoder stops reading after the tail budget. */
      outcome v, p;
      through(true, o.p, o.len, &v);
      through(false, o.p, o.len, &p);
      cr_assert_eq(v.st, IB_OK, "%s", v.err.message);
      cr_assert_eq(p.st, IB_DECODE);
      cr_assert(strstr(p.err.message, "far past the last row"), "%s", p.err.message);
      free(v.px), free(p.px);
    }
    free(o.p), free(z);
  }
  free(raw);

  /* Rows that inflate short of the image: both fail. */
  uint8_t few[40] = {0};
  z = zlib_of(few, sizeof few, &zlen);
  o = (pg_buf){0};
  with_ihdr(&o, 64, 64, 8, 2, 0, z, zlen);
  cr_assert_eq(same(o.p, o.len, "short IDAT"), IB_DECODE);
  free(o.p), free(z);
  NO_LEAKS();
}

/* The file with `extra` put in before the first IDAT or after IEND. */
static void splice(const uint8_t *b, size_t len, const pg_buf *extra, bool before_idat, pg_buf *o) {
  size_t at[256];
  size_t n = pg_chunks(b, len, at, 256);
  size_t cut = len;
  for (size_t k = 0; before_idat && k < n; k++)
    if (memcmp(b + at[k] + 4, "IDAT", 4) == 0) {
      cut = at[k];
      break;
    }
  *o = (pg_buf){0};
  pg_put(o, b, cut);
  pg_put(o, extra->p, extra->len);
  pg_put(o, b + cut, len - cut);
}

Test(png_decode, missing_iend_garbage_after_iend_and_chunk_floods) {
  pg_spec s = {
      .width = 40, .height = 30, .color = PNG_COLOR_TYPE_RGB, .depth = 8, .level = 6, .seed = 11};
  uint8_t *b;
  size_t len;
  make(&s, &b, &len);
  cr_assert_eq(same(b, len - 12, "no IEND"), IB_OK);
  pg_buf g = {0}, o;
  for (int i = 0; i < 1000; i++) pg_put(&g, "garbage!", 8);
  splice(b, len, &g, false, &o);
  cr_assert_eq(same(o.p, o.len, "garbage after IEND"), IB_OK);
  free(o.p), free(g.p);

  /* 3000 text chunks, 500 private ancillary chunks, a 1 MB private chunk. */
  const char *kinds[] = {"tEXt", "prVt", "prVt"};
  int counts[] = {3000, 500, 1};
  uint32_t sizes[] = {12, 100, 1u << 20};
  uint8_t *data = calloc(1, 1u << 20);
  memcpy(data, "Comment\0hello", 12);
  for (int k = 0; k < 3; k++) {
    g = (pg_buf){0};
    for (int i = 0; i < counts[k]; i++) pg_chunk(&g, kinds[k], data, sizes[k]);
    splice(b, len, &g, true, &o);
    cr_assert_eq(same(o.p, o.len, kinds[k]), IB_OK);
    free(o.p), free(g.p);
  }
  free(data);

  /* A chunk over the 50 MB chunk limit: a warning ("chunk data is too
   * large") for libpng, which skips it unread into memory; alike. */
  uint32_t huge = 60u << 20;
  data = calloc(1, huge);
  g = (pg_buf){0};
  pg_chunk(&g, "prVt", data, huge);
  splice(b, len, &g, true, &o);
  cr_assert_eq(same(o.p, o.len, "60 MB chunk"), IB_OK);
  free(o.p), free(g.p);

  /* A zTXt that inflates to 40 MB: libvips inflates and keeps it, the new
   * decoder skips it; the pixels are the same. */
  size_t zlen;
  uint8_t *z = zlib_of(data, 40u << 20, &zlen);
  g = (pg_buf){0};
  pg_buf zt = {0};
  pg_put(&zt, "Comment\0\0", 9);
  pg_put(&zt, z, zlen);
  pg_chunk(&g, "zTXt", zt.p, (uint32_t)zt.len);
  splice(b, len, &g, true, &o);
  cr_assert_eq(same(o.p, o.len, "zTXt bomb"), IB_OK);
  free(o.p), free(g.p), free(zt.p), free(z), free(data);

  /* Colour-space and other ancillary chunks change no pixel (no transform
   * asks for them), on either path. */
  static const struct {
    const char *type;
    uint32_t n;
    const char *data;
  } anc[] = {
      {"gAMA", 4, "\0\0\xb1\x8f"},
      {"sRGB", 1, "\0"},
      {"cHRM", 32, "\0\0z&\0\0\x80\x84\0\0\xfa\0\0\0\x80\xe8\0\0u0\0\0\xea`\0\0:\x98\0\0\x17p"},
      {"bKGD", 6, "\0\x10\0\x20\0\x30"},
      {"pHYs", 9, "\0\0\x0b\x13\0\0\x0b\x13\x01"},
      {"sBIT", 3, "\x05\x06\x05"},
      {"tIME", 7, "\x07\xea\x0c\x03\x15\x2d\x00"},
      {"iCCP", 13, "icc\0\0garbage"}};
  g = (pg_buf){0};
  for (size_t k = 0; k < sizeof anc / sizeof anc[0]; k++)
    pg_chunk(&g, anc[k].type, anc[k].data, anc[k].n);
  splice(b, len, &g, true, &o);
  cr_assert_eq(same(o.p, o.len, "gAMA sRGB cHRM bKGD pHYs sBIT tIME iCCP"), IB_OK);
  free(o.p), free(g.p);

  /* Chunks before IHDR: libpng's handlers refuse the known ones ("tEXt:
   * missing IHDR"), the unknown pass; the skipped kinds must not pass. */
  const char *first[] = {"tEXt", "zTXt", "iCCP", "eXIf", "prVt", "gAMA"};
  for (int k = 0; k < 6; k++) {
    g = (pg_buf){0};
    pg_chunk(&g, first[k], "Comment\0hi", 10);
    o = (pg_buf){0};
    pg_put(&o, b, 8);
    pg_put(&o, g.p, g.len);
    pg_put(&o, b + 8, len - 8);
    same(o.p, o.len, first[k]);
    free(o.p), free(g.p);
  }

  /* A broken iCCP and a cut IDAT: both fail alike, but libvips' message
   * also carried libpng's warning about the profile, which the new decoder
   * never reads (the one place its words differ from libvips'). */
  g = (pg_buf){0};
  pg_chunk(&g, "iCCP", "icc\0\0garbage", 13);
  splice(b, len, &g, true, &o);
  outcome v, p;
  through(true, o.p, o.len - 30, &v);
  through(false, o.p, o.len - 30, &p);
  cr_assert_eq(v.st, IB_DECODE);
  cr_assert_eq(p.st, IB_DECODE);
  cr_assert(strstr(v.err.message, "iCCP"), "%s", v.err.message);
  cr_assert(!strstr(p.err.message, "iCCP"), "%s", p.err.message);
  free(o.p), free(g.p), free(v.px), free(p.px);
  free(b);
  NO_LEAKS();
}

/* The decoder from several threads at once: no shared state. */
typedef struct job {
  uint8_t *b[12];
  size_t len[12];
  uint8_t *want[12];
  ib_shape shape[12];
  int bad;
} job;

static void *decode_many(void *arg) {
  job *j = arg;
  for (int round = 0; round < 30; round++)
    for (int i = 0; i < 12; i++) {
      ib_shape s;
      ib_error e = {0};
      if (ib_png_header(j->b[i], j->len[i], &s, &e) != IB_OK) {
        __atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
        continue;
      }
      size_t n = (size_t)s.width * s.height * ib_mode_bands(s.mode);
      uint8_t *px = malloc(n);
      if (ib_png_decode_into(j->b[i], j->len[i], &s, px, &e) != IB_OK ||
          memcmp(px, j->want[i], n) != 0)
        __atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
      /* and a failing one in between: its longjmp stays on this thread */
      if (ib_png_decode_into(j->b[i], j->len[i] / 2, &s, px, &e) == IB_OK)
        __atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
      free(px);
    }
  return NULL;
}

Test(png_decode, threads_decode_alike) {
  job j = {0};
  for (int i = 0; i < 12; i++) {
    pg_spec s = {.width = 50 + (uint32_t)i * 7,
                 .height = 40,
                 .color = colors[i % 5],
                 .depth = 8,
                 .interlace = i % 2,
                 .trns = i % 5 == 4,
                 .level = 6,
                 .seed = 100 + (uint64_t)i};
    make(&s, &j.b[i], &j.len[i]);
    outcome v;
    through(true, j.b[i], j.len[i], &v);
    cr_assert_eq(v.st, IB_OK, "%s", v.err.message);
    j.want[i] = v.px;
  }
  pthread_t t[4];
  for (int k = 0; k < 4; k++) cr_assert_eq(pthread_create(&t[k], NULL, decode_many, &j), 0);
  for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
  cr_assert_eq(j.bad, 0);
  for (int i = 0; i < 12; i++) free(j.b[i]), free(j.want[i]);
  NO_LEAKS();
}

static long peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

/* Found by fuzz_image: a 76-byte file whose zTXt declares 1.9 GB. libpng
 * under libvips allocates (and touches) the declared length before reading
 * it (~1.9 GB peak); the new decoder skips the chunk: the same error, no
 * memory. Only the new decoder runs here (each test is its own process, so
 * the peak is this test's). */
Test(png_decode, a_chunk_declaring_gigabytes_costs_no_memory) {
  static const uint8_t file[] = {0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00,
                                 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x00,
                                 0x00, 0x07, 0x02, 0x03, 0x00, 0x00, 0x01, 0xd9, 0x19, 0x1f, 0x1f,
                                 0x00, 0x00, 0x00, 0x0c, 0x50, 0x4c, 0x54, 0x45, 0x20, 0x47, 0x92,
                                 0xa3, 0x37, 0xbe, 0xc8, 0x19, 0x22, 0xc8, 0x10, 0x62, 0xd9, 0x2c,
                                 0xb3, 0x24, 0x76, 0x65, 0x20, 0x66, 0x7a, 0x54, 0x58, 0x74, 0x69,
                                 0x6c, 0x74, 0x65, 0x72, 0x20, 0x76, 0x61, 0x6c, 0x75, 0x65};
  long before = peak_rss_mb();
  ib_shape s;
  ib_error e = {0};
  cr_assert_eq(ib_png_header(file, sizeof file, &s, &e), IB_DECODE);
  cr_assert_str_eq(e.message, "png: zTXt: chunk data is too large; not enough data");
  cr_assert_lt(peak_rss_mb() - before, 64, "peak RSS grew by %ld MB", peak_rss_mb() - before);
  NO_LEAKS();
}
