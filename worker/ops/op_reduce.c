/*
 * op_reduce.c - Image.reduce(factor, box): each output pixel averages a
 * block of factor_x x factor_y input pixels (kernels/reduce.h, Pillow's
 * Reduce.c), LA and RGBA premultiplied as Image.reduce converts them to La
 * and RGBa first. A gather head on the device: the output pixel reads its
 * own block, so per-pixel steps fuse after it.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/reduce.h"
#include "ops/op.h"
#include "model/graph.h"

/* Image.reduce resolved against an input of `in`: the box as
 * (left, top, width, height), whether Pillow returns self.copy() (factor
 * (1, 1), whole box) and whether it premultiplies (LA, RGBA otherwise). */
typedef struct reduce_plan {
  int fx, fy, box[4];
  int copy, premultiply;
} reduce_plan;

static int is_c_int(double v) { return v == floor(v) && v >= -2147483648.0 && v <= 2147483647.0; }

/* Image.reduce's and _imaging.c _reduce's checks, in their order. */
static ib_status reduce_plan_of(const Imgbatch__V1__ReduceOp *r, const ib_shape *in, reduce_plan *p,
                                ib_error *err) {
  memset(p, 0, sizeof *p);
  if (r->factor_x < 1 || r->factor_y < 1)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op reduce: factor (%u, %u): scale must be > 0", r->factor_x, r->factor_y);
  if (r->factor_x > INT32_MAX || r->factor_y > INT32_MAX)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op reduce: factor (%u, %u) overflows a C int", r->factor_x, r->factor_y);
  p->fx = (int)r->factor_x;
  p->fy = (int)r->factor_y;
  int64_t b[4] = {0, 0, in->width, in->height};
  if (r->box_present_case == IMGBATCH__V1__REDUCE_OP__BOX_PRESENT_BOX) {
    const Imgbatch__V1__Box *x = r->box;
    if (!is_c_int(x->left) || !is_c_int(x->top) || !is_c_int(x->right) || !is_c_int(x->bottom))
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "op reduce: box (%g, %g, %g, %g) must be C ints", x->left, x->top,
                          x->right, x->bottom);
    b[0] = (int64_t)x->left, b[1] = (int64_t)x->top, b[2] = (int64_t)x->right;
    b[3] = (int64_t)x->bottom;
    if (b[0] < 0 || b[1] < 0)
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "op reduce: box offset (%lld, %lld) can't be negative", (long long)b[0],
                          (long long)b[1]);
    if (b[2] > in->width || b[3] > in->height)
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "op reduce: box (%lld, %lld) can't exceed the original %ux%u image",
                          (long long)b[2], (long long)b[3], in->width, in->height);
    if (b[2] <= b[0] || b[3] <= b[1])
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "op reduce: box (%lld, %lld, %lld, %lld) can't be empty", (long long)b[0],
                          (long long)b[1], (long long)b[2], (long long)b[3]);
  }
  p->box[0] = (int)b[0], p->box[1] = (int)b[1];
  p->box[2] = (int)(b[2] - b[0]), p->box[3] = (int)(b[3] - b[1]);
  p->copy =
      p->fx == 1 && p->fy == 1 && b[0] == 0 && b[1] == 0 && b[2] == in->width && b[3] == in->height;
  p->premultiply = !p->copy && (in->mode == IB_MODE_LA || in->mode == IB_MODE_RGBA);
  return IB_OK;
}

static ib_status reduce_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                              ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  reduce_plan p;
  if ((st = reduce_plan_of(node->pb->reduce, &in[0], &p, err)) != IB_OK) return st;
  /* ImagingReduce: (width + factor - 1) / factor, in C int. */
  *out = (ib_shape){in[0].mode, (uint32_t)(((int64_t)p.box[2] + p.fx - 1) / p.fx),
                    (uint32_t)(((int64_t)p.box[3] + p.fy - 1) / p.fy)};
  return IB_OK;
}

static ib_status reduce_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                            ib_error *err) {
  const ib_image *src = in[0];
  const ib_shape shape = {src->mode, src->width, src->height};
  reduce_plan p;
  ib_status st = reduce_plan_of(node->pb->reduce, &shape, &p, err);
  if (st != IB_OK) return st;
  const int bands = (int)ib_mode_bands(src->mode);
  const int64_t stride = (int64_t)src->width * bands;
  if (p.copy) {
    memcpy(out->data, src->data, (size_t)stride * src->height);
    return IB_OK;
  }
  for (uint32_t y = 0; y < out->height; y++)
    for (uint32_t x = 0; x < out->width; x++) {
      uint8_t *o = out->data + ((size_t)y * out->width + x) * bands;
      if (p.premultiply)
        ib_reduce_pixel_pm(o, src->data, stride, bands, (int)x, (int)y, p.fx, p.fy, p.box);
      else
        ib_reduce_pixel(o, src->data, stride, bands, (int)x, (int)y, p.fx, p.fy, p.box);
    }
  return IB_OK;
}

/* Device step: the block head (kernels/reduce.cuh); parameters int32 fx,
 * fy and the box (left, top, width, height), width -1 for the whole input
 * (the head resolves it and Pillow's copy case from the input's shape);
 * a = 1 premultiplies (LA, RGBA). Infer has checked the values. */
static void reduce_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const Imgbatch__V1__ReduceOp *r = node->pb->reduce;
  int32_t v[6] = {(int32_t)r->factor_x, (int32_t)r->factor_y, 0, 0, -1, -1};
  if (r->box_present_case == IMGBATCH__V1__REDUCE_OP__BOX_PRESENT_BOX) {
    v[2] = (int32_t)r->box->left, v[3] = (int32_t)r->box->top;
    v[4] = (int32_t)(r->box->right - r->box->left);
    v[5] = (int32_t)(r->box->bottom - r->box->top);
  }
  memcpy(p, v, sizeof v);
}

static const ib_dev_op reduce_dev_op = {.tag = 'D',
                                        .role = IB_DEV_GATHER,
                                        .header = "reduce.cuh",
                                        .fn = "ib_head_reduce",
                                        .fill = reduce_fill};

static ib_status reduce_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)err;
  s->dev = &reduce_dev_op;
  s->a = in_modes[0] == IB_MODE_LA || in_modes[0] == IB_MODE_RGBA;
  s->param_len = 24;
  return IB_OK;
}

const ib_op_desc ib_op_reduce = {
    IB_OP_HEAD(reduce),
    .infer = reduce_infer,
    .param_bytes = ib_op_no_params,
    .cpu = reduce_cpu,
    .dev = reduce_dev,
    .dev_ops = (const ib_dev_op *const[]){&reduce_dev_op, NULL},
};
