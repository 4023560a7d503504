/*
 * convolve.h - ImageFilter.Kernel 3x3 and 5x5, Pillow 12.3
 * src/libImaging/Filter.c (ImagingFilter3x3 / ImagingFilter5x5) as called by
 * _imaging.c `_filter`.
 *
 * Parameters are C floats: k[i] = (float)kernel[i] / (float)scale (float
 * division, so scale 0 yields inf/nan weights exactly as in Pillow);
 * bias = (float)((double)(float)offset + 0.5) (the +0.5 rounds the final
 * truncation). For an interior sample, in float, left to right:
 *   ss = bias;
 *   ss += row(y+h) . k[0 .. size-1];          (the kernel is flipped vertically)
 *   ...
 *   ss += row(y-h) . k[size*(size-1) ..];     h = size/2
 * with row(r) . w = ((in[x-h]*w[0] + in[x-h+1]*w[1]) + ...) + in[x+h]*w[size-1],
 * each term (float)sample * weight. The sample is ss clamped to 0..255 and
 * truncated; a NaN sum gives 0 (x86 cvttss2si of NaN, as the Pillow wheel).
 * Border: the outer h rows and h columns are copied unfiltered, and an
 * image narrower or shorter than the kernel is copied whole.
 */
#ifndef IB_CONVOLVE_H
#define IB_CONVOLVE_H

#include "ib_kernel.h"

#define IB_CONVOLVE_MAX_SIZE 5

/* The divided weight Pillow's _filter stores for one kernel entry. */
IB_FN float ib_convolve_weight(double kernel_value, double scale) {
  return (float)kernel_value / (float)scale;
}

/* ImagingFilter's `offset += 0.5` on a float offset. */
IB_FN float ib_convolve_bias(double offset) { return (float)((double)(float)offset + 0.5); }

/* Filter.c clip8: clamp then truncate; NaN compares false both ways and
 * converts to 0. */
IB_FN uint8_t ib_convolve_clip8(float v) {
  if (v != v) return 0;
  v = v < 0.0f ? 0.0f : v;
  v = v > 255.0f ? 255.0f : v;
  return (uint8_t)v;
}

/* One interior output sample. `c` points at the centre sample; samples of a
 * row are `step` bytes apart (the pixel size), rows `row_stride` bytes apart.
 * size is 3 or 5; k holds size*size divided weights. */
IB_FN uint8_t ib_convolve_sample(const uint8_t *c, int64_t row_stride, int64_t step, int size,
                                 const float *k, float bias) {
  const int h = size / 2;
  float ss = bias;
  for (int j = 0; j < size; j++) {
    const uint8_t *row = c + (int64_t)(h - j) * row_stride - (int64_t)h * step;
    const float *w = k + j * size;
    float dot = (float)row[0] * w[0];
    for (int i = 1; i < size; i++) dot = dot + (float)row[(int64_t)i * step] * w[i];
    ss += dot;
  }
  return ib_convolve_clip8(ss);
}

#endif
