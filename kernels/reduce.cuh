/* reduce.cuh - Image.reduce as a gather head (device only; the shape is
 * chain.cuh's): the output pixel (x, y) averages its own block of input 0
 * (reduce.h). Parameters at OFF: int32 fx, fy, box (left, top, width,
 * height), width -1 for the whole input; A = 1 premultiplies (LA, RGBA). */
#ifndef IB_REDUCE_CUH
#define IB_REDUCE_CUH

#include "chain.cuh"
#include "reduce.h"

template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_reduce {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    const int32_t *v = (const int32_t *)(sp + OFF);
    const int whole = v[4] < 0;
    const int box[4] = {v[2], v[3], whole ? (int)d.stride0 : v[4], whole ? (int)d.height0 : v[5]};
    const long long stride = (long long)d.stride0 * N0;
    /* Image.reduce returns a copy, not a premultiplied round trip, for
     * factor (1, 1) over the whole image. */
    const int copy = v[0] == 1 && v[1] == 1 && box[0] == 0 && box[1] == 0 &&
                     box[2] == (int)d.stride0 && box[3] == (int)d.height0;
    if (A && !copy)
      ib_reduce_pixel_pm(a0, d.in0, stride, N0, x, y, v[0], v[1], box);
    else
      ib_reduce_pixel(a0, d.in0, stride, N0, x, y, v[0], v[1], box);
  }
};

#endif
