/*
 * op_transform.c - Image.transform(size, Transform.AFFINE, data, resample,
 * fillcolor), and so Image.rotate, whose matrix the client computes as
 * Pillow does. The pixel math and Pillow's five paths are kernels/affine.h;
 * this row picks the path as ImagingTransformAffine does, checks what
 * Pillow checks, and runs it on the CPU or describes it to the device.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/affine.h"
#include "ops/op.h"
#include "ops/op_geometry.h"
#include "model/graph.h"

static const char *const method_names[] = {"AFFINE", "EXTENT", "PERSPECTIVE", "QUAD"};
static const char *const resample_names[] = {"NEAREST", "LANCZOS", "BILINEAR",
                                             "BICUBIC", "BOX",     "HAMMING"};

/* check_fixed: Pillow's corner test, in its double arithmetic. */
static bool fixed_ok(const double *a, double x, double y) {
  return fabs(ib_dadd(ib_dadd(ib_dmul(x, a[0]), ib_dmul(y, a[1])), a[2])) < 32768.0 &&
         fabs(ib_dadd(ib_dadd(ib_dmul(x, a[3]), ib_dmul(y, a[4])), a[5])) < 32768.0;
}

/* ImagingTransformAffine's choice for a NEAREST transform to w x h. */
static int nearest_path(const double *a, uint32_t w, uint32_t h) {
  if (a[1] == 0 && a[3] == 0) return IB_AFFINE_SCALE;
  if (fixed_ok(a, 0, 0) && fixed_ok(a, w, h) && fixed_ok(a, 0, h) && fixed_ok(a, w, 0))
    return IB_AFFINE_FIXED;
  return IB_AFFINE_FLOAT;
}

/* The step's static parameter (affine.h): path | premultiplied. Image.transform
 * premultiplies LA and RGBA for every filter but NEAREST. */
static int transform_a(const ib_node *node, int mode) {
  const Imgbatch__V1__TransformOp *t = node->pb->transform;
  if (t->resample == IMGBATCH__V1__RESAMPLE__NEAREST)
    return nearest_path(t->matrix, node->shape.width, node->shape.height);
  const int premul = mode == IB_MODE_LA || mode == IB_MODE_RGBA ? IB_AFFINE_PREMUL : 0;
  return (t->resample == IMGBATCH__V1__RESAMPLE__BICUBIC ? IB_AFFINE_BICUBIC : IB_AFFINE_BILINEAR) |
         premul;
}

/* FIX(v) = FLOOR(v * 65536.0 + 0.5) into a C int. Past the int range C's
 * conversion is undefined (x86-64 gives INT_MIN); Pillow reaches it only
 * for a coefficient that no pixel of a 1-pixel side ever adds, so any
 * value gives the same pixels. */
static int32_t fix16(double v) {
  const double f = floor(ib_dadd(ib_dmul(v, 65536.0), 0.5));
  return f >= -2147483648.0 && f < 2147483648.0 ? (int32_t)f : INT32_MIN;
}

static void transform_params(const ib_node *node, ib_affine_params *p) {
  const Imgbatch__V1__TransformOp *t = node->pb->transform;
  memset(p, 0, sizeof *p);
  memcpy(p->a, t->matrix, sizeof p->a);
  const double *a = p->a;
  p->fix[0] = fix16(a[0]);
  p->fix[1] = fix16(a[1]);
  p->fix[2] = fix16(ib_dadd(ib_dadd(a[2], ib_dmul(a[0], 0.5)), ib_dmul(a[1], 0.5)));
  p->fix[3] = fix16(a[3]);
  p->fix[4] = fix16(a[4]);
  p->fix[5] = fix16(ib_dadd(ib_dadd(a[5], ib_dmul(a[3], 0.5)), ib_dmul(a[4], 0.5)));
  if (t->fill.len) memcpy(p->fill, t->fill.data, t->fill.len);
}

