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

/* One row of `n` bytes (width * bands: blend is band-blind). */
IB_FN void ib_blend_row(const uint8_t *a, const uint8_t *b, uint8_t *out, uint32_t n, float alpha) {
  for (uint32_t i = 0; i < n; i++) out[i] = ib_blend_px(a[i], b[i], alpha);
}

#endif
