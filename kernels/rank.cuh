/* rank.cuh - ImageFilter.RankFilter (size A) as a head (device only; the
 * shapes are chain.cuh's). Parameter at OFF: int rank. 3x3 windows run
 * ib_rank_run3x4 (every band in one pass, IB_RANK_RUN adjacent outputs per
 * call: load_gx), the function the CPU backend runs; larger ones each
 * band's window through ib_rank_sample. Edges are replicated (rank.h). */
#ifndef IB_RANK_CUH
#define IB_RANK_CUH

#include "chain.cuh"
#include "rank.h"

template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_rank {
  static const int GX = A == 3 ? IB_RANK_RUN : 1;

  /* Outputs (x .. x+IB_RANK_RUN-1, y) of a 3x3 window; those at or past
   * the width are defined but stored by no one. */
  static __device__ __forceinline__ void load_gx(const ib_desc &d, const uint8_t *sp, int x, int y,
                                                 uint8_t (*a)[4]) {
    const int rk = *(const int *)(sp + OFF);
    const long long rs = (long long)d.stride0 * N0;
    const uint8_t *c = d.in0 + (unsigned long long)y * rs;
    const uint8_t *u = y > 0 ? c - rs : c, *w = y + 1 < (int)d.height0 ? c + rs : c;
    uint32_t r[IB_RANK_RUN];
    ib_rank_run3x4(u, c, w, N0, x, (int)d.stride0, rk, r);
#pragma unroll
    for (int k = 0; k < IB_RANK_RUN; k++)
#pragma unroll
      for (int b = 0; b < N0; b++) a[k][b] = (uint8_t)(r[k] >> (8 * b));
  }

  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    if (A == 3) {
      uint8_t a[IB_RANK_RUN][4];
      load_gx(d, sp, x, y, a);
      for (int b = 0; b < N0; b++) a0[b] = a[0][b];
      return;
    }
    const int rk = *(const int *)(sp + OFF);
    const uint8_t *c = d.in0 + ((unsigned long long)y * d.stride0 + x) * N0;
    for (int b = 0; b < N0; b++)
      a0[b] = ib_rank_sample(c + b, (long long)d.stride0 * N0, N0, x, y, (int)d.stride0,
                             (int)d.height0, A, rk);
  }
};

#endif
