/*
 * The Oklab tone op's float32 path (CPU backend and GPU) against its float64
 * specification, both in kernels/tone.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------ the fast paths, bit for bit */

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static long encode_mismatches(uint32_t from, uint32_t to) {
  long bad = 0;
  for (uint32_t u = from;; u++) {
    float f = float_of(u);
    uint8_t want = ib_tone_encode_f32(f), fast = ib_tone_encode_fast_f32(f);
    if (fast != want) {
      if (bad < 5) cr_log_error("lin %a (%08x): buckets %d, function %d", f, u, fast, want);
      bad++;
    }
    if (u == to) return bad;
  }
}

/* The table encode (buckets and thresholds) equals ib_tone_encode_f32 on
 * every float. The function's byte is non-decreasing in lin: every step but ib_cbrt_d is a
 * correctly rounded (so monotone) operation on non-negative values or the clamp and floor, and
 * ib_cbrt_d's last-ulp wobble (double) can move its float result by at most one float ulp - so a
 * byte can only go down within a few float ulps of where it goes up. Every float within 4096 of
 * each threshold is checked (one float step there moves c by >= 0.25 of its ulp, so 4096 steps are
 * > 1000 ulps of c, far beyond any rounding), every float within 64 of a bucket edge, a stride over
 * all bit patterns, NaN, infinities, negatives and subnormals. IB_TONE_EXHAUSTIVE=1 checks all 2^32
 * patterns (about 3 minutes on one core). */
Test(tone, encode_table_equals_the_function_on_every_float) {
  const float *t = ib_tone_encode_thresholds;
  const char *all = getenv("IB_TONE_EXHAUSTIVE");
  if (all && strcmp(all, "1") == 0) {
    cr_assert_eq(encode_mismatches(0, 0xffffffffu), 0);
    return;
  }
  for (int k = 1; k < 256; k++) {
    cr_assert(t[k] > t[k - 1] || k == 1, "thresholds increase: %d", k);
    uint32_t u = bits_of(t[k]);
    cr_assert_eq(ib_tone_encode_f32(t[k]), k, "threshold %d is exact (byte at it)", k);
    cr_assert_eq(ib_tone_encode_f32(float_of(u - 1)), k - 1, "threshold %d is the least", k);
    cr_assert_eq(encode_mismatches(u - 4096, u + 4096), 0, "near threshold %d", k);
  }
  long bad = 0;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4099)
    bad += encode_mismatches((uint32_t)u, (uint32_t)u);
  cr_assert_eq(bad, 0, "stride over all bit patterns");
  cr_assert_eq(encode_mismatches(0, 0x00010000u), 0, "+0 and subnormals");
  cr_assert_eq(encode_mismatches(0x7f7f0000u, 0x7fc10000u), 0, "largest, +inf, NaNs");
  cr_assert_eq(encode_mismatches(0x80000000u, 0x80010000u), 0, "-0 and negatives");
  cr_assert_eq(encode_mismatches(0xff7f0000u, 0xffffffffu), 0, "-inf, negative NaNs");
  cr_assert_eq(encode_mismatches(bits_of(0.0031f), bits_of(0.0032f)), 0, "branch change");
  for (uint32_t j = 0; j <= 13 * 128; j++) {
    uint32_t u = ((114u << 7) + j) << 16; /* bucket j's least float */
    cr_assert_eq(encode_mismatches(u - 64, u + 64), 0, "bucket %u's edges", j);
  }
}

/* ib_tone_cbrt_f32 equals (float)ib_cbrt_d on every input the kernel can
 * give it: the LMS values of all 2^24 RGB triples (the decode table does not
 * depend on the parameters). Two halves, run on two cores by --jobs 2. */
static void check_cbrt_domain(int r0, int r1) {
  const ib_tone_f32 p = ib_tone_prepare_f32(0, 0, 0, 0, 0, 0);
  for (int r = r0; r < r1; r++)
    for (int g = 0; g < 256; g++)
      for (int b = 0; b < 256; b++) {
        const uint8_t px[3] = {(uint8_t)r, (uint8_t)g, (uint8_t)b};
        float lms[3];
        ib_tone_lms_f32(p.decode, px, lms);
        for (int c = 0; c < 3; c++) {
          float got = ib_tone_cbrt_f32(lms[c]), want = (float)ib_cbrt_d((double)lms[c]);
          cr_assert(bits_of(got) == bits_of(want), "rgb %d %d %d lms[%d] = %a: %a, want %a", r, g,
                    b, c, lms[c], got, want);
        }
      }
}

Test(tone, float_cbrt_equals_the_double_one_on_all_rgb_triples_low) { check_cbrt_domain(0, 128); }
Test(tone, float_cbrt_equals_the_double_one_on_all_rgb_triples_high) {
  check_cbrt_domain(128, 256);
}

/* The pixel as it was computed before the fast paths (double cube roots, the
 * encode function): the same bytes for random pixels and parameters. */
static void px_before(const ib_tone_f32 *p, const uint8_t *rgb, uint8_t *out) {
  float lms[3], lin[3];
  ib_tone_lms_f32(p->decode, rgb, lms);
  ib_tone_oklab_f32(p, (float)ib_cbrt_d((double)lms[0]), (float)ib_cbrt_d((double)lms[1]),
                    (float)ib_cbrt_d((double)lms[2]), lin);
  for (int c = 0; c < 3; c++) out[c] = ib_tone_encode_f32(lin[c]);
}

Test(tone, fast_pixel_equals_the_former_one_on_random_pixels_and_params) {
  for (int k = 0; k < 200; k++) {
    tone_params tp = random_params();
    if (k < 9) tp.ev = (float)(k - 4) * 2.0f; /* the extremes too */
    ib_tone_f32 p =
        ib_tone_prepare_f32(tp.ev, tp.contrast, tp.highlights, tp.shadows, tp.whites, tp.blacks);
    for (int i = 0; i < 2000; i++) {
      uint8_t in[3] = {(uint8_t)rng_next(), (uint8_t)rng_next(), (uint8_t)rng_next()}, a[3], b[3];
      ib_tone_px_f32(&p, in, a);
      px_before(&p, in, b);
      cr_assert(memcmp(a, b, 3) == 0, "ev=%g c=%g rgb %d %d %d: %d %d %d, former %d %d %d", tp.ev,
                tp.contrast, in[0], in[1], in[2], a[0], a[1], a[2], b[0], b[1], b[2]);
    }
  }
}
