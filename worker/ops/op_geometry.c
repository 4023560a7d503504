/*
 * op_geometry.c - transpose, crop and expand rows: pure index maps from
 * kernels/geometry.h, whole pixels copied, every admitted mode.
 * Resize (NEAREST) lives in op_resize.c, paste in op_paste.c.
 */
#include "ops/op_geometry.h"

#include <stdint.h>
#include <string.h>

#include "kernels/geometry.h"
#include "ops/op.h"
#include "model/graph.h"

ib_status ib_geom_check_side(const ib_node *node, const char *param, int64_t side, ib_error *err) {
  /* A node outside a graph (an op row inferred alone) has the default. */
  const uint32_t max_side = node->graph ? node->graph->max_side : IB_DEFAULT_MAX_SIDE;
  if (side > (int64_t)max_side)
    return ib_error_set(
        err, IB_LIMIT, IB_STAGE_VALIDATE,
        "op %s: %s %lld exceeds the maximum side %u (max_side; imgbatch --max-side)",
        node->op->name, param, (long long)side, max_side);
  return IB_OK;
}

/* Copies the window map (dx, dy) of `in` into `out`; pixels outside `in`
 * are left as they are (the caller pre-filled them). Each output pixel takes
 * the first bands(out) bytes of its source pixel (equal band counts except
 * paste's RGB <- RGBA). */
void ib_geom_copy_window(const ib_image *in, ib_image *out, int64_t dx, int64_t dy) {
  unsigned sb = ib_mode_bands(in->mode), db = ib_mode_bands(out->mode);
  for (uint32_t y = 0; y < out->height; y++) {
    uint8_t *row = out->data + (size_t)y * out->width * db;
    for (uint32_t x = 0; x < out->width; x++) {
      int sx, sy;
      if (ib_window_src((int)x, (int)y, dx, dy, (int)in->width, (int)in->height, &sx, &sy))
        ib_pixel_copy(row + (size_t)x * db, in->data + ((size_t)sy * in->width + (size_t)sx) * sb,
                      db);
    }
  }
}

/* ---------------------------------------------------------------- transpose */

static ib_status transpose_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                 ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  int m = (int)node->pb->transpose->method;
  if (m < IB_TRANSPOSE_FLIP_LEFT_RIGHT || m > IB_TRANSPOSE_TRANSVERSE)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op transpose: method %d is not an Image.Transpose value this worker knows",
                        m);
  *out = in[0];
  if (ib_transpose_swaps(m)) {
    out->width = in[0].height;
    out->height = in[0].width;
  }
  return IB_OK;
}

void ib_geom_transpose(const ib_image *src, ib_image *out, int method) {
  unsigned bands = ib_mode_bands(out->mode);
  for (uint32_t y = 0; y < out->height; y++) {
    uint8_t *row = out->data + (size_t)y * out->width * bands;
    for (uint32_t x = 0; x < out->width; x++) {
      int sx, sy;
      ib_transpose_src(method, (int)x, (int)y, (int)src->width, (int)src->height, &sx, &sy);
      ib_pixel_copy(row + (size_t)x * bands,
                    src->data + ((size_t)sy * src->width + (size_t)sx) * bands, bands);
    }
  }
}

static ib_status transpose_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                               ib_error *err) {
  (void)err;
  ib_geom_transpose(in[0], out, (int)node->pb->transpose->method);
  return IB_OK;
}

/* Device step: a gather head (kernels/geometry.cuh), the method baked in. */
const ib_dev_op ib_dev_transpose = {
    .tag = 'R', .role = IB_DEV_GATHER, .header = "geometry.cuh", .fn = "ib_head_transpose"};

static ib_status transpose_dev(const ib_node *node, const int *in_modes, ib_gstep *s,
                               ib_error *err) {
  (void)in_modes, (void)err;
  s->dev = &ib_dev_transpose;
  s->a = (int)node->pb->transpose->method;
  return IB_OK;
}

const ib_op_desc ib_op_transpose = {
    IB_OP_HEAD(transpose),          .infer = transpose_infer,
    .param_bytes = ib_op_no_params, .cpu = transpose_cpu,
    .dev = transpose_dev,           .dev_ops = (const ib_dev_op *const[]){&ib_dev_transpose, NULL},
};

/* ---------------------------------------------------------------- crop */

/* Image.crop((left, top, right, bottom)): Pillow raises ValueError when
 * right < left or bottom < top (-> IB_INVALID). An empty box is legal in
 * Pillow (a 0-pixel image) but images here have sides >= 1, so it is
 * IB_UNSUPPORTED. Pixels outside the source are zero (ImagingCrop fills with
 * 0 before pasting). */
