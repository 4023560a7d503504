/*
 * fuzz_image.c - libFuzzer target: untrusted image bytes through the codec
 * as a job's encoded source goes: sniff the magic, read the header, check
 * it, then decode into a buffer of the header's shape (when it is small
 * enough that the fuzzer stays fast). Oracles: sanitizers, every error
 * message must be UTF-8 (it is echoed into a Result, a proto3 string), and
 * a PNG must get from codec/png_decode.c (libpng directly) the status,
 * shape and bytes the libvips path it replaced gives (ib_codec_*_vips;
 * messages may differ where png_decode.h says, and png_plain.h names the
 * one refusal of libpng's the plain path does not share). A JPEG (codec/jpeg_decode.c,
 * libjpeg directly) also goes through the draft decode (a scale of 2, 4 or
 * 8 picked from its length), whose header must be the full size divided by
 * the scale rounded up, in the same mode, whenever both read it. The metadata walk
 * (codec/metadata.h) and the EXIF IFD reader (codec/exif_orient.h) run on
 * every input, the latter also on the raw bytes as if they were EXIF:
 * orientations stay in -1..8.
 */
#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/exif_orient.h"
#include "codec/metadata.h"
#include "fuzz_util.h"
#include "imgbatch.h"

/* 4 MP: far above the seeds, small enough for -rss_limit_mb=2048. */
#define FZ_MAX_PIXELS (4u << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fz_quiet_vips();
  return 0;
}

static bool is_png(const uint8_t *data, size_t size) {
  return size >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0;
}

/* libFuzzer's mutations, then, for three PNGs in four, every whole chunk's
 * CRC made right again: libpng refuses a critical chunk with a bad CRC, so
 * without this almost no mutated IHDR, PLTE, tRNS or IDAT would get past
 * the CRC check into the decoder. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max);
  if (!is_png(data, size) || seed % 4 == 0) return size;
  for (size_t i = 8; i + 12 <= size;) {
    size_t n =
        (size_t)data[i] << 24 | (size_t)data[i + 1] << 16 | (size_t)data[i + 2] << 8 | data[i + 3];
    if (n > size - i - 12) break;
    uint32_t crc = libdeflate_crc32(0, data + i + 4, n + 4);
    uint8_t *c = data + i + 8 + n;
    c[0] = (uint8_t)(crc >> 24), c[1] = (uint8_t)(crc >> 16), c[2] = (uint8_t)(crc >> 8);
    c[3] = (uint8_t)crc;
    i += 12 + n;
  }
  return size;
}

/* The libvips path agrees with the status `st` (and, where OK, `shape`). */
static void vips_header_agrees(const uint8_t *data, size_t size, ib_status st,
                               const ib_shape *shape, const ib_error *err) {
  ib_shape v = {0};
  ib_error verr = {0};
  ib_status vst = ib_codec_header_vips(data, size, &v, &verr);
  if (vst != st) fz_fail("png header: libpng and libvips disagree on status", verr.message);
  if (st == IB_OK && memcmp(&v, shape, sizeof v) != 0)
    fz_fail("png header: libpng and libvips disagree on shape", err->message);
}

/* png_plain.h's one stated difference: libdeflate reads what zlib refuses
 * as invalid codes (the reserved fixed-code symbols, too many code lengths,
 * a degenerate code's unused codeword, a repeat past the lengths) by the
 * code's nearest meaning, so the plain path decodes a file whose stream
 * has one and whose Adler-32 still matches, where libpng fails with one of
 * these zlib messages. Any other refusal must still agree. */
static bool zlib_refused_a_remapped_code(const char *vips_message) {
  static const char *remapped[] = {
      "IDAT: invalid literal/length code", "IDAT: invalid distance code",
      "IDAT: too many length or distance symbols", "IDAT: invalid code lengths set",
      "IDAT: invalid bit length repeat"};
  for (size_t i = 0; i < sizeof remapped / sizeof *remapped; i++)
    if (strstr(vips_message, remapped[i])) return true;
  return false;
}

static void vips_decode_agrees(const uint8_t *data, size_t size, const ib_shape *shape,
                               ib_status st, const uint8_t *px, size_t n, const ib_error *err) {
  /* png_decode.c's bound on compressed data after the last row: libvips
   * reads on (png_decode.h says so). */
  if (st != IB_OK && strstr(err->message, "far past the last row")) return;
  uint8_t *v = malloc(n);
  if (!v) return;
  ib_error verr = {0};
  ib_status vst = ib_codec_decode_into_vips(data, size, shape, v, &verr);
  if (vst != st && !(st == IB_OK && zlib_refused_a_remapped_code(verr.message)))
    fz_fail("png decode: libpng and libvips disagree on status", verr.message);
  if (st == IB_OK && memcmp(v, px, n) != 0)
    fz_fail("png decode: libpng and libvips decode different bytes", "");
  free(v);
}

