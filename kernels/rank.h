/*
 * rank.h - ImageFilter.RankFilter / MedianFilter / MinFilter / MaxFilter.
 *
 * Pillow 12.3 (Image.filter -> RankFilter.filter) filters each band on its
 * own: the band is grown by size/2 pixels on every side with ImagingExpand
 * (edge pixels replicated, i.e. coordinates clamped to the image), then
 * ImagingRankFilter writes the rank'th smallest (0-based) of the size x size
 * window around each pixel. The answer is an order statistic of 8-bit
 * values, so any exact selection gives Pillow's bytes; we use a branch-free
 * bit-serial selection (8 counting passes over the window) that suits both
 * the host and one device thread per sample.
 */
#ifndef IB_RANK_H
#define IB_RANK_H

#include "ib_kernel.h"

/* Largest window side admitted (Pillow takes any odd size; we bound it). */
#define IB_RANK_MAX_SIZE 9

IB_FN int ib_rank_clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* The k'th smallest (0-based) of v[0..n-1]: the largest r in 0..255 with
 * #{v < r} <= k, found one bit at a time from the top. */
IB_FN uint8_t ib_rank_select8(const uint8_t *v, int n, int k) {
  unsigned r = 0;
  for (int bit = 7; bit >= 0; bit--) {
    unsigned cand = r | (1u << bit);
    int below = 0;
    for (int i = 0; i < n; i++) below += v[i] < cand;
    if (below <= k) r = cand;
  }
  return (uint8_t)r;
}

/* One output sample of one band. `c` points at the sample at (x, y); samples
 * of a row are `step` bytes apart, rows `row_stride` bytes apart. The window
 * row dy (-size/2..size/2) is the image row of y+dy clamped to 0..height-1,
 * its column dx the column x+dx clamped to 0..width-1 (ImagingExpand's
 * replicated edges). size is odd, 3..IB_RANK_MAX_SIZE; 0 <= rank <
 * size*size. */
IB_FN uint8_t ib_rank_sample(const uint8_t *c, int64_t row_stride, int64_t step, int x, int y,
                             int width, int height, int size, int rank) {
  uint8_t win[IB_RANK_MAX_SIZE * IB_RANK_MAX_SIZE];
  const int margin = size / 2;
  int n = 0;
  for (int dy = -margin; dy <= margin; dy++) {
    const uint8_t *row = c + (int64_t)(ib_rank_clamp(y + dy, 0, height - 1) - y) * row_stride;
    for (int dx = -margin; dx <= margin; dx++)
      win[n++] = row[(int64_t)(ib_rank_clamp(x + dx, 0, width - 1) - x) * step];
  }
  return ib_rank_select8(win, n, rank);
}

/* ib_rank_sample for a window that lies inside the image (size/2 <= x <
 * width - size/2, same for y): no clamping. */
IB_FN uint8_t ib_rank_sample_inside(const uint8_t *c, int64_t row_stride, int64_t step, int size,
                                    int rank) {
  uint8_t win[IB_RANK_MAX_SIZE * IB_RANK_MAX_SIZE];
  const int margin = size / 2;
  int n = 0;
  for (int dy = -margin; dy <= margin; dy++) {
    const uint8_t *row = c + (int64_t)dy * row_stride;
    for (int dx = -margin; dx <= margin; dx++) win[n++] = row[(int64_t)dx * step];
  }
  return ib_rank_select8(win, n, rank);
}

/* 3x3 windows (the GPU's MedianFilter(3) / Min / Max / RankFilter(3, k)):
 * nine values in registers, any order. The median (k == 4) comes from sorted
 * triples: med3(max of minima, med3 of medians, min of maxima) (Paeth's
 * median-of-9 network); other ranks from the 25-comparator sorting network
 * for 9 inputs (Floyd; tests/unit/test_gpu_math.c checks it on all 2^9 0-1
 * inputs, which proves it sorts). Exact order statistics, so the bytes
 * equal ib_rank_select8's. The networks are X-macros over a compare-exchange
 * CE(i, j) (v[i] = min, v[j] = max) so the scalar versions here and the
 * device's packed ones (four bands per 32-bit word, __vminu4/__vmaxu4)
 * run the very same comparators. */
