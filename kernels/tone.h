/*
 * tone.h - the Oklab tone op (SPEC section 5; ours, no Pillow equivalent).
 *
 * Per pixel, for each of R, G, B byte v (alpha, when present, is copied):
 *
 *   1. decode     c = v / 255
 *                 lin = c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ^ 2.4
 *   2. to Oklab   (Bjorn Ottosson, "A perceptual color space for image
 *                 processing", 2020; matrices M1, M2 below)
 *                 (l, m, s) = M1 * (r, g, b);  (l', m', s') = cbrt(l, m, s)
 *                 (L, a, b) = M2 * (l', m', s')
 *   3. adjust L only (a, b untouched), with parameters
 *                 ev in [-8, 8], contrast, highlights, shadows, whites,
 *                 blacks in [-1, 1] (all 0 = identity):
 *        exposure  L1 = L * 2^(ev / 3)     (neutral colours: linear x 2^ev; a, b are
 *                  not scaled, so a chromatic colour keeps its absolute chroma)
 *        contrast  L2 = P + (L1 - P) * (1 + contrast),   pivot P = 0.5
 *        masks     S(e0, e1, x) = t * t * (3 - 2 t),  t = min(max((x - e0) / (e1 - e0), 0), 1)
 *                  w_shadows    = 1 - S(0, 0.5, L2)
 *                  w_highlights = S(0.5, 1, L2)
 *                  w_blacks     = 1 - S(0, 0.25, L2)
 *                  w_whites     = S(0.75, 1, L2)
 *        tones     L3 = L2 + 0.25 * (shadows * w_shadows + highlights * w_highlights)
 *                      + 0.125 * (blacks * w_blacks + whites * w_whites)
 *      (0.25 and 0.125 keep each term's slope below 1 where it acts alone,
 *      (|d/dL| <= 0.75), so a single adjustment never folds the tone curve.)
 *   4. back       (l', m', s') = M2^-1 * (L3, a, b);  (l, m, s) = (l'^3, m'^3, s'^3)
 *                 (r, g, b) = M1^-1 * (l, m, s)
 *   5. encode     c = lin <= 0.0031308 ? 12.92 * lin : 1.055 * lin ^ (1 / 2.4) - 0.055
 *                 (negative lin takes the linear branch; no NaN is possible)
 *                 out = floor(min(max(c, 0), 1) * 255 + 0.5)
 * No value is clamped anywhere but in step 5 (the mask's t is a weight, not a
 * value).
 *
 * Two implementations of the same formulas: the float64 one (`_f64`) is the
 * specification; the float32 one (`_f32`, float literals) is what the CPU
 * backend and the GPU run. Its cube roots and powers come from ib_mathf.h
 * (basic IEEE double operations only, rounded to float), not libm/CUDA
 * powf/cbrtf/exp2f, so both backends give the same bytes. Both take the parameters as narrowed
 * to float32 (the op row rejects values outside the ranges above or
 * non-finite). tests/unit/test_tone.c holds the float32 path to within 1 LSB
 * of float64 (alpha equal). Per-job factors are prepared once
 * (ib_tone_prepare_*) so the per-pixel code does no exp2.
 */
#ifndef IB_KERNEL_TONE_H
#define IB_KERNEL_TONE_H

#include "ib_kernel.h"
#include "ib_mathf.h"

#define IB_TONE_EV_MAX 8.0
#define IB_TONE_AMOUNT_MAX 1.0

/* ------------------------------------------------------------ float32 */

typedef struct ib_tone_f32 {
  float exposure; /* 2^(ev/3) */
  float contrast; /* 1 + contrast */
  float shadows, highlights, blacks, whites;
  float decode[256]; /* ib_tone_decode_f32(v): the same values, computed once per job */
} ib_tone_f32;

IB_FN float ib_tone_decode_f32(uint8_t v);

IB_FN ib_tone_f32 ib_tone_prepare_f32(float ev, float contrast, float highlights, float shadows,
                                      float whites, float blacks) {
  ib_tone_f32 t;
  t.exposure = (float)ib_exp2_d((double)(ev / 3.0f));
  t.contrast = 1.0f + contrast;
  t.shadows = shadows;
  t.highlights = highlights;
  t.blacks = blacks;
  t.whites = whites;
  for (int v = 0; v < 256; v++) t.decode[v] = ib_tone_decode_f32((uint8_t)v);
  return t;
}

IB_FN float ib_tone_smoothstep_f32(float e0, float e1, float x) {
  float t = (x - e0) / (e1 - e0);
  t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  return t * t * (3.0f - 2.0f * t);
}

IB_FN float ib_tone_decode_f32(uint8_t v) {
  float c = (float)v / 255.0f;
  return c <= 0.04045f ? c / 12.92f : (float)ib_pow_2_4_d((double)((c + 0.055f) / 1.055f));
}

IB_FN uint8_t ib_tone_encode_f32(float lin) {
  float c =
      lin <= 0.0031308f ? 12.92f * lin : 1.055f * (float)ib_pow_inv_2_4_d((double)lin) - 0.055f;
  c = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
  return (uint8_t)(int)floorf(c * 255.0f + 0.5f);
}

IB_FN float ib_tone_adjust_f32(const ib_tone_f32 *p, float L) {
  float L1 = L * p->exposure;
  float L2 = 0.5f + (L1 - 0.5f) * p->contrast;
  float ws = 1.0f - ib_tone_smoothstep_f32(0.0f, 0.5f, L2);
  float wh = ib_tone_smoothstep_f32(0.5f, 1.0f, L2);
  float wb = 1.0f - ib_tone_smoothstep_f32(0.0f, 0.25f, L2);
  float ww = ib_tone_smoothstep_f32(0.75f, 1.0f, L2);
  return L2 + 0.25f * (p->shadows * ws + p->highlights * wh) +
         0.125f * (p->blacks * wb + p->whites * ww);
}

