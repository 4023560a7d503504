/* The plain PNG path (codec/png_plain.c) against libpng alone
 * (ib_png_decode_libpng): plain files of every mode, odd size and filter
 * type decode through it to their own pixels; and for thousands of
 * variants - each a plain file with one thing changed that the plain path
 * checks (filter type, window, Adler-32, data after the stream, a chunk it
 * leaves to libpng, a CRC, a truncation, a flipped byte) -
 * ib_png_decode_into gives libpng's status, message and bytes. */
#include <criterion/criterion.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/png_decode.h"
#include "codec/png_plain.h"
#include "tools/pnggen.h"

static const ib_mode modes[] = {IB_MODE_L, IB_MODE_LA, IB_MODE_RGB, IB_MODE_RGBA};
static const uint8_t color_of[] = {0, 4, 2, 6};

/* How a plain file is written; variants change one thing. */
typedef struct plain_spec {
  int mode; /* index into modes */
  uint32_t w, h;
  int filter;         /* 0..4 for every row, 5: each row its own (random) */
  int level;          /* libdeflate 0..12 */
  size_t idat_pieces; /* the stream split into this many IDAT chunks */
  bool ancillary;     /* gAMA, pHYs, tEXt and a private chunk before IDAT */
  uint64_t seed;
} plain_spec;

static uint8_t paeth_of(int a, int b, int c) {
  int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
  return (uint8_t)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

/* The filtered rows of px (height x (1 + stride)), each row's type from
 * the spec. Written independently of the decoder's unfilter. */
static uint8_t *filtered(const plain_spec *s, const uint8_t *px, uint64_t *rng) {
  const size_t bpp = ib_mode_bands(modes[s->mode]), stride = s->w * bpp;
  uint8_t *f = malloc(s->h * (stride + 1));
  cr_assert_not_null(f);
  for (uint32_t y = 0; y < s->h; y++) {
    const uint8_t *row = px + y * stride, *up = y ? row - stride : NULL;
    uint8_t *o = f + y * (stride + 1);
    const int t = s->filter < 5 ? s->filter : (int)(pg_rand(rng) % 5);
    o[0] = (uint8_t)t;
    for (size_t i = 0; i < stride; i++) {
      const int a = i >= bpp ? row[i - bpp] : 0, b = up ? up[i] : 0,
                c = up && i >= bpp ? up[i - bpp] : 0;
      const int pred = t == 0   ? 0
                       : t == 1 ? a
                       : t == 2 ? b
                       : t == 3 ? (a + b) / 2
                                : paeth_of(a, b, c);
      o[1 + i] = (uint8_t)(row[i] - pred);
    }
  }
  return f;
}

static void put_ihdr(pg_buf *o, const plain_spec *s) {
  uint8_t d[13] = {0};
  for (int k = 0; k < 4; k++) d[k] = (uint8_t)(s->w >> (24 - 8 * k));
  for (int k = 0; k < 4; k++) d[4 + k] = (uint8_t)(s->h >> (24 - 8 * k));
  d[8] = 8;
  d[9] = color_of[s->mode];
  pg_chunk(o, "IHDR", d, 13);
}

static void put_ancillary(pg_buf *o) {
  static const uint8_t gama[4] = {0, 0, 0xb1, 0x8f},
                       phys[9] = {0, 0, 0x0b, 0x13, 0, 0, 0x0b, 0x13, 1};
  pg_chunk(o, "gAMA", gama, 4);
  pg_chunk(o, "pHYs", phys, 9);
  pg_chunk(o, "tEXt", "Comment\0plain", 13);
  pg_chunk(o, "prVt", "xyz", 3);
}

/* The zlib stream of the filtered rows. */
static uint8_t *compress_rows(const plain_spec *s, const uint8_t *rows, size_t n, size_t *zn) {
  struct libdeflate_compressor *c = libdeflate_alloc_compressor(s->level);
  cr_assert_not_null(c);
  size_t cap = libdeflate_zlib_compress_bound(c, n) + 64;
  uint8_t *z = malloc(cap);
  *zn = libdeflate_zlib_compress(c, rows, n, z, cap);
  cr_assert_gt(*zn, 0);
  libdeflate_free_compressor(c);
  return z;
}

/* signature, IHDR, [ancillary], IDAT x pieces (of z), IEND */
static void assemble(pg_buf *o, const plain_spec *s, const uint8_t *z, size_t zn, uint64_t *rng) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  *o = (pg_buf){0};
  pg_put(o, sig, 8);
  put_ihdr(o, s);
  if (s->ancillary) put_ancillary(o);
  size_t at = 0;
  for (size_t k = 0; k < s->idat_pieces; k++) {
    size_t n = k + 1 == s->idat_pieces ? zn - at : (zn - at) * (pg_rand(rng) % 100) / 100;
    pg_chunk(o, "IDAT", z + at, (uint32_t)n);
    at += n;
  }
  pg_chunk(o, "IEND", NULL, 0);
}

