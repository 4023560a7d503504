/*
 * resample.cuh - the device side of Image.resize with a convolution filter
 * and of Image.reduce (NVRTC only): the math of resample.h / reduce.h, so
 * the device bytes are the CPU reference's (worker/ops/op_resample.c runs
 * the same functions over the same tables).
 *
 * The multi-pass head (docs/device-steps.md) of a one-call resize is two
 * kernels over the job's ib_resample_params (resample.h):
 *   ib_resample_h  the horizontal pass over only the source rows the
 *                  vertical pass reads, into the scratch image d.in1
 *                  (out_w x rows), or into the output when no vertical pass
 *   ib_resample_v  the vertical pass from the scratch image (or from the
 *                  source when no horizontal pass) into the output, or the
 *                  crop (an integral box of the output's size)
 * one output pixel per thread, grid stride. IB_A = 1 for LA / RGBA: the
 * source is premultiplied as it is read (Image.resize converts to La /
 * RGBa first) and the output unpremultiplied as it is written, so the
 * scratch holds the premultiplied intermediate the CPU path holds.
 * The weight tables (int32 bounds[2 n], coeffs[n * ksize]) are built on the
 * host (ib_resample_coeffs: glibc sin/cos), never here; they follow the
 * parameter block. The per-pixel step functions below serve the other
 * sequences (reducing_gap's reduce step) that have no head yet.
 */
#ifndef IB_RESAMPLE_CUH
#define IB_RESAMPLE_CUH

#include "gpu_io.h"
#include "reduce.h"
#include "resample.h"

#ifndef IB_B0
#define IB_B0 1
#endif
#ifndef IB_A
#define IB_A 0
#endif
#ifndef IB_PBYTES
#define IB_PBYTES 64
#endif

/* The source pixel at `px` as the passes see it: premultiplied for LA /
 * RGBA. */
static __device__ __forceinline__ void ib_resample_load(uint8_t v[IB_B0], const uint8_t *px) {
  for (int b = 0; b < IB_B0; b++) v[b] = px[b];
  if (IB_A) ib_premultiply_px(v, IB_B0);
}

/* One output pixel of either pass: n source pixels `step` bytes apart from
 * `in` (premultiplied on load when `pm`), unpremultiplied when `last`. */
static __device__ __forceinline__ void ib_resample_px(uint8_t *out, const uint8_t *in,
                                                      long long step, const int32_t *k, int n,
                                                      bool pm, bool last) {
  int ss[IB_B0];
  for (int b = 0; b < IB_B0; b++) ss[b] = 1 << (IB_RESAMPLE_PRECISION_BITS - 1);
  for (int j = 0; j < n; j++) {
    uint8_t v[IB_B0];
    const uint8_t *px = in + j * step;
    for (int b = 0; b < IB_B0; b++) v[b] = px[b];
    if (IB_A && pm) ib_premultiply_px(v, IB_B0);
    for (int b = 0; b < IB_B0; b++) ss[b] += (int)v[b] * k[j];
  }
  uint8_t o[IB_B0];
  for (int b = 0; b < IB_B0; b++) o[b] = ib_resample_clip8(ss[b]);
  if (IB_A && last) ib_unpremultiply_px(o, IB_B0);
  for (int b = 0; b < IB_B0; b++) out[b] = o[b];
}

extern "C" __global__ void __launch_bounds__(256) ib_resample_h(const ib_desc *descs) {
  const ib_desc d = descs[blockIdx.y];
  const ib_resample_params q = *(const ib_resample_params *)d.params;
  if (!(q.passes & IB_RSP_H) || (q.passes & IB_RSP_CROP)) return;
  const int32_t *tab = (const int32_t *)(d.params + IB_PBYTES);
  const bool last = !(q.passes & IB_RSP_V);
  uint8_t *dst = last ? d.out : (uint8_t *)d.in1;
  const unsigned long long W = d.width, items = W * (unsigned long long)q.rows;
  const unsigned long long in_row = (unsigned long long)d.stride0 * IB_B0;
  for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       it < items; it += (unsigned long long)gridDim.x * blockDim.x) {
    const int x = (int)(it % W), y = (int)(it / W);
    const int lo = tab[q.xb + 2 * x], n = tab[q.xb + 2 * x + 1];
    const uint8_t *row = d.in0 + (unsigned long long)(y + q.first) * in_row;
    ib_resample_px(dst + it * IB_B0, row + (long long)lo * IB_B0, IB_B0,
                   tab + q.xk + (long long)x * q.ksize_x, n, true, last);
  }
}

