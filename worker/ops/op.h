/*
 * op.h - the op registry contract. One row per op: name, the proto oneof it
 * parses from, admitted input modes, how many inputs (0: a source), how it
 * checks parameters and derives its output shape, what it charges, its CPU
 * reference implementation (which calls the pixel math in kernels/) and its
 * device step (op_dev.h). Validator, planner and backends read these rows.
 *
 * The facts shared with the rest of the repository (name, oneof case,
 * modes, inputs, Pillow call, graph steps, sample parameters) are declared
 * once, in ops/ops.def: a row takes its head from there (IB_OP_HEAD), the
 * registry's list is generated from it, and tools/optable.py generates or
 * checks every other list of ops (docs/ops.md). Nothing re-lists ops by hand
 * without a ctest comparing it with ops.def.
 */
#ifndef IB_OP_H
#define IB_OP_H

#include "core/error.h"
#include "imgbatch.h"
#include "model/graph.h"
#include "ops/op_dev.h"
#include "proto/imgbatch.pb-c.h"

#define IB_MODES_ALL                                                             \
  (IB_MODE_BIT(IB_MODE_L) | IB_MODE_BIT(IB_MODE_LA) | IB_MODE_BIT(IB_MODE_RGB) | \
   IB_MODE_BIT(IB_MODE_RGBA) | IB_MODE_BIT(IB_MODE_CMYK) | IB_MODE_BIT(IB_MODE_RGBX))

/* Mode masks in ops.def's modes column. */
#define IB_OPM(m) IB_MODE_BIT(IB_MODE_##m)
#define IB_OPM_ALL IB_MODES_ALL

/* Per op of ops.def: ib_opcase_<field>, ib_opinputs_<field>, ib_opmodes_<field>. */
enum {
#define IB_OP(field, CASE, inputs, modes, ...)                                       \
  ib_opcase_##field = IMGBATCH__V1__NODE__OP_##CASE, ib_opinputs_##field = (inputs), \
  ib_opmodes_##field = (modes),
#include "ops/ops.def"
#undef IB_OP
};

/* The designated initializers of a row that ops.def declares: a row is
 * `{IB_OP_HEAD(field), .infer = ..., ...}`. */
#define IB_OP_HEAD(field)                                                   \
  .name = #field, .op_case = (Imgbatch__V1__Node__OpCase)ib_opcase_##field, \
  .modes = (uint32_t)ib_opmodes_##field, .n_inputs = (unsigned)ib_opinputs_##field

struct ib_node;

typedef struct ib_op_desc {
  const char *name;
  Imgbatch__V1__Node__OpCase op_case;
  uint32_t modes;    /* IB_MODE_BIT mask of admitted modes of input 0 */
  unsigned n_inputs; /* graph inputs the node reads (0: a source) */
  /* Checks parameters against their ranges and the input shapes, and
   * writes the output shape. Errors name op, mode and param; status is
   * IB_INVALID (bad params) or IB_UNSUPPORTED (context Pillow refuses or we
   * have not proven). `in` has n_inputs entries. */
  ib_status (*infer)(const struct ib_node *node, const ib_shape *in, ib_shape *out, ib_error *err);
  /* Bytes of parameters / LUTs / tables the backend uploads (credit charge). */
  uint64_t (*param_bytes)(const struct ib_node *node);
  /* CPU reference: `out` is allocated by the caller with the inferred shape. */
  ib_status (*cpu)(const struct ib_node *node, const ib_image *const *in, ib_image *out,
                   ib_error *err);
  /* Device step of a validated node (op_dev.h): sets s->dev, s->a and
   * s->param_len (mode_in, mode_out are set by the caller; `in_modes` are
   * the node's input modes). IB_UNSUPPORTED, naming op and mode, for a
   * context without one; NULL when the op has no device step at all. */
  ib_status (*dev)(const struct ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err);
  /* Every description `dev` may set, NULL-terminated (the interpreter's
   * dispatch is generated from these; NULL when dev is). */
  const ib_dev_op *const *dev_ops;
  /* Whether the node's image no longer carries its source's orientation, as
   * Pillow removes it from the metadata (the output metadata policy reads
   * it, docs/metadata.md); NULL: the op keeps what its inputs carry. */
  bool (*drops_orientation)(const struct ib_node *node);
} ib_op_desc;

/* Registry lookup; NULL for an op case without a row. */
const ib_op_desc *ib_op_for_case(Imgbatch__V1__Node__OpCase c);
/* All rows (tests walk every op through them). */
const ib_op_desc *const *ib_op_all(size_t *count);

/* Helpers shared by rows (op.c); a row's errors are core/error.h's
 * ib_error_set, at the stage its caller names (infer: VALIDATE; cpu:
 * EXECUTE) - nothing rewrites them. ib_op_check_mode: "<op>: mode <M> not
 * supported" when in->mode is not in desc->modes. */
ib_status ib_op_check_mode(const ib_op_desc *d, const ib_shape *in, ib_error *err);
uint64_t ib_op_no_params(const struct ib_node *node);

#endif