static uint8_t *random_pixels(const plain_spec *s, uint64_t *rng, size_t *n) {
  *n = (size_t)s->w * s->h * ib_mode_bands(modes[s->mode]);
  uint8_t *px = malloc(*n ? *n : 1);
  const bool smooth = s->seed % 2;
  for (size_t i = 0; i < *n; i++)
    px[i] = smooth ? (uint8_t)(i / 7 + (pg_rand(rng) & 3)) : (uint8_t)pg_rand(rng);
  return px;
}

static plain_spec random_spec(uint64_t *rng, uint64_t seed) {
  static const uint32_t sides[] = {1, 2, 3, 5, 7, 16, 31, 64, 129, 300};
  plain_spec s = {.mode = (int)(pg_rand(rng) % 4),
                  .w = sides[pg_rand(rng) % 10],
                  .h = sides[pg_rand(rng) % 10],
                  .filter = (int)(pg_rand(rng) % 6),
                  .level = (int)(pg_rand(rng) % 13),
                  .idat_pieces = 1 + pg_rand(rng) % 4,
                  .ancillary = pg_rand(rng) % 2,
                  .seed = seed};
  return s;
}

Test(png_plain, plain_files_decode_to_their_pixels_through_the_plain_path) {
  uint64_t rng = 0x9e3779b97f4a7c15u;
  size_t by_filter[6] = {0};
  for (uint64_t k = 0; k < 600; k++) {
    plain_spec s = random_spec(&rng, k);
    if (k < 24) s.filter = (int)(k % 6), s.mode = (int)(k / 6); /* every filter x mode */
    size_t n;
    uint8_t *px = random_pixels(&s, &rng, &n);
    uint8_t *rows = filtered(&s, px, &rng);
    size_t zn;
    uint8_t *z = compress_rows(&s, rows, s.h * (n / s.h + 1), &zn);
    pg_buf f;
    assemble(&f, &s, z, zn, &rng);
    const ib_shape shape = {.mode = modes[s.mode], .width = s.w, .height = s.h};
    ib_shape hdr;
    ib_error err = {0};
    cr_assert_eq(ib_png_header(f.p, f.len, &hdr, &err), IB_OK, "%s", err.message);
    cr_assert_eq(memcmp(&hdr, &shape, sizeof shape), 0);
    uint8_t *got = malloc(n), *ref = malloc(n);
    memset(got, 0x5a, n);
    cr_assert(ib_png_plain_decode(f.p, f.len, &shape, got),
              "case %llu: %ux%u mode %d filter %d level %d pieces %zu: not taken as plain",
              (unsigned long long)k, s.w, s.h, s.mode, s.filter, s.level, s.idat_pieces);
    cr_assert_eq(memcmp(got, px, n), 0, "case %llu: pixels", (unsigned long long)k);
    cr_assert_eq(ib_png_decode_libpng(f.p, f.len, &shape, ref, &err), IB_OK, "%s", err.message);
    cr_assert_eq(memcmp(ref, px, n), 0, "case %llu: libpng's pixels", (unsigned long long)k);
    by_filter[s.filter]++;
    free(got), free(ref), free(px), free(rows), free(z), free(f.p);
  }
  for (int t = 0; t < 6; t++)
    cr_assert_gt(by_filter[t], 20, "filter %d: %zu files", t, by_filter[t]);
}

