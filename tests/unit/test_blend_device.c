/*
 * The device's ib_blend_px (kernels/blend.h, __CUDACC_RTC__ branch) is a
 * different float sequence from the host's: bytes as 2^15 + v / 256 by
 * their bits, the clamp as add.sat plus fminf, the truncation as an add of
 * 2^15 rounded toward zero. Replayed here op for op on the host (each
 * device op has one IEEE meaning; the round-toward-zero add is emulated
 * exactly from the round-to-nearest one) and compared with the host
 * contract over every (a, b) and alphas that reach every branch: 0, -0,
 * 1, inside [0, 1], extrapolation, overflow, tiny and subnormal products,
 * infinities and NaN. gpu_check then proves the device itself.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/blend.h"

static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* add.sat.f32: [0, 1], NaN to +0 (PTX ISA). */
static float sat(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }

/* x + 2^15 rounded toward zero, for x in [0, 1]: the sum lies in
 * [2^15, 2^15 + 1], where floats are 2^-8 apart and s - 2^15 is exact. */
static float add_rz_2p15(float x) {
  float s = x + 32768.0f;
  if (s - 32768.0f > x) s -= 0.00390625f;
  return s;
}

/* The device sequence, op for op (ib_blend_q8, ib_blend_px). */
static int device_blend(uint8_t a, uint8_t b, float alpha) {
  const float qa = bits_f(0x47000000u | a), qb = bits_f(0x47000000u | b);
  const float u = sat((qa - 32768.0f) + alpha * (qb - qa));
  const uint32_t r = f_bits(add_rz_2p15(fminf(u, 0.99609375f))) - 0x47000000u;
  return r <= 255u ? (int)r : -1; /* the device assumes r <= 255 */
}

static uint64_t st = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  st ^= st >> 12;
  st ^= st << 25;
  st ^= st >> 27;
  return (uint32_t)((st * 0x2545f4914f6cdd1dull) >> 32);
}

static void check_alpha(float alpha) {
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      const int want = ib_blend_px((uint8_t)a, (uint8_t)b, alpha);
      const int got = device_blend((uint8_t)a, (uint8_t)b, alpha);
      if (got != want)
        cr_assert_fail("alpha %a (bits %08x) a %d b %d: device sequence %d, contract %d", alpha,
                       f_bits(alpha), a, b, got, want);
    }
}

Test(blend_device, special_alphas) {
  const float specials[] = {0.0f,      -0.0f,     1.0f,      0.5f,        0.25f,       0.999f,
                            1.25f,     1.5f,      2.0f,      -1.0f,       -0.5f,       3.0f,
                            255.0f,    -255.0f,   1e30f,     -1e30f,      FLT_MAX,     -FLT_MAX,
                            1e-38f,    -1e-38f,   FLT_MIN,   1e-45f,      -1e-45f,     0x1p-118f,
                            0x1p-126f, 0x1p-120f, 0x1p-110f, 1.0000001f,  0.9999999f,  INFINITY,
                            -INFINITY, NAN,       -NAN,      1.0f / 3.0f, 2.0f / 3.0f, 1.0039062f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) check_alpha(specials[i]);
}

Test(blend_device, random_alphas) {
  for (int i = 0; i < 600; i++) {
    check_alpha(bits_f(rnd()));                                 /* any float, NaNs included */
    check_alpha((float)((double)rnd() / 4294967296.0));         /* [0, 1) */
    check_alpha((float)((double)rnd() / 4294967296.0 * 8 - 4)); /* [-4, 4) */
  }
}

/* ib_blend_same is ib_blend_px with a == b (the contract, host side). */
static void check_same(float alpha) {
  for (int a = 0; a < 256; a++)
    if (ib_blend_same((uint8_t)a, alpha) != ib_blend_px((uint8_t)a, (uint8_t)a, alpha))
      cr_assert_fail("alpha %a a %d: ib_blend_same %d, ib_blend_px %d", alpha, a,
                     ib_blend_same((uint8_t)a, alpha), ib_blend_px((uint8_t)a, (uint8_t)a, alpha));
}

Test(blend_device, same_pixel_is_blend_of_a_with_itself) {
  const float specials[] = {0.0f,     -0.0f,   1.0f,   0.5f,     1.25f,     -3.0f, FLT_MAX,
                            -FLT_MAX, FLT_MIN, 1e-45f, INFINITY, -INFINITY, NAN,   -NAN};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) check_same(specials[i]);
  for (int i = 0; i < 20000; i++) check_same(bits_f(rnd()));
}
