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
#include "model/graph.h"

/* The largest table any of these rows uploads: 256 entries x 4 bands. */
static uint64_t point_table_bytes(const ib_node *node) {
  (void)node;
  return 256u * 4u;
}

/* The 256 * bands table, band-major: entry [b * 256 + v]. Image.point
 * clamps the given entries (at most 256 * bands are read); the ImageOps
 * rows build one 256-entry table and, as ImageOps._lut does for RGB, repeat
 * it per band. The CPU rows and the device's table step map through it. */
static void point_table(const Imgbatch__V1__Node *pb, unsigned bands, uint8_t *table) {
  if (pb->op_case == IMGBATCH__V1__NODE__OP_POINT) {
    for (size_t i = 0; i < pb->point->n_lut && i < 256u * bands; i++)
      table[i] = ib_point_entry(pb->point->lut[i]);
    return;
  }
  for (int i = 0; i < 256; i++) {
    if (pb->op_case == IMGBATCH__V1__NODE__OP_SOLARIZE)
      table[i] = ib_point_solarize_entry(i, pb->solarize->threshold);
    else if (pb->op_case == IMGBATCH__V1__NODE__OP_POSTERIZE)
      table[i] = ib_point_posterize_entry(i, pb->posterize->bits);
    else
      table[i] = ib_point_invert_entry(i);
  }
  for (unsigned b = 1; b < bands; b++) memcpy(table + 256u * b, table, 256);
}

/* Device step of all four: a table, folded with its neighbours
 * (op_dev.h IB_DEV_TABLE). */
static void table_dev_table(const ib_gstep *s, const ib_node *node, uint8_t *t) {
  point_table(node->pb, ib_mode_bands((ib_mode)s->mode_in), t);
}

static const ib_dev_op table_dev_op = {.tag = 'P', .role = IB_DEV_TABLE, .table = table_dev_table};

static ib_status table_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &table_dev_op;
  return IB_OK;
}

/* CPU row of all four ops: build the table, map every byte through it. */
static ib_status table_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                           ib_error *err) {
  (void)err;
  const ib_image *src = in[0];
  unsigned bands = ib_mode_bands(src->mode);
  uint8_t table[256 * 4];
  point_table(node->pb, bands, table);
  size_t row = (size_t)src->width * bands;
  for (uint32_t y = 0; y < src->height; y++)
    ib_point_row(table, bands, src->data + y * row, out->data + y * row, src->width);
  return IB_OK;
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
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op point: mode %s needs %zu lut entries, got %zu",
                        ib_mode_name(in[0].mode), want, got);
  return IB_OK;
}

/* Every row is one table apply: the same parameter bytes, CPU and device
 * code; the rows differ only in name, op, modes and the shape check. */
#define IB_TABLE_OP(field, op_infer)                                                          \
  {                                                                                           \
    IB_OP_HEAD(field), .infer = op_infer, .param_bytes = point_table_bytes, .cpu = table_cpu, \
                       .dev = table_dev,                                                      \
                       .dev_ops = (const ib_dev_op *const[]){&table_dev_op, NULL},            \
  }

const ib_op_desc ib_op_point = IB_TABLE_OP(point, point_infer);

/* ---------------------------------------------------------------- ImageOps tables */

const ib_op_desc ib_op_invert = IB_TABLE_OP(invert, same_shape_infer);

/* Any threshold is valid (Pillow compares i < threshold). */
const ib_op_desc ib_op_solarize = IB_TABLE_OP(solarize, same_shape_infer);

/* ImageOps.posterize takes bits <= 8 (0 or less keeps no bit: an all-zero
 * table; the client sends those as 0); 9 and up make 2 ** (8 - bits) a float
 * and Pillow raises TypeError. */
static ib_status posterize_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                                 ib_error *err) {
  ib_status st = same_shape_infer(node, in, out, err);
  if (st != IB_OK) return st;
  uint32_t bits = node->pb->posterize ? node->pb->posterize->bits : 0;
  if (bits > 8)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op posterize: bits %u out of range 0..8", bits);
  return IB_OK;
}

const ib_op_desc ib_op_posterize = IB_TABLE_OP(posterize, posterize_infer);
