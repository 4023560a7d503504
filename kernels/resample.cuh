/*
 * resample.cuh - the device side of Image.resize with a convolution filter
 * (NVRTC only): the math of resample.h and reduce.h, so the device bytes
 * are the CPU reference's (worker/ops/op_resample.c runs the same functions
 * over the same tables).
 *
 * The multi-pass head (docs/device-steps.md) runs the job's whole
 * Image.resize sequence as its ib_resample_params (resample.h) lays it out:
 *   ib_resample_reduce  reducing_gap's ImagingReduce of the source into the
 *                       scratch image
 *   ib_resample_h       call `ci`'s horizontal pass over only the rows its
 *                       vertical pass reads (into the scratch image, or into
 *                       the call's destination when no vertical pass runs)
 *   ib_resample_ht      the same pass for a wide window, by tiles staged in
 *                       shared memory (resample.h ib_resample_tile_plan)
 *   ib_resample_v       call `ci`'s vertical pass, or its crop
 * one output pixel per thread (the horizontal pass: per group of lanes;
 * a long vertical window: per slice of its taps, below), grid stride; a
 * job without the step returns
 * at once. IB_A = 1 for LA / RGBA: what a pass reads from the source is
 * premultiplied (Image.resize converts to La / RGBa first) and what it
 * writes to the output unpremultiplied, so the scratch images hold the
 * premultiplied values the CPU path holds. The weight tables (int32
 * bounds[2 n], coeffs[n * ksize]) are built on the host
 * (ib_resample_coeffs: glibc sin/cos), never here; they follow the
 * parameter block.
 */
#ifndef IB_RESAMPLE_CUH
#define IB_RESAMPLE_CUH

#include "gpu_io.h"
#include "reduce.h"
#include "resample.h"

#ifndef IB_B0
#define IB_B0 1
#endif
#ifndef IB_A
#define IB_A 0
#endif
#ifndef IB_PBYTES
#define IB_PBYTES 64
#endif

/* One output pixel of either pass: n source pixels `step` bytes apart from
 * `in` (premultiplied on load when `pm`), unpremultiplied when `unpm`;
 * per band ib_resample_sample's sum and clip. */
static __device__ __forceinline__ void ib_resample_px(uint8_t *out, const uint8_t *in,
                                                      long long step, const int32_t *k, int n,
                                                      bool pm, bool unpm) {
  int ss[IB_B0];
  for (int b = 0; b < IB_B0; b++) ss[b] = 1 << (IB_RESAMPLE_PRECISION_BITS - 1);
  for (int j = 0; j < n; j++) {
    uint8_t v[IB_B0];
    const uint8_t *px = in + j * step;
    for (int b = 0; b < IB_B0; b++) v[b] = px[b];
    if (IB_A && pm) ib_premultiply_px(v, IB_B0);
    for (int b = 0; b < IB_B0; b++) ss[b] += (int)v[b] * k[j];
  }
  uint8_t o[IB_B0];
  for (int b = 0; b < IB_B0; b++) o[b] = ib_resample_clip8(ss[b]);
  if (IB_A && unpm) ib_unpremultiply_px(o, IB_B0);
  for (int b = 0; b < IB_B0; b++) out[b] = o[b];
}

/* A share of one output pixel's taps (first, first + every, ... below n;
 * source pixels `step` bytes apart from `in`, premultiplied on load when
 * `pm`) added into ss, for the passes that split a window over threads.
 * Unsigned: a share of a window with negative weights may wrap, and the
 * shares' total, which fits an int, is exact in any order of addition. */
static __device__ __forceinline__ void ib_resample_share(unsigned *ss, const uint8_t *in,
                                                         long long step, const int32_t *k,
                                                         int first, int every, int n, bool pm) {
  /* unrolled: a share's loads are independent, so several are in flight */
#pragma unroll 4
  for (int j = first; j < n; j += every) {
    uint8_t v[IB_B0];
    const uint8_t *px = in + j * step;
    for (int b = 0; b < IB_B0; b++) v[b] = px[b];
    if (IB_A && pm) ib_premultiply_px(v, IB_B0);
    const unsigned kj = (unsigned)k[j];
    for (int b = 0; b < IB_B0; b++) ss[b] += v[b] * kj;
  }
}

