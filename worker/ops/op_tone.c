/*
 * The Oklab tone op (no Pillow equivalent): RGB and RGBA,
 * alpha copied. Formulas and the float32/float64 contract: kernels/tone.h.
 * The CPU backend runs the float32 path, as the GPU does.
 */
#include <math.h>
#include <string.h>

#include "kernels/tone.h"
#include "ops/op.h"
#include "model/graph.h"

static ib_status check_range(const char *param, double v, double max, ib_error *err) {
  if (isfinite(v) && v >= -max && v <= max) return IB_OK;
  return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "op tone: %s=%g out of range [%g, %g]",
                      param, v, -max, max);
}

static ib_status tone_infer(const ib_node *node, const ib_shape *in, ib_shape *out, ib_error *err) {
  const Imgbatch__V1__ToneOp *p = node->pb->tone;
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  if (!p) return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "op tone: missing parameters");
  const struct {
    const char *name;
    double v, max;
  } params[] = {
      {"exposure_ev", p->exposure_ev, IB_TONE_EV_MAX},
      {"contrast", p->contrast, IB_TONE_AMOUNT_MAX},
      {"highlights", p->highlights, IB_TONE_AMOUNT_MAX},
      {"shadows", p->shadows, IB_TONE_AMOUNT_MAX},
      {"whites", p->whites, IB_TONE_AMOUNT_MAX},
      {"blacks", p->blacks, IB_TONE_AMOUNT_MAX},
  };
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
    st = check_range(params[i].name, params[i].v, params[i].max, err);
    if (st != IB_OK) return st;
  }
  *out = in[0];
  return IB_OK;
}

static ib_status tone_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                          ib_error *err) {
  (void)err;
  const Imgbatch__V1__ToneOp *p = node->pb->tone;
  ib_tone_f32 t =
      ib_tone_prepare_f32((float)p->exposure_ev, (float)p->contrast, (float)p->highlights,
                          (float)p->shadows, (float)p->whites, (float)p->blacks);
  int bands = (int)ib_mode_bands(out->mode);
  size_t row = (size_t)out->width * (size_t)bands;
  for (size_t y = 0; y < out->height; y++)
    ib_tone_row_f32(&t, in[0]->data + y * row, out->data + y * row, (int)out->width, bands);
  return IB_OK;
}

static uint64_t tone_param_bytes(const ib_node *node) {
  (void)node;
  return sizeof(ib_tone_f32);
}

/* Device step: kernels/tone.cuh over ib_tone_prepare_f32's constants. */
static void tone_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const Imgbatch__V1__ToneOp *t = node->pb->tone;
  ib_tone_f32 f =
      ib_tone_prepare_f32((float)t->exposure_ev, (float)t->contrast, (float)t->highlights,
                          (float)t->shadows, (float)t->whites, (float)t->blacks);
  memcpy(p, &f, sizeof f);
}

static const ib_dev_op tone_dev_op = {.tag = 'T',
                                      .role = IB_DEV_PIXEL,
                                      .header = "tone.cuh",
                                      .fn = "ib_step_tone",
                                      .rt = "ib_step_tone_rt",
                                      .fill = tone_fill};

static ib_status tone_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &tone_dev_op;
  s->param_len = sizeof(ib_tone_f32);
  return IB_OK;
}

const ib_op_desc ib_op_tone = {
    IB_OP_HEAD(tone),
    .infer = tone_infer,
    .param_bytes = tone_param_bytes,
    .cpu = tone_cpu,
    .dev = tone_dev,
    .dev_ops = (const ib_dev_op *const[]){&tone_dev_op, NULL},
};
