/* png_decode.c - PNG in through libpng, as libvips 8.14 reads it (see
 * png_decode.h). References below are to libvips/foreign/vipspng.c. */
#include "codec/png_decode.h"

#include <libdeflate.h>
#include <png.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codec/png_plain.h"
#include "core/error.h"

/* read_new()'s limits: libpng's 1M-pixel soft limit per axis raised to
 * VIPS_MAX_COORD (so an oversized header reaches parse's IB_LIMIT check,
 * not a decode error), 50 MB per chunk, 100 cached ancillary chunks. */
enum { MAX_COORD = 10000000, CHUNK_MALLOC_MAX = IB_PNG_CHUNK_MAX, CHUNK_CACHE_MAX = 100 };

/* Compressed bytes the last row's read may take beyond what it could
 * legitimately need: libpng inflates whatever follows the last row (into a
 * scratch buffer, looking for the stream's end), so a small file could
 * otherwise make it inflate up to ~1000x its size after the pixels. */
enum { TAIL_SLACK = 64 * 1024 };

/* The text, ICC, palette-suggestion and Exif chunks: libvips kept them as
 * metadata, which we drop; libpng would decompress and hold each (up to
 * CHUNK_MALLOC_MAX apiece, CHUNK_CACHE_MAX of them), and allocates a text
 * chunk's declared length before reading it (1.9 GB for a 76-byte file,
 * tests/unit/test_png_decode.c). Skipped as unknown chunks instead (still
 * CRC-checked): their handlers' problems are warnings, but for one (below),
 * so what decodes and what fails is unchanged; only a failing file's
 * message no longer lists their warnings. */
