/*
 * convert.h - Image.convert(mode) between the admitted 8-bit modes, without
 * matrix or dither, matching Pillow 12.3 (src/libImaging/Convert.c plus the
 * Python fallback in Image.convert that goes through getmodebase() when
 * Convert.c has no direct converter).
 *
 * Mode numbers are ib_mode's (imgbatch.h); op_convert.c asserts they agree.
 * Pixels are chunky bytes in tobytes() order. Arithmetic contracts:
 *   luma  L24 = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16   (rgb2l, int)
 *   cmyk2rgb  nk = 255 - K; ch = CLIP8(nk - MULDIV255(C, nk)),
 *             MULDIV255(a, b) = t = a*b + 128, ((t >> 8) + t) >> 8
 *   rgb2cmyk  (255-R, 255-G, 255-B, 0)        (no undercolour removal)
 *   l2cmyk / la2cmyk  (0, 0, 0, 255-L)
 * Pair by pair (source -> target: Pillow path):
 *   L    -> LA (L,255) | RGB (L,L,L) | RGBA/RGBX (L,L,L,255) | CMYK l2cmyk
 *   LA   -> L (L) | RGB (L,L,L) | RGBA and RGBX (L,L,L,A) (la2rgb copies A
 *           into X too) | CMYK la2cmyk
 *   RGB  -> L L24 | LA (L24,255) | RGBA/RGBX (R,G,B,255) | CMYK rgb2cmyk
 *   RGBA -> L L24 | LA (L24,A) | RGB | RGBX (R,G,B,255) | CMYK rgb2cmyk
 *   RGBX -> L L24 | LA (L24,255) | RGB | RGBA via RGB: (R,G,B,255) | CMYK
 *   CMYK -> RGB/RGBA/RGBX cmyk2rgb (+255) | L via RGB: L24(cmyk2rgb) |
 *           LA via RGB: (L24(cmyk2rgb), 255)
 *   same mode -> copy.
 * All 30 cross pairs exist in Pillow; none is refused.
 */
#ifndef IB_CONVERT_H
#define IB_CONVERT_H

#include "ib_kernel.h"

#define IB_KMODE_L 1
#define IB_KMODE_LA 2
#define IB_KMODE_RGB 3
#define IB_KMODE_RGBA 4
#define IB_KMODE_CMYK 5
#define IB_KMODE_RGBX 6

IB_FN unsigned ib_kmode_bands(int mode) {
  return mode == IB_KMODE_L ? 1u : mode == IB_KMODE_LA ? 2u : mode == IB_KMODE_RGB ? 3u : 4u;
}

/* rgb2l: ITU-R 601-2 luma in 16.16 fixed point, rounded. */
IB_FN uint8_t ib_convert_luma(uint8_t r, uint8_t g, uint8_t b) {
  const int l = ((int)r * 19595 + (int)g * 38470 + (int)b * 7471 + 0x8000) >> 16;
#ifdef __CUDACC_RTC__
  /* The weights sum to 65536, so l <= 255: told, the device masks nothing. */
  __builtin_assume((unsigned)l <= 255u);
#endif
  return (uint8_t)l;
}

/* One channel of cmyk2rgb. */
IB_FN uint8_t ib_convert_cmyk_channel(uint8_t c, uint8_t k) {
  int nk = 255 - (int)k;
  int t = (int)c * nk + 128;
  return ib_clip8(nk - (((t >> 8) + t) >> 8));
}

/* Reads a source pixel as Pillow's converters see it: gray sources give
 * (L, L, L, A), RGB-like give (R, G, B, 4th byte or 255), CMYK goes
 * through cmyk2rgb (R, G, B, 255) as every CMYK -> non-CMYK path does. */
IB_FN void ib_convert_read(int from, const uint8_t *in, uint8_t rgba[4]) {
  switch (from) {
    case IB_KMODE_L:
      rgba[0] = rgba[1] = rgba[2] = in[0];
      rgba[3] = 255;
      break;
    case IB_KMODE_LA:
      rgba[0] = rgba[1] = rgba[2] = in[0];
      rgba[3] = in[1];
      break;
    case IB_KMODE_RGB: rgba[0] = in[0], rgba[1] = in[1], rgba[2] = in[2], rgba[3] = 255; break;
    case IB_KMODE_CMYK:
      rgba[0] = ib_convert_cmyk_channel(in[0], in[3]);
      rgba[1] = ib_convert_cmyk_channel(in[1], in[3]);
      rgba[2] = ib_convert_cmyk_channel(in[2], in[3]);
      rgba[3] = 255;
      break;
    default: /* RGBA, RGBX */
      rgba[0] = in[0], rgba[1] = in[1], rgba[2] = in[2], rgba[3] = in[3];
      break;
  }
}

/* One pixel from mode `from` to mode `to` (IB_KMODE_*). */
IB_FN void ib_convert_px(int from, int to, const uint8_t *in, uint8_t *out) {
  if (from == to) {
    for (unsigned b = 0; b < ib_kmode_bands(from); b++) out[b] = in[b];
    return;
  }
  int gray = from == IB_KMODE_L || from == IB_KMODE_LA;
  if (to == IB_KMODE_CMYK && from != IB_KMODE_CMYK) {
    if (gray) {
      out[0] = out[1] = out[2] = 0;
      out[3] = (uint8_t)(255 - in[0]);
    } else {
      out[0] = (uint8_t)(255 - in[0]);
      out[1] = (uint8_t)(255 - in[1]);
      out[2] = (uint8_t)(255 - in[2]);
      out[3] = 0;
    }
    return;
  }
  uint8_t p[4];
  ib_convert_read(from, in, p);
  /* Alpha survives only LA <-> RGBA and LA -> RGBX (la2rgb); every other
   * path writes 255. */
  uint8_t a = (from == IB_KMODE_LA || (from == IB_KMODE_RGBA && to == IB_KMODE_LA)) ? p[3] : 255;
  uint8_t l = gray ? p[0] : ib_convert_luma(p[0], p[1], p[2]);
  switch (to) {
    case IB_KMODE_L: out[0] = l; break;
    case IB_KMODE_LA:
      out[0] = l;
      out[1] = a;
      break;
    case IB_KMODE_RGB: out[0] = p[0], out[1] = p[1], out[2] = p[2]; break;
    default: /* RGBA, RGBX */ out[0] = p[0], out[1] = p[1], out[2] = p[2], out[3] = a; break;
  }
}

/* One row of `width` pixels. */
IB_FN void ib_convert_row(int from, int to, const uint8_t *in, uint8_t *out, uint32_t width) {
  unsigned bi = ib_kmode_bands(from), bo = ib_kmode_bands(to);
  for (uint32_t x = 0; x < width; x++) ib_convert_px(from, to, in + x * bi, out + x * bo);
}

#endif
