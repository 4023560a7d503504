/*
 * enhance.h - ImageEnhance.Brightness / Color / Contrast (Pillow 12.3
 * src/PIL/ImageEnhance.py): enhance(f) = Image.blend(degenerate, image, f),
 * per byte ib_blend_px(degenerate, image, (float)f) (blend.h).
 *
 * The degenerate pixel, per kind and mode (bytes in tobytes() order):
 *   BRIGHTNESS  Image.new(mode, size, 0), alpha band put back from the
 *               image for LA/RGBA: zeros (X of RGBX and K of CMYK too).
 *   COLOR       image.convert("L" or "LA" when the mode has A).convert(mode):
 *               RGB (l,l,l), RGBA (l,l,l,A), RGBX (l,l,l,255),
 *               CMYK (0,0,0,255-l) with l = L24(cmyk2rgb(px)); l = L24.
 *               For L and LA the degenerate *is* the image, and ImagingBlend
 *               returns a copy for im1 == im2 whatever the factor (also NaN
 *               or inf), so the output equals the input.
 *   CONTRAST    m = int(mean of convert("L") + 0.5) over the whole image
 *               (ib_enhance_contrast_mean); Image.new("L", size, m)
 *               .convert(mode), alpha put back for LA/RGBA:
 *               L (m), LA (m,A), RGB (m,m,m), RGBA (m,m,m,A), RGBX
 *               (m,m,m,255), CMYK (0,0,0,255-m).
 */
#ifndef IB_ENHANCE_H
#define IB_ENHANCE_H

#include "blend.h"
#include "convert.h"
#include "ib_kernel.h"

/* Match proto imgbatch.v1.EnhanceKind. */
#define IB_ENHANCE_BRIGHTNESS 0
#define IB_ENHANCE_COLOR 1
#define IB_ENHANCE_CONTRAST 2

/* ImageStat.Stat(l).mean[0] is sum / count in double (both exact below
 * 2^53), 0 for an empty image; Contrast takes int(mean + 0.5). */
IB_FN int ib_enhance_contrast_mean(uint64_t luma_sum, uint64_t count) {
  double mean = count ? (double)luma_sum / (double)count : 0.0;
  return (int)(mean + 0.5);
}

/* The degenerate pixel of `kind` for `mode` (IB_KMODE_*); `mean` is used by
 * CONTRAST only. */
IB_FN void ib_enhance_degenerate(int kind, int mode, int mean, const uint8_t *in, uint8_t *deg) {
  unsigned bands = ib_kmode_bands(mode);
  int has_alpha = mode == IB_KMODE_LA || mode == IB_KMODE_RGBA;
  if (kind == IB_ENHANCE_COLOR) {
    if (mode == IB_KMODE_L || mode == IB_KMODE_LA) {
      for (unsigned b = 0; b < bands; b++) deg[b] = in[b];
      return;
    }
    uint8_t l;
    ib_convert_px(mode, IB_KMODE_L, in, &l);
    mean = l;
  } else if (kind == IB_ENHANCE_BRIGHTNESS) {
    for (unsigned b = 0; b < bands; b++) deg[b] = 0;
    if (has_alpha) deg[bands - 1] = in[bands - 1];
    return;
  }
  /* COLOR (per-pixel l) and CONTRAST (image mean) share the gray shape. */
  uint8_t g = (uint8_t)mean;
  if (mode == IB_KMODE_CMYK) {
    deg[0] = deg[1] = deg[2] = 0;
    deg[3] = (uint8_t)(255 - g);
    return;
  }
  for (unsigned b = 0; b < bands; b++) deg[b] = g;
  if (mode == IB_KMODE_RGBX) deg[3] = 255;
  if (has_alpha) deg[bands - 1] = in[bands - 1];
}

/* One pixel of enhance(factor); `alpha` = (float)factor. */
IB_FN void ib_enhance_px(int kind, int mode, int mean, float alpha, const uint8_t *in,
                         uint8_t *out) {
  unsigned bands = ib_kmode_bands(mode);
  if (kind == IB_ENHANCE_COLOR && (mode == IB_KMODE_L || mode == IB_KMODE_LA)) {
    for (unsigned b = 0; b < bands; b++) out[b] = in[b];
    return;
  }
  uint8_t deg[4];
  ib_enhance_degenerate(kind, mode, mean, in, deg);
  /* Every kind's degenerate keeps the image's alpha band. */
  const unsigned nb = mode == IB_KMODE_LA || mode == IB_KMODE_RGBA ? bands - 1 : bands;
  for (unsigned b = 0; b < nb; b++) out[b] = ib_blend_px(deg[b], in[b], alpha);
  if (nb < bands) out[nb] = ib_blend_same(in[nb], alpha);
}

IB_FN void ib_enhance_row(int kind, int mode, int mean, float alpha, const uint8_t *in,
                          uint8_t *out, uint32_t width) {
  unsigned bands = ib_kmode_bands(mode);
  for (uint32_t x = 0; x < width; x++)
    ib_enhance_px(kind, mode, mean, alpha, in + x * bands, out + x * bands);
}

#endif
