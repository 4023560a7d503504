/*
 * resample.cuh - the device steps of Image.resize with a convolution filter
 * and of Image.reduce (NVRTC only): one output pixel per call, the math of
 * resample.h / reduce.h, so the device bytes are the CPU reference's
 * (worker/ops/op_resample.c runs the same functions over the same tables).
 *
 * A resize runs as up to five passes over whole images, in this order, each
 * a launch over its output's pixels (the multi-pass device step that
 * sequences them, uploads the tables and owns the intermediates is not part
 * of this file):
 *   premultiply   LA / RGBA only, into a copy      ib_premultiply_step
 *   reduce        reducing_gap only                ib_reduce_step
 *   horizontal    rows `first` .. of the source,   ib_resample_h_step
 *                 into an out_w-wide 8-bit image
 *   vertical      into the output (bounds already  ib_resample_v_step
 *                 shifted by `first` when the horizontal pass ran)
 *   unpremultiply LA / RGBA only, in place          ib_unpremultiply_step
 * The weight tables (int32 bounds[2 n], coeffs[n * ksize]) are built on the
 * host (ib_resample_coeffs: glibc sin/cos), never here.
 */
#ifndef IB_RESAMPLE_CUH
#define IB_RESAMPLE_CUH

#include "reduce.h"
#include "resample.h"

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
