/*
 * blur.cuh - BoxBlur / GaussianBlur on the device (NVRTC only), as
 * worker/ops/op_blur.c runs them on the host (kernels/boxblur.h): hp passes
 * over rows, then vp passes over columns (per-job counts in the parameters,
 * ib_blur_params of kernels/blur.h; 0 for a zero radius). in1 is a scratch
 * image S1. The T = hp + vp passes alternate between S1 and the output so
 * the last one lands in the output (pass k writes the output when T-1-k is
 * even), never reading and writing one buffer in the same pass; T == 0
 * copies. Each thread computes a span of one line with ib_box_blur_span
 * (the same bytes as ib_box_blur_line, tests/unit/test_gpu_math.c). The op
 * row's launch plan (op_blur.c blur_plan) picks among:
 *  - ib_blur_rows: every row pass at once, one row per block in shared
 *    memory (dynamic, 2 row buffers), threads over (band, span of
 *    IB_BLUR_SEG pixels), or for RGBA over spans of whole pixels
 *    (ib_box_blur_span4); coalesced row loads and stores. When two rows fit.
 *  - ib_blur_pass(dir, k): pass k over rows (dir 0, the fallback for rows
 *    too wide for shared memory) or columns (dir 1) in global memory,
 *    threads over (line, span of IB_BLUR_CSEG samples), line index fastest
 *    so a warp reads 32 adjacent bytes of a row in the column passes; the
 *    column passes' fallback when ib_blur_cols' tile does not fit.
 *  - ib_blur_cols(th, rows): every column pass at once, in tiles in shared
 *    memory.
 * worker/gpu/codegen.c defines IB_B0 (bands) before including this.
 */
#ifndef IB_BLUR_CUH
#define IB_BLUR_CUH

#include "blur.h"
#include "gpu_io.h"

#ifndef IB_B0
#define IB_B0 1
#endif
#define IB_SEG IB_BLUR_SEG
#define IB_CSEG IB_BLUR_CSEG
#define IB_CW IB_BLUR_CW

static __device__ __forceinline__ uint8_t *ib_pass_dst(const ib_desc &d, int k, int T) {
  return ((T - 1 - k) & 1) == 0 ? d.out : (uint8_t *)d.in1;
}

extern "C" __global__ void __launch_bounds__(256) ib_blur_rows(const ib_desc *descs) {
  extern __shared__ __align__(16) uint8_t sm[];
  const ib_desc d = descs[blockIdx.y];
  const ib_blur_params q = *(const ib_blur_params *)d.params;
  const int T = q.hp + q.vp, W = (int)d.width;
  if (q.hp == 0 && T != 0) return;
  uint8_t *dst = T == 0 ? d.out : ib_pass_dst(d, q.hp - 1, T);
  const unsigned rb = d.width * IB_B0, rb16 = (rb + 15u) & ~15u;
#if IB_B0 == 4
  /* RGBA: one span per thread when the row allows (fewer warm-ups), odd so
   * the threads' words fall in different banks */
  const int per = (W + (int)blockDim.x - 1) / (int)blockDim.x,
            seg4 = (per > IB_SEG ? per : IB_SEG) | 1;
#else
  const int segs = (W + IB_SEG - 1) / IB_SEG;
#endif
  const bool wide = (rb & 15u) == 0;
  for (unsigned y = blockIdx.x; y < d.height; y += gridDim.x) {
    uint8_t *A = sm, *Bf = sm + rb16;
    const uint8_t *src = d.in0 + (unsigned long long)y * rb;
    if (wide)
      for (unsigned i = threadIdx.x; i < rb / 16; i += blockDim.x)
        ((uint4 *)A)[i] = __ldg((const uint4 *)src + i);
    else
      for (unsigned i = threadIdx.x; i < rb; i += blockDim.x) A[i] = src[i];
    __syncthreads();
    for (int k = 0; k < q.hp; k++) {
#if IB_B0 == 4
      /* a pixel's 4 bands as one word: a span of pixels per thread */
      for (int x0 = threadIdx.x * seg4; x0 < W; x0 += blockDim.x * seg4)
        ib_box_blur_span4((uint32_t *)Bf, 1, (const uint32_t *)A, 1, 0, W, x0,
                          x0 + seg4 < W ? x0 + seg4 : W, q.ph);
#else
      for (int t = threadIdx.x; t < segs * IB_B0; t += blockDim.x) {
        const int bd = t % IB_B0, x0 = (t / IB_B0) * IB_SEG, x1 = x0 + IB_SEG < W ? x0 + IB_SEG : W;
        ib_box_blur_span(Bf + bd, IB_B0, A + bd, IB_B0, W, x0, x1, q.ph);
      }
#endif
      __syncthreads();
      uint8_t *t = A;
      A = Bf;
      Bf = t;
    }
    uint8_t *o = dst + (unsigned long long)y * rb;
    if (wide)
      for (unsigned i = threadIdx.x; i < rb / 16; i += blockDim.x)
        ((uint4 *)o)[i] = ((const uint4 *)A)[i];
    else
      for (unsigned i = threadIdx.x; i < rb; i += blockDim.x) o[i] = A[i];
    __syncthreads();
  }
}

