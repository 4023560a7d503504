/*
 * Image.blend(im1, im2, alpha) == ImageChops.blend: inputs [im1, im2].
 * Contexts follow Pillow 12.3 ImagingBlend: both images 8-bit, same number of
 * bands and same size (modes may differ, e.g. RGBA with CMYK; the output takes
 * im1's mode, or im2's when alpha is exactly 1), otherwise ValueError "images do not match"
 * (IB_INVALID here). alpha is narrowed to float32 as Pillow's _blend does; a non-finite float32
 * alpha is rejected (Pillow would convert NaN to UINT8: undefined). With a
 * finite alpha, Pillow's "im1 is im2 -> copy" shortcut needs no special case:
 * alpha * 0 is 0, so the per-byte formula returns im1. Math: kernels/blend.h.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/blend.h"
#include "ops/op.h"
#include "model/graph.h"

static ib_status blend_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                             ib_error *err) {
  const Imgbatch__V1__BlendOp *p = node->pb->blend;
  for (int i = 0; i < 2; i++) {
    ib_status st = ib_op_check_mode(node->op, &in[i], err);
    if (st != IB_OK) return st;
  }
  if (ib_mode_bands(in[0].mode) != ib_mode_bands(in[1].mode) || in[0].width != in[1].width ||
      in[0].height != in[1].height)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op blend: images do not match (%s %ux%u and %s %ux%u)",
                        ib_mode_name(in[0].mode), in[0].width, in[0].height,
                        ib_mode_name(in[1].mode), in[1].width, in[1].height);
  double alpha = p ? p->alpha : NAN;
  if (!isfinite(alpha) || fabs(alpha) > FLT_MAX)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op blend: alpha=%g must be a finite float32", alpha);
  /* Pillow's alpha == 1.0 shortcut returns a copy of im2, in im2's mode. */
  *out = (float)alpha == 1.0f ? in[1] : in[0];
  return IB_OK;
}

static ib_status blend_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                           ib_error *err) {
  (void)err;
  ib_blend_row(in[0]->data, in[1]->data, out->data, (uint32_t)ib_image_bytes(out),
               (float)node->pb->blend->alpha);
  return IB_OK;
}

static uint64_t blend_param_bytes(const ib_node *node) {
  (void)node;
  return 8; /* alpha as a kernel argument */
}

/* Device step: a two-input head, kernels/blend.cuh. */
static void blend_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const float alpha = (float)node->pb->blend->alpha;
  memcpy(p, &alpha, sizeof alpha);
}

static const ib_dev_op blend_dev_op = {.tag = 'B',
                                       .role = IB_DEV_PIXEL,
                                       .flags = IB_DEV_HEAD | IB_DEV_IN1,
                                       .header = "blend.cuh",
                                       .fn = "ib_step_blend",
                                       .rt = "ib_step_blend_rt",
                                       .fill = blend_fill};

static ib_status blend_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &blend_dev_op;
  s->param_len = sizeof(float);
  return IB_OK;
}

const ib_op_desc ib_op_blend = {
    IB_OP_HEAD(blend),
    .infer = blend_infer,
    .param_bytes = blend_param_bytes,
    .cpu = blend_cpu,
    .dev = blend_dev,
    .dev_ops = (const ib_dev_op *const[]){&blend_dev_op, NULL},
};