/* Whether the libvips path may read the file: libpng under libvips
 * allocates a text chunk's declared length before reading it (a 76-byte
 * file declaring a 2 GB zTXt took 2 GB), which the new decoder never does
 * (it skips such chunks); no comparison for those. */
static bool vips_can_take(const uint8_t *data, size_t size) {
  for (size_t i = 8; i + 8 <= size;) {
    size_t n =
        (size_t)data[i] << 24 | (size_t)data[i + 1] << 16 | (size_t)data[i + 2] << 8 | data[i + 3];
    if (n > size - i - 8) return false;
    i += 12 + n;
  }
  return true;
}

static void decode_checked(const uint8_t *data, size_t size, unsigned draft,
                           const ib_shape *shape) {
  if (shape->width > IB_DEFAULT_MAX_SIDE || shape->height > IB_DEFAULT_MAX_SIDE)
    return; /* parse's limit */
  uint64_t pixels = (uint64_t)shape->width * shape->height;
  if (pixels > FZ_MAX_PIXELS) return;
  uint8_t *dst = malloc((size_t)pixels * ib_mode_bands(shape->mode));
  if (!dst) return;
  ib_error err = {0};
  if (ib_codec_decode_into_draft(data, size, draft, shape, dst, &err) != IB_OK)
    fz_check_str("draft decode error message is not UTF-8", err.message);
  free(dst);
}

/* The draft path of a JPEG against the full-size header `full` (st_full). */
static void draft_agrees(const uint8_t *data, size_t size, ib_status st_full,
                         const ib_shape *full) {
  if (size < 3 || data[0] != 0xFF || data[1] != 0xD8 || data[2] != 0xFF) return;
  unsigned draft = 2u << (size % 3);
  ib_shape shape = {0};
  ib_error err = {0};
  ib_status st = ib_codec_header_draft(data, size, draft, &shape, &err);
  if (st != IB_OK) {
    fz_check_str("draft header error message is not UTF-8", err.message);
    return;
  }
  if (ib_mode_bands(shape.mode) == 0 || shape.width == 0 || shape.height == 0)
    fz_fail("draft header reported an empty shape or no mode", "");
  if (st_full == IB_OK &&
      (shape.mode != full->mode || shape.width != (full->width + draft - 1) / draft ||
       shape.height != (full->height + draft - 1) / draft))
    fz_fail("draft header is not the full header scaled, rounded up", "");
  decode_checked(data, size, draft, &shape);
}

static void metadata_reads(const uint8_t *data, size_t size) {
  int v = 0;
  if (ib_exif_orientation(data, size, &v) == IB_EXIF_TAG && (v < 1 || v > 8))
    fz_fail("exif: orientation out of 1..8", "");
  int x = ib_xmp_orientation(data, size);
  if (x < 0 || x > 9) fz_fail("xmp: orientation out of 0..9", "");
  ib_meta m;
  if (ib_meta_read(data, size, &m) != 0) return;
  int o = ib_meta_orientation(&m);
  if (o < -1 || o > 8 || o == 0) fz_fail("metadata: orientation out of -1, 1..8", "");
  ib_meta_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  metadata_reads(data, size);
  ib_shape shape = {0};
  ib_error err = {0};
  ib_status st = ib_codec_header(data, size, &shape, &err);
  bool png = is_png(data, size) && vips_can_take(data, size);
  if (png) vips_header_agrees(data, size, st, &shape, &err);
  draft_agrees(data, size, st, &shape);
  if (st != IB_OK) {
    fz_check_str("header error message is not UTF-8", err.message);
    return 0;
  }
  unsigned bands = ib_mode_bands(shape.mode);
  if (bands == 0 || shape.width == 0 || shape.height == 0)
    fz_fail("header reported an empty shape or no mode", err.message);
  if (shape.width > IB_DEFAULT_MAX_SIDE || shape.height > IB_DEFAULT_MAX_SIDE)
    return 0; /* parse's limit */
  uint64_t pixels = (uint64_t)shape.width * shape.height;
  if (pixels > FZ_MAX_PIXELS) return 0;
  size_t n = (size_t)pixels * bands;
  uint8_t *dst = malloc(n);
  if (!dst) return 0;
  err = (ib_error){0};
  st = ib_codec_decode_into(data, size, &shape, dst, &err);
  if (st != IB_OK) fz_check_str("decode error message is not UTF-8", err.message);
  if (png) vips_decode_agrees(data, size, &shape, st, dst, n, &err);
  free(dst);
  return 0;
}
