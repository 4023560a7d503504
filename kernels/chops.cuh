/* chops.cuh - the ImageChops two-image functions (function A) as a
 * two-input chain head (device only; the shapes are chain.cuh's).
 * Parameters at OFF: float scale, int32 offset. */
#ifndef IB_CHOPS_CUH
#define IB_CHOPS_CUH

#include "chain.cuh"
#include "chops.h"

struct ib_step_chops_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    for (int k = 0; k < ni; k++)
      q[k] =
          ib_chops_px(a, p[k], b2[k], *(const float *)(sp + off), *(const int32_t *)(sp + off + 4));
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_chops : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_chops_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

#endif