/* The whole of those shares: rounded and clipped as ib_resample_px does,
 * unpremultiplied when `unpm`. */
static __device__ __forceinline__ void ib_resample_finish(uint8_t *o, const unsigned *ss,
                                                          bool unpm) {
  for (int b = 0; b < IB_B0; b++) o[b] = ib_resample_round(ss[b]);
  if (IB_A && unpm) ib_unpremultiply_px(o, IB_B0);
}

/* An image of the sequence (IB_RSI_*) and its bytes per row. */
static __device__ __forceinline__ uint8_t *ib_resample_img(const ib_desc &d, int where,
                                                           unsigned long long off) {
  return where == IB_RSI_SRC   ? (uint8_t *)d.in0
         : where == IB_RSI_OUT ? d.out
                               : (uint8_t *)d.in1 + off;
}

static __device__ __forceinline__ long long ib_resample_row(const ib_desc &d, int where, int w) {
  return (long long)(where == IB_RSI_SRC ? (int)d.stride0 : w) * IB_B0;
}

/* What both horizontal kernels take from a call: its tables, where it
 * reads and writes (the scratch rows when a vertical pass follows, else the
 * call's destination), and whether it premultiplies what it reads (the
 * source) and unpremultiplies what it writes (the output). */
struct ib_rs_hpass {
  const int32_t *tab;
  uint8_t *dst;
  const uint8_t *src;
  long long in_row;
  bool pm, unpm;
  bool rows4; /* dst is the vertical pass's four-row words (ib_resample_tmp_at) */
};

/* Job blockIdx.y's call `ci` when the kernel runs its horizontal pass:
 * the tiled kernel the calls planned tiled, the pixel-parallel one the
 * others (and the tiled ones too with take_tiled). */
static __device__ __forceinline__ bool ib_resample_hcall(const ib_desc *descs, int ci, bool tiled,
                                                         int take_tiled, ib_rsp_call &c,
                                                         ib_rs_hpass &h) {
  const ib_desc d = descs[blockIdx.y];
  const ib_resample_params *q = (const ib_resample_params *)d.params;
  if (ci >= q->n_calls) return false;
  c = q->call[ci];
  if (!(c.passes & IB_RSP_H) || (c.passes & IB_RSP_CROP)) return false;
  if (tiled ? c.tile_x <= 0 : (c.tile_x > 0 && !take_tiled)) return false;
  const bool last = !(c.passes & IB_RSP_V);
  h.tab = (const int32_t *)(d.params + IB_PBYTES);
  h.dst = last ? ib_resample_img(d, c.dst, c.dst_off) : (uint8_t *)d.in1 + c.tmp_off;
  h.src = ib_resample_img(d, c.src, c.src_off);
  h.in_row = ib_resample_row(d, c.src, c.in_w);
  h.pm = c.src == IB_RSI_SRC;
  h.unpm = last && c.dst == IB_RSI_OUT;
  h.rows4 = !last;
  return true;
}

/* reducing_gap's reduce step: the source's reduce box, block averages
 * (ib_reduce_pixel), into rw x rh pixels at scratch offset 0. Image.resize
 * never reduces a premultiplied image (LA / RGBA drop the gap). */
extern "C" __global__ void __launch_bounds__(256) ib_resample_reduce(const ib_desc *descs) {
  const ib_desc d = descs[blockIdx.y];
  const ib_resample_params *q = (const ib_resample_params *)d.params;
  if (!q->reduce) return;
  const int fx = q->fx, fy = q->fy, box[4] = {q->rbox[0], q->rbox[1], q->rbox[2], q->rbox[3]};
  const unsigned long long W = (unsigned)q->rw, items = W * (unsigned)q->rh;
  const long long stride = (long long)d.stride0 * IB_B0;
  for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       it < items; it += (unsigned long long)gridDim.x * blockDim.x)
    ib_reduce_pixel((uint8_t *)d.in1 + it * IB_B0, d.in0, stride, IB_B0, (int)(it % W),
                    (int)(it / W), fx, fy, box);
}

