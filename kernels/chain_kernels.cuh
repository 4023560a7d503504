/*
 * chain_kernels.cuh - the fused chain's kernels (device only; NVRTC),
 * included last by the source worker/gpu/codegen.c generates, which
 * defines the configuration below and the chain (IB_HEAD, IB_STEPS; see
 * chain.cuh). The defaults make a 1-band copy so the file compiles alone.
 *
 * ib_chain: one thread per pixel group, grid-stride over the image; the
 * parameter block is staged into shared memory once per block. Three
 * paths: a gather head walks output coordinates; contiguous inputs move
 * IB_PPT pixels per thread with vector loads (gpu_io.h); others index
 * rows by their strides.
 * ib_lsum (IB_LUMA_OFF defined): the luma sum of input 0, added into the
 * u64 at IB_LUMA_OFF + 8 of the global parameter block before ib_chain.
 */
#ifndef IB_CHAIN_KERNELS_CUH
#define IB_CHAIN_KERNELS_CUH

#include "chain.cuh"
#include "convert.h"
#include "luma_sum.cuh"

#ifndef IB_B0
#define IB_B0 1     /* bands of input 0 */
#define IB_B1 1     /* bands of input 1 (1 when there is none) */
#define IB_BO 1     /* bands of the output */
#define IB_PPT 16   /* pixels per thread on the contiguous path */
#define IB_NIN 1    /* inputs */
#define IB_PBYTES 0 /* shared parameter block bytes */
#define IB_GATHER 0 /* the head walks output coordinates */
#endif
#ifndef IB_STEPS
#define IB_HEAD ib_head_none
#define IB_STEPS ib_steps<ib_step_copy<0, 1, 1, 1, 1, 0u> >
#endif

/* Defined below; ib_gather_runs calls it for each output of a run. */
static __device__ void ib_px(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t *, int);

/* A gather head that loads runs of G outputs along x (chain.cuh): thread
 * items are runs, (run, row) carried from item to item without a division;
 * a whole aligned run is stored as one vector. */
template <int G>
static __device__ __forceinline__ void ib_gather_runs(const ib_desc &d, const uint8_t *sp, int ctx,
                                                      unsigned long long t0,
                                                      unsigned long long step) {
  const unsigned long long runs = (d.width + (G - 1ull)) / G;
  if (runs == 0 || t0 >= runs * d.height) return;
  unsigned long long y = t0 / runs, r = t0 - y * runs;
  const unsigned long long sy = step / runs, sr = step - sy * runs;
  for (; y < d.height; r += sr, y += sy) {
    if (r >= runs) r -= runs, y++;
    if (y >= d.height) break;
    const int x = (int)(r * G);
    uint8_t a0[G][4];
    ib_head_run<IB_HEAD>::load(d, sp, x, (int)y, a0);
    ib_vec<G * IB_BO> vo;
#pragma unroll
    for (int k = 0; k < G; k++) ib_px(sp, a0[k], a0[k], vo.b + k * IB_BO, ctx);
    uint8_t *o = d.out + (y * d.width + x) * IB_BO;
    const int left = (int)d.width - x;
    const unsigned align = (G * IB_BO) % 16 == 0 ? 16 : (G * IB_BO) % 8 == 0 ? 8 : 4;
    if ((G * IB_BO) % 4 == 0 && left >= G && ((unsigned long long)o & (align - 1)) == 0)
      ib_st<G * IB_BO>(o, vo);
    else
#pragma unroll
      for (int i = 0; i < G * IB_BO; i++)
        if (i < left * IB_BO) o[i] = vo.b[i];
  }
}