/* SCALE: the axis tables (width then height entries); FLOAT: each output
 * row's starting sums (xo, yo), Pillow's xo = a2 + a1 / 2 + a0 / 2 then
 * xo += a1 per row. */
static size_t tables_bytes(int a, uint32_t w, uint32_t h) {
  if ((a & 7) == IB_AFFINE_SCALE) return ((size_t)w + h) * sizeof(int32_t);
  if ((a & 7) == IB_AFFINE_FLOAT) return (size_t)h * 2 * sizeof(double);
  return 0;
}

static void fill_tables(int a, const double *m, uint32_t w, uint32_t h, const ib_shape *in,
                        void *tables) {
  if ((a & 7) == IB_AFFINE_SCALE) {
    int32_t *xtab = tables;
    ib_resize_axis_table(m[0], m[2], w, (int)in->width, xtab);
    ib_resize_axis_table(m[4], m[5], h, (int)in->height, xtab + w);
  } else if ((a & 7) == IB_AFFINE_FLOAT) {
    double *rows = tables;
    double xo = ib_dadd(ib_dadd(m[2], ib_dmul(m[1], 0.5)), ib_dmul(m[0], 0.5));
    double yo = ib_dadd(ib_dadd(m[5], ib_dmul(m[4], 0.5)), ib_dmul(m[3], 0.5));
    for (uint32_t y = 0; y < h; y++) {
      rows[2 * y] = xo;
      rows[2 * y + 1] = yo;
      xo = ib_dadd(xo, m[1]);
      yo = ib_dadd(yo, m[4]);
    }
  }
}

/* Image.transform's checks (Image.__transformer, _imaging.c _transform's
 * getlist) in Pillow's terms. A non-finite coefficient passes them in
 * Pillow and then yields platform-dependent pixels ((int)NaN), so it is
 * refused as IB_INVALID. A 0-pixel side is Pillow's empty image, which
 * images here cannot be. */
static ib_status check_transform(const Imgbatch__V1__TransformOp *t, unsigned bands,
                                 ib_error *err) {
  unsigned m = (unsigned)t->method;
  if (m != IMGBATCH__V1__TRANSFORM_METHOD__AFFINE)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op transform: method %s is not admitted (AFFINE only)",
                        m < sizeof method_names / sizeof method_names[0] ? method_names[m] : "?");
  if (t->n_matrix != 6)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op transform: matrix has %zu entries: wrong number of matrix entries "
                        "(AFFINE takes 6)",
                        t->n_matrix);
  for (size_t i = 0; i < 6; i++)
    if (!isfinite(t->matrix[i]))
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "op transform: matrix entry %zu is %g, not finite", i, t->matrix[i]);
  unsigned f = (unsigned)t->resample;
  if (f != IMGBATCH__V1__RESAMPLE__NEAREST && f != IMGBATCH__V1__RESAMPLE__BILINEAR &&
      f != IMGBATCH__V1__RESAMPLE__BICUBIC)
    return ib_error_set(
        err, IB_INVALID, IB_STAGE_VALIDATE,
        "op transform: resample %s (%d) cannot be used (NEAREST, BILINEAR or "
        "BICUBIC)",
        f < sizeof resample_names / sizeof resample_names[0] ? resample_names[f] : "unknown",
        (int)t->resample);
  if (t->fill.len != 0 && t->fill.len != bands)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op transform: fill has %zu byte(s), the mode has %u band(s)", t->fill.len,
                        bands);
  if (t->width == 0 || t->height == 0)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op transform: size %ux%u is empty (empty images are not supported)",
                        t->width, t->height);
  return IB_OK;
}

static ib_status transform_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                 ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const Imgbatch__V1__TransformOp *t = node->pb->transform;
  if ((st = check_transform(t, ib_mode_bands(in[0].mode), err)) != IB_OK) return st;
  if ((st = ib_geom_check_side(node, "width", t->width, err)) != IB_OK) return st;
  if ((st = ib_geom_check_side(node, "height", t->height, err)) != IB_OK) return st;
  *out = (ib_shape){in[0].mode, t->width, t->height};
  return IB_OK;
}

