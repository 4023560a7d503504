/* Pixel-math contracts of kernels/{blend,point,convert,enhance}.h, pinned
 * with values taken from Pillow 12.3. */
#include <criterion/criterion.h>
#include <math.h>

#include "kernels/enhance.h"
#include "kernels/point.h"

Test(blend, interpolation_truncates_toward_zero) {
  cr_assert_eq(ib_blend_px(0, 255, 0.5f), 127);
  cr_assert_eq(ib_blend_px(10, 11, 0.999f), 10);
}

Test(blend, extrapolation_clips) {
  cr_assert_eq(ib_blend_px(10, 200, 2.0f), 255);
  cr_assert_eq(ib_blend_px(200, 10, 2.0f), 0);
  cr_assert_eq(ib_blend_px(100, 120, 1.5f), 130);
}

Test(blend, nan_and_inf_times_zero_give_zero) {
  cr_assert_eq(ib_blend_px(200, 100, NAN), 0);
  cr_assert_eq(ib_blend_px(10, 10, INFINITY), 0);
  cr_assert_eq(ib_blend_px(0, 10, INFINITY), 255);
  cr_assert_eq(ib_blend_px(200, 100, INFINITY), 0);
  cr_assert_eq(ib_blend_px(200, 100, -INFINITY), 255);
}

Test(blend, zero_and_one_pick_an_input) {
  cr_assert_eq(ib_blend_px(7, 9, 0.0f), 7);
  cr_assert_eq(ib_blend_px(7, 9, 1.0f), 9);
}

Test(point, entries_clamp_like_clip8) {
  cr_assert_eq(ib_point_entry(-5), 0);
  cr_assert_eq(ib_point_entry(256), 255);
  cr_assert_eq(ib_point_entry(77), 77);
}

Test(point, imageops_tables) {
  cr_assert_eq(ib_point_invert_entry(0), 255);
  cr_assert_eq(ib_point_solarize_entry(127, 128), 127);
  cr_assert_eq(ib_point_solarize_entry(128, 128), 127);
  cr_assert_eq(ib_point_solarize_entry(200, 1000), 200);
  cr_assert_eq(ib_point_posterize_entry(0xff, 3), 0xe0);
  cr_assert_eq(ib_point_posterize_entry(0xff, 8), 0xff);
}

Test(convert, luma_is_rgb2l_fixed_point) {
  cr_assert_eq(ib_convert_luma(255, 255, 255), 255);
  cr_assert_eq(ib_convert_luma(255, 0, 0), 76);
  cr_assert_eq(ib_convert_luma(0, 255, 0), 150);
  cr_assert_eq(ib_convert_luma(0, 0, 255), 29);
}

Test(convert, cmyk_to_l_goes_through_rgb) {
  const uint8_t cmyk[4] = {10, 200, 30, 40};
  uint8_t l, rgb[3];
  ib_convert_px(IB_KMODE_CMYK, IB_KMODE_RGB, cmyk, rgb);
  ib_convert_px(IB_KMODE_CMYK, IB_KMODE_L, cmyk, &l);
  cr_assert_eq(rgb[0], 207);
  cr_assert_eq(l, 111);
  cr_assert_eq(l, ib_convert_luma(rgb[0], rgb[1], rgb[2]));
}

Test(convert, la_to_rgbx_keeps_alpha_in_x) {
  const uint8_t la[2] = {9, 33};
  uint8_t out[4];
  ib_convert_px(IB_KMODE_LA, IB_KMODE_RGBX, la, out);
  cr_assert_eq(out[3], 33);
}

Test(enhance, contrast_mean_rounds_half_up) {
  cr_assert_eq(ib_enhance_contrast_mean(5, 2), 3);
  cr_assert_eq(ib_enhance_contrast_mean(0, 0), 0);
}

Test(enhance, color_on_l_is_a_copy_even_for_nan) {
  const uint8_t in[2] = {12, 250};
  uint8_t out[2];
  ib_enhance_px(IB_ENHANCE_COLOR, IB_KMODE_LA, 0, NAN, in, out);
  cr_assert_eq(out[0], 12);
  cr_assert_eq(out[1], 250);
}