#define IB_SORT9_NET(CE)                                                                 \
  CE(0, 1) CE(3, 4) CE(6, 7) CE(1, 2) CE(4, 5) CE(7, 8) CE(0, 1) CE(3, 4) CE(6, 7)       \
  CE(0, 3) CE(3, 6) CE(0, 3) CE(1, 4) CE(4, 7) CE(1, 4) CE(2, 5) CE(5, 8) CE(2, 5)       \
  CE(1, 3) CE(5, 7) CE(2, 6) CE(4, 6) CE(2, 4) CE(2, 3) CE(5, 6)
/* Sorts each triple (0,1,2) (3,4,5) (6,7,8). */
#define IB_TRIPLES_NET(CE) \
  CE(0, 1) CE(1, 2) CE(0, 1) CE(3, 4) CE(4, 5) CE(3, 4) CE(6, 7) CE(7, 8) CE(6, 7)

#define IB_CE8(i, j)                                   \
  {                                                    \
    const uint8_t lo_ = v[i] < v[j] ? v[i] : v[j];     \
    v[j] = v[i] < v[j] ? v[j] : v[i];                  \
    v[i] = lo_;                                        \
  }
IB_FN uint8_t ib_rank_min8(uint8_t a, uint8_t b) { return a < b ? a : b; }
IB_FN uint8_t ib_rank_max8(uint8_t a, uint8_t b) { return a < b ? b : a; }
IB_FN uint8_t ib_rank_med3(uint8_t a, uint8_t b, uint8_t c) {
  return ib_rank_max8(ib_rank_min8(a, b), ib_rank_min8(ib_rank_max8(a, b), c));
}
IB_FN void ib_rank_sort9(uint8_t *v) { IB_SORT9_NET(IB_CE8) }
IB_FN uint8_t ib_rank_select9(uint8_t *v, int k) {
  if (k == 4) {
    IB_TRIPLES_NET(IB_CE8)
    return ib_rank_med3(ib_rank_max8(ib_rank_max8(v[0], v[3]), v[6]), ib_rank_med3(v[1], v[4], v[7]),
                        ib_rank_min8(ib_rank_min8(v[2], v[5]), v[8]));
  }
  ib_rank_sort9(v);
  uint8_t r = v[0];
  for (int i = 1; i < 9; i++) r = i == k ? v[i] : r;
  return r;
}
#undef IB_CE8

#ifdef __CUDACC_RTC__
/* The same selection for up to four bands at once, one per byte lane. */
#define IB_CE4(i, j)                                    \
  {                                                     \
    const uint32_t lo_ = __vminu4(v[i], v[j]);          \
    v[j] = __vmaxu4(v[i], v[j]);                        \
    v[i] = lo_;                                         \
  }
IB_FN uint32_t ib_rank_med3x4(uint32_t a, uint32_t b, uint32_t c) {
  return __vmaxu4(__vminu4(a, b), __vminu4(__vmaxu4(a, b), c));
}
IB_FN uint32_t ib_rank_select9x4(uint32_t *v, int k) {
  if (k == 4) {
    IB_TRIPLES_NET(IB_CE4)
    return ib_rank_med3x4(__vmaxu4(__vmaxu4(v[0], v[3]), v[6]), ib_rank_med3x4(v[1], v[4], v[7]),
                          __vminu4(__vminu4(v[2], v[5]), v[8]));
  }
  IB_SORT9_NET(IB_CE4)
  uint32_t r = v[0];
#pragma unroll
  for (int i = 1; i < 9; i++) r = i == k ? v[i] : r;
  return r;
}
#undef IB_CE4
#endif

/* One 3x3 sample with edges replicated (as ib_rank_sample with size 3). */
IB_FN uint8_t ib_rank_sample3(const uint8_t *c, int64_t row_stride, int64_t step, int x, int y,
                              int width, int height, int rank) {
  const int64_t dl = x > 0 ? -step : 0, dr = x < width - 1 ? step : 0;
  const int64_t du = y > 0 ? -row_stride : 0, dd = y < height - 1 ? row_stride : 0;
  const uint8_t *u = c + du, *m = c, *w = c + dd;
  uint8_t v[9] = {u[dl], u[0], u[dr], m[dl], m[0], m[dr], w[dl], w[0], w[dr]};
  return ib_rank_select9(v, rank);
}

#endif
