/* The JPEG decode's edges (codec/jpeg_decode.c): the full-size path equal
 * to the libvips path it replaced, draft sizes rounded up, scales outside
 * Pillow's refused, what is not a JPEG left to the other decoders, damage
 * answered as a value. Bytes against live Pillow are
 * tests/py/parity/test_draft.py's and the parity suite's. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/jpeg_decode.h"
#include "codec/jpeg_encode.h"

static uint8_t *encode_with(uint32_t w, uint32_t h, ib_mode mode, int subsampling, bool progressive,
                            size_t *len) {
  unsigned bands = ib_mode_bands(mode);
  uint8_t *px = malloc((size_t)w * h * bands);
  cr_assert(px);
  for (size_t i = 0; i < (size_t)w * h * bands; i++) px[i] = (uint8_t)(i * 7 + i / 13);
  ib_jpeg_options o = {.quality = 90, .subsampling = subsampling, .progressive = progressive};
  uint8_t *out = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_jpeg_encode(px, w, h, mode, (size_t)w * bands, &o, &out, len, &err), IB_OK, "%s",
               err.message);
  free(px);
  return out;
}

static uint8_t *encode(uint32_t w, uint32_t h, ib_mode mode, size_t *len) {
  return encode_with(w, h, mode, 2, false, len);
}

Test(jpeg_decode, the_size_is_the_full_size_over_the_scale_rounded_up) {
  static const uint32_t sides[][2] = {{1, 1}, {7, 9}, {8, 8}, {9, 17}, {33, 1}, {101, 67}};
  static const ib_mode modes[] = {IB_MODE_L, IB_MODE_RGB, IB_MODE_CMYK};
  for (size_t i = 0; i < sizeof sides / sizeof *sides; i++)
    for (size_t m = 0; m < 3; m++)
      for (unsigned s = 2; s <= 8; s *= 2) {
        size_t len = 0;
        uint8_t *jpg = encode(sides[i][0], sides[i][1], modes[m], &len);
        ib_shape shape = {0};
        ib_error err = {0};
        cr_assert_eq(ib_codec_header_draft(jpg, len, s, &shape, &err), IB_OK, "%s", err.message);
        cr_expect_eq(shape.mode, modes[m]);
        cr_expect_eq(shape.width, (sides[i][0] + s - 1) / s, "%ux%u at 1/%u", sides[i][0],
                     sides[i][1], s);
        cr_expect_eq(shape.height, (sides[i][1] + s - 1) / s);
        uint8_t *dst = malloc((size_t)shape.width * shape.height * ib_mode_bands(shape.mode));
        cr_assert(dst);
        cr_expect_eq(ib_codec_decode_into_draft(jpg, len, s, &shape, dst, &err), IB_OK, "%s",
                     err.message);
        free(dst);
        ib_codec_free(jpg);
      }
}

Test(jpeg_decode, scales_zero_and_one_and_other_formats_take_the_full_size_path) {
  size_t len = 0;
  uint8_t *jpg = encode(21, 11, IB_MODE_RGB, &len);
  for (unsigned s = 0; s <= 1; s++) {
    ib_shape shape = {0};
    ib_error err = {0};
    cr_assert_eq(ib_codec_header_draft(jpg, len, s, &shape, &err), IB_OK, "%s", err.message);
    cr_expect(shape.width == 21 && shape.height == 11);
  }
  static const uint8_t not_jpeg[] = "GIF89a\x01\x00\x01\x00\x00\x00\x00;";
  ib_shape shape = {0};
  ib_error err = {0};
  ib_codec_header_draft(not_jpeg, sizeof not_jpeg - 1, 8, &shape, &err);
  cr_expect(strstr(err.message, "jpeg draft") == NULL, "%s", err.message);
  ib_codec_free(jpg);
}

Test(jpeg_decode, a_scale_pillow_never_picks_is_invalid_naming_it) {
  size_t len = 0;
  uint8_t *jpg = encode(16, 16, IB_MODE_L, &len);
  ib_shape shape = {0};
  ib_error err = {0};
  cr_expect_eq(ib_jpeg_header(jpg, len, 3, &shape, &err), IB_INVALID);
  cr_expect(strstr(err.message, "1/3"), "%s", err.message);
  cr_expect_eq(err.stage, IB_STAGE_DECODE);
  ib_codec_free(jpg);
}

Test(jpeg_decode, damage_is_a_decode_error_with_libjpegs_words) {
  size_t len = 0;
  uint8_t *jpg = encode(64, 48, IB_MODE_RGB, &len);
  ib_shape shape = {0};
  ib_error err = {0};
  cr_assert_eq(ib_jpeg_header(jpg, len, 2, &shape, &err), IB_OK);
  uint8_t *dst = malloc((size_t)32 * 24 * 3);
  cr_assert(dst);
  /* Cut inside the entropy data: truncated before the last row. */
  cr_expect_eq(ib_jpeg_decode_into(jpg, len / 2, 2, &shape, dst, &err), IB_DECODE);
  cr_expect(strstr(err.message, "truncated"), "%s", err.message);
  /* Only the header's first bytes: no frame to read. */
  cr_expect_eq(ib_jpeg_header(jpg, 20, 2, &shape, &err), IB_DECODE);
  cr_expect(strstr(err.message, "jpeg draft 1/2"), "%s", err.message);
  /* A shape other than the header's is refused before anything is written. */
  ib_shape other = shape;
  other.width++;
  cr_expect_eq(ib_jpeg_decode_into(jpg, len, 2, &other, dst, &err), IB_DECODE);
  cr_expect(strstr(err.message, "changed shape"), "%s", err.message);
  free(dst);
  ib_codec_free(jpg);
}

