/*
 * luma_sum.cuh - the luma sum a LUMA head needs before its chain runs
 * (Contrast's mean), for the specialised chain (chain_kernels.cuh ib_lsum)
 * and the interpreter (interp_kernels.cuh ib_interp_lsum): one body, so
 * both tiers add the same u64. Device only (NVRTC).
 *
 * Each block reduces its grid-stride share of input 0's L values (warp
 * shuffles, then the block's warps in shared memory) and adds it into the
 * u64 at dst with one atomic; the host zeroes dst before the launch.
 */
#ifndef IB_LUMA_SUM_CUH
#define IB_LUMA_SUM_CUH

#include "convert.h"
#include "gpu_io.h"

/* mi: input 0's mode; b0: its bytes per pixel. blockDim.x <= 256. */
static __device__ __forceinline__ void ib_luma_sum(const ib_desc &d, int mi, int b0,
                                                   unsigned long long *dst) {
  const unsigned long long n = (unsigned long long)d.width * d.height;
  unsigned long long s = 0;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned long long y = i / d.width, x = i - y * d.width;
    uint8_t l;
    ib_convert_px(mi, 1, d.in0 + (y * d.stride0 + x) * b0, &l);
    s += l;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  __shared__ unsigned long long ws[8];
  if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long t = 0;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++) t += ws[w];
    atomicAdd(dst, t);
  }
}

#endif
