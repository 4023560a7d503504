/*
 * point.h - 8-bit lookup tables as Image.point applies them (Pillow 12.3
 * ImagingPoint, src/libImaging/Point.c) and the tables ImageOps builds for
 * invert / solarize / posterize (src/PIL/ImageOps.py).
 *
 * Table layout (Pillow's): band-major, 256 entries per band,
 * table[band * 256 + value]; band b of a pixel reads its own 256 entries
 * (for LA: L uses entries 0..255, A uses 256..511). Entries are bytes,
 * already clamped (ib_point_entry) when the table is built.
 */
#ifndef IB_POINT_H
#define IB_POINT_H

#include "ib_kernel.h"

/* _imaging.c _point: every int entry goes through CLIP8 (<= 0 -> 0,
 * >= 256 -> 255). */
IB_FN uint8_t ib_point_entry(int32_t v) { return ib_clip8(v); }

/* ImageOps.invert: lut[i] = 255 - i. */
IB_FN uint8_t ib_point_invert_entry(int i) { return (uint8_t)(255 - i); }

/* ImageOps.solarize: lut[i] = i if i < threshold else 255 - i (any
 * threshold: >= 256 is the identity, 0 inverts everything). */
IB_FN uint8_t ib_point_solarize_entry(int i, uint32_t threshold) {
  return (uint8_t)((uint32_t)i < threshold ? i : 255 - i);
}

/* ImageOps.posterize: lut[i] = i & ~(2**(8 - bits) - 1), bits in 0..8
 * (0: all zero). */
IB_FN uint8_t ib_point_posterize_entry(int i, uint32_t bits) {
  int mask = ~((1 << (8 - bits)) - 1);
  return (uint8_t)(i & mask);
}

/* One pixel: out[b] = table[b * 256 + in[b]] for b < bands. */
IB_FN void ib_point_px(const uint8_t *table, unsigned bands, const uint8_t *in, uint8_t *out) {
  for (unsigned b = 0; b < bands; b++) out[b] = table[b * 256u + in[b]];
}

/* One row of `width` pixels of `bands` bytes each. */
IB_FN void ib_point_row(const uint8_t *table, unsigned bands, const uint8_t *in, uint8_t *out,
                        uint32_t width) {
  for (uint32_t x = 0; x < width; x++) ib_point_px(table, bands, in + x * bands, out + x * bands);
}

#endif
