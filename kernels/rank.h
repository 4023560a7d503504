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
 * backends: ib_rank_run3x4 (below) takes the neighbour pixels, edges
 * replicated, each packed into one 32-bit word (a band per byte), and runs
 * every band in one pass. Ranks 0, 4 and 8 work on sorted columns in 16-bit
 * lanes (ib_rank_cols3); other ranks go through the 25-comparator sorting
 * network for 9 inputs (Floyd; tests/unit/test_gpu_math.c checks it on all
 * 2^9 0-1 inputs, which proves it sorts) with per-byte min/max. Exact order
 * statistics, so the bytes equal ib_rank_select8's. The device's per-byte
 * and per-16-bit-lane min/max are intrinsics; the host's are the same
 * functions of the lanes. */
/* Hand-laid lists (clang-format cannot settle on a layout for them). */
// clang-format off
#define IB_SORT9_NET(CE)                                                                    \
  CE(0, 1) CE(3, 4) CE(6, 7) CE(1, 2) CE(4, 5) CE(7, 8) CE(0, 1) CE(3, 4) CE(6, 7) CE(0, 3) \
  CE(3, 6) CE(0, 3) CE(1, 4) CE(4, 7) CE(1, 4) CE(2, 5) CE(5, 8) CE(2, 5) CE(1, 3) CE(5, 7) \
  CE(2, 6) CE(4, 6) CE(2, 4) CE(2, 3) CE(5, 6)
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
IB_FN void ib_rank_sort9x4(uint32_t *v){IB_SORT9_NET(IB_CE4)}
/* The k'th smallest (0-based) of v[0..8], per byte lane; v is clobbered. */
IB_FN uint32_t ib_rank_select9x4(uint32_t *v, int k) {
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

/* Device loops over a run unroll fully, so its words stay in registers. */
#ifdef __CUDACC_RTC__
#define IB_RANK_UNROLL _Pragma("unroll")
#else
#define IB_RANK_UNROLL
#endif

/* Outputs per ib_rank_run3x4 call: adjacent outputs share the columns of
 * their windows, so each column is loaded and sorted once for the run. */
#define IB_RANK_RUN 4

/* Pixels x-1 .. x+IB_RANK_RUN of one row as words (band b in byte b),
 * columns clamped to 0..width-1 (replicated edges). On the device an RGBA
 * run whose middle four pixels are 16-byte aligned loads them as one
 * vector. */
IB_FN void ib_rank_row_words(const uint8_t *row, int bands, int x, int width, uint32_t *v) {
#ifdef __CUDACC_RTC__
  if (bands == 4 && x + IB_RANK_RUN <= width &&
      ((unsigned long long)(row + (int64_t)x * 4) & 15u) == 0) {
    const uint4 q = __ldg((const uint4 *)(row + (int64_t)x * 4));
    v[0] = __ldg((const uint32_t *)(row + (int64_t)(x > 0 ? x - 1 : 0) * 4));
    v[1] = q.x, v[2] = q.y, v[3] = q.z, v[4] = q.w;
    v[5] = __ldg((const uint32_t *)(row + (int64_t)(x + 4 < width ? x + 4 : width - 1) * 4));
    return;
  }
#endif
  IB_RANK_UNROLL
  for (int j = 0; j < IB_RANK_RUN + 2; j++)
    v[j] = ib_rank_load4(row + (int64_t)ib_rank_clamp(x - 1 + j, 0, width - 1) * bands, bands);
}

/* Per 16-bit lane min/max of three words. For the median the bands are
 * split into two words of 16-bit lanes (bands 0 and 2, bands 1 and 3),
 * because sm_90 has these as single instructions (VIMNMX3.U16x2) while a
 * per-byte __vminu4 is six; and with bytes in 16-bit lanes the sum of three
 * stays below 2^16, so the middle of three is their sum less min and max
 * (no lane borrows: each lane's difference is its middle value). */
#ifdef __CUDACC_RTC__
IB_FN uint32_t ib_vmin3x2(uint32_t a, uint32_t b, uint32_t c) { return __vimin3_u16x2(a, b, c); }
IB_FN uint32_t ib_vmax3x2(uint32_t a, uint32_t b, uint32_t c) { return __vimax3_u16x2(a, b, c); }
#else
IB_FN uint32_t ib_vmin2(uint32_t a, uint32_t b) {
  const uint32_t al = a & 0xffffu, bl = b & 0xffffu, ah = a >> 16, bh = b >> 16;
  return (ah < bh ? ah : bh) << 16 | (al < bl ? al : bl);
}
IB_FN uint32_t ib_vmax2(uint32_t a, uint32_t b) {
  const uint32_t al = a & 0xffffu, bl = b & 0xffffu, ah = a >> 16, bh = b >> 16;
  return (ah < bh ? bh : ah) << 16 | (al < bl ? bl : al);
}
IB_FN uint32_t ib_vmin3x2(uint32_t a, uint32_t b, uint32_t c) {
  return ib_vmin2(ib_vmin2(a, b), c);
}
IB_FN uint32_t ib_vmax3x2(uint32_t a, uint32_t b, uint32_t c) {
  return ib_vmax2(ib_vmax2(a, b), c);
}
#endif
/* Bands 0 and 2 (half 0) or 1 and 3 (half 1) of a pixel word in the low
 * bytes of two 16-bit lanes, and the two halves joined back. */
IB_FN uint32_t ib_rank_half(uint32_t w, int half) {
#ifdef __CUDACC_RTC__
  return __byte_perm(w, 0, half ? 0x4341 : 0x4240);
#else
  return (w >> (8 * half)) & 0x00ff00ffu;
#endif
}
IB_FN uint32_t ib_rank_join(uint32_t even, uint32_t odd) {
#ifdef __CUDACC_RTC__
  return __byte_perm(even, odd, 0x6240);
#else
  return even | odd << 8;
#endif
}
IB_FN uint32_t ib_rank_med3x2(uint32_t a, uint32_t b, uint32_t c) {
  return a + b + c - ib_vmin3x2(a, b, c) - ib_vmax3x2(a, b, c);
}

/* The 3x3 rank filter at pixels x .. x+IB_RANK_RUN-1 of one row, all bands
 * at once: out[k] holds pixel x+k, band b in byte b (bytes past `bands`
 * 0). u, c, w are the rows above, at and below (the caller clamps them to
 * the image: replicated edges), pixels `bands` bytes apart; columns are
 * clamped to 0..width-1, so outputs at or past width are defined but belong
 * to no pixel. The median and min/max work column-wise on 16-bit lanes:
 * sort each column once (min, middle, max), then per output Paeth's
 * med3(max of minima, med3 of middles, min of maxima), the minimum of the
 * minima or the maximum of the maxima; other ranks run the 9-input sorting
 * network per output. */
/* ib_rank_run3x4's rank 0, 4 or 8 on the sorted columns of p. Inlined with
 * a literal rank, so each rank's code holds only its own network. */
IB_FN void ib_rank_cols3(uint32_t (*p)[IB_RANK_RUN + 2], int bands, int rank, uint32_t *out) {
  enum { R = IB_RANK_RUN, C = IB_RANK_RUN + 2 };
  uint32_t res[2][R] = {{0}};
  IB_RANK_UNROLL
  for (int half = 0; half < (bands > 1 ? 2 : 1); half++) {
    uint32_t lo[C], mid[C], hi[C];
    IB_RANK_UNROLL
    for (int j = 0; j < C; j++) {
      const uint32_t a = ib_rank_half(p[0][j], half), b = ib_rank_half(p[1][j], half),
                     e = ib_rank_half(p[2][j], half);
      lo[j] = ib_vmin3x2(a, b, e);
      hi[j] = ib_vmax3x2(a, b, e);
      mid[j] = a + b + e - lo[j] - hi[j];
    }
    IB_RANK_UNROLL
    for (int k = 0; k < R; k++) {
      const uint32_t r = rank == 0 ? ib_vmin3x2(lo[k], lo[k + 1], lo[k + 2])
                         : rank == 8
                             ? ib_vmax3x2(hi[k], hi[k + 1], hi[k + 2])
                             : ib_rank_med3x2(ib_vmax3x2(lo[k], lo[k + 1], lo[k + 2]),
                                              ib_rank_med3x2(mid[k], mid[k + 1], mid[k + 2]),
                                              ib_vmin3x2(hi[k], hi[k + 1], hi[k + 2]));
      res[half][k] = r;
    }
  }
  IB_RANK_UNROLL
  for (int k = 0; k < R; k++) out[k] = ib_rank_join(res[0][k], res[1][k]);
}

/* The 3x3 rank filter at pixels x .. x+IB_RANK_RUN-1 of one row, all bands
 * at once: out[k] holds pixel x+k, band b in byte b (bytes past `bands`
 * 0). u, c, w are the rows above, at and below (the caller clamps them to
 * the image: replicated edges), pixels `bands` bytes apart; columns are
 * clamped to 0..width-1, so outputs at or past width are defined but belong
 * to no pixel. The median and min/max work column-wise on 16-bit lanes:
 * sort each column once (min, middle, max), then per output Paeth's
 * med3(max of minima, med3 of middles, min of maxima), the minimum of the
 * minima or the maximum of the maxima; other ranks run the 9-input sorting
 * network per output. */
IB_FN void ib_rank_run3x4(const uint8_t *u, const uint8_t *c, const uint8_t *w, int bands, int x,
                          int width, int rank, uint32_t *out) {
  uint32_t p[3][IB_RANK_RUN + 2];
  ib_rank_row_words(u, bands, x, width, p[0]);
  ib_rank_row_words(c, bands, x, width, p[1]);
  ib_rank_row_words(w, bands, x, width, p[2]);
  if (rank == 4) {
    ib_rank_cols3(p, bands, 4, out);
  } else if (rank == 0) {
    ib_rank_cols3(p, bands, 0, out);
  } else if (rank == 8) {
    ib_rank_cols3(p, bands, 8, out);
  } else {
    IB_RANK_UNROLL
    for (int k = 0; k < IB_RANK_RUN; k++) {
      uint32_t v[9] = {p[0][k],     p[0][k + 1], p[0][k + 2], p[1][k],    p[1][k + 1],
                       p[1][k + 2], p[2][k],     p[2][k + 1], p[2][k + 2]};
      out[k] = ib_rank_select9x4(v, rank);
    }
  }
}

#endif
