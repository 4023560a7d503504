/* geometry.cuh - the index-map heads (device only; the shapes are
 * chain.cuh's): each loads the output pixel (x, y) from the source pixel
 * the maps of geometry.h name, or a fill. */
#ifndef IB_GEOMETRY_CUH
#define IB_GEOMETRY_CUH

#include "chain.cuh"
#include "geometry.h"

/* Image.transpose(method A). */
template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_transpose {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    int sx, sy;
    ib_transpose_src(A, x, y, (int)d.stride0, (int)d.height0, &sx, &sy);
    ib_pixel_copy(a0, d.in0 + ((unsigned long long)sy * d.stride0 + sx) * N0, N0);
  }
};

/* crop / expand: parameters at OFF: int64 dx, dy, then the fill pixel. */
template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_window {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    int sx, sy;
    const long long *dd = (const long long *)(sp + OFF);
    if (ib_window_src(x, y, dd[0], dd[1], (int)d.stride0, (int)d.height0, &sx, &sy))
      ib_pixel_copy(a0, d.in0 + ((unsigned long long)sy * d.stride0 + sx) * N0, N0);
    else
      ib_pixel_copy(a0, sp + OFF + 16, N0);
  }
};

/* Image.paste(im, (left, top)) onto the base (input 0): parameters at OFF:
 * int64 dx, dy. ImagingPaste copies the first bands(base) bytes of each im
 * pixel. */
template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_paste {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    int sx, sy;
    const long long *dd = (const long long *)(sp + OFF);
    if (ib_window_src(x, y, dd[0], dd[1], (int)d.stride1, (int)d.height1, &sx, &sy))
      ib_pixel_copy(a0, d.in1 + ((unsigned long long)sy * d.stride1 + sx) * N1, N0);
    else
      ib_pixel_copy(a0, d.in0 + ((unsigned long long)y * d.stride0 + x) * N0, N0);
  }
};

/* Image.resize(NEAREST, box): the axis tables (ib_resize_axis_table, -1
 * outside) follow the shared block: width int32 for x, then height for y. */
template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
struct ib_head_resize {
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t *a0) {
    const int32_t *xt = (const int32_t *)(d.params + PB);
    const int32_t *yt = xt + d.width;
    int sx = xt[x], sy = yt[y];
    if (sx >= 0 && sy >= 0)
      ib_pixel_copy(a0, d.in0 + ((unsigned long long)sy * d.stride0 + sx) * N0, N0);
  }
};

#endif