static __device__ __forceinline__ void ib_px(const uint8_t *sp, const uint8_t *a, const uint8_t *b2,
                                             uint8_t *o, int ctx) {
  uint8_t p[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
  for (int i = 0; i < IB_B0; i++) p[i] = a[i];
  IB_STEPS::run(sp, p, q, b2, ctx);
  for (int i = 0; i < IB_BO; i++) o[i] = p[i];
}

/* Byte j of a loaded vector as one byte permute: ptxas otherwise shifts
 * and masks (two integer ops for a middle byte), and the chains' bytes
 * are ALU-bound (bench/RESULTS.md profile). */
template <int N>
static __device__ __forceinline__ uint8_t ib_vbyte(const ib_vec<N> &v, int j) {
  const uint32_t x = __byte_perm(v.w[j >> 2], 0u, 0x4440u | (uint32_t)(j & 3));
  __builtin_assume(x <= 255u);
  return (uint8_t)x;
}

extern "C" __global__ void __launch_bounds__(256) ib_chain(const ib_desc *descs) {
  const ib_desc d = descs[blockIdx.y];
  __shared__ __align__(16) uint8_t sp[IB_PBYTES > 0 ? IB_PBYTES : 16];
  for (unsigned i = threadIdx.x; i < IB_PBYTES / 4; i += blockDim.x)
    ((uint32_t *)sp)[i] = ((const uint32_t *)d.params)[i];
  __syncthreads();
  const unsigned long long n = (unsigned long long)d.width * d.height;
  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long t0 = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int ctx = IB_STEPS::prep(sp, n);
  const int GX = ib_head_run<IB_HEAD>::GX;
  if constexpr (IB_GATHER && GX > 1) {
    ib_gather_runs<GX>(d, sp, ctx, t0, step);
  } else if (IB_GATHER) {
    for (unsigned long long i = t0; i < n; i += step) {
      const int y = (int)(i / d.width), x = (int)(i - (unsigned long long)y * d.width);
      uint8_t a0[4] = {0, 0, 0, 0};
      IB_HEAD::load(d, sp, x, y, a0);
      ib_px(sp, a0, a0, d.out + i * IB_BO, ctx);
    }
  } else if (d.contig) {
    const unsigned long long groups = n / IB_PPT;
    for (unsigned long long g = t0; g < groups; g += step) {
      ib_vec<IB_PPT * IB_B0> va;
      ib_ld<IB_PPT * IB_B0>(d.in0 + g * (IB_PPT * IB_B0), va);
      ib_vec<(IB_NIN == 2 ? IB_PPT * IB_B1 : 4)> vb;
      if (IB_NIN == 2) ib_ld<(IB_NIN == 2 ? IB_PPT * IB_B1 : 4)>(d.in1 + g * (IB_PPT * IB_B1), vb);
      ib_vec<IB_PPT * IB_BO> vo;
#pragma unroll
      for (int k = 0; k < IB_PPT; k++) {
        uint8_t a[IB_B0], b[IB_B1];
        for (int i = 0; i < IB_B0; i++) a[i] = ib_vbyte(va, k * IB_B0 + i);
        if (IB_NIN == 2)
          for (int i = 0; i < IB_B1; i++) b[i] = ib_vbyte(vb, k * IB_B1 + i);
        ib_px(sp, a, IB_NIN == 2 ? b : a, vo.b + k * IB_BO, ctx);
      }
      ib_st<IB_PPT * IB_BO>(d.out + g * (IB_PPT * IB_BO), vo);
    }
    for (unsigned long long i = groups * IB_PPT + t0; i < n; i += step)
      ib_px(sp, d.in0 + i * IB_B0, IB_NIN == 2 ? d.in1 + i * IB_B1 : d.in0, d.out + i * IB_BO, ctx);
  } else {
    for (unsigned long long i = t0; i < n; i += step) {
      unsigned long long y = i / d.width, x = i - y * d.width;
      ib_px(sp, d.in0 + (y * d.stride0 + x) * IB_B0,
            IB_NIN == 2 ? d.in1 + (y * d.stride1 + x) * IB_B1 : d.in0, d.out + i * IB_BO, ctx);
    }
  }
}

#ifdef IB_LUMA_OFF
/* IB_MI0: input 0's mode. */
extern "C" __global__ void __launch_bounds__(256) ib_lsum(const ib_desc *descs) {
  const ib_desc d = descs[blockIdx.y];
  ib_luma_sum(d, IB_MI0, IB_B0, (unsigned long long *)(d.params + IB_LUMA_OFF + 8));
}
#endif

#endif
