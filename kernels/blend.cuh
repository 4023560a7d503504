/* blend.cuh - Image.blend as a two-input chain head (device only; the
 * shapes are chain.cuh's). Parameters at OFF: float alpha. */
#ifndef IB_BLEND_CUH
#define IB_BLEND_CUH

#include "blend.h"
#include "chain.cuh"

template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_blend : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    for (int k = 0; k < NI; k++) q[k] = ib_blend_px(p[k], b2[k], *(const float *)(sp + OFF));
  }
};

#endif
