/*
 * Image.convert(mode) without matrix or dither; ImageOps.grayscale is
 * convert("L"). The per-pixel math and the pair-by-pair Pillow paths are in
 * kernels/convert.h. Every pair of admitted modes converts in Pillow 12.3;
 * targets Pillow knows but we do not admit are Unsupported, names that are
 * no Pillow mode are Invalid. An empty mode is Image.convert()'s "no mode":
 * for non-P images it returns a copy.
 */
#include <string.h>

#include "kernels/convert.h"
#include "ops/op.h"
#include "model/graph.h"

_Static_assert(IB_KMODE_L == IB_MODE_L && IB_KMODE_LA == IB_MODE_LA &&
                   IB_KMODE_RGB == IB_MODE_RGB && IB_KMODE_RGBA == IB_MODE_RGBA &&
                   IB_KMODE_CMYK == IB_MODE_CMYK && IB_KMODE_RGBX == IB_MODE_RGBX,
               "kernels/convert.h mode numbers must equal ib_mode");

/* Pillow 12.3 convert() targets outside the admitted set (ImageMode.py,
 * Convert.c converters). */
static const char *const pillow_other_modes[] = {
    "1",     "P",   "PA",  "I",    "F",     "La",    "RGBa",
    "YCbCr", "LAB", "HSV", "I;16", "I;16L", "I;16B", "I;16N",
};

static int is_pillow_mode(const char *name) {
  for (size_t i = 0; i < sizeof pillow_other_modes / sizeof *pillow_other_modes; i++)
    if (strcmp(name, pillow_other_modes[i]) == 0) return 1;
  return 0;
}

static ib_status convert_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                               ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const char *name = node->pb->convert && node->pb->convert->mode ? node->pb->convert->mode : "";
  *out = in[0];
  if (name[0] == '\0') return IB_OK;
  ib_mode to = ib_mode_parse(name);
  if (to == IB_MODE_NONE && is_pillow_mode(name))
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op convert: conversion from %s to %s not supported",
                        ib_mode_name(in[0].mode), name);
  if (to == IB_MODE_NONE)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op convert: mode \"%.32s\" is not a Pillow mode", name);
  out->mode = to;
  return IB_OK;
}

static ib_status convert_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                             ib_error *err) {
  (void)node, (void)err;
  const ib_image *src = in[0];
  size_t row_in = (size_t)src->width * ib_mode_bands(src->mode);
  size_t row_out = (size_t)out->width * ib_mode_bands(out->mode);
  for (uint32_t y = 0; y < src->height; y++)
    ib_convert_row((int)src->mode, (int)out->mode, src->data + y * row_in, out->data + y * row_out,
                   src->width);
  return IB_OK;
}

/* Device step: kernels/convert.cuh (a: the source mode, as the signature
 * has always spelled it). */
static const ib_dev_op convert_dev_op = {.tag = 'V',
                                         .role = IB_DEV_PIXEL,
                                         .header = "convert.cuh",
                                         .fn = "ib_step_convert",
                                         .rt = "ib_step_convert_rt"};

static ib_status convert_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)err;
  s->dev = &convert_dev_op;
  s->a = in_modes[0];
  return IB_OK;
}

const ib_op_desc ib_op_convert = {
    IB_OP_HEAD(convert),
    .infer = convert_infer,
    .param_bytes = ib_op_no_params,
    .cpu = convert_cpu,
    .dev = convert_dev,
    .dev_ops = (const ib_dev_op *const[]){&convert_dev_op, NULL},
};
