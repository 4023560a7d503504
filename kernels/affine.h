/*
 * affine.h - Image.transform(size, Transform.AFFINE, data, resample,
 * fillcolor) on 8-bit bands, matching Pillow 12.3 src/libImaging/Geometry.c:
 * ImagingTransformAffine and the engine it picks. Image.rotate computes its
 * matrix in Python and makes this call, so it needs nothing else.
 *
 * With a = (a0 .. a5), output pixel (x, y) samples the source near
 * (a0 x' + a1 y' + a2, a3 x' + a4 y' + a5), x' = x + 0.5, y' = y + 0.5.
 * Pillow picks one of five paths (IB_AFFINE_*), each with its own
 * arithmetic, and this header reproduces each:
 *   SCALE    NEAREST, a1 == a3 == 0 (ImagingScaleAffine): one table per
 *            axis, built by the sequential double sum of geometry.h's
 *            ib_resize_axis_table (scale a0 offset a2; scale a4 offset a5).
 *   FIXED    NEAREST, every corner (0 | w, 0 | h) of the output within
 *            +-32768 (check_fixed, in double): affine_fixed, 16.16 fixed
 *            point. FIX(v) = FLOOR(v * 65536 + 0.5) of a0, a1, a3, a4 and of
 *            a2 + a0 / 2 + a1 / 2, a5 + a3 / 2 + a4 / 2; Pillow adds them up
 *            in C int, row by row and pixel by pixel, so
 *            xx = FIX2 + y FIX1 + x FIX0 (mod 2^32), source x = xx >> 16.
 *   FLOAT    NEAREST otherwise: a running double sum, xo = a2 + a1 / 2 +
 *            a0 / 2 (note the order), per row xx = xo then xx += a0 per
 *            pixel, xo += a1 per row; source x = COORD(xx). Rows' starting
 *            sums are tabulated on the host; a pixel walks its row from there.
 *   BILINEAR / BICUBIC (ImagingGenericTransform, affine_transform and the
 *            *_filter32* functions): per pixel in double, source
 *            (a0 x' + a1 y') + a2, outside [0, w) x [0, h) -> fill; then
 *            xin - 0.5, FLOOR, taps clipped to the image (XCLIP/YCLIP for
 *            the first row; a later row past the edge repeats the previous
 *            one), bilinear v = a + (b - a) d, bicubic with a = -1:
 *            p1 = v2, p2 = -v1 + v3, p3 = 2 (v1 - v2) + v3 - v4,
 *            p4 = -v1 + v2 - v3 + v4, v = p1 + d (p2 + d (p3 + d p4)).
 *            Bilinear truncates (UINT8)v; bicubic clamps to 0..255 first.
 * A pixel Pillow does not write keeps Image.new's fill (the fillcolor, or
 * zeros when it is None). For LA and RGBA with a filter, Image.transform
 * converts to La / RGBa (premultiplied), transforms, and converts back: the
 * taps are premultiplied as they are read, and the pixel (fill included,
 * which Image.new put in the La / RGBa image as given) is unpremultiplied
 * (resample.h's two functions, Convert.c's formulas).
 *
 * Double arithmetic goes through ib_dadd / ib_dsub / ib_dmul: on the device
 * they are __dadd_rn & co., which NVRTC never fuses into an FMA whatever
 * --fmad says, so a * b + c rounds twice as on x86-64 Pillow; on the host
 * they are plain operators, and the build's ISO C mode (GCC:
 * -ffp-contract=off) and the call boundaries keep the compiler from fusing
 * them there. An FMA changes the last bit of a coordinate and so, near a
 * pixel or truncation boundary, whole bytes.
 */
#ifndef IB_AFFINE_H
#define IB_AFFINE_H

#include "geometry.h"
#include "ib_kernel.h"
#include "resample.h"

#define IB_AFFINE_SCALE 0
#define IB_AFFINE_FIXED 1
#define IB_AFFINE_FLOAT 2
#define IB_AFFINE_BILINEAR 3
#define IB_AFFINE_BICUBIC 4
/* The step's static parameter: path | IB_AFFINE_PREMUL when LA / RGBA are
 * premultiplied around a filter. */
#define IB_AFFINE_PREMUL 8

/* The per-job parameters (the device step's block, 16-byte aligned). */
typedef struct ib_affine_params {
  double a[6];
  int32_t fix[6]; /* FIXED: FIX(a0), FIX(a1), FIX(a2 + ...), FIX(a3), FIX(a4), FIX(a5 + ...) */
  uint8_t fill[4];
  uint32_t pad;
} ib_affine_params;

