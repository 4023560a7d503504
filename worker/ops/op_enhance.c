/*
 * ImageEnhance.Brightness / Color / Contrast(image).enhance(factor): a blend
 * of a degenerate image towards the input (kernels/enhance.h). All admitted
 * modes work in Pillow 12.3. Contrast needs the mean luma of the whole image
 * before any pixel is written, so the row is a reduction (Brightness and
 * Color alone would be pointwise).
 */
#include <string.h>

#include "kernels/enhance.h"
#include "ops/op.h"
#include "model/graph.h"

static ib_status enhance_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                               ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  int kind = node->pb->enhance ? (int)node->pb->enhance->kind : 0;
  if (kind != IB_ENHANCE_BRIGHTNESS && kind != IB_ENHANCE_COLOR && kind != IB_ENHANCE_CONTRAST)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op enhance: kind %d is not Brightness, Color or Contrast", kind);
  *out = in[0];
  return IB_OK;
}

/* Sum of convert("L") over the image, the histogram sum ImageStat uses. */
static uint64_t luma_sum(const ib_image *im) {
  unsigned bands = ib_mode_bands(im->mode);
  size_t n = (size_t)im->width * im->height;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t l;
    ib_convert_px((int)im->mode, IB_KMODE_L, im->data + i * bands, &l);
    sum += l;
  }
  return sum;
}

static ib_status enhance_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                             ib_error *err) {
  (void)err;
  const ib_image *src = in[0];
  int kind = (int)node->pb->enhance->kind;
  /* _imaging.c _blend: the Python float becomes (float)alpha. */
  float alpha = (float)node->pb->enhance->factor;
  int mean = 0;
  if (kind == IB_ENHANCE_CONTRAST)
    mean = ib_enhance_contrast_mean(luma_sum(src), (uint64_t)src->width * src->height);
  size_t row = (size_t)src->width * ib_mode_bands(src->mode);
  for (uint32_t y = 0; y < src->height; y++)
    ib_enhance_row(kind, (int)src->mode, mean, alpha, src->data + y * row, out->data + y * row,
                   src->width);
  return IB_OK;
}

/* Device steps. Brightness maps each band through a function of that band
 * alone: a table (folded with its neighbours), by the same ib_enhance_px.
 * Color and Contrast: kernels/enhance.cuh, parameters float alpha (as
 * _imaging.c _blend narrows it), then the u64 luma sum that Contrast's
 * ib_lsum pre-pass accumulates on the device (so Contrast heads a stage). */
static void brightness_table(const ib_gstep *s, const ib_node *node, uint8_t *t) {
  const unsigned bands = ib_mode_bands((ib_mode)s->mode_in);
  const float alpha = (float)node->pb->enhance->factor;
  for (int v = 0; v < 256; v++) {
    const uint8_t px[4] = {(uint8_t)v, (uint8_t)v, (uint8_t)v, (uint8_t)v};
    uint8_t out[4];
    ib_enhance_px(IB_ENHANCE_BRIGHTNESS, s->mode_in, 0, alpha, px, out);
    for (unsigned b = 0; b < bands && b < 4; b++) t[b * 256u + (unsigned)v] = out[b];
  }
}

static void enhance_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const float alpha = (float)node->pb->enhance->factor;
  memcpy(p, &alpha, sizeof alpha);
  memset(p + 4, 0, 12);
}

static const ib_dev_op brightness_dev_op = {
    .tag = 'P', .role = IB_DEV_TABLE, .table = brightness_table};
static const ib_dev_op color_dev_op = {.tag = 'E',
                                       .role = IB_DEV_PIXEL,
                                       .header = "enhance.cuh",
                                       .fn = "ib_step_enhance",
                                       .rt = "ib_step_enhance_rt",
                                       .fill = enhance_fill};
static const ib_dev_op contrast_dev_op = {.tag = 'Q',
                                          .role = IB_DEV_PIXEL,
                                          .flags = IB_DEV_HEAD | IB_DEV_LUMA,
                                          .header = "enhance.cuh",
                                          .fn = "ib_step_enhance",
                                          .rt = "ib_step_enhance_rt",
                                          .fill = enhance_fill};

static ib_status enhance_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)in_modes, (void)err;
  const int kind = (int)node->pb->enhance->kind;
  s->a = kind;
  s->dev = kind == IB_ENHANCE_BRIGHTNESS ? &brightness_dev_op
           : kind == IB_ENHANCE_COLOR    ? &color_dev_op
                                         : &contrast_dev_op;
  if (kind != IB_ENHANCE_BRIGHTNESS) s->param_len = 16;
  return IB_OK;
}

const ib_op_desc ib_op_enhance = {
    IB_OP_HEAD(enhance),
    .infer = enhance_infer,
    .param_bytes = ib_op_no_params,
    .cpu = enhance_cpu,
    .dev = enhance_dev,
    .dev_ops =
        (const ib_dev_op *const[]){&brightness_dev_op, &color_dev_op, &contrast_dev_op, NULL},
};
