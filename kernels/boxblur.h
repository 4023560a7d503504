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

/* The window x0-radius-1 .. x0+radius-1 of acc(x0-1) split at the edges:
 * `lo` indices below 0 (each reads in[0]), in[a..b] inside, `hi` indices
 * past n-1 (each reads in[n-1]); so a warm-up costs min(n, 2*radius+1)
 * loads, not 2*radius+1 (radii reach 2^20). The uint32_t sum wraps the same
 * whatever the order, so acc is the same. */
typedef struct ib_box_window {
  uint32_t lo, hi;
  int a, b;
} ib_box_window;
IB_FN ib_box_window ib_box_window_at(int x0, int n, int radius) {
  const int jl = x0 - radius - 1, jh = x0 + radius - 1; /* inclusive */
  ib_box_window w;
  w.lo = (uint32_t)(jl < 0 ? (jh < 0 ? jh : -1) - jl + 1 : 0);
  w.hi = (uint32_t)(jh > n - 1 ? jh - (jl > n - 1 ? jl : n) + 1 : 0);
  w.a = jl < 0 ? 0 : jl;
  w.b = jh > n - 1 ? n - 1 : jh;
  return w;
}

IB_FN void ib_box_blur_span(uint8_t *out, int64_t out_step, const uint8_t *in, int64_t in_step,
                            int n, int x0, int x1, ib_box_pass p) {
  const int last = n - 1, radius = p.radius;
#define IB_INC(i) ((uint32_t)in[(int64_t)ib_box_clamp((i), last) * in_step])
  const ib_box_window w = ib_box_window_at(x0, n, radius);
  uint32_t acc = w.lo * IB_INC(0) + w.hi * IB_INC(last);
  for (int j = w.a; j <= w.b; j++) acc += IB_INC(j);
  for (int x = x0; x < x1; x++) {
    const uint32_t left = IB_INC(x - radius - 1);
    acc += IB_INC(x + radius) - left;
    uint32_t bulk = acc * p.ww + (left + IB_INC(x + radius + 1)) * p.fw;
    out[(int64_t)x * out_step] = (uint8_t)((bulk + (1u << 23)) >> 24);
  }
#undef IB_INC
}

/* ib_box_blur_span for four lines at once, one per byte lane of a word (4
 * adjacent byte-columns of a strip, or the 4 bands of an RGBA row): word j
 * (0 <= j < n) of the lines is in[(j - base) * in_step], output x goes to
 * out[(x - base) * out_step]. Reads only the words of
 * clamp(x0-radius-1) .. clamp(x1+radius) (clamp to 0..n-1): the caller
 * holds those (tests/unit/test_gpu_math.c, boxblur/span4_*). Each lane's
 * bytes are ib_box_blur_span's. */
/* The column passes in tiles (kernels/blur.cuh ib_cols): output rows
 * y0..y1-1 of `passes` passes need rows lo..hi-1 of the pass before, with
 * `left` passes still to come after it (left = passes for the input, 0 for
 * the last pass's output), pad = radius + 1 (the reach of a pass). Rows
 * past the image edge are never needed: the passes clamp there. */
IB_FN void ib_box_tile_rows(int y0, int y1, int n, int pad, int left, int *lo, int *hi) {
  const int64_t reach = (int64_t)left * pad;
  *lo = y0 - reach < 0 ? 0 : (int)(y0 - reach);
  *hi = y1 + reach > n ? n : (int)(y1 + reach);
}

/* Thread-part `sg` of `nseg` of the rows lo..hi-1: x0..x1-1 (maybe empty). */
IB_FN void ib_box_seg(int lo, int hi, int nseg, int sg, int *x0, int *x1) {
  const int per = (hi - lo + nseg - 1) / nseg;
  *x0 = lo + sg * per < hi ? lo + sg * per : hi;
  *x1 = *x0 + per < hi ? *x0 + per : hi;
}

#ifdef __CUDACC_RTC__
#define IB_BYTE(v, b) __byte_perm((v), 0u, 0x4440u + (b)) /* byte b, zero-extended */
#define IB_BYTE3x4(a, b, c, d) __byte_perm(__byte_perm(a, b, 0x73), __byte_perm(c, d, 0x73), 0x5410)
#else
#define IB_BYTE(v, b) ((v) >> (8 * (b)) & 255u)
#define IB_BYTE3x4(a, b, c, d) \
  ((a) >> 24 | ((b) >> 24) << 8 | ((c) >> 24) << 16 | ((d) >> 24) << 24)