#ifdef __CUDACC_RTC__
IB_FN double ib_dadd(double a, double b) { return __dadd_rn(a, b); }
IB_FN double ib_dsub(double a, double b) { return __dsub_rn(a, b); }
IB_FN double ib_dmul(double a, double b) { return __dmul_rn(a, b); }
#else
IB_FN double ib_dadd(double a, double b) { return a + b; }
IB_FN double ib_dsub(double a, double b) { return a - b; }
IB_FN double ib_dmul(double a, double b) { return a * b; }
#endif

/* Geometry.c's FLOOR(v) for the v the filters reach ([-1, side)). */
IB_FN int ib_affine_floor(double v) { return v < 0.0 ? (int)floor(v) : (int)v; }

/* FIXED: the source pixel of output (x, y) in C int arithmetic (wrapping,
 * as Pillow's int sums wrap on x86-64); 0 when outside in_w x in_h. */
IB_FN int ib_affine_fixed_src(const int32_t *fix, int x, int y, int in_w, int in_h, int *sx,
                              int *sy) {
  const int32_t xx =
      (int32_t)((uint32_t)fix[2] + (uint32_t)y * (uint32_t)fix[1] + (uint32_t)x * (uint32_t)fix[0]);
  const int32_t yy =
      (int32_t)((uint32_t)fix[5] + (uint32_t)y * (uint32_t)fix[4] + (uint32_t)x * (uint32_t)fix[3]);
  *sx = xx >> 16;
  *sy = yy >> 16;
  return *sx >= 0 && *sx < in_w && *sy >= 0 && *sy < in_h;
}

/* FLOAT: one step along a row (xx += a0, yy += a3). */
IB_FN void ib_affine_walk(double *xx, double *yy, const double *a) {
  *xx = ib_dadd(*xx, a[0]);
  *yy = ib_dadd(*yy, a[3]);
}

/* FLOAT: the source pixel at the running sums (xx, yy); 0 when outside. */
IB_FN int ib_affine_float_src(double xx, double yy, int in_w, int in_h, int *sx, int *sy) {
  *sx = ib_resize_coord(xx);
  *sy = ib_resize_coord(yy);
  return *sx >= 0 && *sx < in_w && *sy >= 0 && *sy < in_h;
}

/* The source position of output (x, y) for the filters (affine_transform). */
IB_FN void ib_affine_map(const double *a, int x, int y, double *u, double *v) {
  const double xin = (double)x + 0.5, yin = (double)y + 0.5;
  *u = ib_dadd(ib_dadd(ib_dmul(a[0], xin), ib_dmul(a[1], yin)), a[2]);
  *v = ib_dadd(ib_dadd(ib_dmul(a[3], xin), ib_dmul(a[4], yin)), a[5]);
}

IB_FN double ib_affine_lerp(double a, double b, double d) {
  return ib_dadd(a, ib_dmul(ib_dsub(b, a), d));
}

/* Geometry.c's BICUBIC macro (a = -1). */
IB_FN double ib_affine_cubic(double v1, double v2, double v3, double v4, double d) {
  const double p1 = v2;
  const double p2 = ib_dadd(-v1, v3);
  const double p3 = ib_dsub(ib_dadd(ib_dmul(2.0, ib_dsub(v1, v2)), v3), v4);
  const double p4 = ib_dadd(ib_dsub(ib_dadd(-v1, v2), v3), v4);
  return ib_dadd(p1, ib_dmul(d, ib_dadd(p2, ib_dmul(d, ib_dadd(p3, ib_dmul(d, p4))))));
}

IB_FN int ib_affine_clip(int v, int n) { return v < 0 ? 0 : (v < n ? v : n - 1); }

/* Source pixel (x, y) (inside), premultiplied when `premul`. */
IB_FN void ib_affine_tap(const uint8_t *in, int in_w, int bands, int premul, int x, int y,
                         uint8_t *px) {
  ib_pixel_copy(px, in + ((int64_t)y * in_w + x) * bands, (unsigned)bands);
  if (premul) ib_premultiply_px(px, bands);
}

/* BILINEAR at source position (u, v), every band into out; 0 (out
 * untouched) when (u, v) lies outside the source. */
