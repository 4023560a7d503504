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

/* 3x3 windows (MedianFilter(3), Min/Max, RankFilter(3, k)) on both
 * backends: the nine neighbour pixels, edges replicated, each packed into
 * one 32-bit word (a band per byte), go through compare-exchange networks
 * with per-byte min/max, every band in one pass. The median (k == 4) comes
 * from sorted triples: med3(max of minima, med3 of medians, min of maxima)
 * (Paeth's median-of-9 network); other ranks from the 25-comparator sorting
 * network for 9 inputs (Floyd; tests/unit/test_gpu_math.c checks it on all
 * 2^9 0-1 inputs, which proves it sorts). Exact order statistics, so the
 * bytes equal ib_rank_select8's. The device's per-byte min/max are single
 * instructions (__vminu4/__vmaxu4); the host's are the same functions of
 * four bytes. */
/* Hand-laid lists (clang-format cannot settle on a layout for them). */
// clang-format off
#define IB_SORT9_NET(CE)                                                                    \
  CE(0, 1) CE(3, 4) CE(6, 7) CE(1, 2) CE(4, 5) CE(7, 8) CE(0, 1) CE(3, 4) CE(6, 7) CE(0, 3) \
  CE(3, 6) CE(0, 3) CE(1, 4) CE(4, 7) CE(1, 4) CE(2, 5) CE(5, 8) CE(2, 5) CE(1, 3) CE(5, 7) \
  CE(2, 6) CE(4, 6) CE(2, 4) CE(2, 3) CE(5, 6)
/* Sorts each triple (0,1,2) (3,4,5) (6,7,8). */
#define IB_TRIPLES_NET(CE)                                                         \
  CE(0, 1) CE(1, 2) CE(0, 1) CE(3, 4) CE(4, 5) CE(3, 4) CE(6, 7) CE(7, 8) CE(6, 7)
// clang-format on

#ifdef __CUDACC_RTC__
IB_FN uint32_t ib_vmin4(uint32_t a, uint32_t b) { return __vminu4(a, b); }
IB_FN uint32_t ib_vmax4(uint32_t a, uint32_t b) { return __vmaxu4(a, b); }
#else
/* Per byte lane, 0xff where a >= b: (a | 0x80) - (b & 0x7f) never borrows
 * across lanes and its bit 7 compares the low seven bits; the top bits
 * decide when they differ. */
IB_FN uint32_t ib_vge4(uint32_t a, uint32_t b) {
  const uint32_t h = 0x80808080u;
  const uint32_t low = (a | h) - (b & ~h);
  const uint32_t ge = ((a & ~b) | (~(a ^ b) & low)) & h;
  return (ge >> 7) * 0xffu;
}
IB_FN uint32_t ib_vmin4(uint32_t a, uint32_t b) {
  const uint32_t m = ib_vge4(a, b);
  return (b & m) | (a & ~m);
}
IB_FN uint32_t ib_vmax4(uint32_t a, uint32_t b) {
  const uint32_t m = ib_vge4(a, b);
  return (a & m) | (b & ~m);
}
#endif

#define IB_CE4(i, j)                           \
  {                                            \
    const uint32_t lo_ = ib_vmin4(v[i], v[j]); \
    v[j] = ib_vmax4(v[i], v[j]);               \
    v[i] = lo_;                                \
  }
IB_FN uint32_t ib_rank_med3x4(uint32_t a, uint32_t b, uint32_t c) {
  return ib_vmax4(ib_vmin4(a, b), ib_vmin4(ib_vmax4(a, b), c));
}
IB_FN void ib_rank_sort9x4(uint32_t *v){IB_SORT9_NET(IB_CE4)}
/* The k'th smallest (0-based) of v[0..8], per byte lane; v is clobbered. */
IB_FN uint32_t ib_rank_select9x4(uint32_t *v, int k) {
  if (k == 4) {
    IB_TRIPLES_NET(IB_CE4)
    return ib_rank_med3x4(ib_vmax4(ib_vmax4(v[0], v[3]), v[6]), ib_rank_med3x4(v[1], v[4], v[7]),
                          ib_vmin4(ib_vmin4(v[2], v[5]), v[8]));
  }
  ib_rank_sort9x4(v);
  uint32_t r = v[0];
#ifdef __CUDACC_RTC__
#pragma unroll
#endif
  for (int i = 1; i < 9; i++) r = i == k ? v[i] : r;
  return r;
}
#undef IB_CE4

/* One pixel of `bands` (1..4) bytes as a word, band b in byte b. */
IB_FN uint32_t ib_rank_load4(const uint8_t *p, int bands) {
#ifdef __CUDACC_RTC__
  if (bands == 4) return *(const uint32_t *)p; /* pixels of 4 bytes are 4-byte aligned */
#endif
  return bands == 1   ? (uint32_t)p[0]
         : bands == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8
         : bands == 3
             ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
             : (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The 3x3 rank filter at pixel (x, y), all bands at once (band b of the
 * result in byte b): `c` points at the pixel, pixels are `bands` bytes
 * apart, rows `row_stride` bytes; edges replicated as ib_rank_sample's. */
IB_FN uint32_t ib_rank_sample3x4(const uint8_t *c, int64_t row_stride, int bands, int x, int y,
                                 int width, int height, int rank) {
  const int64_t dl = x > 0 ? -bands : 0, dr = x < width - 1 ? bands : 0;
  const uint8_t *u = c + (y > 0 ? -row_stride : 0), *w = c + (y < height - 1 ? row_stride : 0);
  uint32_t v[9] = {
      ib_rank_load4(u + dl, bands), ib_rank_load4(u, bands), ib_rank_load4(u + dr, bands),
      ib_rank_load4(c + dl, bands), ib_rank_load4(c, bands), ib_rank_load4(c + dr, bands),
      ib_rank_load4(w + dl, bands), ib_rank_load4(w, bands), ib_rank_load4(w + dr, bands)};
  return ib_rank_select9x4(v, rank);
}

#endif
