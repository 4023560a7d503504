/*
 * ImageChops two-image functions (multiply ... subtract_modulo): inputs
 * [image1, image2]. Contexts follow Pillow 12.3 Chops.c `create`: both images
 * 8-bit with the same number of bands (modes may differ, e.g. RGBA with CMYK;
 * the output takes image1's mode), otherwise ValueError "images do not match"
 * (IB_INVALID here); the output is the intersection, min(w1, w2) x min(h1, h2),
 * read from the top-left of both. Per-byte math: kernels/chops.h.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/chops.h"
#include "ops/op.h"
#include "model/graph.h"

static const char *const chop_names[IB_CHOP_COUNT] = {
    "multiply", "screen",  "overlay", "hard_light", "soft_light", "difference",
    "darker",   "lighter", "add",     "subtract",   "add_modulo", "subtract_modulo",
};

/* Pillow's `int temp = v` is defined for |v| < 2^31; the bound keeps 256 (two
 * float32 ulps at 2^31) for the rounding of the float division and addition. */
#define CHOP_INT_SAFE 2147483392.0

static ib_status check_scale_offset(const ib_node *node, ib_error *err) {
  const Imgbatch__V1__ChopsOp *p = node->pb->chops;
  const char *fn = chop_names[p->function];
  /* Pillow parses scale with "f" (a C float) and offset with "i" (a C int:
   * TypeError for a non-integer, OverflowError beyond int32). A zero or
   * non-finite scale makes Pillow convert inf/NaN to int (undefined). */
  if (!isfinite(p->scale) || fabs(p->scale) > FLT_MAX || (float)p->scale == 0.0f)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op chops: %s scale=%g must be a finite nonzero float32", fn, p->scale);
  if (!isfinite(p->offset) || p->offset != floor(p->offset) || p->offset < INT32_MIN ||
      p->offset > INT32_MAX)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op chops: %s offset=%g must be an int32 integer", fn, p->offset);
  /* |a +- b| <= 510: past the bound Pillow's int conversion overflows. */
  if (510.0 / fabs((double)(float)p->scale) + fabs(p->offset) >= CHOP_INT_SAFE)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op chops: %s scale=%g offset=%g can overflow Pillow's int conversion "
                        "(undefined result)",
                        fn, p->scale, p->offset);
  return IB_OK;
}

static ib_status chops_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                             ib_error *err) {
  const Imgbatch__V1__ChopsOp *p = node->pb->chops;
  int fn = p ? (int)p->function : -1;
  if (fn < 0 || fn >= IB_CHOP_COUNT)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op chops: function=%d unknown to this worker", fn);
  for (int i = 0; i < 2; i++) {
    ib_status st = ib_op_check_mode(node->op, &in[i], err);
    if (st != IB_OK) return st;
  }
  if (ib_mode_bands(in[0].mode) != ib_mode_bands(in[1].mode))
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op chops: %s images do not match (modes %s and %s)", chop_names[fn],
                        ib_mode_name(in[0].mode), ib_mode_name(in[1].mode));
  if (fn == IB_CHOP_ADD || fn == IB_CHOP_SUBTRACT) {
    ib_status st = check_scale_offset(node, err);
    if (st != IB_OK) return st;
  }
  out->mode = in[0].mode;
  out->width = in[0].width < in[1].width ? in[0].width : in[1].width;
  out->height = in[0].height < in[1].height ? in[0].height : in[1].height;
  return IB_OK;
}

/* The per-job values the device step uploads (kernels/chops.cuh reads a
 * float at +0 and an int32 at +4); the function is baked into the kernel.
 * The CPU row passes them as arguments and allocates nothing. */
typedef struct chops_params {
  float scale;
  int32_t offset;
} chops_params;

static chops_params chops_values(const Imgbatch__V1__ChopsOp *p) {
  chops_params v = {1.0f, 0};
  const int fn = (int)p->function;
  if (fn == IB_CHOP_ADD || fn == IB_CHOP_SUBTRACT) {
    v.scale = (float)p->scale;
    v.offset = (int32_t)p->offset;
  }
  return v;
}

static ib_status chops_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                           ib_error *err) {
  (void)err;
  const Imgbatch__V1__ChopsOp *p = node->pb->chops;
  const int fn = (int)p->function;
  const chops_params v = chops_values(p);
  size_t bands = ib_mode_bands(out->mode);
  size_t stride1 = in[0]->width * bands, stride2 = in[1]->width * bands;
  size_t row = out->width * bands;
  for (size_t y = 0; y < out->height; y++)
    ib_chops_row(fn, in[0]->data + y * stride1, in[1]->data + y * stride2, out->data + y * row,
                 (int)row, v.scale, v.offset);
  return IB_OK;
}

static uint64_t chops_param_bytes(const ib_node *node) {
  (void)node;
  return sizeof(chops_params);
}

/* Device step: a two-input head (kernels/chops.cuh), the function baked in. */
static void chops_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const chops_params v = chops_values(node->pb->chops);
  memcpy(p, &v.scale, 4);
  memcpy(p + 4, &v.offset, 4);
}

static const ib_dev_op chops_dev_op = {.tag = 'C',
                                       .role = IB_DEV_PIXEL,
                                       .flags = IB_DEV_HEAD | IB_DEV_IN1,
                                       .header = "chops.cuh",
                                       .fn = "ib_step_chops",
                                       .rt = "ib_step_chops_rt",
                                       .fill = chops_fill};

static ib_status chops_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)in_modes, (void)err;
  s->dev = &chops_dev_op;
  s->a = (int)node->pb->chops->function;
  s->param_len = sizeof(chops_params);
  return IB_OK;
}

const ib_op_desc ib_op_chops = {
    IB_OP_HEAD(chops),
    .infer = chops_infer,
    .param_bytes = chops_param_bytes,
    .cpu = chops_cpu,
    .dev = chops_dev,
    .dev_ops = (const ib_dev_op *const[]){&chops_dev_op, NULL},
};
