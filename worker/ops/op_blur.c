/* ImageFilter.BoxBlur(radius) and ImageFilter.GaussianBlur(radius), with
 * (x, y) radii, as Pillow 12.3 ImagingBoxBlur / ImagingGaussianBlur: the
 * passes of kernels/boxblur.h over the rows, then over the columns. Like
 * Pillow, the column passes run on a transposed copy so every pass reads
 * contiguous lines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/boxblur.h"
#include "ops/op.h"
#include "plan/graph.h"

/* Radius bound (either axis, either op). Pillow takes any finite radius; the
 * bound keeps Pillow's int arithmetic ((radius + 1) * 255) far from
 * overflow and is already 256x the largest admitted side. */
#define IB_BLUR_MAX_RADIUS 1048576.0

#define IB_GAUSSIAN_PASSES 3 /* GaussianBlur.filter calls gaussian_blur(xy) */

static ib_status check_radius(const char *op, ib_mode mode, const char *axis, double r,
                              int negative_ok, ib_error *err) {
  const char *m = ib_mode_name(mode);
  if (isnan(r) || isinf(r))
    return ib_op_fail(err, IB_INVALID, "op %s: mode %s: %s %g is not finite", op, m, axis, r);
  /* BoxBlur.__init__ raises "radius must be >= 0"; GaussianBlur squares it. */
  if (r < 0 && !negative_ok)
    return ib_op_fail(err, IB_INVALID, "op %s: mode %s: %s %g must be >= 0", op, m, axis, r);
  if (fabs(r) > IB_BLUR_MAX_RADIUS)
    return ib_op_fail(err, IB_LIMIT, "op %s: mode %s: %s %g exceeds the bound %g", op, m, axis, r,
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

/* dst (h x w) = src (w x h) transposed, pixel by pixel, in cache tiles. */
static void transpose(uint8_t *dst, const uint8_t *src, int w, int h, int bands) {
  enum { TILE = 32 };
  for (int y0 = 0; y0 < h; y0 += TILE)
    for (int x0 = 0; x0 < w; x0 += TILE)
      for (int y = y0; y < h && y < y0 + TILE; y++)
        for (int x = x0; x < w && x < x0 + TILE; x++)
          memcpy(dst + ((size_t)x * h + y) * bands, src + ((size_t)y * w + x) * bands,
                 (size_t)bands);
}

/* ImagingBoxBlur(out, in, rx, ry, passes). */
static ib_status box_blur_image(const ib_image *src, ib_image *out, float rx, float ry, int passes,
                                const char *op, ib_error *err) {
  const int w = (int)src->width, h = (int)src->height, bands = (int)ib_mode_bands(src->mode);
  const size_t bytes = ib_image_bytes(src);
  memcpy(out->data, src->data, bytes);
  if (w == 0 || h == 0 || (rx == 0 && ry == 0)) return IB_OK;
  uint8_t *line = malloc((size_t)(w > h ? w : h));
  uint8_t *tr = ry != 0 ? malloc(bytes) : NULL;
  if (!line || (ry != 0 && !tr)) {
    free(line);
    free(tr);
    return ib_op_fail(err, IB_INTERNAL, "op %s: out of memory", op);
  }
  if (rx != 0) blur_rows(out->data, w, h, bands, rx, passes, line);
  if (ry != 0) {
    transpose(tr, out->data, w, h, bands);
    blur_rows(tr, h, w, bands, ry, passes, line);
    transpose(out->data, tr, h, w, bands);
  }
  free(line);
  free(tr);
  return IB_OK;
}

/* Working memory beyond the output that a blur takes: one image-sized
 * scratch (the CPU row's transpose buffer; the CUDA backend's ping-pong
 * image) plus one line. Charged with the parameters so the executor's
 * credits cover it. */
static uint64_t blur_scratch_bytes(const ib_node *node) {
  const ib_shape *s = &node->shape;
  uint64_t line = s->width > s->height ? s->width : s->height;
  return (uint64_t)s->width * s->height * ib_mode_bands(s->mode) + line;
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

const ib_op_desc ib_op_box_blur = {
    .name = "box_blur",
    .op_case = IMGBATCH__V1__NODE__OP_BOX_BLUR,
    .cls = IB_CLASS_NEIGHBOURHOOD,
    .modes = IB_MODES_ALL,
    .n_inputs = 1,
    .infer = box_infer,
    .param_bytes = blur_scratch_bytes,
    .cpu = box_cpu,
};

const ib_op_desc ib_op_gaussian_blur = {
    .name = "gaussian_blur",
    .op_case = IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR,
    .cls = IB_CLASS_NEIGHBOURHOOD,
    .modes = IB_MODES_ALL,
    .n_inputs = 1,
    .infer = gaussian_infer,
    .param_bytes = blur_scratch_bytes,
    .cpu = gaussian_cpu,
};