/* The horizontal pass: ib_resample_h_lanes(ksize_x) threads per output
 * pixel (lane l sums taps l, l + G, ...; the group's sums are added by
 * shuffles, exact in any order), so a shrink's wide windows are read by
 * neighbouring threads from neighbouring bytes and weights. The plan
 * launches out_w x rows x G threads; a group's lanes share a pixel, so they
 * leave the grid-stride loop together. */
extern "C" __global__ void __launch_bounds__(256)
    ib_resample_h(const ib_desc *descs, int ci, int take_tiled) {
  ib_rsp_call c;
  ib_rs_hpass hp;
  if (!ib_resample_hcall(descs, ci, false, take_tiled, c, hp)) return;
  const unsigned g = (unsigned)ib_resample_h_lanes(c.ksize_x), lg = __ffs(g) - 1;
  const unsigned lane = threadIdx.x & (g - 1);
  const unsigned mask = g == 32 ? 0xffffffffu : ((1u << g) - 1) << ((threadIdx.x & 31) & ~(g - 1));
  const unsigned long long W = (unsigned)c.out_w, items = W * (unsigned)c.rows;
  const bool narrow = items <= 0xffffffffull;
  for (unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       (t >> lg) < items; t += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned long long it = t >> lg;
    /* 32-bit division where the pixel index fits (64-bit is a long call) */
    const int x = narrow ? (int)((unsigned)it % (unsigned)W) : (int)(it % W);
    const int y = narrow ? (int)((unsigned)it / (unsigned)W) : (int)(it / W);
    const int lo = hp.tab[c.xb + 2 * x], n = hp.tab[c.xb + 2 * x + 1];
    const uint8_t *in = hp.src + (long long)(y + c.first) * hp.in_row + (long long)lo * IB_B0;
    const int32_t *k = hp.tab + c.xk + (long long)x * c.ksize_x;
    unsigned ss[IB_B0] = {0};
    ib_resample_share(ss, in, IB_B0, k, (int)lane, (int)g, n, hp.pm);
    for (unsigned off = g >> 1; off; off >>= 1)
      for (int b = 0; b < IB_B0; b++) ss[b] += __shfl_xor_sync(mask, ss[b], off, g);
    if (lane == 0) {
      uint8_t o[IB_B0];
      ib_resample_finish(o, ss, hp.unpm);
      for (int b = 0; b < IB_B0; b++)
        hp.dst[hp.rows4 ? ib_resample_tmp_at(x, y, b, c.out_w, IB_B0) : it * IB_B0 + b] = o[b];
    }
  }
}

/* Four neighbouring pixels p .. p + 3 of a source row as they lie in
 * memory (4 bands' worth of bytes, 0 past `end`): one aligned load a word
 * where the row allows it. */
static __device__ __forceinline__ void ib_resample_quad_raw(unsigned *raw, const uint8_t *in, int p,
                                                            int end, bool aligned) {
  const uint8_t *px = in + (long long)p * IB_B0;
  if (aligned && p + 4 <= end) {
    for (int i = 0; i < IB_B0; i++) raw[i] = ((const unsigned *)px)[i];
    return;
  }
  for (int i = 0; i < IB_B0; i++) {
    raw[i] = 0;
    for (int m = 0; m < 4; m++)
      if (p + (4 * i + m) / IB_B0 < end) raw[i] |= (unsigned)px[4 * i + m] << (8 * m);
  }
}

/* ... as plane words: band b of the four pixels in word b, premultiplied
 * when `pm`. */
static __device__ __forceinline__ void ib_resample_quad_planes(unsigned *w, const unsigned *raw,
                                                               bool pm) {
  uint8_t v[4][IB_B0];
  for (int j = 0; j < 4; j++)
    for (int b = 0; b < IB_B0; b++) {
      const int at = j * IB_B0 + b;
      v[j][b] = (uint8_t)(raw[at >> 2] >> (8 * (at & 3)));
    }
  for (int j = 0; j < 4; j++)
    if (IB_A && pm) ib_premultiply_px(v[j], IB_B0);
  for (int b = 0; b < IB_B0; b++)
    w[b] = (unsigned)v[0][b] | (unsigned)v[1][b] << 8 | (unsigned)v[2][b] << 16 |
           (unsigned)v[3][b] << 24;
}

