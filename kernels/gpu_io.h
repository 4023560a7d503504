/*
 * gpu_io.h - device-only helpers for the generated chunky kernels (NVRTC;
 * empty for the host compiler). A thread moves N bytes (N a multiple of 4:
 * PPT pixels of B bytes, PPT chosen so N <= 16) with the widest aligned
 * accesses the offset allows: 16-byte (uint4) when N % 16 == 0, 8-byte when
 * N % 8 == 0, else 4-byte words. Buffers are 256-byte aligned and a thread's
 * offset is g * N, so each access is naturally aligned.
 */
#ifndef IB_GPU_IO_H
#define IB_GPU_IO_H

#include "ib_kernel.h"

#ifdef __CUDACC_RTC__
template <int N>
struct ib_vec {
  union {
    uint4 q[N / 16 > 0 ? N / 16 : 1];
    uint2 d[N / 8 > 0 ? N / 8 : 1];
    uint32_t w[N / 4];
    uint8_t b[N];
  };
};

template <int N>
static __device__ __forceinline__ void ib_ld(const uint8_t *p, ib_vec<N> &v) {
  if (N % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 16; i++) v.q[i] = __ldg(reinterpret_cast<const uint4 *>(p) + i);
  } else if (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 8; i++) v.d[i] = __ldg(reinterpret_cast<const uint2 *>(p) + i);
  } else {
#pragma unroll
    for (int i = 0; i < N / 4; i++) v.w[i] = __ldg(reinterpret_cast<const uint32_t *>(p) + i);
  }
}

template <int N>
static __device__ __forceinline__ void ib_st(uint8_t *p, const ib_vec<N> &v) {
  if (N % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 16; i++) reinterpret_cast<uint4 *>(p)[i] = v.q[i];
  } else if (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 8; i++) reinterpret_cast<uint2 *>(p)[i] = v.d[i];
  } else {
#pragma unroll
    for (int i = 0; i < N / 4; i++) reinterpret_cast<uint32_t *>(p)[i] = v.w[i];
  }
}

/* One launch's view of one job's stage (the descriptor table entry). The
 * host mirror is ib_gdesc in worker/gpu/codegen.h: same field order/sizes. */
struct ib_desc {
  const uint8_t *in0;
  const uint8_t *in1;
  uint8_t *out;
  const uint8_t *params;
  uint32_t width, height;
  uint32_t stride0, stride1; /* input row lengths in pixels */
  uint32_t contig;           /* inputs have the output's width: flat indexing */
  uint32_t job;              /* job index in the submission (for diagnostics) */
  uint32_t height0, height1; /* input heights (gather heads) */
};
#endif

#endif
