/*
 * Image.getchannel(band) and ImageChops.constant(image, value): the two ops
 * whose output is a fresh L image of the input's size.
 */
#include <string.h>

#include "kernels/ib_kernel.h"
#include "ops/op.h"
#include "model/graph.h"

/* Checks the input's mode and makes the output an L image of its size. */
static ib_status l_of_input_size(const ib_node *node, const ib_shape *in, ib_shape *out,
                                 ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, in, err);
  if (st != IB_OK) return st;
  *out = (ib_shape){.mode = IB_MODE_L, .width = in->width, .height = in->height};
  return IB_OK;
}

/* ---------------------------------------------------------------- getchannel */

/* ImagingGetBand (Bands.c): band index must be < bands ("band index out of
 * range"); the output is the band's bytes as L. */
static ib_status getchannel_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                  ib_error *err) {
  ib_status st = l_of_input_size(node, &in[0], out, err);
  if (st != IB_OK) return st;
  uint32_t band = node->pb->getchannel ? node->pb->getchannel->band : 0;
  unsigned bands = ib_mode_bands(in[0].mode);
  if (band >= bands)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op getchannel: band %u out of range for mode %s (%u bands)", band,
                        ib_mode_name(in[0].mode), bands);
  return IB_OK;
}

static ib_status getchannel_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                                ib_error *err) {
  (void)err;
  unsigned bands = ib_mode_bands(in[0]->mode);
  uint32_t band = node->pb->getchannel->band;
  size_t n = (size_t)in[0]->width * in[0]->height;
  const uint8_t *src = in[0]->data + band;
  for (size_t i = 0; i < n; i++) out->data[i] = src[i * bands];
  return IB_OK;
}

/* Device step: kernels/channel.cuh, the band baked in (a). */
static const ib_dev_op getchannel_dev_op = {.tag = 'G',
                                            .role = IB_DEV_PIXEL,
                                            .header = "channel.cuh",
                                            .fn = "ib_step_getchannel",
                                            .rt = "ib_step_getchannel_rt"};

static ib_status getchannel_dev(const ib_node *node, const int *in_modes, ib_gstep *s,
                                ib_error *err) {
  (void)in_modes, (void)err;
  s->dev = &getchannel_dev_op;
  s->a = (int)node->pb->getchannel->band;
  return IB_OK;
}

const ib_op_desc ib_op_getchannel = {
    IB_OP_HEAD(getchannel),         .infer = getchannel_infer,
    .param_bytes = ib_op_no_params, .cpu = getchannel_cpu,
    .dev = getchannel_dev,          .dev_ops = (const ib_dev_op *const[]){&getchannel_dev_op, NULL},
};

/* ---------------------------------------------------------------- constant */

/* ImageChops.constant = Image.new("L", image.size, value); getink clamps an
 * int with CLIP8 (<= 0 -> 0, >= 256 -> 255), so no value is refused. Only
 * the input's size is read. */
static ib_status constant_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                              ib_error *err) {
  (void)in, (void)err;
  int32_t value = node->pb->constant ? node->pb->constant->value : 0;
  memset(out->data, ib_clip8(value), ib_image_bytes(out));
  return IB_OK;
}

/* Device step: kernels/channel.cuh; the clipped value as an int32. */
static void constant_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  int32_t v = node->pb->constant ? ib_clip8(node->pb->constant->value) : 0;
  memcpy(p, &v, sizeof v);
}

static const ib_dev_op constant_dev_op = {.tag = 'K',
                                          .role = IB_DEV_PIXEL,
                                          .header = "channel.cuh",
                                          .fn = "ib_step_constant",
                                          .rt = "ib_step_constant_rt",
                                          .fill = constant_fill};

static ib_status constant_dev(const ib_node *node, const int *in_modes, ib_gstep *s,
                              ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &constant_dev_op;
  s->param_len = sizeof(int32_t);
  return IB_OK;
}

const ib_op_desc ib_op_constant = {
    IB_OP_HEAD(constant),
    .infer = l_of_input_size,
    .param_bytes = ib_op_no_params,
    .cpu = constant_cpu,
    .dev = constant_dev,
    .dev_ops = (const ib_dev_op *const[]){&constant_dev_op, NULL},
};
