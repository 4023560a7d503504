/* The output spec's rules (codec/output_spec.c) as Pillow 12.3's save()
 * applies them, and the JPEG encoder's edges (codec/jpeg_encode.c). Bytes
 * against live Pillow are tests/py/run/test_encode_output.py's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/jpeg_encode.h"
#include "codec/output_spec.h"

static Imgbatch__V1__CpuOutput spec_of(Imgbatch__V1__Format f) {
  Imgbatch__V1__CpuOutput s = IMGBATCH__V1__CPU_OUTPUT__INIT;
  s.format = f;
  return s;
}

static const ib_mode modes[] = {IB_MODE_L,    IB_MODE_LA,   IB_MODE_RGB,
                                IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGBX};

Test(output_spec, each_format_writes_or_refuses_a_mode_as_pillow_does) {
  /* Rows PNG, JPEG, WEBP, TIFF; columns L, LA, RGB, RGBA, CMYK, RGBX. */
  static const bool writes[4][6] = {
      {1, 1, 1, 1, 0, 0}, {1, 0, 1, 0, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}};
  for (int f = 0; f < 4; f++)
    for (int m = 0; m < 6; m++) {
      Imgbatch__V1__CpuOutput s = spec_of((Imgbatch__V1__Format)(f + 1));
      ib_error err = {0};
      ib_status st = ib_output_check(&s, modes[m], IB_STAGE_VALIDATE, &err);
      cr_expect_eq(st, writes[f][m] ? IB_OK : IB_UNSUPPORTED, "format %d mode %s", f + 1,
                   ib_mode_name(modes[m]));
      if (st == IB_OK) continue;
      char want[64];
      snprintf(want, sizeof want, "cannot write mode %s as %s", ib_mode_name(modes[m]),
               f == 0 ? "PNG" : "JPEG");
      cr_expect(strstr(err.message, want), "%s", err.message);
      cr_expect_eq(err.stage, IB_STAGE_VALIDATE);
    }
}

Test(output_spec, the_result_mode_is_the_mode_pillow_opens_the_file_in) {
  /* Rows RAW, PNG, JPEG, WEBP, TIFF (refused pairs keep their mode). */
  static const ib_mode want[5][6] = {
      {IB_MODE_L, IB_MODE_LA, IB_MODE_RGB, IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGBX},
      {IB_MODE_L, IB_MODE_LA, IB_MODE_RGB, IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGBX},
      {IB_MODE_L, IB_MODE_LA, IB_MODE_RGB, IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGB},
      {IB_MODE_RGB, IB_MODE_RGBA, IB_MODE_RGB, IB_MODE_RGBA, IB_MODE_RGB, IB_MODE_RGB},
      {IB_MODE_L, IB_MODE_LA, IB_MODE_RGB, IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGB}};
  for (int f = 0; f < 5; f++)
    for (int m = 0; m < 6; m++) {
      Imgbatch__V1__CpuOutput s = spec_of((Imgbatch__V1__Format)f);
      cr_expect_eq(ib_output_mode(&s, modes[m]), want[f][m], "format %d mode %s", f,
                   ib_mode_name(modes[m]));
    }
  cr_expect_eq(ib_output_mode(NULL, IB_MODE_RGBX), IB_MODE_RGBX);
}

static ib_status check(const Imgbatch__V1__CpuOutput *s, ib_error *err) {
  return ib_output_check(s, IB_MODE_RGB, IB_STAGE_VALIDATE, err);
}

Test(output_spec, quality_0_to_100_passes_and_over_100_is_invalid_naming_it) {
  Imgbatch__V1__CpuOutput s = spec_of(IMGBATCH__V1__FORMAT__JPEG);
  ib_error err = {0};
  cr_expect_eq(check(&s, &err), IB_OK, "absent");
  s.quality_present_case = IMGBATCH__V1__CPU_OUTPUT__QUALITY_PRESENT_QUALITY;
  for (uint32_t q = 0; q <= 100; q++) {
    s.quality = q;
    cr_expect_eq(check(&s, &err), IB_OK, "quality %u", q);
  }
  s.quality = 101;
  cr_expect_eq(check(&s, &err), IB_INVALID);
  cr_expect(strstr(err.message, "quality 101 is out of range 0..100"), "%s", err.message);
  s.format = IMGBATCH__V1__FORMAT__WEBP;
  cr_expect_eq(check(&s, &err), IB_INVALID, "WebP too (Pillow refuses it there)");
}