#endif
IB_FN void ib_box_blur_span4(uint32_t *out, int out_step, const uint32_t *in, int in_step, int base,
                             int n, int x0, int x1, ib_box_pass p) {
  const int last = n - 1, radius = p.radius;
  const uint32_t ww = p.ww, fw = p.fw;
#define IB_W(i) in[(ib_box_clamp((i), last) - base) * in_step]
  const ib_box_window w = ib_box_window_at(x0, n, radius);
  const uint32_t first = w.lo ? IB_W(0) : 0u, end = w.hi ? IB_W(last) : 0u;
  uint32_t a0 = w.lo * IB_BYTE(first, 0) + w.hi * IB_BYTE(end, 0);
  uint32_t a1 = w.lo * IB_BYTE(first, 1) + w.hi * IB_BYTE(end, 1);
  uint32_t a2 = w.lo * IB_BYTE(first, 2) + w.hi * IB_BYTE(end, 2);
  uint32_t a3 = w.lo * IB_BYTE(first, 3) + w.hi * IB_BYTE(end, 3);
  /* in[a..b] lie inside the line (no clamp), summed two lanes per 32 bits:
   * 16-bit fields hold 257 bytes without a carry, so chunks of 256 words */
  for (int j0 = w.a; j0 <= w.b; j0 += 256) {
    const int j1 = w.b - j0 < 255 ? w.b : j0 + 255;
    uint32_t even = 0, odd = 0;
    for (int j = j0; j <= j1; j++) {
      const uint32_t v = in[(j - base) * in_step];
      even += v & 0x00ff00ffu;
      odd += v >> 8 & 0x00ff00ffu;
    }
    a0 += even & 0xffffu;
    a1 += odd & 0xffffu;
    a2 += even >> 16;
    a3 += odd >> 16;
  }
  /* the word entering the window at x (in[x+radius]) is the previous x's
   * right partial pixel: one new load per side per step. The sums wrap
   * (uint32_t) as ib_box_blur_span's, in any order. */
  const uint32_t nx = IB_W(x0 + radius);
  uint32_t n0 = IB_BYTE(nx, 0), n1 = IB_BYTE(nx, 1), n2 = IB_BYTE(nx, 2), n3 = IB_BYTE(nx, 3);
#define IB_STEP4(l, r, o)                                                                          \
  do {                                                                                             \
    const uint32_t l0 = IB_BYTE(l, 0), l1 = IB_BYTE(l, 1), l2 = IB_BYTE(l, 2), l3 = IB_BYTE(l, 3); \
    const uint32_t r0 = IB_BYTE(r, 0), r1 = IB_BYTE(r, 1), r2 = IB_BYTE(r, 2), r3 = IB_BYTE(r, 3); \
    a0 += n0 - l0;                                                                                 \
    a1 += n1 - l1;                                                                                 \
    a2 += n2 - l2;                                                                                 \
    a3 += n3 - l3;                                                                                 \
    o = IB_BYTE3x4(                                                                                \
        a0 * ww + ((l0 + r0) * fw + (1u << 23)), a1 * ww + ((l1 + r1) * fw + (1u << 23)),          \
        a2 * ww + ((l2 + r2) * fw + (1u << 23)), a3 * ww + ((l3 + r3) * fw + (1u << 23)));         \
    n0 = r0, n1 = r1, n2 = r2, n3 = r3;                                                            \
  } while (0)
  /* x0..xa-1 and xb..x1-1 clamp at the line's ends; xa..xb-1 need no
   * clamp (x - radius - 1 >= 0, x + radius + 1 <= last) and walk pointers */
  const int xa = radius + 1 < x0 ? x0 : (radius + 1 < x1 ? radius + 1 : x1);
  const int xb = last - radius < xa ? xa : (last - radius < x1 ? last - radius : x1);
  int x = x0;
  for (; x < xa; x++)
    IB_STEP4(IB_W(x - radius - 1), IB_W(x + radius + 1), out[(x - base) * out_step]);
  if (x < xb) {
    const uint32_t *pl = in + (x - radius - 1 - base) * in_step;
    const uint32_t *pr = in + (x + radius + 1 - base) * in_step;
    uint32_t *po = out + (x - base) * out_step;
    for (; x < xb; x++, pl += in_step, pr += in_step, po += out_step) {
      const uint32_t l = *pl, r = *pr;
      IB_STEP4(l, r, *po);
    }
  }
  for (; x < x1; x++)
    IB_STEP4(IB_W(x - radius - 1), IB_W(x + radius + 1), out[(x - base) * out_step]);
#undef IB_STEP4
#undef IB_W
}
#undef IB_BYTE3x4
#undef IB_BYTE

#endif