static ib_status crop_infer(const ib_node *node, const ib_shape *in, ib_shape *out, ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const Imgbatch__V1__CropOp *c = node->pb->crop;
  if (c->right < c->left)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op crop: right %d is less than left %d", (int)c->right, (int)c->left);
  if (c->bottom < c->top)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op crop: bottom %d is less than top %d", (int)c->bottom, (int)c->top);
  int64_t w = (int64_t)c->right - c->left, h = (int64_t)c->bottom - c->top;
  if (w == 0 || h == 0)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op crop: box (%d, %d, %d, %d) is empty (Pillow returns a %lldx%lld image; "
                        "empty images are not supported)",
                        (int)c->left, (int)c->top, (int)c->right, (int)c->bottom, (long long)w,
                        (long long)h);
  if ((st = ib_geom_check_side(node, "width (right - left)", w, err)) != IB_OK) return st;
  if ((st = ib_geom_check_side(node, "height (bottom - top)", h, err)) != IB_OK) return st;
  *out = (ib_shape){in[0].mode, (uint32_t)w, (uint32_t)h};
  return IB_OK;
}

static ib_status crop_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                          ib_error *err) {
  (void)err;
  /* out arrives zeroed (ib_image_alloc), which is ImagingCrop's fill. */
  ib_geom_copy_window(in[0], out, node->pb->crop->left, node->pb->crop->top);
  return IB_OK;
}

/* Device step of crop and expand: the window head (kernels/geometry.cuh),
 * parameters int64 dx, dy and the fill pixel. Crop reads source
 * (x + left, y + top), zeros outside (ImagingCrop). */
static void crop_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const int64_t d[2] = {node->pb->crop->left, node->pb->crop->top};
  memcpy(p, d, sizeof d);
  memset(p + 16, 0, 8);
}

static const ib_dev_op crop_dev_op = {.tag = 'W',
                                      .role = IB_DEV_GATHER,
                                      .header = "geometry.cuh",
                                      .fn = "ib_head_window",
                                      .fill = crop_fill};

static ib_status crop_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &crop_dev_op;
  s->param_len = 24;
  return IB_OK;
}

const ib_op_desc ib_op_crop = {
    IB_OP_HEAD(crop),
    .infer = crop_infer,
    .param_bytes = ib_op_no_params,
    .cpu = crop_cpu,
    .dev = crop_dev,
    .dev_ops = (const ib_dev_op *const[]){&crop_dev_op, NULL},
};

/* ---------------------------------------------------------------- expand */

/* ImageOps.expand(image, border=(left, top, right, bottom), fill):
 * Image.new(mode, (left + w + right, top + h + bottom), fill) then paste at
 * (left, top). `fill` carries one byte per band, already resolved as
 * ImageOps._color resolves it; empty means Pillow's default fill=0. */
static ib_status expand_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                              ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const Imgbatch__V1__ExpandOp *e = node->pb->expand;
  unsigned bands = ib_mode_bands(in[0].mode);
  if (e->fill.len != 0 && e->fill.len != bands)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op expand: fill has %zu byte(s), mode %s has %u band(s)", e->fill.len,
                        ib_mode_name(in[0].mode), bands);
  int64_t w = (int64_t)e->left + in[0].width + e->right;
  int64_t h = (int64_t)e->top + in[0].height + e->bottom;
  if ((st = ib_geom_check_side(node, "width (left + width + right)", w, err)) != IB_OK) return st;
  if ((st = ib_geom_check_side(node, "height (top + height + bottom)", h, err)) != IB_OK) return st;
  *out = (ib_shape){in[0].mode, (uint32_t)w, (uint32_t)h};
  return IB_OK;
}

static uint64_t expand_param_bytes(const ib_node *node) { return node->pb->expand->fill.len; }

static ib_status expand_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                            ib_error *err) {
  (void)err;
  const Imgbatch__V1__ExpandOp *e = node->pb->expand;
  unsigned bands = ib_mode_bands(out->mode);
  if (e->fill.len == bands) {
    size_t n = (size_t)out->width * out->height;
    for (size_t i = 0; i < n; i++) ib_pixel_copy(out->data + i * bands, e->fill.data, bands);
  }
  ib_geom_copy_window(in[0], out, -(int64_t)e->left, -(int64_t)e->top);
  return IB_OK;
}

/* Expand reads source (x - left, y - top), the border colour outside. */
static void expand_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  const Imgbatch__V1__ExpandOp *e = node->pb->expand;
  const int64_t d[2] = {-(int64_t)e->left, -(int64_t)e->top};
  memcpy(p, d, sizeof d);
  memset(p + 16, 0, 8);
  if (e->fill.len == ib_mode_bands((ib_mode)s->mode_in)) memcpy(p + 16, e->fill.data, e->fill.len);
}

static const ib_dev_op expand_dev_op = {.tag = 'W',
                                        .role = IB_DEV_GATHER,
                                        .header = "geometry.cuh",
                                        .fn = "ib_head_window",
                                        .fill = expand_fill};

static ib_status expand_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &expand_dev_op;
  s->param_len = 24;
  return IB_OK;
}

const ib_op_desc ib_op_expand = {
    IB_OP_HEAD(expand),
    .infer = expand_infer,
    .param_bytes = expand_param_bytes,
    .cpu = expand_cpu,
    .dev = expand_dev,
    .dev_ops = (const ib_dev_op *const[]){&expand_dev_op, NULL},
};