/* The parameter block and the tables the device step uploads. */
static uint64_t transform_param_bytes(const ib_node *node) {
  const Imgbatch__V1__TransformOp *t = node->pb->transform;
  const int a = t->n_matrix == 6 ? transform_a(node, node->shape.mode) : IB_AFFINE_BILINEAR;
  return sizeof(ib_affine_params) + tables_bytes(a, t->width, t->height);
}

static ib_status transform_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                               ib_error *err) {
  const ib_image *src = in[0];
  const ib_shape in_shape = {src->mode, src->width, src->height};
  const int a = transform_a(node, src->mode);
  ib_affine_params p;
  transform_params(node, &p);
  void *tables = NULL;
  const size_t tb = tables_bytes(a, out->width, out->height);
  if (tb && !(tables = malloc(tb)))
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "op transform: out of memory");
  fill_tables(a, p.a, out->width, out->height, &in_shape, tables);
  const unsigned bands = ib_mode_bands(out->mode);
  const int in_w = (int)src->width, in_h = (int)src->height;
  for (uint32_t y = 0; y < out->height; y++) {
    uint8_t *row = out->data + (size_t)y * out->width * bands;
    if ((a & 7) == IB_AFFINE_FLOAT) {
      const double *rows = tables;
      double xx = rows[2 * y], yy = rows[2 * y + 1];
      for (uint32_t x = 0; x < out->width; x++, ib_affine_walk(&xx, &yy, p.a)) {
        int sx, sy;
        const int ok = ib_affine_float_src(xx, yy, in_w, in_h, &sx, &sy);
        ib_pixel_copy(row + (size_t)x * bands,
                      ok ? src->data + ((size_t)sy * src->width + (size_t)sx) * bands : p.fill,
                      bands);
      }
      continue;
    }
    const int32_t *xt = tables;
    for (uint32_t x = 0; x < out->width; x++)
      ib_affine_px(a, &p, src->data, in_w, in_h, (int)bands, xt, xt ? xt + out->width : NULL,
                   (int)x, (int)y, row + (size_t)x * bands);
  }
  free(tables);
  return IB_OK;
}

/* Device step: a gather head (kernels/affine.cuh). */
static void transform_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  ib_affine_params prm;
  transform_params(node, &prm);
  memcpy(p, &prm, sizeof prm);
}

static size_t transform_extra_bytes(const ib_node *node) {
  return tables_bytes(transform_a(node, node->shape.mode), node->shape.width, node->shape.height);
}

static void transform_fill_extra(const ib_node *node, const ib_shape *in, uint8_t *extra) {
  fill_tables(transform_a(node, node->shape.mode), node->pb->transform->matrix, node->shape.width,
              node->shape.height, in, extra);
}

static const ib_dev_op transform_dev_op = {.tag = 'A',
                                           .role = IB_DEV_GATHER,
                                           .header = "affine.cuh",
                                           .fn = "ib_head_affine",
                                           .fill = transform_fill,
                                           .extra_bytes = transform_extra_bytes,
                                           .fill_extra = transform_fill_extra};

static ib_status transform_dev(const ib_node *node, const int *in_modes, ib_gstep *s,
                               ib_error *err) {
  (void)err;
  s->dev = &transform_dev_op;
  s->a = transform_a(node, in_modes[0]);
  s->param_len = sizeof(ib_affine_params);
  return IB_OK;
}

const ib_op_desc ib_op_transform = {
    IB_OP_HEAD(transform),
    .infer = transform_infer,
    .param_bytes = transform_param_bytes,
    .cpu = transform_cpu,
    .dev = transform_dev,
    .dev_ops = (const ib_dev_op *const[]){&transform_dev_op, NULL},
};
