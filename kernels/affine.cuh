/* affine.cuh - Image.transform(AFFINE)'s gather head (device only; the
 * shape is chain.cuh's): output pixel (x, y) from affine.h, the path and
 * premultiplication baked in as A. Parameters at OFF: ib_affine_params.
 * Per-job tables after the shared block (d.params + PB): SCALE's axis
 * tables (int32, width then height), FLOAT's row starts (double xo, yo per
 * output row). */
#ifndef IB_AFFINE_CUH
#define IB_AFFINE_CUH

#include "affine.h"
#include "chain.cuh"

template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_affine {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    const ib_affine_params *p = (const ib_affine_params *)(sp + OFF);
    const int in_w = (int)d.stride0, in_h = (int)d.height0;
    if ((A & 7) == IB_AFFINE_FLOAT) {
      /* Pillow's running sum along the row, replayed up to x: O(x) adds,
       * but only matrices that send a corner of the output 32768 pixels
       * away take this path. */
      const double *rows = (const double *)(d.params + PB);
      double xx = rows[2 * y], yy = rows[2 * y + 1];
      for (int k = 0; k < x; k++) ib_affine_walk(&xx, &yy, p->a);
      int sx, sy;
      if (ib_affine_float_src(xx, yy, in_w, in_h, &sx, &sy))
        ib_pixel_copy(a0, d.in0 + ((unsigned long long)sy * in_w + sx) * N0, N0);
      else
        ib_pixel_copy(a0, p->fill, N0);
      return;
    }
    const int32_t *xt = (const int32_t *)(d.params + PB);
    ib_affine_px(A, p, d.in0, in_w, in_h, N0, xt, xt + d.width, x, y, a0);
  }
};

#endif
