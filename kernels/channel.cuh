/* channel.cuh - Image.getchannel(A) and ImageChops.constant as fused-chain
 * steps (device only; the shapes are chain.cuh's). */
#ifndef IB_CHANNEL_CUH
#define IB_CHANNEL_CUH

#include "chain.cuh"

struct ib_step_getchannel_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    q[0] = p[a];
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_getchannel : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_getchannel_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

/* The value, already clipped, as an int32 at OFF. */
struct ib_step_constant_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    q[0] = (uint8_t) * (const int32_t *)(sp + off);
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_constant : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_constant_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

#endif
