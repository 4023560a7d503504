/* enhance.cuh - ImageEnhance Color / Contrast (kind A) as a fused-chain step
 * (device only; the shapes are chain.cuh's). Parameters at OFF: float
 * alpha, then (Contrast) at OFF + 8 the u64 luma sum of the input that the
 * ib_lsum pre-pass accumulates; prep turns it into the image's mean. */
#ifndef IB_ENHANCE_CUH
#define IB_ENHANCE_CUH

#include "chain.cuh"
#include "enhance.h"

struct ib_step_enhance_rt {
  static __device__ __forceinline__ int prep(int a, int mi, unsigned off, const uint8_t *sp,
                                             unsigned long long n) {
    return a == IB_ENHANCE_CONTRAST
               ? ib_enhance_contrast_mean(*(const unsigned long long *)(sp + off + 8), n)
               : 0;
  }
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_enhance_px(a, mi, a == IB_ENHANCE_CONTRAST ? ctx : 0, *(const float *)(sp + off), p, q);
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_enhance {
  static __device__ __forceinline__ int prep(const uint8_t *sp, unsigned long long n) {
    return ib_step_enhance_rt::prep(A, MI, OFF, sp, n);
  }
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_enhance_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

#endif
