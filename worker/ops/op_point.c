/*
 * Image.point(lut) and the ImageOps tables that reduce to it: invert,
 * solarize(threshold), posterize(bits). One table apply (kernels/point.h);
 * the rows differ only in how the table is built and which modes they admit.
 *
 * Mode rules as Pillow 12.3: Image.point takes every 8-bit mode with exactly
 * 256 * bands entries (_imaging.c _point; a 256-entry list on a multiband
 * image is "wrong number of lut entries" - only a callable is repeated, and
 * the client does that before the job is built). ImageOps._lut admits L and
 * RGB only ("not supported for mode ...").
 */
#include <string.h>

#include "kernels/point.h"
#include "ops/op.h"
#include "plan/graph.h"

#define IB_LUT_MODES (IB_MODE_BIT(IB_MODE_L) | IB_MODE_BIT(IB_MODE_RGB))

/* The largest table any of these rows uploads: 256 entries x 4 bands. */
static uint64_t point_table_bytes(const ib_node *node) {
  (void)node;
  return 256u * 4u;
}

static void point_apply(const ib_image *in, ib_image *out, const uint8_t *table) {
  unsigned bands = ib_mode_bands(in->mode);
  size_t row = (size_t)in->width * bands;
  for (uint32_t y = 0; y < in->height; y++)
    ib_point_row(table, bands, in->data + y * row, out->data + y * row, in->width);
}

static ib_status same_shape_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                  ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  *out = in[0];
  return IB_OK;
}

/* ---------------------------------------------------------------- point */

static ib_status point_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                             ib_error *err) {
  ib_status st = same_shape_infer(node, in, out, err);
  if (st != IB_OK) return st;
  size_t want = 256u * ib_mode_bands(in[0].mode);
  size_t got = node->pb->point ? node->pb->point->n_lut : 0;
  if (got != want)
    return ib_op_fail(err, IB_INVALID, "op point: mode %s needs %zu lut entries, got %zu",
                      ib_mode_name(in[0].mode), want, got);
  return IB_OK;
}

static ib_status point_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                           ib_error *err) {
  (void)err;
  uint8_t table[256 * 4];
  const Imgbatch__V1__PointOp *p = node->pb->point;
  for (size_t i = 0; i < p->n_lut; i++) table[i] = ib_point_entry(p->lut[i]);
  point_apply(in[0], out, table);
  return IB_OK;
}

const ib_op_desc ib_op_point = {
    .name = "point",
    .op_case = IMGBATCH__V1__NODE__OP_POINT,
    .cls = IB_CLASS_POINTWISE,
    .modes = IB_MODES_ALL,
    .n_inputs = 1,
    .infer = point_infer,
    .param_bytes = point_table_bytes,
    .cpu = point_cpu,
};

/* ---------------------------------------------------------------- ImageOps tables */

/* ImageOps._lut repeats a 256-entry table for RGB. */
static void repeat_bands(uint8_t *table, unsigned bands) {
  for (unsigned b = 1; b < bands; b++) memcpy(table + 256u * b, table, 256);
}

static ib_status invert_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                            ib_error *err) {
  (void)node, (void)err;
  uint8_t table[256 * 4];
  for (int i = 0; i < 256; i++) table[i] = ib_point_invert_entry(i);
  repeat_bands(table, ib_mode_bands(in[0]->mode));
  point_apply(in[0], out, table);
  return IB_OK;
}

const ib_op_desc ib_op_invert = {
    .name = "invert",
    .op_case = IMGBATCH__V1__NODE__OP_INVERT,
    .cls = IB_CLASS_POINTWISE,
    .modes = IB_LUT_MODES,
    .n_inputs = 1,
    .infer = same_shape_infer,
    .param_bytes = point_table_bytes,
    .cpu = invert_cpu,
};

static ib_status solarize_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                              ib_error *err) {
  (void)err;
  uint32_t threshold = node->pb->solarize ? node->pb->solarize->threshold : 0;
  uint8_t table[256 * 4];
  for (int i = 0; i < 256; i++) table[i] = ib_point_solarize_entry(i, threshold);
  repeat_bands(table, ib_mode_bands(in[0]->mode));
  point_apply(in[0], out, table);
  return IB_OK;
}

/* Any threshold is valid (Pillow compares i < threshold). */
const ib_op_desc ib_op_solarize = {
    .name = "solarize",
    .op_case = IMGBATCH__V1__NODE__OP_SOLARIZE,
    .cls = IB_CLASS_POINTWISE,
    .modes = IB_LUT_MODES,
    .n_inputs = 1,
    .infer = same_shape_infer,
    .param_bytes = point_table_bytes,
    .cpu = solarize_cpu,
};

static ib_status posterize_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                 ib_error *err) {
  ib_status st = same_shape_infer(node, in, out, err);
  if (st != IB_OK) return st;
  uint32_t bits = node->pb->posterize ? node->pb->posterize->bits : 0;
  if (bits < 1 || bits > 8)
    return ib_op_fail(err, IB_INVALID, "op posterize: bits %u out of range 1..8", bits);
  return IB_OK;
}

static ib_status posterize_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                               ib_error *err) {
  (void)err;
  uint8_t table[256 * 4];
  for (int i = 0; i < 256; i++) table[i] = ib_point_posterize_entry(i, node->pb->posterize->bits);
  repeat_bands(table, ib_mode_bands(in[0]->mode));
  point_apply(in[0], out, table);
  return IB_OK;
}

const ib_op_desc ib_op_posterize = {
    .name = "posterize",
    .op_case = IMGBATCH__V1__NODE__OP_POSTERIZE,
    .cls = IB_CLASS_POINTWISE,
    .modes = IB_LUT_MODES,
    .n_inputs = 1,
    .infer = posterize_infer,
    .param_bytes = point_table_bytes,
    .cpu = posterize_cpu,
};