/* ib_png_decode_into (plain path first) and libpng alone agree. */
static void agree(const uint8_t *b, size_t len, const ib_shape *shape, const char *what,
                  size_t *n_ok) {
  const size_t n = (size_t)shape->width * shape->height * ib_mode_bands(shape->mode);
  uint8_t *a = malloc(n), *r = malloc(n);
  memset(a, 0x11, n);
  memset(r, 0x11, n);
  ib_error ea = {0}, er = {0};
  ib_status sa = ib_png_decode_into(b, len, shape, a, &ea);
  ib_status sr = ib_png_decode_libpng(b, len, shape, r, &er);
  cr_assert_eq(sa, sr, "%s: %d (%s), libpng %d (%s)", what, sa, ea.message, sr, er.message);
  if (sr == IB_OK) {
    cr_assert_eq(memcmp(a, r, n), 0, "%s: pixels differ", what);
    ++*n_ok;
  } else {
    cr_assert_str_eq(ea.message, er.message, "%s", what);
  }
  free(a), free(r);
}

static void set32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (24 - 8 * k));
}

/* Recomputes the CRC of the chunk at `at`. */
static void fix_crc(uint8_t *p, size_t at) {
  uint32_t n = pg_chunk_len(p, at);
  set32(p + at + 8 + n, libdeflate_crc32(0, p + at + 4, (size_t)n + 4));
}

/* A chunk inserted before the first IDAT. */
static void insert_before_idat(pg_buf *o, const pg_buf *f, const char *type, const uint8_t *d,
                               uint32_t n) {
  size_t at[64] = {0};
  size_t k = pg_chunks(f->p, f->len, at, 64), i = 0;
  while (i < k && memcmp(f->p + at[i] + 4, "IDAT", 4) != 0) i++;
  cr_assert_lt(i, k, "no IDAT");
  *o = (pg_buf){0};
  pg_put(o, f->p, at[i]);
  pg_chunk(o, type, d, n);
  pg_put(o, f->p + at[i], f->len - at[i]);
}

Test(png_plain, every_variant_decodes_or_fails_as_libpng_alone) {
  uint64_t rng = 0x1234567u;
  size_t n_ok = 0, n_all = 0;
  for (uint64_t k = 0; k < 400; k++) {
    plain_spec s = random_spec(&rng, k);
    s.w = 1 + s.w % 40, s.h = 1 + s.h % 40; /* many variants, small files */
    size_t n;
    uint8_t *px = random_pixels(&s, &rng, &n);
    uint8_t *rows = filtered(&s, px, &rng);
    const size_t rn = s.h * (n / s.h + 1);
    const ib_shape shape = {.mode = modes[s.mode], .width = s.w, .height = s.h};
    for (int v = 0; v < 12; v++, n_all++) {
      uint8_t *r2 = malloc(rn + 64);
      memcpy(r2, rows, rn);
      size_t r2n = rn;
      if (v == 0) r2[(pg_rand(&rng) % s.h) * (rn / s.h)] = (uint8_t)(5 + pg_rand(&rng) % 251);
      if (v == 1) r2n = rn - 1 - pg_rand(&rng) % (rn < 3 ? 1 : rn / 2);      /* too few rows */
      if (v == 2) r2n = rn + 1 + pg_rand(&rng) % 40, memset(r2 + rn, 7, 64); /* too many */
      if (v == 3) /* rows that repeat three rows down: matches further back than 256 bytes */
        for (size_t y = 3; y < s.h; y++)
          memcpy(r2 + y * (rn / s.h), r2 + (y - 3) * (rn / s.h), rn / s.h);
      size_t zn;
      uint8_t *z = compress_rows(&s, r2, r2n, &zn);
      uint8_t *z2 = malloc(zn + 16);
      memcpy(z2, z, zn);
      if (v == 3) { /* a smaller window declared (16 KiB or 256 bytes), FLG fixed for the
                     * check: zlib refuses a distance past it, libdeflate does not */
        z2[0] = k % 2 ? 0x68 : 0x08;
        z2[1] = (uint8_t)(z2[1] & 0xe0);
        z2[1] = (uint8_t)(z2[1] + (31 - (z2[0] * 256 + z2[1]) % 31) % 31);
      }
      if (v == 4) z2[zn - 1] ^= 0x5a;                          /* Adler-32 */
      if (v == 5) memcpy(z2 + zn, "\x03\x00junk", 6), zn += 6; /* after the stream */
      if (v == 6 && zn > 8) z2[2 + pg_rand(&rng) % (zn - 6)] ^= (uint8_t)(1 + pg_rand(&rng) % 255);
      pg_buf f;
      assemble(&f, &s, z2, zn, &rng);
      pg_buf g = {0};
      const pg_buf *use = &f;
      size_t at[64];
      size_t nc = pg_chunks(f.p, f.len, at, 64);
      if (v == 7) { /* a chunk the plain path leaves to libpng */
        static const char *types[] = {"tRNS", "PLTE", "zZzZ", "sBIT", "bKGD", "cHRM", "sRGB"};
        const char *t = types[pg_rand(&rng) % 7];
        uint8_t d[12] = {0, 1, 0, 2, 0, 3, 0, 0, 0, 0, 0, 0};
        insert_before_idat(&g, &f, t, d,
                           (uint32_t)(t[0] == 'P'   ? 6
                                      : t[0] == 's' ? 1 + s.mode
                                                    : 6));
        use = &g;
      }
      if (v == 8) f.p[at[pg_rand(&rng) % nc] + 8] ^= 0x40; /* a CRC broken (or IEND's data) */
      if (v == 9) f.len = 8 + pg_rand(&rng) % (f.len - 8); /* truncated */
      if (v == 10) f.p[8 + pg_rand(&rng) % (f.len - 8)] ^= (uint8_t)(1 + pg_rand(&rng) % 255);
      if (v == 11 && nc > 3) { /* a flipped byte with its CRC made right again */
        size_t c = at[1 + pg_rand(&rng) % (nc - 2)];
        uint32_t cl = pg_chunk_len(f.p, c);
        if (cl)
          f.p[c + 8 + pg_rand(&rng) % cl] ^= (uint8_t)(1 + pg_rand(&rng) % 255), fix_crc(f.p, c);
      }
      char what[160];
      snprintf(what, sizeof what,
               "case %llu variant %d: %ux%u mode %d filter %d level %d pieces %zu",
               (unsigned long long)k, v, s.w, s.h, s.mode, s.filter, s.level, s.idat_pieces);
      agree(use->p, use->len, &shape, what, &n_ok);
      free(g.p), free(f.p), free(z), free(z2), free(r2);
    }
    free(px), free(rows);
  }
  /* Both outcomes are exercised: the variants that stay decodable (Adler,
   * window, chunks libpng passes over) and those that fail. */
  cr_assert_gt(n_ok, n_all / 5, "%zu of %zu decoded", n_ok, n_all);
  cr_assert_lt(n_ok, n_all * 4 / 5, "%zu of %zu decoded", n_ok, n_all);
}