/* The tiled horizontal pass (resample.h ib_resample_tile_plan) of the
 * calls planned with tile_x > 0; blocks loop over the call's tiles
 * (tile_x outputs x IB_RESAMPLE_TILE_ROWS rows), blockDim.x a multiple of
 * 32. The rows are staged as band planes from the word holding the tile's
 * first sample; a window is summed four taps at a time over its quads
 * (resample.h ib_resample_quads, ib_resample_dp4a), or tap by tap from the
 * int32 weights when the quad table says a weight does not fit. */
extern "C" __global__ void __launch_bounds__(256) ib_resample_ht(const ib_desc *descs, int ci) {
  extern __shared__ __align__(16) uint8_t ib_rs_tile[];
  ib_rsp_call c;
  ib_rs_hpass hp;
  if (!ib_resample_hcall(descs, ci, true, 0, c, hp)) return;
  const int R = IB_RESAMPLE_TILE_ROWS, tx = c.tile_x, pitch = c.tile_pitch;
  const int opitch = ib_resample_tile_pitch(tx * IB_B0);
  uint8_t *planes = ib_rs_tile, *outs = ib_rs_tile + R * IB_B0 * pitch;
  const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5);
  const int warps = (int)(blockDim.x >> 5);
  const int tiles_x = (c.out_w + tx - 1) / tx, tiles = tiles_x * ((c.rows + R - 1) / R);
  const uint32_t *qt = (const uint32_t *)(hp.tab + c.xq);
  const bool quads = qt[0] != 0;
  const int qmax = ib_resample_quad_max(c.ksize_x);
  for (int tile = (int)blockIdx.x; tile < tiles; tile += (int)gridDim.x) {
    const int x0 = (tile % tiles_x) * tx, y0 = (tile / tiles_x) * R;
    const int x1 = min(x0 + tx, c.out_w), nr = min(R, c.rows - y0);
    const int p0 = hp.tab[c.xb + 2 * x0] & ~3;
    const int end = hp.tab[c.xb + 2 * (x1 - 1)] + hp.tab[c.xb + 2 * (x1 - 1) + 1];
    const int words = (end - p0 + 3) >> 2;
    __syncthreads(); /* the last tile's readers are done */
    for (int r = warp; r < nr; r += warps) {
      const uint8_t *in = hp.src + (long long)(y0 + r + c.first) * hp.in_row;
      const bool aligned = (((unsigned long long)(in + (long long)p0 * IB_B0)) & 3) == 0;
      for (int q = lane; q < words; q += 32) {
        unsigned raw[IB_B0], w[IB_B0];
        ib_resample_quad_raw(raw, in, p0 + 4 * q, end, aligned);
        ib_resample_quad_planes(w, raw, hp.pm);
        for (int b = 0; b < IB_B0; b++) ((unsigned *)(planes + (b * R + r) * pitch))[q] = w[b];
      }
    }
    __syncthreads();
    if (lane < nr) {
      for (int x = x0 + warp; x < x1; x += warps) {
        const int lo = hp.tab[c.xb + 2 * x], n = hp.tab[c.xb + 2 * x + 1];
        uint8_t o[IB_B0];
        if (quads) {
          const uint4 *kq = (const uint4 *)(qt + 4) + (long long)x * qmax;
          const int first = ((lo & ~3) - p0) >> 2, nq = ib_resample_quads_of(lo, n);
          unsigned s[IB_B0][3] = {{0}};
          /* band b's word g at row0[b * plane + g]: one base, int offsets */
          const unsigned *row0 = (const unsigned *)(planes + lane * pitch) + first;
          const int plane = R * pitch / 4;
#pragma unroll IB_RESAMPLE_SUM_UNROLL
          for (int g = 0; g < nq; g++) {
            const uint4 k = kq[g];
            for (int b = 0; b < IB_B0; b++)
              ib_resample_quad_add(s[b], row0[b * plane + g], k.x, k.y, k.z);
          }
          for (int b = 0; b < IB_B0; b++) o[b] = ib_resample_round(ib_resample_quad_sum(s[b]));
        } else {
          const int32_t *k = hp.tab + c.xk + (long long)x * c.ksize_x;
          for (int b = 0; b < IB_B0; b++) {
            const uint8_t *in = planes + (b * R + lane) * pitch + (lo - p0);
            int ss = 1 << (IB_RESAMPLE_PRECISION_BITS - 1);
            for (int j = 0; j < n; j++) ss += (int)in[j] * k[j];
            o[b] = ib_resample_clip8(ss);
          }
        }
        if (IB_A && hp.unpm) ib_unpremultiply_px(o, IB_B0);
        for (int b = 0; b < IB_B0; b++) outs[lane * opitch + (x - x0) * IB_B0 + b] = o[b];
      }
    }
    __syncthreads();
    const int wb = (x1 - x0) * IB_B0;
    if (hp.rows4) { /* a word of four rows (y0 is a multiple of 4); 0 past the last */
      for (int r4 = warp; 4 * r4 < nr; r4 += warps) {
        unsigned *o = (unsigned *)hp.dst + ((long long)(y0 / 4 + r4) * c.out_w + x0) * IB_B0;
        for (int i = lane; i < wb; i += 32) {
          unsigned w = 0;
          for (int j = 0; j < 4 && 4 * r4 + j < nr; j++)
            w |= (unsigned)outs[(4 * r4 + j) * opitch + i] << (8 * j);
          o[i] = w;
        }
      }
    } else {
      for (int r = warp; r < nr; r += warps) {
        uint8_t *o = hp.dst + ((long long)(y0 + r) * c.out_w + x0) * IB_B0;
        for (int i = lane; i < wb; i += 32) o[i] = outs[r * opitch + i];
      }
    }
  }
}

