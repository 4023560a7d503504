/*
 * The Oklab tone op's float32 path (CPU backend and GPU) against its float64
 * specification, both in kernels/tone.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "kernels/tone.h"

/* xorshift64*: deterministic across platforms, unlike rand(). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}
static double rng_uniform(double lo, double hi) {
  return lo + (hi - lo) * ((double)(rng_next() >> 11) / 9007199254740992.0);
}

typedef struct tone_params {
  float ev, contrast, highlights, shadows, whites, blacks;
} tone_params;

static tone_params random_params(void) {
  tone_params p = {(float)rng_uniform(-8, 8), (float)rng_uniform(-1, 1), (float)rng_uniform(-1, 1),
                   (float)rng_uniform(-1, 1), (float)rng_uniform(-1, 1), (float)rng_uniform(-1, 1)};
  return p;
}

static void run_both(const tone_params *tp, const uint8_t *in, uint8_t *o32, uint8_t *o64, int n,
                     int bands) {
  ib_tone_f32 p32 = ib_tone_prepare_f32(tp->ev, tp->contrast, tp->highlights, tp->shadows,
                                        tp->whites, tp->blacks);
  ib_tone_f64 p64 = ib_tone_prepare_f64(tp->ev, tp->contrast, tp->highlights, tp->shadows,
                                        tp->whites, tp->blacks);
  ib_tone_row_f32(&p32, in, o32, n, bands);
  ib_tone_row_f64(&p64, in, o64, n, bands);
}

#define N_PX 4096

Test(tone, float32_within_one_lsb_of_float64_on_random_pixels_and_params) {
  static uint8_t in[N_PX * 4], o32[N_PX * 4], o64[N_PX * 4];
  long differing = 0;
  for (int k = 0; k < 300; k++) {
    tone_params tp = random_params();
    int bands = k % 2 ? 4 : 3;
    for (int i = 0; i < N_PX * bands; i++) in[i] = (uint8_t)rng_next();
    run_both(&tp, in, o32, o64, N_PX, bands);
    for (int i = 0; i < N_PX * bands; i++) {
      int d = abs((int)o32[i] - (int)o64[i]);
      cr_assert(d <= 1, "params ev=%g c=%g h=%g s=%g w=%g b=%g: byte %d: f32 %d vs f64 %d", tp.ev,
                tp.contrast, tp.highlights, tp.shadows, tp.whites, tp.blacks, i, o32[i], o64[i]);
      differing += d != 0;
    }
  }
  cr_log_info("bytes differing by 1 LSB: %ld", differing);
}

Test(tone, parameter_extremes_stay_within_one_lsb) {
  static uint8_t in[256 * 3], o32[256 * 3], o64[256 * 3];
  const float corners[] = {-1.0f, 0.0f, 1.0f};
  for (int i = 0; i < 256 * 3; i++) in[i] = (uint8_t)rng_next();
  for (int ev = -8; ev <= 8; ev += 4)
    for (int m = 0; m < 3 * 3 * 3 * 3 * 3; m++) {
      int r = m;
      tone_params tp = {(float)ev,          corners[r % 3],      corners[r / 3 % 3],
                        corners[r / 9 % 3], corners[r / 27 % 3], corners[r / 81 % 3]};
      run_both(&tp, in, o32, o64, 256, 3);
      for (int i = 0; i < 256 * 3; i++)
        cr_assert(abs((int)o32[i] - (int)o64[i]) <= 1, "ev=%d m=%d byte %d: %d vs %d", ev, m, i,
                  o32[i], o64[i]);
    }
}

Test(tone, alpha_passes_through_bit_exactly) {
  static uint8_t in[N_PX * 4], o32[N_PX * 4], o64[N_PX * 4];
  for (int k = 0; k < 20; k++) {
    tone_params tp = random_params();
    for (int i = 0; i < N_PX * 4; i++) in[i] = (uint8_t)rng_next();
    run_both(&tp, in, o32, o64, N_PX, 4);
    for (int i = 3; i < N_PX * 4; i += 4) {
      cr_assert_eq(o32[i], in[i]);
      cr_assert_eq(o64[i], in[i]);
    }
  }
}

Test(tone, zero_params_are_the_identity_for_every_rgb_byte) {
  static uint8_t in[256 * 3], o32[256 * 3], o64[256 * 3];
  tone_params zero = {0};
  for (int shift = 0; shift < 3; shift++) {
    for (int v = 0; v < 256; v++) {
      in[v * 3 + shift] = (uint8_t)v;
      in[v * 3 + (shift + 1) % 3] = (uint8_t)rng_next();
      in[v * 3 + (shift + 2) % 3] = (uint8_t)rng_next();
    }
    run_both(&zero, in, o32, o64, 256, 3);
    cr_assert_arr_eq(o32, in, sizeof in);
    cr_assert_arr_eq(o64, in, sizeof in);
  }
}

Test(tone, exposure_scales_linear_light_of_greys_by_two_to_the_ev) {
  for (int ev = -3; ev <= 2; ev++) {
    tone_params tp = {(float)ev, 0, 0, 0, 0, 0};
    ib_tone_f64 p = ib_tone_prepare_f64(tp.ev, 0, 0, 0, 0, 0);
    for (int v = 0; v < 256; v++) {
      uint8_t in[3] = {(uint8_t)v, (uint8_t)v, (uint8_t)v}, out[3];
      ib_tone_px_f64(&p, in, out);
      uint8_t want = ib_tone_encode_f64(ib_tone_decode_f64((uint8_t)v) * exp2((double)ev));
      /* a, b of a grey are 0 only up to the matrices' 10 digits: 1 LSB slack. */
      for (int c = 0; c < 3; c++)
        cr_assert(abs((int)out[c] - (int)want) <= 1, "ev=%d v=%d: got %d %d %d want %d", ev, v,
                  out[0], out[1], out[2], want);
    }
  }
}

Test(tone, contrast_keeps_the_pivot_and_spreads_around_it) {
  ib_tone_f64 p = ib_tone_prepare_f64(0, 0.5, 0, 0, 0, 0);
  cr_assert_float_eq(ib_tone_adjust_f64(&p, 0.5), 0.5, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&p, 0.7), 0.8, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&p, 0.3), 0.2, 1e-12);
}

Test(tone, tone_masks_act_only_in_their_ranges) {
  ib_tone_f64 sh = ib_tone_prepare_f64(0, 0, 0, 1, 0, 0);
  ib_tone_f64 hi = ib_tone_prepare_f64(0, 0, 1, 0, 0, 0);
  ib_tone_f64 bl = ib_tone_prepare_f64(0, 0, 0, 0, 0, 1);
  ib_tone_f64 wh = ib_tone_prepare_f64(0, 0, 0, 0, 1, 0);
  cr_assert_float_eq(ib_tone_adjust_f64(&sh, 0.0), 0.25, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&sh, 0.6), 0.6, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&hi, 0.4), 0.4, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&hi, 1.0), 1.25, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&bl, 0.0), 0.125, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&bl, 0.3), 0.3, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&wh, 0.7), 0.7, 1e-12);
  cr_assert_float_eq(ib_tone_adjust_f64(&wh, 1.0), 1.125, 1e-12);
}
