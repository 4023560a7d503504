/* blend.cuh - Image.blend as a two-input chain head (device only; the
 * shapes are chain.cuh's). Parameters at OFF: float alpha. */
#ifndef IB_BLEND_CUH
#define IB_BLEND_CUH

#include "blend.h"
#include "chain.cuh"

struct ib_step_blend_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    for (int k = 0; k < ni; k++) q[k] = ib_blend_px(p[k], b2[k], *(const float *)(sp + off));
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_blend : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_blend_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

#endif