/* The vertical pass over the horizontal pass's four-row words: output
 * pixel `it`'s slice `slice` of S (quads slice, slice + S, ... of its
 * window, or taps when the quad table says a weight does not fit) summed
 * into ss (the sum without its rounding term, modulo 2^32). */
static __device__ __forceinline__ void ib_resample_v_words(unsigned *ss, const ib_desc &d,
                                                           const ib_rsp_call &c, const int32_t *tab,
                                                           int x, int y, int slice, int S,
                                                           bool live) {
  const uint32_t *qt = (const uint32_t *)(tab + c.yq);
  const int lo = tab[c.yb + 2 * y], n = live ? tab[c.yb + 2 * y + 1] : 0;
  const unsigned long long W = (unsigned)c.out_w;
  if (qt[0]) {
    const uint4 *kq = (const uint4 *)(qt + 4) + (long long)y * ib_resample_quad_max(c.ksize_y);
    const unsigned *col = (const unsigned *)((const uint8_t *)d.in1 + c.tmp_off) +
                          ((unsigned long long)(lo >> 2) * W + (unsigned)x) * IB_B0;
    const int nq = n ? ib_resample_quads_of(lo, n) : 0;
    unsigned s[IB_B0][3] = {{0}};
#pragma unroll 4
    for (int g = slice; g < nq; g += S) {
      const uint4 k = kq[g];
      for (int b = 0; b < IB_B0; b++)
        ib_resample_quad_add(s[b], col[(unsigned long long)g * W * IB_B0 + b], k.x, k.y, k.z);
    }
    for (int b = 0; b < IB_B0; b++) ss[b] = ib_resample_quad_sum(s[b]);
    return;
  }
  const uint8_t *t = (const uint8_t *)d.in1 + c.tmp_off;
  const int32_t *k = tab + c.yk + (long long)y * c.ksize_y;
  for (int b = 0; b < IB_B0; b++) ss[b] = 0;
  for (int j = slice; j < n; j += S)
    for (int b = 0; b < IB_B0; b++)
      ss[b] += t[ib_resample_tmp_at(x, lo + j, b, c.out_w, IB_B0)] * (unsigned)k[j];
}