/* Every mode, subsampling and scan kind, odd sizes and 1x1: the libjpeg path
 * gives the header and the bytes the libvips path gave (libjpeg under both;
 * the encoder writes the Adobe marker, after which libvips inverts CMYK as
 * Pillow always does). */
Test(jpeg_decode, full_size_equals_the_libvips_path_it_replaced) {
  static const uint32_t sides[][2] = {{1, 1}, {7, 9}, {16, 8}, {33, 17}, {101, 67}};
  static const ib_mode modes[] = {IB_MODE_L, IB_MODE_RGB, IB_MODE_CMYK};
  for (size_t i = 0; i < sizeof sides / sizeof *sides; i++)
    for (size_t m = 0; m < 3; m++)
      for (int sub = 0; sub <= 2; sub++)
        for (int prog = 0; prog <= 1; prog++) {
          size_t len = 0;
          uint8_t *jpg = encode_with(sides[i][0], sides[i][1], modes[m], sub, prog, &len);
          ib_shape shape = {0}, ref = {0};
          ib_error err = {0};
          cr_assert_eq(ib_codec_header(jpg, len, &shape, &err), IB_OK, "%s", err.message);
          cr_assert_eq(ib_codec_header_vips(jpg, len, &ref, &err), IB_OK, "%s", err.message);
          cr_assert(memcmp(&shape, &ref, sizeof shape) == 0, "%ux%u mode %d", sides[i][0],
                    sides[i][1], (int)modes[m]);
          size_t n = (size_t)shape.width * shape.height * ib_mode_bands(shape.mode);
          uint8_t *got = malloc(n), *want = malloc(n);
          cr_assert(got && want);
          cr_assert_eq(ib_codec_decode_into(jpg, len, &shape, got, &err), IB_OK, "%s", err.message);
          cr_assert_eq(ib_codec_decode_into_vips(jpg, len, &shape, want, &err), IB_OK, "%s",
                       err.message);
          cr_expect(memcmp(got, want, n) == 0, "%ux%u mode %d sub %d progressive %d: bytes differ",
                    sides[i][0], sides[i][1], (int)modes[m], sub, prog);
          free(got);
          free(want);
          ib_codec_free(jpg);
        }
}

Test(jpeg_decode, a_truncated_file_at_full_size_is_a_decode_error_saying_so) {
  size_t len = 0;
  uint8_t *jpg = encode(64, 48, IB_MODE_RGB, &len);
  ib_shape shape = {0};
  ib_error err = {0};
  cr_assert_eq(ib_codec_header(jpg, len, &shape, &err), IB_OK);
  uint8_t *dst = malloc((size_t)64 * 48 * 3);
  cr_assert(dst);
  cr_expect_eq(ib_codec_decode_into(jpg, len / 2, &shape, dst, &err), IB_DECODE);
  cr_expect_eq(err.stage, IB_STAGE_DECODE);
  cr_expect(strstr(err.message, "decode: jpeg: truncated"), "%s", err.message);
  free(dst);
  ib_codec_free(jpg);
}