/* The plain path's size bound (png_plain.h): a 4096^2 RGBA image's
 * filtered rows inflate at once, one byte more goes to libpng (which
 * streams its rows). Here as L images 16384 wide: 4096 rows are exactly
 * the bound, 4097 are past it; both decode to their pixels. */
Test(png_plain, past_a_4096_square_rgba_image_the_rows_go_to_libpng, .timeout = 120) {
  for (uint32_t h = 4096; h <= 4097; h++) {
    plain_spec s = {.mode = 0, .w = 16384, .h = h, .filter = 0, .level = 1, .idat_pieces = 1};
    const size_t rn = (size_t)h * (s.w + 1);
    uint8_t *rows = calloc(rn, 1); /* filter 0, zero pixels */
    size_t zn;
    uint8_t *z = compress_rows(&s, rows, rn, &zn);
    uint64_t rng = 1;
    pg_buf f;
    assemble(&f, &s, z, zn, &rng);
    const ib_shape shape = {.mode = IB_MODE_L, .width = s.w, .height = h};
    const size_t n = (size_t)s.w * h;
    uint8_t *px = malloc(n);
    memset(px, 0x7f, n);
    cr_assert_eq(ib_png_plain_decode(f.p, f.len, &shape, px), h == 4096, "%u rows", h);
    memset(px, 0x7f, n);
    ib_error err = {0};
    cr_assert_eq(ib_png_decode_into(f.p, f.len, &shape, px, &err), IB_OK, "%s", err.message);
    uint8_t any = 0;
    for (size_t i = 0; i < n; i++) any |= px[i];
    cr_assert_eq(any, 0, "%u rows: pixels not all zero", h);
    free(px), free(rows), free(z), free(f.p);
  }
}

/* A deflate bit writer: fields LSB first, Huffman codes MSB first. */
typedef struct bits {
  uint8_t p[4096];
  size_t n; /* bits written */
} bits;

