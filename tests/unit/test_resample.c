/* The resize weight tables and passes (kernels/resample.h) and reduce's
 * blocks (kernels/reduce.h) on their own. Expected bytes were produced by
 * Pillow 12.3.0; the parity suite (tests/py/parity/test_resample.py)
 * compares whole images against live Pillow. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "kernels/reduce.h"
#include "kernels/resample.h"

static const uint8_t row9[9] = {0, 255, 17, 200, 90, 3, 255, 128, 64};

/* Image.frombytes("L", (9, 1), row9).resize((n, 1), filter, box): one
 * horizontal pass (the vertical one is skipped: height and box unchanged). */
static void resize_row(int filter, float in0, float in1, int n, uint8_t *out) {
  int ksize = ib_resample_ksize(filter, in0, in1, n);
  int32_t *bounds = malloc(sizeof(int32_t) * (size_t)(2 * n + n * ksize));
  double *w = malloc(sizeof(double) * (size_t)ksize);
  cr_assert(bounds && w);
  ib_resample_coeffs(filter, 9, in0, in1, n, ksize, bounds, bounds + 2 * n, w);
  ib_resample_axis ax = {ksize, bounds, bounds + 2 * n};
  for (int x = 0; x < n; x++) ib_resample_h_pixel(out + x, row9, 1, x, ax);
  free(bounds);
  free(w);
}

Test(resample, every_filter_equals_pillow_down_up_and_over_a_fractional_box) {
  static const struct {
    int filter;
    uint8_t down4[4], up13[13], box5[5];
  } want[] = {
      {IB_RESAMPLE_BOX,
       {128, 102, 129, 96},
       {0, 255, 255, 17, 200, 200, 90, 3, 3, 255, 128, 128, 64},
       {128, 109, 90, 129, 128}},
      {IB_RESAMPLE_BILINEAR,
       {113, 126, 104, 130},
       {0, 137, 200, 35, 130, 166, 90, 30, 100, 245, 157, 98, 64},
       {142, 109, 105, 118, 143}},
      {IB_RESAMPLE_HAMMING,
       {128, 129, 92, 115},
       {0, 150, 240, 19, 154, 185, 90, 15, 66, 254, 136, 102, 64},
       {180, 84, 106, 112, 138}},
      {IB_RESAMPLE_BICUBIC,
       {112, 121, 110, 130},
       {0, 147, 225, 23, 132, 187, 90, 4, 92, 255, 161, 89, 60},
       {143, 111, 103, 118, 150}},
      {IB_RESAMPLE_LANCZOS,
       {112, 118, 113, 132},
       {0, 155, 231, 25, 118, 207, 90, 0, 98, 255, 176, 76, 62},
       {133, 127, 95, 115, 157}},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    uint8_t down[4], up[13], box[5];
    resize_row(want[i].filter, 0.0f, 9.0f, 4, down);
    resize_row(want[i].filter, 0.0f, 9.0f, 13, up);
    resize_row(want[i].filter, 0.5f, 8.25f, 5, box);
    cr_expect_arr_eq(down, want[i].down4, 4, "filter %d down", want[i].filter);
    cr_expect_arr_eq(up, want[i].up13, 13, "filter %d up", want[i].filter);
    cr_expect_arr_eq(box, want[i].box5, 5, "filter %d box", want[i].filter);
  }
}

/* Cut and renormalised at the borders, then rounded to 22 fraction bits:
 * every index's coefficients sum to 2^22 within the rounding (half a unit
 * each), and none is read past the source. */
Test(resample, weights_sum_to_one_in_fixed_point_and_stay_inside) {
  static const int filters[] = {IB_RESAMPLE_BOX, IB_RESAMPLE_BILINEAR, IB_RESAMPLE_HAMMING,
                                IB_RESAMPLE_BICUBIC, IB_RESAMPLE_LANCZOS};
  static const int sizes[][2] = {{1, 1}, {1, 7}, {7, 1}, {10, 3}, {3, 10}, {97, 13}, {13, 97}};
  for (size_t f = 0; f < 5; f++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      const int n_in = sizes[s][0], n = sizes[s][1];
      const int ksize = ib_resample_ksize(filters[f], 0.0f, (float)n_in, n);
      int32_t *t = malloc(sizeof(int32_t) * (size_t)(2 * n + n * ksize));
      double *w = malloc(sizeof(double) * (size_t)ksize);
      cr_assert(t && w);
      ib_resample_coeffs(filters[f], n_in, 0.0f, (float)n_in, n, ksize, t, t + 2 * n, w);
      for (int i = 0; i < n; i++) {
        const int lo = t[2 * i], cnt = t[2 * i + 1];
        cr_expect(lo >= 0 && cnt >= 1 && lo + cnt <= n_in && cnt <= ksize, "f %d %d->%d i %d",
                  filters[f], n_in, n, i);
        long sum = 0;
        for (int j = 0; j < ksize; j++) sum += t[2 * n + i * ksize + j];
        cr_expect(labs(sum - (1L << 22)) <= ksize, "f %d %d->%d i %d: sum %ld", filters[f], n_in, n,
                  i, sum);
      }
      free(t);
      free(w);
    }
}

/* division_UINT32's float quotient, truncated. */
Test(reduce, multiplier_is_pillows_float_quotient) {
  static const int counts[] = {1, 2, 3, 5, 6, 7, 9, 25};
  static const uint32_t want[] = {16777216, 8388608, 5592405, 3355443,
                                  2796202,  2396745, 1864135, 671088};
  for (size_t i = 0; i < 8; i++) cr_expect_eq(ib_reduce_multiplier(counts[i]), want[i]);
}

/* Image.frombytes("L", (7, 5), bytes(range(0, 245, 7))).reduce((2, 3)) and
 * .reduce(3): the last column and row are partial blocks. */
Test(reduce, partial_last_blocks_equal_pillow) {
  uint8_t in[35], out[8];
  for (int i = 0; i < 35; i++) in[i] = (uint8_t)(7 * i);
  const int box[4] = {0, 0, 7, 5};
  static const uint8_t want23[8] = {52, 66, 80, 91, 175, 189, 203, 214};
  static const uint8_t want33[6] = {56, 77, 91, 178, 199, 214};
  for (int y = 0; y < 2; y++)
    for (int x = 0; x < 4; x++) ib_reduce_pixel(out + y * 4 + x, in, 7, 1, x, y, 2, 3, box);
  cr_expect_arr_eq(out, want23, 8);
  for (int y = 0; y < 2; y++)
    for (int x = 0; x < 3; x++) ib_reduce_pixel(out + y * 3 + x, in, 7, 1, x, y, 3, 3, box);
  cr_expect_arr_eq(out, want33, 6);
}

/* Convert.c's lA2la / la2lA: MULDIV255 there, truncating division back,
 * alpha 0 and 255 untouched. */
Test(resample, premultiply_round_trip_is_pillows) {
  uint8_t px[4] = {200, 100, 3, 128};
  ib_premultiply_px(px, 4);
  cr_expect(px[0] == 100 && px[1] == 50 && px[2] == 2 && px[3] == 128, "%d %d %d", px[0], px[1],
            px[2]);
  ib_unpremultiply_px(px, 4);
  cr_expect(px[0] == 199 && px[1] == 99 && px[2] == 3, "%d %d %d", px[0], px[1], px[2]);
  uint8_t clear[2] = {77, 0};
  ib_unpremultiply_px(clear, 2);
  cr_expect_eq(clear[0], 77);
}