/* One pixel: rgb[0..2] in, out[0..2] written (may alias). */
IB_FN void ib_tone_px_f32(const ib_tone_f32 *p, const uint8_t *rgb, uint8_t *out) {
  float r = p->decode[rgb[0]];
  float g = p->decode[rgb[1]];
  float b = p->decode[rgb[2]];

  float l = (float)ib_cbrt_d((double)(0.4122214708f * r + 0.5363325363f * g + 0.0514459929f * b));
  float m = (float)ib_cbrt_d((double)(0.2119034982f * r + 0.6806995451f * g + 0.1073969566f * b));
  float s = (float)ib_cbrt_d((double)(0.0883024619f * r + 0.2817188376f * g + 0.6299787005f * b));

  float L = 0.2104542553f * l + 0.7936177850f * m - 0.0040720468f * s;
  float A = 1.9779984951f * l - 2.4285922050f * m + 0.4505937099f * s;
  float B = 0.0259040371f * l + 0.7827717662f * m - 0.8086757660f * s;

  L = ib_tone_adjust_f32(p, L);

  l = L + 0.3963377774f * A + 0.2158037573f * B;
  m = L - 0.1055613458f * A - 0.0638541728f * B;
  s = L - 0.0894841775f * A - 1.2914855480f * B;
  l = l * l * l;
  m = m * m * m;
  s = s * s * s;

  out[0] = ib_tone_encode_f32(4.0767416621f * l - 3.3077115913f * m + 0.2309699292f * s);
  out[1] = ib_tone_encode_f32(-1.2684380046f * l + 2.6097574011f * m - 0.3413193965f * s);
  out[2] = ib_tone_encode_f32(-0.0041960863f * l - 0.7034186147f * m + 1.7076147010f * s);
}

/* `n` pixels of `bands` (3 or 4) bytes; band 3 (alpha) is copied. */
IB_FN void ib_tone_row_f32(const ib_tone_f32 *p, const uint8_t *in, uint8_t *out, int n,
                           int bands) {
  for (int i = 0; i < n; i++) {
    ib_tone_px_f32(p, in + i * bands, out + i * bands);
    if (bands == 4) out[i * 4 + 3] = in[i * 4 + 3];
  }
}

/* ------------------------------------------------------------ float64 (the spec) */

typedef struct ib_tone_f64 {
  double exposure, contrast, shadows, highlights, blacks, whites;
} ib_tone_f64;

IB_FN ib_tone_f64 ib_tone_prepare_f64(double ev, double contrast, double highlights, double shadows,
                                      double whites, double blacks) {
  ib_tone_f64 t;
  t.exposure = exp2(ev / 3.0);
  t.contrast = 1.0 + contrast;
  t.shadows = shadows;
  t.highlights = highlights;
  t.blacks = blacks;
  t.whites = whites;
  return t;
}

IB_FN double ib_tone_smoothstep_f64(double e0, double e1, double x) {
  double t = (x - e0) / (e1 - e0);
  t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
  return t * t * (3.0 - 2.0 * t);
}

IB_FN double ib_tone_decode_f64(uint8_t v) {
  double c = (double)v / 255.0;
  return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

IB_FN uint8_t ib_tone_encode_f64(double lin) {
  double c = lin <= 0.0031308 ? 12.92 * lin : 1.055 * pow(lin, 1.0 / 2.4) - 0.055;
  c = c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);
  return (uint8_t)(int)floor(c * 255.0 + 0.5);
}

IB_FN double ib_tone_adjust_f64(const ib_tone_f64 *p, double L) {
  double L1 = L * p->exposure;
  double L2 = 0.5 + (L1 - 0.5) * p->contrast;
  double ws = 1.0 - ib_tone_smoothstep_f64(0.0, 0.5, L2);
  double wh = ib_tone_smoothstep_f64(0.5, 1.0, L2);
  double wb = 1.0 - ib_tone_smoothstep_f64(0.0, 0.25, L2);
  double ww = ib_tone_smoothstep_f64(0.75, 1.0, L2);
  return L2 + 0.25 * (p->shadows * ws + p->highlights * wh) +
         0.125 * (p->blacks * wb + p->whites * ww);
}

IB_FN void ib_tone_px_f64(const ib_tone_f64 *p, const uint8_t *rgb, uint8_t *out) {
  double r = ib_tone_decode_f64(rgb[0]);
  double g = ib_tone_decode_f64(rgb[1]);
  double b = ib_tone_decode_f64(rgb[2]);

  double l = cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  double m = cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  double s = cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);

  double L = 0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s;
  double A = 1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s;
  double B = 0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s;

  L = ib_tone_adjust_f64(p, L);

  l = L + 0.3963377774 * A + 0.2158037573 * B;
  m = L - 0.1055613458 * A - 0.0638541728 * B;
  s = L - 0.0894841775 * A - 1.2914855480 * B;
  l = l * l * l;
  m = m * m * m;
  s = s * s * s;

  out[0] = ib_tone_encode_f64(4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s);
  out[1] = ib_tone_encode_f64(-1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s);
  out[2] = ib_tone_encode_f64(-0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s);
}

IB_FN void ib_tone_row_f64(const ib_tone_f64 *p, const uint8_t *in, uint8_t *out, int n,
                           int bands) {
  for (int i = 0; i < n; i++) {
    ib_tone_px_f64(p, in + i * bands, out + i * bands);
    if (bands == 4) out[i * 4 + 3] = in[i * 4 + 3];
  }
}

#endif
