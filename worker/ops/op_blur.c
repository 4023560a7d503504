/* ImageFilter.BoxBlur(radius) and ImageFilter.GaussianBlur(radius), with
 * (x, y) radii, as Pillow 12.3 ImagingBoxBlur / ImagingGaussianBlur: the
 * passes of kernels/boxblur.h over the rows, then over the columns (Pillow
 * runs those on a transposed copy; here on transposed strips, same bytes,
 * no image-sized scratch). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/blur.h"
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
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "op %s: mode %s: %s %g is not finite",
                        op, m, axis, r);
  /* BoxBlur.__init__ raises "radius must be >= 0"; GaussianBlur squares it. */
  if (r < 0 && !negative_ok)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "op %s: mode %s: %s %g must be >= 0",
                        op, m, axis, r);
  if (fabs(r) > IB_BLUR_MAX_RADIUS)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
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
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "op %s: out of memory", op);
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

/* Device step: a PASSES head (kernels/blur.cuh, a = passes per
 * direction) with a scratch image, its parameters ib_blur_params
 * (kernels/blur.h): the pass counts per direction (0 for a zero radius:
 * that direction is skipped, as box_blur_image skips it) and the passes
 * for the radii box_cpu / gaussian_cpu take. */
static void blur_fill(const ib_gstep *s, float rx, float ry, uint8_t *p) {
  const ib_blur_params q = {rx != 0 ? s->a : 0, ry != 0 ? s->a : 0,
                            ib_box_pass_for(rx != 0 ? rx : 1.0f),
                            ib_box_pass_for(ry != 0 ? ry : 1.0f)};
  memcpy(p, &q, sizeof q);
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

/* The passes ping-pong between the output and one scratch image. */
static size_t blur_dev_scratch(const ib_node *node, const ib_shape *in) {
  (void)in;
  return (size_t)node->shape.width * node->shape.height * ib_mode_bands(node->shape.mode);
}

/* What a launch group's jobs need at most: the widest row, the most rows,
 * the global passes' work items per direction, ib_blur_cols' buffer rows
 * and tiles. */
typedef struct blur_need {
  uint64_t row_bytes, rows, row_items, col_items, col_rows, col_tiles;
} blur_need;

static blur_need blur_group_need(const ib_dev_group *g, uint64_t bands) {
  blur_need n = {0};
  for (size_t i = 0; i < g->n_jobs; i++) {
    ib_dev_job j;
    g->job(g, i, &j);
    ib_blur_params q;
    memcpy(&q, j.params, sizeof q);
    const uint64_t w = j.width, h = j.height, rb = w * bands;
    const uint64_t ri = h * bands * ((w + IB_BLUR_CSEG - 1) / IB_BLUR_CSEG);
    const uint64_t ci = rb * ((h + IB_BLUR_CSEG - 1) / IB_BLUR_CSEG);
    const uint64_t cr = ib_blur_cols_rows(&q, h), ct = ib_blur_cols_tiles(rb, h);
    if (rb > n.row_bytes) n.row_bytes = rb;
    if (h > n.rows) n.rows = h;
    if (ri > n.row_items) n.row_items = ri;
    if (ci > n.col_items) n.col_items = ci;
    if (cr > n.col_rows) n.col_rows = cr;
    if (ct > n.col_tiles) n.col_tiles = ct;
  }
  return n;
}

/* `passes` global-memory launches of ib_blur_pass over direction dir. */
static int blur_global(ib_dev_launch *out, int passes, int dir, uint64_t items, unsigned threads) {
  for (int k = 0; k < passes; k++)
    out[k] = (ib_dev_launch){.kernel = IB_BLUR_K_PASS,
                             .blocks = (items + threads - 1) / threads,
                             .n_args = 2,
                             .args = {dir, k},
                             .slow = 1};
  return passes;
}

/* The row passes in shared memory when two rows of the widest image fit
 * (else one global launch per row pass), then the column passes: all in
 * one ib_blur_cols launch when its tiles fit in shared memory (and the
 * passes are odd, so they never write the buffer they read), else one
 * global launch per column pass. */
static int blur_plan(const ib_dev_group *g, ib_dev_launch *out) {
  const int passes = g->head->a;
  const blur_need n = blur_group_need(g, ib_mode_bands((ib_mode)g->head->mode_in));
  const uint64_t smem = 2 * ((n.row_bytes + 15) & ~(uint64_t)15);
  int k = 0;
  if (smem <= g->smem_max)
    out[k++] = (ib_dev_launch){.kernel = IB_BLUR_K_ROWS, .blocks = n.rows, .smem = (uint32_t)smem};
  else
    k += blur_global(out + k, passes, 0, n.row_items, g->threads);
  const uint64_t csmem = 2 * n.col_rows * IB_BLUR_CW;
  if (passes % 2 == 1 && csmem <= g->smem_max)
    out[k++] = (ib_dev_launch){.kernel = IB_BLUR_K_COLS,
                               .blocks = n.col_tiles,
                               .smem = (uint32_t)csmem,
                               .n_args = 2,
                               .args = {IB_BLUR_TH, (int32_t)n.col_rows}};
  else
    k += blur_global(out + k, passes, 1, n.col_items, g->threads);
  return k;
}

static const ib_dev_passes blur_passes = {
    .kernels = {[IB_BLUR_K_ROWS] = {"ib_blur_rows", 1},
                [IB_BLUR_K_COLS] = {"ib_blur_cols", 1},
                [IB_BLUR_K_PASS] = {"ib_blur_pass", 0}},
    .n_kernels = 3,
    .plan = blur_plan,
    .scratch_bytes = blur_dev_scratch,
};

static const ib_dev_op box_dev_op = {.tag = 'X',
                                     .role = IB_DEV_PASSES,
                                     .header = "blur.cuh",
                                     .fill = box_fill,
                                     .passes = &blur_passes};
static const ib_dev_op gaussian_dev_op = {.tag = 'X',
                                          .role = IB_DEV_PASSES,
                                          .header = "blur.cuh",
                                          .fill = gaussian_fill,
                                          .passes = &blur_passes};

static ib_status box_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &box_dev_op;
  s->a = 1;
  s->param_len = sizeof(ib_blur_params);
  return IB_OK;
}

static ib_status gaussian_dev(const ib_node *node, const int *in_modes, ib_gstep *s,
                              ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &gaussian_dev_op;
  s->a = IB_GAUSSIAN_PASSES;
  s->param_len = sizeof(ib_blur_params);
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