IB_FN int ib_affine_bilinear(const uint8_t *in, int in_w, int in_h, int bands, int premul, double u,
                             double v, uint8_t *out) {
  if (u < 0.0 || u >= in_w || v < 0.0 || v >= in_h) return 0;
  u = ib_dsub(u, 0.5);
  v = ib_dsub(v, 0.5);
  const int x = ib_affine_floor(u), y = ib_affine_floor(v);
  const double dx = ib_dsub(u, (double)x), dy = ib_dsub(v, (double)y);
  const int x0 = ib_affine_clip(x, in_w), x1 = ib_affine_clip(x + 1, in_w);
  const int y0 = ib_affine_clip(y, in_h), has1 = y + 1 >= 0 && y + 1 < in_h;
  uint8_t p[2][2][4];
  ib_affine_tap(in, in_w, bands, premul, x0, y0, p[0][0]);
  ib_affine_tap(in, in_w, bands, premul, x1, y0, p[0][1]);
  if (has1) {
    ib_affine_tap(in, in_w, bands, premul, x0, y + 1, p[1][0]);
    ib_affine_tap(in, in_w, bands, premul, x1, y + 1, p[1][1]);
  }
  for (int b = 0; b < bands; b++) {
    const double v1 = ib_affine_lerp(p[0][0][b], p[0][1][b], dx);
    const double v2 = has1 ? ib_affine_lerp(p[1][0][b], p[1][1][b], dx) : v1;
    out[b] = (uint8_t)(int)ib_affine_lerp(v1, v2, dy);
  }
  return 1;
}

/* One row of BICUBIC's horizontal pass, band b, from the four taps. */
IB_FN double ib_affine_cubic_row(const uint8_t (*t)[4], int b, double dx) {
  return ib_affine_cubic(t[0][b], t[1][b], t[2][b], t[3][b], dx);
}

/* BICUBIC at source position (u, v), as ib_affine_bilinear. */
IB_FN int ib_affine_bicubic(const uint8_t *in, int in_w, int in_h, int bands, int premul, double u,
                            double v, uint8_t *out) {
  if (u < 0.0 || u >= in_w || v < 0.0 || v >= in_h) return 0;
  u = ib_dsub(u, 0.5);
  v = ib_dsub(v, 0.5);
  const int x = ib_affine_floor(u) - 1, y = ib_affine_floor(v) - 1;
  const double dx = ib_dsub(u, (double)(x + 1)), dy = ib_dsub(v, (double)(y + 1));
  int xs[4];
  for (int k = 0; k < 4; k++) xs[k] = ib_affine_clip(x + k, in_w);
  /* Rows y .. y + 3: the first clipped, a later one outside the image
   * repeats the row before it (Pillow's v2 = v1 etc.). */
  uint8_t t[4][4][4];
  for (int r = 0; r < 4; r++) {
    const int yr = r == 0 ? ib_affine_clip(y, in_h) : y + r;
    if (r > 0 && !(yr >= 0 && yr < in_h)) {
      for (int k = 0; k < 4; k++) ib_pixel_copy(t[r][k], t[r - 1][k], 4);
      continue;
    }
    for (int k = 0; k < 4; k++) ib_affine_tap(in, in_w, bands, premul, xs[k], yr, t[r][k]);
  }
  for (int b = 0; b < bands; b++) {
    const double w =
        ib_affine_cubic(ib_affine_cubic_row(t[0], b, dx), ib_affine_cubic_row(t[1], b, dx),
                        ib_affine_cubic_row(t[2], b, dx), ib_affine_cubic_row(t[3], b, dx), dy);
    out[b] = w <= 0.0 ? 0 : (w >= 255.0 ? 255 : (uint8_t)(int)w);
  }
  return 1;
}

/* Output pixel (x, y) of path `a` (IB_AFFINE_* | IB_AFFINE_PREMUL) into out
 * (`bands` bytes), for every path but FLOAT, whose running sums the caller
 * keeps (ib_affine_walk, ib_affine_float_src). xtab / ytab: SCALE's axis
 * tables (-1: outside), NULL otherwise. */
IB_FN void ib_affine_px(int a, const ib_affine_params *p, const uint8_t *in, int in_w, int in_h,
                        int bands, const int32_t *xtab, const int32_t *ytab, int x, int y,
                        uint8_t *out) {
  const int path = a & 7, premul = (a & IB_AFFINE_PREMUL) != 0;
  int ok, sx = 0, sy = 0;
  if (path == IB_AFFINE_SCALE) {
    sx = xtab[x];
    sy = ytab[y];
    ok = sx >= 0 && sy >= 0;
  } else if (path == IB_AFFINE_FIXED) {
    ok = ib_affine_fixed_src(p->fix, x, y, in_w, in_h, &sx, &sy);
  } else {
    double u, v;
    ib_affine_map(p->a, x, y, &u, &v);
    ok = path == IB_AFFINE_BICUBIC ? ib_affine_bicubic(in, in_w, in_h, bands, premul, u, v, out)
                                   : ib_affine_bilinear(in, in_w, in_h, bands, premul, u, v, out);
    if (!ok) ib_pixel_copy(out, p->fill, (unsigned)bands);
    if (premul) ib_unpremultiply_px(out, bands);
    return;
  }
  ib_pixel_copy(out, ok ? in + ((int64_t)sy * in_w + sx) * bands : p->fill, (unsigned)bands);
}

#endif
