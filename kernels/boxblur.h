/*
 * boxblur.h - ImageFilter.BoxBlur and ImageFilter.GaussianBlur, Pillow 12.3
 * src/libImaging/BoxBlur.c (extended box filter with a fractional radius).
 *
 * ImagingBoxBlur(x_radius, y_radius, passes): when x_radius != 0, `passes`
 * horizontal passes over every row; then, when y_radius != 0, `passes`
 * passes over every column of that result (Pillow transposes, blurs rows and
 * transposes back, which is the same as blurring columns). Radii are C
 * floats. Bands are independent. GaussianBlur(r) = BoxBlur with 3 passes of
 * radius ib_gaussian_box_radius(r, 3) in each direction.
 *
 * One pass over a line of length n (ImagingLineBoxBlur8/32), fixed point
 * with 24 fractional bits, everything in uint32_t (wrapping as Pillow's
 * UINT32 does):
 *   radius = (int)r; ww = (uint32_t)(16777216.0f / (r * 2 + 1));
 *   fw = (2^24 - (2 * radius + 1) * ww) / 2;
 *   out[x] = (acc(x) * ww + (in[x-radius-1] + in[x+radius+1]) * fw + 2^23) >> 24
 * where acc(x) is the sum of in[x-radius .. x+radius] and indices outside
 * 0..n-1 read the edge pixel.
 */
#ifndef IB_BOXBLUR_H
#define IB_BOXBLUR_H

#include "ib_kernel.h"

typedef struct ib_box_pass {
  int radius;  /* integer part of the float radius */
  uint32_t ww; /* weight of the 2*radius+1 full pixels, 2^-24 units */
  uint32_t fw; /* weight of each of the two partial pixels */
} ib_box_pass;

/* ImagingHorizontalBoxBlur's weights for float radius r >= 0. */
IB_FN ib_box_pass ib_box_pass_for(float r) {
  ib_box_pass p;
  p.radius = (int)r;
  p.ww = (uint32_t)((float)(1u << 24) / (r * 2 + 1));
  p.fw = ((uint32_t)(1 << 24) - (uint32_t)(p.radius * 2 + 1) * p.ww) / 2;
  return p;
}

/* _gaussian_blur_radius: the extended-box radius whose `passes`-fold
 * repetition has variance radius^2 (Gwosdek et al. 2011). Float except the
 * two marked steps, which Pillow computes in double and stores to float. */
IB_FN float ib_gaussian_box_radius(float radius, int passes) {
  float sigma2 = radius * radius / passes;
  float L = (float)sqrt(12.0 * sigma2 + 1.0); /* double */
  float l = (float)floor((L - 1.0) / 2.0);    /* double */
  float a = (2 * l + 1) * (l * (l + 1) - 3 * sigma2);
  a /= 6 * (sigma2 - (l + 1) * (l + 1));
  return l + a;
}

/* One pass over one line of one band: in[i * in_step] -> out[i * out_step],
 * i = 0..n-1 (n >= 1). `out` must not overlap `in`. The three loops of each
 * branch follow ImagingLineBoxBlur8: left edge, interior, right edge. */
IB_FN void ib_box_blur_line(uint8_t *out, int64_t out_step, const uint8_t *in, int64_t in_step,
                            int n, ib_box_pass p) {
  const int lastx = n - 1, radius = p.radius;
  const int edgeA = radius + 1 < n ? radius + 1 : n;
  const int edgeB = n - radius - 1 > 0 ? n - radius - 1 : 0;
#define IB_IN(i) ((uint32_t)in[(int64_t)(i)*in_step])
#define IB_STEP(sub, add, left, right, x)                              \
  do {                                                                 \
    acc += IB_IN(add) - IB_IN(sub);                                    \
    uint32_t bulk = acc * p.ww + (IB_IN(left) + IB_IN(right)) * p.fw;  \
    out[(int64_t)(x)*out_step] = (uint8_t)((bulk + (1u << 23)) >> 24); \
  } while (0)
  /* acc for pixel -1: radius+1 copies of in[0], in[0..edgeA-2], then the
   * right edge pixel for what lies past the line. */
  uint32_t acc = IB_IN(0) * (uint32_t)(radius + 1);
  for (int x = 0; x < edgeA - 1; x++) acc += IB_IN(x);
  acc += IB_IN(lastx) * (uint32_t)(radius - edgeA + 1);
  if (edgeA <= edgeB) {
    for (int x = 0; x < edgeA; x++) IB_STEP(0, x + radius, 0, x + radius + 1, x);
    for (int x = edgeA; x < edgeB; x++)
      IB_STEP(x - radius - 1, x + radius, x - radius - 1, x + radius + 1, x);
    for (int x = edgeB; x <= lastx; x++) IB_STEP(x - radius - 1, lastx, x - radius - 1, lastx, x);
  } else {
    for (int x = 0; x < edgeB; x++) IB_STEP(0, x + radius, 0, x + radius + 1, x);
    for (int x = edgeB; x < edgeA; x++) IB_STEP(0, lastx, 0, lastx, x);
    for (int x = edgeA; x <= lastx; x++) IB_STEP(x - radius - 1, lastx, x - radius - 1, lastx, x);
  }
#undef IB_STEP
#undef IB_IN
}

/* The same pass for the outputs x0..x1-1 of the line only (0 <= x0 <= x1 <=
 * n), so a line can be split among threads. ib_box_blur_line's running acc
 * is always the exact window sum sum(in[clamp(j)], j = x-radius..x+radius)
 * (edges read the edge pixel) and its partial pixels are
 * in[clamp(x-radius-1)] and in[clamp(x+radius+1)]: this computes acc(x0-1)
 * directly from that definition, then steps exactly as the line does, so
 * every output byte equals ib_box_blur_line's (tests/unit/test_gpu_math.c,
 * boxblur/span_equals_line). */
IB_FN int ib_box_clamp(int i, int last) { return i < 0 ? 0 : (i > last ? last : i); }
IB_FN void ib_box_blur_span(uint8_t *out, int64_t out_step, const uint8_t *in, int64_t in_step,
                            int n, int x0, int x1, ib_box_pass p) {
  const int last = n - 1, radius = p.radius;
#define IB_INC(i) ((uint32_t)in[(int64_t)ib_box_clamp((i), last) * in_step])
  uint32_t acc = 0;
  for (int j = x0 - radius - 1; j < x0 + radius; j++) acc += IB_INC(j);
  for (int x = x0; x < x1; x++) {
    const uint32_t left = IB_INC(x - radius - 1);
    acc += IB_INC(x + radius) - left;
    uint32_t bulk = acc * p.ww + (left + IB_INC(x + radius + 1)) * p.fw;
    out[(int64_t)x * out_step] = (uint8_t)((bulk + (1u << 23)) >> 24);
  }
#undef IB_INC
}

#endif