extern "C" __global__ void __launch_bounds__(256) ib_resample_v(const ib_desc *descs) {
  const ib_desc d = descs[blockIdx.y];
  const ib_resample_params q = *(const ib_resample_params *)d.params;
  const unsigned long long W = d.width, items = W * d.height;
  const unsigned long long in_row = (unsigned long long)d.stride0 * IB_B0;
  if (q.passes & IB_RSP_CROP) {
    /* ImagingCrop of the (premultiplied) source, then unpremultiplied */
    for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         it < items; it += (unsigned long long)gridDim.x * blockDim.x) {
      const unsigned long long x = it % W, y = it / W;
      uint8_t v[IB_B0];
      ib_resample_load(v, d.in0 + (y + q.crop_y) * in_row + (x + q.crop_x) * IB_B0);
      if (IB_A) ib_unpremultiply_px(v, IB_B0);
      for (int b = 0; b < IB_B0; b++) d.out[it * IB_B0 + b] = v[b];
    }
    return;
  }
  if (!(q.passes & IB_RSP_V)) return;
  const int32_t *tab = (const int32_t *)(d.params + IB_PBYTES);
  const bool from_src = !(q.passes & IB_RSP_H);
  const uint8_t *src = from_src ? d.in0 : d.in1;
  const long long stride = from_src ? (long long)in_row : (long long)W * IB_B0;
  for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       it < items; it += (unsigned long long)gridDim.x * blockDim.x) {
    const int x = (int)(it % W), y = (int)(it / W);
    const int lo = tab[q.yb + 2 * y], n = tab[q.yb + 2 * y + 1];
    ib_resample_px(d.out + it * IB_B0, src + (long long)lo * stride + (long long)x * IB_B0, stride,
                   tab + q.yk + (long long)y * q.ksize_y, n, from_src, true);
  }
}

/* Pixel (x, y) of the horizontal pass's out_w-wide image: row y + first of
 * `in` (in_w pixels of `bands` bytes per row). */
static __device__ __forceinline__ void ib_resample_h_step(uint8_t *tmp, const uint8_t *in,
                                                          unsigned in_w, int bands, int first,
                                                          unsigned out_w, ib_resample_axis ax,
                                                          int x, int y) {
  const uint8_t *row = in + ((unsigned long long)(y + first) * in_w) * bands;
  ib_resample_h_pixel(tmp + ((unsigned long long)y * out_w + x) * bands, row, bands, x, ax);
}

/* Pixel (x, y) of the vertical pass over `src` (width pixels per row). */
static __device__ __forceinline__ void ib_resample_v_step(uint8_t *out, const uint8_t *src,
                                                          unsigned width, int bands,
                                                          ib_resample_axis ax, int x, int y) {
  ib_resample_v_pixel(out + ((unsigned long long)y * width + x) * bands, src,
                      (long long)width * bands, bands, x, y, ax);
}

/* Pixel (x, y) of reduce(xscale, yscale) over box (left, top, width,
 * height) of `in` (in_w pixels per row) into an out_w-wide image. */
static __device__ __forceinline__ void ib_reduce_step(uint8_t *out, unsigned out_w,
                                                      const uint8_t *in, unsigned in_w, int bands,
                                                      int xscale, int yscale, const int box[4],
                                                      int x, int y) {
  ib_reduce_pixel(out + ((unsigned long long)y * out_w + x) * bands, in, (long long)in_w * bands,
                  bands, x, y, xscale, yscale, box);
}

/* Pixel i of an image, premultiplied into `out` (La / RGBa). */
static __device__ __forceinline__ void ib_premultiply_step(uint8_t *out, const uint8_t *in,
                                                           int bands, unsigned long long i) {
  for (int b = 0; b < bands; b++) out[i * bands + b] = in[i * bands + b];
  ib_premultiply_px(out + i * bands, bands);
}

/* Pixel i of the resized image, back to straight alpha in place. */
static __device__ __forceinline__ void ib_unpremultiply_step(uint8_t *img, int bands,
                                                             unsigned long long i) {
  ib_unpremultiply_px(img + i * bands, bands);
}

#endif
