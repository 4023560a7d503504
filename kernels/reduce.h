/*
 * reduce.h - Image.reduce(factor, box) on 8-bit bands, matching Pillow 12.3
 * src/libImaging/Reduce.c (ImagingReduce, 8-bit path).
 *
 * The box (left, top, width, height after _reduce's conversion) is cut into
 * blocks of xscale x yscale source pixels from its top-left corner; the last
 * column and row of blocks are narrower when the box's size is not a
 * multiple of the factor (ImagingReduceCorners). Output pixel (x, y) of a
 * block of count = bw * bh pixels, per band, all in UINT32 (wrapping):
 *   out = ((sum of the block + count / 2) * multiplier(count)) >> 24
 *   multiplier(count) = (UINT32)((float)2^32 / (float)(256 * count))
 * (division_UINT32: a float division, not exact rounding). Pillow's special
 * cases (1x2, 2x2, 4x4, ...) shift instead of multiplying; for their
 * power-of-two counts the multiplier is an exact power of two and the
 * product stays below 2^32, so this one formula gives their bytes too.
 * Output size: (ceil(width / xscale), ceil(height / yscale)).
 */
#ifndef IB_REDUCE_H
#define IB_REDUCE_H

#include "ib_kernel.h"
#include "resample.h"

/* division_UINT32(count, 8). */
IB_FN uint32_t ib_reduce_multiplier(int count) {
  const uint32_t max_dividend = (uint32_t)(1 << 8) * (uint32_t)count;
  const float max_int = (float)(1 << 30) * 4.0f;
  return (uint32_t)(max_int / (float)max_dividend);
}

/* One band of the block of bw x bh pixels whose top-left sample is `in`
 * (`bands` bytes per pixel, `stride` bytes per row). */
IB_FN uint8_t ib_reduce_block(const uint8_t *in, int64_t stride, int bands, int bw, int bh) {
  const int count = bw * bh;
  uint32_t ss = (uint32_t)(count / 2);
  for (int y = 0; y < bh; y++)
    for (int x = 0; x < bw; x++) ss += in[y * stride + (int64_t)x * bands];
  return (uint8_t)((ss * ib_reduce_multiplier(count)) >> 24);
}

/* Output pixel (x, y) of a reduce over the box (bx, by, bw, bh) of the
 * image at `in`: each band of the block, clipped to the box. */
IB_FN void ib_reduce_pixel(uint8_t *out, const uint8_t *in, int64_t stride, int bands, int x, int y,
                           int xscale, int yscale, const int box[4]) {
  const int x0 = x * xscale, y0 = y * yscale;
  const int w = box[2] - x0 < xscale ? box[2] - x0 : xscale;
  const int h = box[3] - y0 < yscale ? box[3] - y0 : yscale;
  const uint8_t *blk = in + (int64_t)(box[1] + y0) * stride + (int64_t)(box[0] + x0) * bands;
  for (int b = 0; b < bands; b++) out[b] = ib_reduce_block(blk + b, stride, bands, w, h);
}

/* Image.reduce on LA / RGBA: Pillow converts to La / RGBa, reduces and
 * converts back, so each block pixel is premultiplied (ib_premultiply_px)
 * before the sums and the output pixel unpremultiplied after them. The
 * box is (left, top, width, height) as in ib_reduce_pixel. */
IB_FN void ib_reduce_pixel_pm(uint8_t *out, const uint8_t *in, int64_t stride, int bands, int x,
                              int y, int xscale, int yscale, const int box[4]) {
  const int x0 = x * xscale, y0 = y * yscale;
  const int w = box[2] - x0 < xscale ? box[2] - x0 : xscale;
  const int h = box[3] - y0 < yscale ? box[3] - y0 : yscale;
  const uint8_t *blk = in + (int64_t)(box[1] + y0) * stride + (int64_t)(box[0] + x0) * bands;
  const int count = w * h;
  uint32_t ss[4];
  for (int b = 0; b < bands; b++) ss[b] = (uint32_t)(count / 2);
  for (int yy = 0; yy < h; yy++)
    for (int xx = 0; xx < w; xx++) {
      uint8_t px[4];
      for (int b = 0; b < bands; b++) px[b] = blk[yy * stride + (int64_t)xx * bands + b];
      ib_premultiply_px(px, bands);
      for (int b = 0; b < bands; b++) ss[b] += px[b];
    }
  const uint32_t m = ib_reduce_multiplier(count);
  for (int b = 0; b < bands; b++) out[b] = (uint8_t)((ss[b] * m) >> 24);
  ib_unpremultiply_px(out, bands);
}

#endif