/* Every column pass at once (vp > 0): a block takes a tile of IB_CW
 * byte-columns x th output rows, loads it with the rows the passes reach
 * above and below (ib_box_tile_rows: pad = radius + 1 per pass; `rows` is
 * the buffer height the host sized for the largest tile of the launch),
 * runs the passes in shared memory (2 buffers of rows x IB_CW bytes) and
 * stores the th rows to the output. A thread owns one 4-byte word column
 * (ib_box_blur_span4) and one of blockDim.x / (IB_CW / 4) row parts, so a
 * warp reads 32 consecutive words of a row. The column passes of one image
 * never read what they write: the source is in0 or the last row pass's
 * buffer, S1 (vp is odd: ib_pass_dst), the destination the output. */
extern "C" __global__ void __launch_bounds__(256)
    ib_blur_cols(const ib_desc *descs, int th, int rows) {
  extern __shared__ __align__(16) uint8_t sm[];
  const ib_desc d = descs[blockIdx.y];
  const ib_blur_params q = *(const ib_blur_params *)d.params;
  if (q.vp <= 0) return;
  const int T = q.hp + q.vp, H = (int)d.height, pad = q.pv.radius + 1;
  const uint8_t *__restrict__ src = q.hp == 0 ? d.in0 : ib_pass_dst(d, q.hp - 1, T);
  uint8_t *__restrict__ dst = d.out;
  const unsigned rb = d.width * IB_B0, strips = (rb + IB_CW - 1) / IB_CW;
  const unsigned tiles = (d.height + th - 1) / th;
  const bool vec = (rb & 15u) == 0; /* buffers are 256-byte aligned */
  const int nwd = IB_CW / 4, nseg = (int)blockDim.x / nwd;
  const int c = (int)threadIdx.x % nwd, sg = (int)threadIdx.x / nwd;
  uint32_t *const buf0 = (uint32_t *)sm, *const buf1 = buf0 + (size_t)rows * nwd;
  for (unsigned it = blockIdx.x; it < strips * tiles; it += gridDim.x) {
    const unsigned c0 = (it % strips) * IB_CW, cw = rb - c0 < IB_CW ? rb - c0 : IB_CW;
    const int y0 = (int)(it / strips) * th, y1 = y0 + th < H ? y0 + th : H;
    int lo, hi;
    ib_box_tile_rows(y0, y1, H, pad, q.vp, &lo, &hi);
    if (vec && cw == IB_CW) {
      const unsigned n16 = (unsigned)(hi - lo) * (IB_CW / 16);
      for (unsigned i = threadIdx.x; i < n16; i += blockDim.x) {
        const uint8_t *g = src + (size_t)(lo + i / (IB_CW / 16)) * rb + c0;
        ((uint4 *)buf0)[i] = __ldg((const uint4 *)g + i % (IB_CW / 16));
      }
    } else {
      const unsigned n1 = (unsigned)(hi - lo) * IB_CW;
      for (unsigned i = threadIdx.x; i < n1; i += blockDim.x) {
        const unsigned b = i % IB_CW;
        ((uint8_t *)buf0)[i] = b < cw ? src[(size_t)(lo + i / IB_CW) * rb + c0 + b] : 0;
      }
    }
    __syncthreads();
    uint32_t *A = buf0, *B = buf1;
    for (int k = 0; k < q.vp; k++) {
      int olo, ohi, x0, x1;
      ib_box_tile_rows(y0, y1, H, pad, q.vp - 1 - k, &olo, &ohi);
      ib_box_seg(olo, ohi, nseg, sg, &x0, &x1);
      if (sg < nseg && x0 < x1) ib_box_blur_span4(B + c, nwd, A + c, nwd, lo, H, x0, x1, q.pv);
      __syncthreads();
      uint32_t *t = A;
      A = B;
      B = t;
    }
    const uint32_t *R = A + (size_t)(y0 - lo) * nwd;
    if (vec && cw == IB_CW) {
      const unsigned n16 = (unsigned)(y1 - y0) * (IB_CW / 16);
      for (unsigned i = threadIdx.x; i < n16; i += blockDim.x) {
        uint8_t *g = dst + (size_t)(y0 + i / (IB_CW / 16)) * rb + c0;
        ((uint4 *)g)[i % (IB_CW / 16)] = ((const uint4 *)R)[i];
      }
    } else {
      const unsigned n1 = (unsigned)(y1 - y0) * IB_CW;
      for (unsigned i = threadIdx.x; i < n1; i += blockDim.x) {
        const unsigned b = i % IB_CW;
        if (b < cw) dst[(size_t)(y0 + i / IB_CW) * rb + c0 + b] = ((const uint8_t *)R)[i];
      }
    }
    __syncthreads();
  }
}

