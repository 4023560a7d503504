/* ImageFilter.BoxBlur(radius) and ImageFilter.GaussianBlur(radius), with
 * (x, y) radii, as Pillow 12.3 ImagingBoxBlur / ImagingGaussianBlur: the
 * passes of kernels/boxblur.h over the rows, then over the columns (Pillow
 * runs those on a transposed copy; here on transposed strips, same bytes,
 * no image-sized scratch). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/boxblur.h"
#include "ops/op.h"
#include "model/graph.h"

/* Radius bound (either axis, either op). Pillow takes any finite radius; the
 * bound keeps Pillow's int arithmetic ((radius + 1) * 255) far from
 * overflow and is already 256x the largest admitted side. */
#define IB_BLUR_MAX_RADIUS 1048576.0

#define IB_GAUSSIAN_PASSES 3 /* GaussianBlur.filter calls gaussian_blur(xy) */

static ib_status check_radius(const char *op, ib_mode mode, const char *axis, double r,
                              int negative_ok, ib_error *err) {
  const char *m = ib_mode_name(mode);
  if (isnan(r) || isinf(r))
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE, "op %s: mode %s: %s %g is not finite", op,
                      m, axis, r);
  /* BoxBlur.__init__ raises "radius must be >= 0"; GaussianBlur squares it. */
  if (r < 0 && !negative_ok)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE, "op %s: mode %s: %s %g must be >= 0", op,
                      m, axis, r);
  if (fabs(r) > IB_BLUR_MAX_RADIUS)
    return ib_op_fail(err, IB_LIMIT, IB_STAGE_VALIDATE,
                      "op %s: mode %s: %s %g exceeds the bound %g", op, m, axis, r,
                      IB_BLUR_MAX_RADIUS);
  return IB_OK;
}

static ib_status blur_infer(const ib_node *node, double rx, double ry, int negative_ok,
                            const ib_shape *in, ib_shape *out, ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st == IB_OK) st = check_radius(node->op->name, in->mode, "radius_x", rx, negative_ok, err);
  if (st == IB_OK) st = check_radius(node->op->name, in->mode, "radius_y", ry, negative_ok, err);
  if (st == IB_OK) *out = in[0];
  return st;
}

static ib_status box_infer(const ib_node *node, const ib_shape *in, ib_shape *out, ib_error *err) {
  const Imgbatch__V1__BoxBlurOp *p = node->pb->box_blur;
  return blur_infer(node, p->radius_x, p->radius_y, 0, in, out, err);
}

static ib_status gaussian_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                ib_error *err) {
  const Imgbatch__V1__GaussianBlurOp *p = node->pb->gaussian_blur;
  return blur_infer(node, p->radius_x, p->radius_y, 1, in, out, err);
}

/* `passes` passes along every row of a w x h image with `bands` bands, in
 * place; `line` holds one band of one row. */
static void blur_rows(uint8_t *data, int w, int h, int bands, float radius, int passes,
                      uint8_t *line) {
  const ib_box_pass p = ib_box_pass_for(radius);
  for (int y = 0; y < h; y++) {
    uint8_t *row = data + (size_t)y * w * bands;
    for (int b = 0; b < bands; b++)
      for (int i = 0; i < passes; i++) {
        for (int x = 0; x < w; x++) line[x] = row[x * bands + b];
        ib_box_blur_line(row + b, bands, line, 1, w, p);
      }
  }
}

/* Columns are blurred a strip of IB_BLUR_STRIP at a time: the strip is
 * transposed into a tile (one line per column and band), the passes run on
 * the tile's lines, and the tile goes back. Pillow transposes the whole
 * image instead; the passes see the same lines, so the bytes are the same,
 * but the scratch is a tile, not a fourth 4096^2 image in a two-op chain
 * (the credits charge it: blur_scratch_bytes). */
#define IB_BLUR_STRIP 16

static void blur_cols(uint8_t *data, int w, int h, int bands, float radius, int passes,
                      uint8_t *tile, uint8_t *line) {
  const ib_box_pass p = ib_box_pass_for(radius);
  const size_t stride = (size_t)w * bands;
  for (int x0 = 0; x0 < w; x0 += IB_BLUR_STRIP) {
    const int n = (w - x0 < IB_BLUR_STRIP ? w - x0 : IB_BLUR_STRIP) * bands; /* lines */
    uint8_t *strip = data + (size_t)x0 * bands;
    for (int y = 0; y < h; y++)
      for (int k = 0; k < n; k++) tile[(size_t)k * h + y] = strip[y * stride + k];
    for (int k = 0; k < n; k++)
      for (int i = 0; i < passes; i++) {
        memcpy(line, tile + (size_t)k * h, (size_t)h);
        ib_box_blur_line(tile + (size_t)k * h, 1, line, 1, h, p);
      }
    for (int y = 0; y < h; y++)
      for (int k = 0; k < n; k++) strip[y * stride + k] = tile[(size_t)k * h + y];
  }
}

