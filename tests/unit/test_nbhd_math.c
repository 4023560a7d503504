/* Pixel math of the neighbourhood ops (kernels/rank.h, boxblur.h,
 * convolve.h) on hand-checked cases; the byte-for-byte comparison with
 * Pillow is the parity suite's job. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/boxblur.h"
#include "kernels/convolve.h"
#include "kernels/rank.h"

static int cmp_u8(const void *a, const void *b) {
  return *(const uint8_t *)a - *(const uint8_t *)b;
}

Test(rank, select8_returns_the_kth_smallest_of_any_window) {
  srand(3);
  for (int t = 0; t < 2000; t++) {
    uint8_t v[81], sorted[81];
    int n = 1 + rand() % 81, spread = 1 + rand() % 256;
    for (int i = 0; i < n; i++) sorted[i] = v[i] = (uint8_t)(rand() % spread * (256 / spread));
    qsort(sorted, (size_t)n, 1, cmp_u8);
    for (int k = 0; k < n; k++) cr_assert_eq(ib_rank_select8(v, n, k), sorted[k]);
  }
}

Test(rank, window_outside_the_image_reads_the_edge_pixel) {
  /* 2x2 L image: the 3x3 window at (0,0) holds 10 four times, 20 and 30
   * twice each and 40 once. */
  const uint8_t im[4] = {10, 20, 30, 40};
  cr_assert_eq(ib_rank_sample(im, 2, 1, 0, 0, 2, 2, 3, 0), 10);
  cr_assert_eq(ib_rank_sample(im, 2, 1, 0, 0, 2, 2, 3, 3), 10);
  cr_assert_eq(ib_rank_sample(im, 2, 1, 0, 0, 2, 2, 3, 4), 20);
  cr_assert_eq(ib_rank_sample(im, 2, 1, 0, 0, 2, 2, 3, 8), 40);
}

Test(boxblur, integer_radius_zero_fraction_is_the_identity_weighting) {
  ib_box_pass p = ib_box_pass_for(0.0f);
  cr_assert_eq(p.radius, 0);
  cr_assert_eq(p.ww, 1u << 24);
  cr_assert_eq(p.fw, 0u);
  const uint8_t in[5] = {0, 255, 7, 128, 1};
  uint8_t out[5];
  ib_box_blur_line(out, 1, in, 1, 5, p);
  for (int i = 0; i < 5; i++) cr_assert_eq(out[i], in[i]);
}

Test(boxblur, radius_one_averages_three_pixels_with_replicated_edges) {
  ib_box_pass p = ib_box_pass_for(1.0f);
  cr_assert_eq(p.radius, 1);
  const uint8_t in[4] = {30, 0, 0, 90};
  uint8_t out[4];
  ib_box_blur_line(out, 1, in, 1, 4, p);
  cr_assert_eq(out[0], 20); /* (30 + 30 + 0) / 3 */
  cr_assert_eq(out[1], 10);
  cr_assert_eq(out[2], 30);
  cr_assert_eq(out[3], 60);
}

Test(boxblur, gaussian_radius_zero_gives_no_box_pass) {
  cr_assert_eq(ib_gaussian_box_radius(0.0f, 3), 0.0f);
  float r = ib_gaussian_box_radius(2.0f, 3);
  cr_assert(r > 1.0f && r < 2.0f, "box radius %g for sigma 2", (double)r);
}

Test(convolve, nan_sum_gives_zero_and_out_of_range_sums_clamp) {
  cr_assert_eq(ib_convolve_clip8(NAN), 0);
  cr_assert_eq(ib_convolve_clip8(-1e30f), 0);
  cr_assert_eq(ib_convolve_clip8(1e30f), 255);
  cr_assert_eq(ib_convolve_clip8(254.999f), 254);
}

Test(convolve, kernel_is_flipped_vertically_not_horizontally) {
  /* 3x3 L image, kernel picks only entry 0: row y+1, column x-1. */
  const uint8_t im[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  float k[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
  cr_assert_eq(ib_convolve_sample(im + 4, 3, 1, 3, k, ib_convolve_bias(0.0)), 7);
  k[0] = 0;
  k[8] = 1; /* row y-1, column x+1 */
  cr_assert_eq(ib_convolve_sample(im + 4, 3, 1, 3, k, ib_convolve_bias(0.0)), 3);
}
