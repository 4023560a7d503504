/*
 * blend.h - Image.blend / ImageChops.blend per byte, matching ImagingBlend
 * (Pillow 12.3 src/libImaging/Blend.c) exactly. Shared by the blend row
 * (chops family) and ImageEnhance (enhance.h).
 *
 * Contract, per byte of im1 = a, im2 = b, with alpha the float32 that
 * Pillow's _blend makes of the Python float ((float)double, round to
 * nearest; Annex F makes out-of-range values +-inf):
 *   alpha == 0.0f            -> a        (Pillow copies im1)
 *   alpha == 1.0f            -> b        (Pillow copies im2)
 *   0 <= alpha <= 1          -> (uint8)((float)a + alpha * (float)(b - a)),
 *                               truncated toward zero; the value stays in
 *                               [0, 255] so no clip is needed
 *   otherwise (extrapolation, also NaN):
 *       t = (float)a + alpha * (float)(b - a)     (float32, no FMA)
 *       t <= 0 -> 0, t >= 255 -> 255, else (uint8)t truncated;
 *       t NaN (alpha NaN, or +-inf * 0) -> 0, which is what Pillow's x86-64
 *       build yields (cvttss2si gives 0x80000000, low byte 0) and what the
 *       device's saturating conversion gives; stated explicitly because the
 *       C cast of NaN is undefined.
 * The difference b - a is an int converted to float, then multiplied by
 * alpha, then a (as float) is added: two float32 roundings, in that order.
 * Must be compiled without contraction (host: ISO C, device: --fmad=false).
 *
 * The whole-image shortcut "im1 is im2 -> copy" is the caller's business
 * (ImageEnhance.Color on L/LA hits it; see enhance.h).
 */
#ifndef IB_BLEND_H
#define IB_BLEND_H

#include "ib_kernel.h"

#ifdef __CUDACC_RTC__
/* Device: the same two float32 roundings, scaled by 2^-8 (exact: the
 * scaling commutes with rounding wherever the contract can tell them
 * apart), without the conversion pipe. I2F / F2I issue at a quarter of
 * the FP32 rate and were what bound fused chains with a blend
 * (bench/RESULTS.md profile: ALU 70 %, memory 31 %).
 *   v / 256 = (2^15 + v / 256) - 2^15, the float of bits 0x47000000 | v
 *   (one byte permute); (b - a) / 256 = (2^15 + b/256) - (2^15 + a/256)
 *   exactly (Sterbenz).
 *   t / 256 saturated to [0, 1] is the low clamp, and NaN gives +0 (PTX
 *   add.sat), as the contract wants; fminf(u, 255 / 256) is the high one.
 *   u in [0, 255/256] plus 2^15 rounded toward zero is 2^15 +
 *   trunc(256 u) / 256: the low byte of its bits is the result.
 * The contract's cases need no branch: alpha == 0 gives a + (+-0) = a,
 * alpha == 1 gives a + (b - a) = b, and 0 <= alpha <= 1 keeps t in
 * [min(a, b), max(a, b)] (rounding is monotone and both ends are floats),
 * where neither clamp acts. Where alpha * (b - a) overflows unscaled it
 * saturates scaled (same byte); where it is below 2^-118 (scaled: a
 * subnormal product) both give trunc(a + 0). tests/unit/test_blend_device.c
 * runs this sequence on the host against the branchy one below. */
IB_FN float ib_blend_q8(uint8_t v) { return __uint_as_float(0x47000000u | v); }
IB_FN uint8_t ib_blend_px(uint8_t a, uint8_t b, float alpha) {
  const float qa = ib_blend_q8(a), qb = ib_blend_q8(b);
  const float u =
      __saturatef(__fadd_rn(__fsub_rn(qa, 32768.0f), __fmul_rn(alpha, __fsub_rn(qb, qa))));
  const uint32_t r = __float_as_uint(__fadd_rz(fminf(u, 0.99609375f), 32768.0f)) - 0x47000000u;
  __builtin_assume(r <= 255u);
  return (uint8_t)r;
}
#else
IB_FN uint8_t ib_blend_px(uint8_t a, uint8_t b, float alpha) {
  if (alpha == 0.0f) return a;
  if (alpha == 1.0f) return b;
  float t = (float)(int)a + alpha * (float)((int)b - (int)a);
  if (alpha >= 0.0f && alpha <= 1.0f) return (uint8_t)t;
  if (t <= 0.0f) return 0;
  if (t >= 255.0f) return 255;
  if (t != t) return 0;
  return (uint8_t)t;
}
#endif

/* ib_blend_px(a, a, alpha), the alpha band of ImageEnhance (its degenerate
 * keeps the image's alpha): t = a + alpha * 0 is a for every finite alpha
 * (no clamp acts on a byte) and NaN for an infinite or NaN one (-> 0). One
 * compare of the uniform alpha instead of a blend per pixel. */
IB_FN uint8_t ib_blend_same(uint8_t a, float alpha) { return alpha * 0.0f == 0.0f ? a : 0; }

/* One row of `n` bytes (width * bands: blend is band-blind). */
IB_FN void ib_blend_row(const uint8_t *a, const uint8_t *b, uint8_t *out, uint32_t n, float alpha) {
  for (uint32_t i = 0; i < n; i++) out[i] = ib_blend_px(a[i], b[i], alpha);
}

#endif
