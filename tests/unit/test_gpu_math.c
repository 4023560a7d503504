/*
 * Kernel-header functions the GPU backend uses in place of the CPU's loops,
 * proven equal to them here: ib_box_blur_span over any split of a line gives
 * ib_box_blur_line's bytes; the 3x3 rank networks give ib_rank_select8's.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/boxblur.h"
#include "kernels/rank.h"

static uint64_t st = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
  st ^= st >> 12;
  st ^= st << 25;
  st ^= st >> 27;
  return (uint32_t)((st * 0x2545f4914f6cdd1dull) >> 32);
}

Test(boxblur, span_equals_line) {
  static const float radii[] = {0.0f, 0.5f, 1.0f, 1.7f, 2.0f, 3.25f, 7.31f, 12.9f, 40.0f};
  static const int lens[] = {1, 2, 3, 5, 8, 17, 33, 100, 257};
  uint8_t in[2 * 257], ref[2 * 257], got[2 * 257];
  for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++)
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
      for (int trial = 0; trial < 6; trial++) {
        int n = lens[li];
        ib_box_pass p = ib_box_pass_for(radii[ri]);
        for (int i = 0; i < 2 * n; i++) in[i] = (uint8_t)(trial == 0 ? 255 : rnd());
        memset(ref, 0xa5, sizeof ref);
        memset(got, 0x5a, sizeof got);
        /* step 2: one band of an interleaved pair, as rows of an LA image */
        ib_box_blur_line(ref, 2, in + 1, 2, n, p);
        int seg = 1 + (int)(rnd() % 19u);
        for (int x0 = 0; x0 < n; x0 += seg)
          ib_box_blur_span(got, 2, in + 1, 2, n, x0, x0 + seg < n ? x0 + seg : n, p);
        for (int i = 0; i < n; i++)
          cr_assert_eq(got[2 * i], ref[2 * i], "r=%g n=%d seg=%d x=%d: %d != %d", radii[ri], n,
                       seg, i, got[2 * i], ref[2 * i]);
      }
}

/* 0-1 principle: a comparator network sorts every input iff it sorts every
 * 0/1 input. */
Test(rank, sort9_network_sorts_all_0_1_inputs) {
  for (unsigned m = 0; m < 512; m++) {
    uint8_t v[9];
    for (int i = 0; i < 9; i++) v[i] = (uint8_t)((m >> i) & 1);
    ib_rank_sort9(v);
    for (int i = 1; i < 9; i++) cr_assert_leq(v[i - 1], v[i], "input %u", m);
  }
}

Test(rank, select9_equals_select8_for_every_rank) {
  for (int trial = 0; trial < 200000; trial++) {
    uint8_t v[9], w[9];
    unsigned range = trial % 3 == 0 ? 4u : 256u; /* many ties too */
    for (int i = 0; i < 9; i++) v[i] = (uint8_t)(rnd() % range);
    int k = trial % 9;
    memcpy(w, v, sizeof v);
    cr_assert_eq(ib_rank_select9(w, k), ib_rank_select8(v, 9, k), "trial %d rank %d", trial, k);
  }
}

Test(rank, sample3_equals_sample_with_clamped_edges) {
  uint8_t im[5 * 4 * 2];
  for (size_t i = 0; i < sizeof im; i++) im[i] = (uint8_t)rnd();
  for (int w = 1; w <= 5; w++)
    for (int h = 1; h <= 4; h++)
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
          for (int k = 0; k < 9; k++) {
            const uint8_t *c = im + ((size_t)y * w + x) * 2 + 1;
            cr_assert_eq(ib_rank_sample3(c, 2 * w, 2, x, y, w, h, k),
                         ib_rank_sample(c, 2 * w, 2, x, y, w, h, 3, k));
          }
}