extern "C" __global__ void __launch_bounds__(256) ib_resample_v(const ib_desc *descs, int ci) {
  const ib_desc d = descs[blockIdx.y];
  const ib_resample_params *q = (const ib_resample_params *)d.params;
  if (ci >= q->n_calls) return;
  const ib_rsp_call c = q->call[ci];
  const unsigned long long W = (unsigned)c.out_w, items = W * (unsigned)c.out_h;
  uint8_t *dst = ib_resample_img(d, c.dst, c.dst_off);
  const bool unpm = c.dst == IB_RSI_OUT;
  if (c.passes & IB_RSP_CROP) {
    /* ImagingCrop (of the premultiplied source when it is the source) */
    const uint8_t *src = ib_resample_img(d, c.src, c.src_off);
    const long long in_row = ib_resample_row(d, c.src, c.in_w);
    for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         it < items; it += (unsigned long long)gridDim.x * blockDim.x) {
      const long long x = (long long)(it % W), y = (long long)(it / W);
      uint8_t v[IB_B0];
      const uint8_t *px = src + (y + c.crop_y) * in_row + (x + c.crop_x) * IB_B0;
      for (int b = 0; b < IB_B0; b++) v[b] = px[b];
      if (IB_A && c.src == IB_RSI_SRC) ib_premultiply_px(v, IB_B0);
      if (IB_A && unpm) ib_unpremultiply_px(v, IB_B0);
      for (int b = 0; b < IB_B0; b++) dst[it * IB_B0 + b] = v[b];
    }
    return;
  }
  if (!(c.passes & IB_RSP_V)) return;
  const int32_t *tab = (const int32_t *)(d.params + IB_PBYTES);
  const bool words = c.passes & IB_RSP_H; /* the horizontal pass's four-row words */
  const uint8_t *src = ib_resample_img(d, c.src, c.src_off);
  const long long stride = ib_resample_row(d, c.src, c.in_w);
  const bool pm = c.src == IB_RSI_SRC;
  const int S = ib_resample_v_slices(c.ksize_y, words);
  if (S == 1 && !words) {
    for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         it < items; it += (unsigned long long)gridDim.x * blockDim.x) {
      const int x = (int)(it % W), y = (int)(it / W);
      const int lo = tab[c.yb + 2 * y], n = tab[c.yb + 2 * y + 1];
      ib_resample_px(dst + it * IB_B0, src + (long long)lo * stride + (long long)x * IB_B0, stride,
                     tab + c.yk + (long long)y * c.ksize_y, n, pm, unpm);
    }
    return;
  }
  /* Sliced (ib_resample_v_slices; S = 1 too when the pass reads the
   * horizontal pass's four-row words): warp w of a block sums slice w % S
   * of pixel group w / S; the S warps of a group are in one block
   * (blockDim a multiple of 32 S), and a block's rounds are the same for
   * all its threads, since every one of them reaches the barriers. */
  __shared__ unsigned part[256 / 32][32][IB_B0];
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned long long total = ib_resample_v_threads(items, c.ksize_y, words);
  for (unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x; base < total;
       base += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned long long wg = (base + threadIdx.x) >> 5;
    const int slice = (int)(wg & (unsigned)(S - 1));
    const unsigned long long it = (wg / (unsigned)S) * 32 + lane;
    const bool live = it < items;
    const int x = live ? (int)(it % W) : 0, y = live ? (int)(it / W) : 0;
    unsigned ss[IB_B0] = {0};
    if (words) {
      ib_resample_v_words(ss, d, c, tab, x, y, slice, S, live);
    } else {
      const int lo = tab[c.yb + 2 * y], n = live ? tab[c.yb + 2 * y + 1] : 0;
      ib_resample_share(ss, src + (long long)lo * stride + (long long)x * IB_B0, stride,
                        tab + c.yk + (long long)y * c.ksize_y, slice, S, n, pm);
    }
    if (S > 1) {
      for (int b = 0; b < IB_B0; b++) part[warp][lane][b] = ss[b];
      __syncthreads();
      if (live && slice == 0)
        for (int s2 = 1; s2 < S; s2++)
          for (int b = 0; b < IB_B0; b++) ss[b] += part[warp + s2][lane][b];
      __syncthreads();
    }
    if (live && slice == 0) {
      uint8_t o[IB_B0];
      ib_resample_finish(o, ss, unpm);
      for (int b = 0; b < IB_B0; b++) dst[it * IB_B0 + b] = o[b];
    }
  }
}

#endif