/* ImagingBoxBlur(out, in, rx, ry, passes). */
static ib_status box_blur_image(const ib_image *src, ib_image *out, float rx, float ry, int passes,
                                const char *op, ib_error *err) {
  const int w = (int)src->width, h = (int)src->height, bands = (int)ib_mode_bands(src->mode);
  const size_t bytes = ib_image_bytes(src);
  memcpy(out->data, src->data, bytes);
  if (w == 0 || h == 0 || (rx == 0 && ry == 0)) return IB_OK;
  uint8_t *line = malloc((size_t)(w > h ? w : h));
  uint8_t *tile = ry != 0 ? malloc((size_t)IB_BLUR_STRIP * bands * h) : NULL;
  if (!line || (ry != 0 && !tile)) {
    free(line);
    free(tile);
    return ib_op_fail(err, IB_INTERNAL, IB_STAGE_EXECUTE, "op %s: out of memory", op);
  }
  if (rx != 0) blur_rows(out->data, w, h, bands, rx, passes, line);
  if (ry != 0) blur_cols(out->data, w, h, bands, ry, passes, tile, line);
  free(tile);
  free(line);
  return IB_OK;
}

/* Working memory beyond the output that the CPU row takes: the column
 * tile and one line. Charged with the parameters so the executor's credits
 * cover it (the CUDA backend charges its own ping-pong image from its device
 * plan). */
static uint64_t blur_scratch_bytes(const ib_node *node) {
  const ib_shape *s = &node->shape;
  uint64_t line = s->width > s->height ? s->width : s->height;
  return (uint64_t)IB_BLUR_STRIP * ib_mode_bands(s->mode) * s->height + line;
}

static ib_status box_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                         ib_error *err) {
  const Imgbatch__V1__BoxBlurOp *p = node->pb->box_blur;
  /* _box_blur parses the radii as C floats; one pass. */
  return box_blur_image(in[0], out, (float)p->radius_x, (float)p->radius_y, 1, node->op->name, err);
}

static ib_status gaussian_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                              ib_error *err) {
  const Imgbatch__V1__GaussianBlurOp *p = node->pb->gaussian_blur;
  float rx = ib_gaussian_box_radius((float)p->radius_x, IB_GAUSSIAN_PASSES);
  float ry = ib_gaussian_box_radius((float)p->radius_y, IB_GAUSSIAN_PASSES);
  return box_blur_image(in[0], out, rx, ry, IB_GAUSSIAN_PASSES, node->op->name, err);
}

/* Device step: a PASSES head (kernels/blur.cuh, a = passes per direction)
 * with a scratch image. Parameters: struct ib_blurp {int hp, vp;
 * ib_box_pass ph, pv;}, the pass counts per direction (0 for a zero radius:
 * that direction is skipped, as box_blur_image skips it) and the passes
 * for the radii box_cpu / gaussian_cpu take. */
_Static_assert(sizeof(ib_box_pass) == 12, "struct ib_blurp in kernels/blur.cuh");

static void blur_fill(const ib_gstep *s, float rx, float ry, uint8_t *p) {
  const int32_t hv[2] = {rx != 0 ? s->a : 0, ry != 0 ? s->a : 0};
  const ib_box_pass ph = ib_box_pass_for(rx != 0 ? rx : 1.0f),
                    pv = ib_box_pass_for(ry != 0 ? ry : 1.0f);
  memcpy(p, hv, 8);
  memcpy(p + 8, &ph, sizeof ph);
  memcpy(p + 20, &pv, sizeof pv);
}

static void box_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  const Imgbatch__V1__BoxBlurOp *b = node->pb->box_blur;
  blur_fill(s, (float)b->radius_x, (float)b->radius_y, p);
}

static void gaussian_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  const Imgbatch__V1__GaussianBlurOp *g = node->pb->gaussian_blur;
  blur_fill(s, ib_gaussian_box_radius((float)g->radius_x, IB_GAUSSIAN_PASSES),
            ib_gaussian_box_radius((float)g->radius_y, IB_GAUSSIAN_PASSES), p);
}

static const ib_dev_op box_dev_op = {.tag = 'X',
                                     .role = IB_DEV_PASSES,
                                     .flags = IB_DEV_SCRATCH,
                                     .header = "blur.cuh",
                                     .fill = box_fill};
static const ib_dev_op gaussian_dev_op = {.tag = 'X',
                                          .role = IB_DEV_PASSES,
                                          .flags = IB_DEV_SCRATCH,
                                          .header = "blur.cuh",
                                          .fill = gaussian_fill};

static ib_status box_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &box_dev_op;
  s->a = 1;
  s->param_len = 32;
  return IB_OK;
}

static ib_status gaussian_dev(const ib_node *node, const int *in_modes, ib_gstep *s,
                              ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &gaussian_dev_op;
  s->a = IB_GAUSSIAN_PASSES;
  s->param_len = 32;
  return IB_OK;
}

const ib_op_desc ib_op_box_blur = {
    IB_OP_HEAD(box_blur),
    .infer = box_infer,
    .param_bytes = blur_scratch_bytes,
    .cpu = box_cpu,
    .dev = box_dev,
    .dev_ops = (const ib_dev_op *const[]){&box_dev_op, NULL},
};

const ib_op_desc ib_op_gaussian_blur = {
    IB_OP_HEAD(gaussian_blur),
    .infer = gaussian_infer,
    .param_bytes = blur_scratch_bytes,
    .cpu = gaussian_cpu,
    .dev = gaussian_dev,
    .dev_ops = (const ib_dev_op *const[]){&gaussian_dev_op, NULL},
};
