/* tone.cuh - the tone op as a fused-chain step (device only; the shapes are
 * chain.cuh's). Parameters at OFF: ib_tone_f32 (ib_tone_prepare_f32). */
#ifndef IB_TONE_CUH
#define IB_TONE_CUH

#include "chain.cuh"
#include "tone.h"

struct ib_step_tone_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_tone_row_f32((const ib_tone_f32 *)(sp + off), p, q, 1, ni);
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_tone : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_tone_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

#endif
