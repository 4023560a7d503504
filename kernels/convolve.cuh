/* convolve.cuh - ImageFilter.Kernel (size A) as a head (device only; the
 * shapes are chain.cuh's). Parameters at OFF: the A*A divided weights, then
 * the bias. Interior samples convolve (convolve.h); the border, and every
 * pixel of an image smaller than the kernel, is copied (op_kernel.c). */
#ifndef IB_CONVOLVE_CUH
#define IB_CONVOLVE_CUH

#include "chain.cuh"
#include "convolve.h"
#include "geometry.h"

template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_kernel {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    const float *kw = (const float *)(sp + OFF);
    const int m = A / 2;
    const uint8_t *c = d.in0 + ((unsigned long long)y * d.stride0 + x) * N0;
    if ((int)d.stride0 >= A && (int)d.height0 >= A && x >= m && x < (int)d.stride0 - m && y >= m &&
        y < (int)d.height0 - m) {
      for (int b = 0; b < N0; b++)
        a0[b] = ib_convolve_sample(c + b, (long long)d.stride0 * N0, N0, A, kw, kw[A * A]);
    } else {
      ib_pixel_copy(a0, c, N0);
    }
  }
};

#endif
