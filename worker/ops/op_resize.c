/*
 * op_resize.c - Image.resize((width, height), NEAREST, box) for every
 * admitted mode. Other filters are not proven and are rejected as
 * IB_UNSUPPORTED naming the filter.
 *
 * Pillow 12.3's NEAREST path (Image.resize -> _imaging.c _resize ->
 * ImagingTransformAffine -> ImagingScaleAffine) is separable: one table per
 * axis maps an output index to a source index or to "zero"
 * (kernels/geometry.h ib_resize_axis_table), and
 * out(x, y) = xtab[x] < 0 || ytab[y] < 0 ? 0 : in(xtab[x], ytab[y]).
 */
#include <math.h>
#include <stdlib.h>

#include "kernels/geometry.h"
#include "ops/op.h"
#include "ops/op_geometry.h"
#include "model/graph.h"

static const char *const resample_names[] = {"NEAREST", "LANCZOS", "BILINEAR",
                                             "BICUBIC", "BOX",     "HAMMING"};

/* The box as _resize holds it: PyArg "f", i.e. each double rounded to C
 * float; no box means (0, 0, width, height). */
static void resize_box(const ib_node *node, const ib_shape *in, float box[4]) {
  const Imgbatch__V1__ResizeOp *r = node->pb->resize;
  if (r->box_present_case == IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX && r->box) {
    box[0] = (float)r->box->left;
    box[1] = (float)r->box->top;
    box[2] = (float)r->box->right;
    box[3] = (float)r->box->bottom;
  } else {
    box[0] = 0.0f;
    box[1] = 0.0f;
    box[2] = (float)in->width;
    box[3] = (float)in->height;
  }
}

/* _resize's checks, in its order and float arithmetic. A NaN edge passes
 * all of them in Pillow and then yields platform-dependent pixels ((int)NaN),
 * so it is rejected here as IB_INVALID. */
static ib_status check_box(const float b[4], const ib_shape *in, ib_error *err) {
  for (int i = 0; i < 4; i++)
    if (isnan(b[i]))
      return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE, "op resize: box edge %d is NaN", i);
  if (b[0] < 0 || b[1] < 0)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: box offset (%g, %g) can't be negative", (double)b[0],
                      (double)b[1]);
  if (b[2] > (float)in->width || b[3] > (float)in->height)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: box (%g, %g) can't exceed the original %ux%u image", (double)b[2],
                      (double)b[3], in->width, in->height);
  if (b[2] - b[0] < 0 || b[3] - b[1] < 0)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: box (%g, %g, %g, %g) can't be empty", (double)b[0], (double)b[1],
                      (double)b[2], (double)b[3]);
  return IB_OK;
}

static ib_status resize_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                              ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const Imgbatch__V1__ResizeOp *r = node->pb->resize;
  unsigned f = (unsigned)r->resample;
  if (f >= sizeof resample_names / sizeof resample_names[0])
    return ib_op_fail(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                      "op resize: resample %d is not a filter this worker knows", (int)r->resample);
  if (f != IMGBATCH__V1__RESAMPLE__NEAREST)
    return ib_op_fail(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                      "op resize: resample %s not supported for mode %s (only NEAREST)",
                      resample_names[f], ib_mode_name(in[0].mode));
  if (r->width == 0 || r->height == 0)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: size %ux%u: height and width must be > 0", r->width, r->height);
  if ((st = ib_geom_check_side(node, "width", r->width, err)) != IB_OK) return st;
  if ((st = ib_geom_check_side(node, "height", r->height, err)) != IB_OK) return st;
  float box[4];
  resize_box(node, &in[0], box);
  if ((st = check_box(box, &in[0], err)) != IB_OK) return st;
  *out = (ib_shape){in[0].mode, r->width, r->height};
  return IB_OK;
}

/* The two axis tables the backend uploads. */
static uint64_t resize_param_bytes(const ib_node *node) {
  const Imgbatch__V1__ResizeOp *r = node->pb->resize;
  return ((uint64_t)r->width + r->height) * sizeof(int32_t);
}

static ib_status resize_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                            ib_error *err) {
  const ib_image *src = in[0];
  ib_shape shape = {src->mode, src->width, src->height};
  float box[4];
  resize_box(node, &shape, box);
  int32_t *xtab = malloc(((size_t)out->width + out->height) * sizeof *xtab);
  if (!xtab) return ib_op_fail(err, IB_INTERNAL, IB_STAGE_EXECUTE, "op resize: out of memory");
  int32_t *ytab = xtab + out->width;
  double scale, offset;
  ib_resize_axis_coeffs(box[0], box[2], out->width, &scale, &offset);
  ib_resize_axis_table(scale, offset, out->width, (int)src->width, xtab);
  ib_resize_axis_coeffs(box[1], box[3], out->height, &scale, &offset);
  ib_resize_axis_table(scale, offset, out->height, (int)src->height, ytab);

  unsigned bands = ib_mode_bands(out->mode);
  for (uint32_t y = 0; y < out->height; y++) {
    if (ytab[y] < 0) continue; /* stays zero */
    const uint8_t *srow = src->data + (size_t)ytab[y] * src->width * bands;
    uint8_t *row = out->data + (size_t)y * out->width * bands;
    for (uint32_t x = 0; x < out->width; x++)
      if (xtab[x] >= 0)
        ib_pixel_copy(row + (size_t)x * bands, srow + (size_t)xtab[x] * bands, bands);
  }
  free(xtab);
  return IB_OK;
}

/* Device step: a gather head (kernels/geometry.cuh) reading the two axis
 * tables resize_cpu builds, uploaded after the chain's shared block. */
static size_t resize_extra_bytes(const ib_node *node) {
  return ((size_t)node->shape.width + node->shape.height) * sizeof(int32_t);
}

static void resize_fill_extra(const ib_node *node, const ib_shape *in, uint8_t *extra) {
  float box[4];
  resize_box(node, in, box);
  int32_t *xtab = (int32_t *)(void *)extra, *ytab = xtab + node->shape.width;
  double scale, offset;
  ib_resize_axis_coeffs(box[0], box[2], node->shape.width, &scale, &offset);
  ib_resize_axis_table(scale, offset, node->shape.width, (int)in->width, xtab);
  ib_resize_axis_coeffs(box[1], box[3], node->shape.height, &scale, &offset);
  ib_resize_axis_table(scale, offset, node->shape.height, (int)in->height, ytab);
}

static const ib_dev_op resize_dev_op = {.tag = 'N',
                                        .role = IB_DEV_GATHER,
                                        .header = "geometry.cuh",
                                        .fn = "ib_head_resize",
                                        .extra_bytes = resize_extra_bytes,
                                        .fill_extra = resize_fill_extra};

static ib_status resize_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &resize_dev_op;
  return IB_OK;
}

const ib_op_desc ib_op_resize = {
    IB_OP_HEAD(resize),
    .infer = resize_infer,
    .param_bytes = resize_param_bytes,
    .cpu = resize_cpu,
    .dev = resize_dev,
    .dev_ops = (const ib_dev_op *const[]){&resize_dev_op, NULL},
};