Test(output_spec, png_compression_over_9_is_invalid_naming_it) {
  Imgbatch__V1__CpuOutput s = spec_of(IMGBATCH__V1__FORMAT__PNG);
  ib_error err = {0};
  s.compression = 9;
  cr_expect_eq(check(&s, &err), IB_OK);
  s.compression = 10;
  cr_expect_eq(check(&s, &err), IB_INVALID);
  cr_expect(strstr(err.message, "compression 10 is out of range 0..9"), "%s", err.message);
}

Test(output_spec, an_unknown_subsampling_and_jpeg_only_options_elsewhere_are_invalid) {
  Imgbatch__V1__CpuOutput s = spec_of(IMGBATCH__V1__FORMAT__JPEG);
  ib_error err = {0};
  s.subsampling = (Imgbatch__V1__Subsampling)4;
  cr_expect_eq(check(&s, &err), IB_INVALID);
  cr_expect(strstr(err.message, "subsampling 4 is not one of"), "%s", err.message);
  s.subsampling = IMGBATCH__V1__SUBSAMPLING__SUBSAMPLING_444;
  s.progressive = s.optimize = true;
  cr_expect_eq(check(&s, &err), IB_OK);
  s.format = IMGBATCH__V1__FORMAT__TIFF;
  cr_expect_eq(check(&s, &err), IB_INVALID);
  cr_expect(strstr(err.message, "subsampling applies to JPEG only, not TIFF"), "%s", err.message);
  s.subsampling = IMGBATCH__V1__SUBSAMPLING__SUBSAMPLING_DEFAULT;
  cr_expect_eq(check(&s, &err), IB_INVALID);
  cr_expect(strstr(err.message, "progressive applies to JPEG only"), "%s", err.message);
}

Test(jpeg_encode, a_side_past_jpegs_limit_is_unsupported_naming_it) {
  uint8_t px[3] = {0};
  ib_jpeg_options o = {.quality = -1, .subsampling = -1};
  uint8_t *out = NULL;
  size_t len = 0;
  ib_error err = {0};
  cr_expect_eq(ib_jpeg_encode(px, 65501, 1, IB_MODE_RGB, 0, &o, &out, &len, &err), IB_UNSUPPORTED);
  cr_expect(strstr(err.message, "65501x1 exceeds JPEG's 65500-pixel side"), "%s", err.message);
  cr_expect_null(out);
}

/* Pillow hands RGBX to libjpeg as JCS_EXT_RGBX: X is not in the file, so
 * RGBX and its RGB give the same bytes; the Result says RGB. */
Test(jpeg_encode, rgbx_is_the_same_file_as_its_rgb) {
  enum { W = 19, H = 11 };
  uint8_t rgbx[W * H * 4], rgb[W * H * 3];
  for (int i = 0; i < W * H; i++) {
    for (int c = 0; c < 3; c++) rgb[i * 3 + c] = rgbx[i * 4 + c] = (uint8_t)(i * 37 + c * 101);
    rgbx[i * 4 + 3] = (uint8_t)(i * 13);
  }
  ib_image a = {.mode = IB_MODE_RGBX, .width = W, .height = H, .data = rgbx};
  ib_image b = {.mode = IB_MODE_RGB, .width = W, .height = H, .data = rgb};
  Imgbatch__V1__CpuOutput s = spec_of(IMGBATCH__V1__FORMAT__JPEG);
  uint8_t *ja = NULL, *jb = NULL;
  size_t na = 0, nb = 0;
  ib_error err = {0};
  cr_assert_eq(ib_codec_encode(&a, &s, NULL, &ja, &na, &err), IB_OK, "%s", err.message);
  cr_assert_eq(ib_codec_encode(&b, &s, NULL, &jb, &nb, &err), IB_OK, "%s", err.message);
  cr_expect(na == nb && memcmp(ja, jb, na) == 0);
  ib_codec_free(ja);
  ib_codec_free(jb);
}
