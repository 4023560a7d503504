/* convert.cuh - Image.convert as a fused-chain step (device only; the
 * shapes are chain.cuh's). */
#ifndef IB_CONVERT_CUH
#define IB_CONVERT_CUH

#include "chain.cuh"
#include "convert.h"

struct ib_step_convert_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_convert_px(mi, mo, p, q);
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_convert : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_convert_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

#endif
