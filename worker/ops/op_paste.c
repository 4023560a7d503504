/*
 * op_paste.c - base.paste(im, box) without a mask; inputs = [base, im].
 * Output is base's shape: out(x, y) = im(x - left, y - top) where that lies
 * inside im, else base(x, y) (ImagingPaste clips to the base).
 *
 * Pillow converts im to base's mode when they differ; no implicit
 * conversion is ever inserted here, so differing modes are IB_UNSUPPORTED,
 * with one exception that is not a conversion: Image.paste skips the convert
 * for an RGB base and an RGBA image, and ImagingPaste copies whole 4-byte
 * pixel words, so the base receives the image's R, G, B exactly. (The same
 * skip for an LA image copies an LA pixel word's hidden bytes 1-2, which the
 * chunky layout does not keep: rejected.)
 * A 4-tuple box must describe im's size (ImagingPaste raises "images do
 * not match" -> IB_INVALID), and right = left + width, bottom = top + height
 * must fit a C int as PyArg "(iiii)" requires (OverflowError -> IB_INVALID).
 */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "ops/op.h"
#include "ops/op_geometry.h"
#include "model/graph.h"

static ib_status paste_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                             ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  bool rgb_from_rgba = in[0].mode == IB_MODE_RGB && in[1].mode == IB_MODE_RGBA;
  if (in[1].mode != in[0].mode && !rgb_from_rgba)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op paste: mode %s pasted into mode %s (no implicit conversion)",
                        ib_mode_name(in[1].mode), ib_mode_name(in[0].mode));
  const Imgbatch__V1__PasteOp *p = node->pb->paste;
  if (p->size_present_case == IMGBATCH__V1__PASTE_OP__SIZE_PRESENT_SIZE && p->size &&
      (p->size->width != in[1].width || p->size->height != in[1].height))
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op paste: box size %ux%u does not match image %ux%u", p->size->width,
                        p->size->height, in[1].width, in[1].height);
  if ((int64_t)p->left + in[1].width > INT_MAX || (int64_t)p->top + in[1].height > INT_MAX)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op paste: box (%d, %d) + %ux%u overflows a C int", (int)p->left,
                        (int)p->top, in[1].width, in[1].height);
  *out = in[0];
  return IB_OK;
}

static ib_status paste_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                           ib_error *err) {
  (void)err;
  memcpy(out->data, in[0]->data, ib_image_bytes(out));
  ib_geom_copy_window(in[1], out, -(int64_t)node->pb->paste->left, -(int64_t)node->pb->paste->top);
  return IB_OK;
}

/* Device step: a two-input gather head (kernels/geometry.cuh) over
 * (base, im); parameters int64 dx, dy. */
static void paste_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const int64_t d[2] = {-(int64_t)node->pb->paste->left, -(int64_t)node->pb->paste->top};
  memcpy(p, d, sizeof d);
}

static const ib_dev_op paste_dev_op = {.tag = 'S',
                                       .role = IB_DEV_GATHER,
                                       .flags = IB_DEV_IN1,
                                       .header = "geometry.cuh",
                                       .fn = "ib_head_paste",
                                       .fill = paste_fill};

static ib_status paste_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &paste_dev_op;
  s->param_len = 16;
  return IB_OK;
}

const ib_op_desc ib_op_paste = {
    IB_OP_HEAD(paste),
    .infer = paste_infer,
    .param_bytes = ib_op_no_params,
    .cpu = paste_cpu,
    .dev = paste_dev,
    .dev_ops = (const ib_dev_op *const[]){&paste_dev_op, NULL},
};
