/*
 * geometry.h - index maps of the geometric ops (transpose, crop, expand,
 * resize NEAREST, paste). Each map says which source pixel an output pixel
 * copies, or that it takes a fill; no pixel value is ever computed, so the
 * ops are exact by construction once the maps equal Pillow's.
 *
 * A map returns 1 and writes (*sx, *sy) when the output pixel copies a source
 * pixel, 0 when it takes the op's fill (zeros for crop and resize, the border
 * colour for expand, the base image's own pixel for paste). Whole pixels are
 * copied, as Pillow copies whole pixel words (paste RGB <- RGBA takes the
 * first three bytes of each 4-byte source pixel).
 */
#ifndef IB_GEOMETRY_H
#define IB_GEOMETRY_H

#include "ib_kernel.h"

/* Image.Transpose values (= proto TransposeMethod). */
#define IB_TRANSPOSE_FLIP_LEFT_RIGHT 0
#define IB_TRANSPOSE_FLIP_TOP_BOTTOM 1
#define IB_TRANSPOSE_ROTATE_90 2
#define IB_TRANSPOSE_ROTATE_180 3
#define IB_TRANSPOSE_ROTATE_270 4
#define IB_TRANSPOSE_TRANSPOSE 5
#define IB_TRANSPOSE_TRANSVERSE 6

/* 1 when the method's output is in_h x in_w (Pillow's ROTATE_90/270,
 * TRANSPOSE, TRANSVERSE allocate a swapped image). */
IB_FN int ib_transpose_swaps(int method) {
  return method == IB_TRANSPOSE_ROTATE_90 || method == IB_TRANSPOSE_ROTATE_270 ||
         method == IB_TRANSPOSE_TRANSPOSE || method == IB_TRANSPOSE_TRANSVERSE;
}

/* Output (x, y) -> source pixel, for a source of in_w x in_h; always inside.
 * Matches Geometry.c: ImagingFlipLeftRight, ImagingFlipTopBottom,
 * ImagingRotate90 (counter-clockwise), ImagingRotate180, ImagingRotate270
 * (clockwise), ImagingTranspose (swap axes), ImagingTransverse (swap axes
 * about the anti-diagonal). */
IB_FN void ib_transpose_src(int method, int x, int y, int in_w, int in_h, int *sx, int *sy) {
  switch (method) {
    case IB_TRANSPOSE_FLIP_LEFT_RIGHT:
      *sx = in_w - 1 - x;
      *sy = y;
      break;
    case IB_TRANSPOSE_FLIP_TOP_BOTTOM:
      *sx = x;
      *sy = in_h - 1 - y;
      break;
    case IB_TRANSPOSE_ROTATE_90:
      *sx = in_w - 1 - y;
      *sy = x;
      break;
    case IB_TRANSPOSE_ROTATE_180:
      *sx = in_w - 1 - x;
      *sy = in_h - 1 - y;
      break;
    case IB_TRANSPOSE_ROTATE_270:
      *sx = y;
      *sy = in_h - 1 - x;
      break;
    case IB_TRANSPOSE_TRANSPOSE:
      *sx = y;
      *sy = x;
      break;
    default: /* IB_TRANSPOSE_TRANSVERSE */
      *sx = in_w - 1 - y;
      *sy = in_h - 1 - x;
      break;
  }
}

/* Output (x, y) -> source (x + dx, y + dy) when that lies inside in_w x in_h.
 * The one window map behind three ops:
 *   crop   (Image.crop -> ImagingCrop): dx = left, dy = top, fill zeros;
 *   expand (ImageOps.expand = Image.new(fill) + paste at (left, top)):
 *          dx = -left, dy = -top, fill the border colour;
 *   paste  (ImagingPaste, unmasked, clipped to the base): dx = -left,
 *          dy = -top, "fill" = the base's own pixel.
 * Offsets are 64-bit: crop boxes reach +-2^31 and must not overflow. */
IB_FN int ib_window_src(int x, int y, int64_t dx, int64_t dy, int in_w, int in_h, int *sx,
                        int *sy) {
  int64_t u = (int64_t)x + dx, v = (int64_t)y + dy;
  if (u < 0 || u >= in_w || v < 0 || v >= in_h) return 0;
  *sx = (int)u;
  *sy = (int)v;
  return 1;
}

/* Image.resize(size, NEAREST, box) in Pillow 12.3 (_imaging.c _resize ->
 * ImagingTransform AFFINE -> ImagingTransformAffine -> ImagingScaleAffine,
 * since the matrix has no shear). Per axis, with the box edges lo, hi already
 * converted to C float (PyArg "f") and n_out the output side:
 *   scale  = (double)(hi - lo) / n_out      (float subtraction, double divide)
 *   offset = (double)lo
 * The integer-box shortcut (ImagingCrop when the box is integral and its
 * size equals the output) and the tall-image two-pass path in Image.resize
 * give the same pixels as this map, so one map covers all three. */
IB_FN void ib_resize_axis_coeffs(float lo, float hi, uint32_t n_out, double *scale,
                                 double *offset) {
  float span = hi - lo;
  *scale = (double)span / (double)n_out;
  *offset = (double)lo;
}

/* Pillow's COORD(v): -1 below zero, else truncation toward zero. At 2^31
 * and above C's conversion is undefined (x86-64 gives INT_MIN, so Pillow
 * sees a negative index): -1 there too, "outside" either way. */
IB_FN int ib_resize_coord(double v) { return v < 0.0 || v >= 2147483648.0 ? -1 : (int)v; }

/* ImagingScaleAffine pretabulates one axis by accumulation, not by
 * multiplication: c = offset + scale * 0.5, then per output index
 * i: tab[i] = COORD(c), c += scale (all double). The running sum rounds
 * differently from offset + scale * (i + 0.5), so the table must be built by
 * this same sequential loop (on the host, or one device thread per axis).
 * tab[i] = -1 marks an index whose source falls outside 0..n_in-1: such
 * output pixels are zero (fill=1 in _resize). */
IB_FN void ib_resize_axis_table(double scale, double offset, uint32_t n_out, int n_in,
                                int32_t *tab) {
  double c = offset + scale * 0.5;
  for (uint32_t i = 0; i < n_out; i++) {
    int s = ib_resize_coord(c);
    tab[i] = (s >= 0 && s < n_in) ? s : -1;
    c += scale;
  }
}

/* Copies one whole pixel of `bands` bytes. */
IB_FN void ib_pixel_copy(uint8_t *dst, const uint8_t *src, unsigned bands) {
  for (unsigned b = 0; b < bands; b++) dst[b] = src[b];
}

#endif
