/* rank.cuh - ImageFilter.RankFilter (size A) as a head (device only; the
 * shapes are chain.cuh's). Parameter at OFF: int rank. 3x3 windows run
 * ib_rank_sample3x4 (every band in one pass), the function the CPU backend
 * runs; larger ones each band's window through ib_rank_sample. Edges are
 * replicated (rank.h). */
#ifndef IB_RANK_CUH
#define IB_RANK_CUH

#include "chain.cuh"
#include "rank.h"

template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_rank {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    const int rk = *(const int *)(sp + OFF);
    const uint8_t *c = d.in0 + ((unsigned long long)y * d.stride0 + x) * N0;
    if (A == 3) {
      const uint32_t r = ib_rank_sample3x4(c, (long long)d.stride0 * N0, N0, x, y, (int)d.stride0,
                                           (int)d.height0, rk);
      for (int b = 0; b < N0; b++) a0[b] = (uint8_t)(r >> (8 * b));
    } else {
      for (int b = 0; b < N0; b++)
        a0[b] = ib_rank_sample(c + b, (long long)d.stride0 * N0, N0, x, y, (int)d.stride0,
                               (int)d.height0, A, rk);
    }
  }
};

#endif