static void put_bits(bits *b, uint32_t v, int n) {
  for (int k = 0; k < n; k++, b->n++)
    if (v >> k & 1) b->p[b->n / 8] |= (uint8_t)(1u << (b->n % 8));
}

static void put_code(bits *b, uint32_t code, int n) {
  for (int k = n - 1; k >= 0; k--) put_bits(b, code >> k & 1, 1);
}

/* A symbol of the fixed litlen code, 0..287 (286 and 287 are reserved). */
static void put_fixed_litlen(bits *b, unsigned sym) {
  if (sym < 144)
    put_code(b, 0x30 + sym, 8);
  else if (sym < 256)
    put_code(b, 0x190 + sym - 144, 9);
  else if (sym < 280)
    put_code(b, sym - 256, 7);
  else
    put_code(b, 0xc0 + sym - 280, 8);
}

/* The zlib stream (32 KiB window) of one fixed block inflating to 25600
 * zero bytes - a 255x100 L image's filtered rows, every filter type 0 -
 * through one symbol picked by `reserved`: 0 none, 1 litlen 286 where 285
 * would do (a 258-byte match either way to libdeflate), 2 distance 30 where
 * 29 would do (24577 back, with 13 extra bits). */
static size_t reserved_code_stream(int reserved, uint8_t *z) {
  bits b = {0};
  put_bits(&b, 1, 1), put_bits(&b, 1, 2); /* BFINAL, fixed codes */
  size_t out = 0;
  put_fixed_litlen(&b, 0), out++;
  for (int k = 0; k < 99; k++) { /* 258 zeros a match, one back */
    put_fixed_litlen(&b, k == 0 && reserved == 1 ? 286 : 285);
    put_code(&b, 0, 5), out += 258;
  }
  put_fixed_litlen(&b, 257); /* 3 zeros from 24577 back */
  put_code(&b, reserved == 2 ? 30 : 29, 5), put_bits(&b, 0, 13), out += 3;
  while (out < 25600) put_fixed_litlen(&b, 0), out++;
  put_fixed_litlen(&b, 256);
  size_t n = (b.n + 7) / 8;
  uint8_t *zeros = calloc(25600, 1);
  const uint32_t adler = libdeflate_adler32(1, zeros, 25600);
  free(zeros);
  z[0] = 0x78, z[1] = 0x01;
  memcpy(z + 2, b.p, n);
  set32(z + 2 + n, adler);
  return n + 6;
}

/* A decision png_plain.h states: libdeflate reads the reserved fixed-code
 * symbols (litlen 286/287, distance 30/31) as their neighbours where zlib
 * refuses them, so a file whose stream uses one - and whose Adler-32 still
 * matches - decodes through the plain path where libpng alone fails. The
 * same stream with the neighbours decodes the same through both. */
Test(png_plain, a_reserved_fixed_code_decodes_here_where_libpng_refuses) {
  const plain_spec s = {.mode = 0, .w = 255, .h = 100, .idat_pieces = 1};
  const ib_shape shape = {.mode = IB_MODE_L, .width = 255, .height = 100};
  static const char *zlib_says[] = {NULL, "invalid literal/length code", "invalid distance code"};
  for (int reserved = 0; reserved < 3; reserved++) {
    uint8_t z[4200];
    size_t zn = reserved_code_stream(reserved, z);
    uint64_t rng = 1;
    pg_buf f;
    assemble(&f, &s, z, zn, &rng);
    uint8_t *a = malloc(25500), *r = malloc(25500);
    memset(a, 0x11, 25500);
    ib_error ea = {0}, er = {0};
    cr_assert_eq(ib_png_decode_into(f.p, f.len, &shape, a, &ea), IB_OK, "%d: %s", reserved,
                 ea.message);
    for (size_t i = 0; i < 25500; i++) cr_assert_eq(a[i], 0, "%d: pixel %zu", reserved, i);
    ib_status sr = ib_png_decode_libpng(f.p, f.len, &shape, r, &er);
    if (reserved == 0) {
      cr_assert_eq(sr, IB_OK, "%s", er.message);
      cr_assert_eq(memcmp(a, r, 25500), 0);
    } else {
      cr_assert_neq(sr, IB_OK);
      cr_assert_not_null(strstr(er.message, zlib_says[reserved]), "%d: %s", reserved, er.message);
    }
    free(a), free(r), free(f.p);
  }
}