extern "C" __global__ void __launch_bounds__(256)
    ib_blur_pass(const ib_desc *descs, int dir, int k) {
  const ib_desc d = descs[blockIdx.y];
  const ib_blur_params q = *(const ib_blur_params *)d.params;
  const int T = q.hp + q.vp;
  int kk;
  if (dir == 0) {
    if (k >= q.hp && !(T == 0 && k == 0)) return;
    kk = k;
  } else {
    if (k >= q.vp) return;
    kk = q.hp + k;
  }
  const uint8_t *src = kk == 0 ? d.in0 : ib_pass_dst(d, kk - 1, T);
  uint8_t *dst = T == 0 ? d.out : ib_pass_dst(d, kk, T);
  const unsigned long long W = d.width, H = d.height;
  const unsigned long long lines = dir == 0 ? H * IB_B0 : W * IB_B0;
  const int n = dir == 0 ? (int)W : (int)H;
  const long long step = dir == 0 ? IB_B0 : (long long)(W * IB_B0);
  const ib_box_pass p = dir == 0 ? q.ph : q.pv;
  const unsigned long long items = lines * (unsigned long long)((n + IB_CSEG - 1) / IB_CSEG);
  for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       it < items; it += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned long long l = it % lines;
    const int x0 = (int)(it / lines) * IB_CSEG, x1 = x0 + IB_CSEG < n ? x0 + IB_CSEG : n;
    const unsigned long long off = dir == 0 ? (l / IB_B0) * W * IB_B0 + l % IB_B0 : l;
    if (T == 0) {
      for (int x = x0; x < x1; x++) dst[off + (long long)x * step] = src[off + (long long)x * step];
    } else {
      ib_box_blur_span(dst + off, step, src + off, step, n, x0, x1, p);
    }
  }
}

#endif