static const png_byte skipped[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT\0eXIf";
enum { N_SKIPPED = 6 };

/* Whether a skipped chunk comes before IHDR. libpng's own handlers refuse
 * one there ("tEXt: missing IHDR") where an unknown chunk passes, so such a
 * file is read with every chunk handled: libpng then fails it as libvips'
 * read did. Walks the chunk headers only. */
static bool skipped_before_ihdr(const uint8_t *p, size_t len) {
  for (size_t i = 8; i + 8 <= len;) {
    const uint8_t *type = p + i + 4;
    if (memcmp(type, "IHDR", 4) == 0 || memcmp(type, "IDAT", 4) == 0) return false;
    for (size_t k = 0; k < N_SKIPPED; k++)
      if (memcmp(type, skipped + 5 * k, 4) == 0) return true;
    size_t n = (size_t)p[i] << 24 | (size_t)p[i + 1] << 16 | (size_t)p[i + 2] << 8 | p[i + 3];
    if (n > len - i - 8) return false;
    i += 12 + n;
  }
  return false;
}

/* Whether every whole chunk in the file has a right CRC. libpng's check
 * (zlib's CRC-32) was a sixth of a 128^2 decode; libdeflate's is ~10x
 * faster. When all are right libpng's checks could not fail, so they are
 * switched off; otherwise libpng checks as libvips' read did and fails
 * where and as it failed. */
static bool crcs_right(const uint8_t *p, size_t len) {
  for (size_t i = 8; i + 12 <= len;) {
    size_t n = (size_t)p[i] << 24 | (size_t)p[i + 1] << 16 | (size_t)p[i + 2] << 8 | p[i + 3];
    if (n > len - i - 12) break;
    const uint8_t *c = p + i + 8 + n;
    uint32_t want = (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
    if (libdeflate_crc32(0, p + i + 4, n + 4) != want) return false;
    i += 12 + n;
  }
  return true;
}

typedef struct reader {
  const uint8_t *p;
  size_t left;
  size_t budget; /* bytes the reads may still take (SIZE_MAX: any) */
  png_structp png;
  png_infop info;
  bool rows;       /* past the header: failures are read errors */
  bool interlaced; /* libvips words an interlaced read's failure differently */
  char notes[200];
  size_t notes_len;
} reader;

/* libpng's errors and warnings, kept as codec.c keeps libvips' g_warning
 * lines (which is where vipspng.c sent them): trimmed, each once, "; "
 * between, cut at the buffer. */
static void note(reader *r, const char *msg) {
  if (!msg) return;
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) n--;
  if (!n || n >= sizeof r->notes) return;
  char one[sizeof r->notes];
  memcpy(one, msg, n);
  one[n] = 0;
  if (strstr(r->notes, one)) return;
  size_t room = sizeof r->notes - r->notes_len;
  int w = snprintf(r->notes + r->notes_len, room, "%s%s", r->notes_len ? "; " : "", one);
  if (w > 0) r->notes_len += (size_t)w < room ? (size_t)w : room - 1;
}

static void on_error(png_structp png, png_const_charp msg) {
  note(png_get_error_ptr(png), msg);
  png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { note(png_get_error_ptr(png), msg); }

static void on_read(png_structp png, png_bytep data, size_t n) {
  reader *r = png_get_io_ptr(png);
  if (n > r->left) png_error(png, "not enough data"); /* vips_png_read_source's words */
  if (n > r->budget) png_error(png, "IDAT: compressed data goes on far past the last row");
  memcpy(data, r->p, n);
  r->p += n;
  r->left -= n;
  if (r->budget != SIZE_MAX) r->budget -= n;
}

/* The message libvips gave for the same failure: header failures as its
 * notes alone, a failed row as vipspng's error with the notes after it, a
 * failed interlaced read (vipspng sets no error there) as the notes. */
static ib_status failed(reader *r, ib_error *err) {
  const char *why = r->notes_len ? r->notes : "libpng failed";
  if (r->rows && !r->interlaced)
    return r->notes_len
               ? ib_error_set(err, IB_DECODE, IB_STAGE_DECODE,
                              "png: vipspng: libpng read error (%s)", r->notes)
               : ib_error_set(err, IB_DECODE, IB_STAGE_DECODE, "png: vipspng: libpng read error");
  return ib_error_set(err, IB_DECODE, IB_STAGE_DECODE, "png: %s", why);
}

static bool open_reader(reader *r, const uint8_t *bytes, size_t len) {
  *r = (reader){.p = bytes, .left = len, .budget = SIZE_MAX};
  r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, on_error, on_warning);
  if (!r->png) return false;
  r->info = png_create_info_struct(r->png);
  if (!r->info) {
    png_destroy_read_struct(&r->png, NULL, NULL);
    return false;
  }
  return true;
}

/* Reads the header into *shape and, given dst, the rows: one function, so
 * that one setjmp covers every libpng call. Nothing here allocates: libpng
 * owns its buffers, freed by the caller's png_destroy_read_struct. */
static ib_status run(reader *r, ib_shape *shape, const ib_shape *want, uint8_t *dst,
                     ib_error *err) {
  if (setjmp(png_jmpbuf(r->png))) return failed(r, err);
  png_structp png = r->png;
  png_infop info = r->info;
  /* read_new(): broken sRGB profiles and Adler-32 sums are not errors. */
  png_set_option(png, PNG_SKIP_sRGB_CHECK_PROFILE, PNG_OPTION_ON);
  png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
  png_set_user_limits(png, MAX_COORD, MAX_COORD);
  png_set_chunk_malloc_max(png, CHUNK_MALLOC_MAX);
  png_set_chunk_cache_max(png, CHUNK_CACHE_MAX);
  if (!skipped_before_ihdr(r->p, r->left))
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, skipped, N_SKIPPED);
  /* (A header reads only the small chunks before IDAT: libpng checks.) */
  if (dst && crcs_right(r->p, r->left))
    png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
  png_set_read_fn(png, r, on_read);
  png_read_info(png, info);

  /* png2vips_header(): the bands from the colour type, one more for alpha
   * or tRNS (libpng drops a tRNS beside an alpha channel). */
  png_uint_32 width, height;
  int depth, color, interlace;
  png_get_IHDR(png, info, &width, &height, &depth, &color, &interlace, NULL, NULL);
  bool trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  unsigned bands = color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA ? 1 : 3;
  if (trns || (color & PNG_COLOR_MASK_ALPHA)) bands++;
  if (depth > 8) /* what codec.c says of libvips' ushort image */
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_DECODE,
                        "decode: png with ushort samples not supported (8-bit only)");
  static const ib_mode modes[] = {IB_MODE_L, IB_MODE_LA, IB_MODE_RGB, IB_MODE_RGBA};
  shape->mode = modes[bands - 1];
  shape->width = width;
  shape->height = height;
  if (!dst) return IB_OK;
  if (memcmp(shape, want, sizeof *shape) != 0)
    return ib_error_set(err, IB_DECODE, IB_STAGE_DECODE,
                        "decode: png changed shape since its header");

  /* png2vips_header()'s transforms, in its order. */
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (trns) png_set_tRNS_to_alpha(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  size_t stride = (size_t)width * bands;
  if (png_get_rowbytes(png, info) != stride)
    return ib_error_set(err, IB_DECODE, IB_STAGE_DECODE, "png: vipspng: unable to read PNG header");

  /* Rows as vipspng reads them: one png_read_row per row (png_read_image
   * for an interlaced image is the same calls, pass by pass, combining
   * each pass's pixels into the rows). No png_read_end: libvips stops at
   * the last row, so what follows the image is never looked at. */
  r->rows = true;
  r->interlaced = interlace != PNG_INTERLACE_NONE;
  for (int pass = 0; pass < passes; pass++)
    for (png_uint_32 y = 0; y < height; y++) {
      if (pass == passes - 1 && y == height - 1) r->budget = 16 * (stride + 1) + TAIL_SLACK;
      png_read_row(png, dst + y * stride, NULL);
    }
  return IB_OK;
}

static ib_status decode(const uint8_t *bytes, size_t len, ib_shape *shape, const ib_shape *want,
                        uint8_t *dst, ib_error *err) {
  reader r;
  if (!open_reader(&r, bytes, len))
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_DECODE, "png: out of memory");
  ib_status st = run(&r, shape, want, dst, err);
  png_destroy_read_struct(&r.png, &r.info, NULL);
  return st;
}

ib_status ib_png_header(const uint8_t *bytes, size_t len, ib_shape *shape, ib_error *err) {
  return decode(bytes, len, shape, NULL, NULL, err);
}

ib_status ib_png_decode_libpng(const uint8_t *bytes, size_t len, const ib_shape *shape,
                               uint8_t *dst, ib_error *err) {
  ib_shape got;
  return decode(bytes, len, &got, shape, dst, err);
}

ib_status ib_png_decode_into(const uint8_t *bytes, size_t len, const ib_shape *shape, uint8_t *dst,
                             ib_error *err) {
  if (ib_png_plain_decode(bytes, len, shape, dst)) return IB_OK;
  return ib_png_decode_libpng(bytes, len, shape, dst, err);
}
