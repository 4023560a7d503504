/*
 * op.h - the op registry contract. One row per op: name, the proto oneof it
 * parses from, admitted input modes, how many inputs (0: a source), how it
 * checks parameters and derives its output shape, what it charges, its CPU
 * reference implementation (which calls the pixel math in kernels/) and its
 * device step (op_dev.h). Validator, planner and backends read this table;
 * nothing else re-lists ops.
 */
#ifndef IB_OP_H
#define IB_OP_H

#include "imgbatch.h"
#include "model/graph.h"
#include "ops/op_dev.h"
#include "proto/imgbatch.pb-c.h"

#define IB_MODES_ALL                                                             \
  (IB_MODE_BIT(IB_MODE_L) | IB_MODE_BIT(IB_MODE_LA) | IB_MODE_BIT(IB_MODE_RGB) | \
   IB_MODE_BIT(IB_MODE_RGBA) | IB_MODE_BIT(IB_MODE_CMYK) | IB_MODE_BIT(IB_MODE_RGBX))

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
} ib_op_desc;

/* Registry lookup; NULL for an op case without a row. */
const ib_op_desc *ib_op_for_case(Imgbatch__V1__Node__OpCase c);
/* All rows (tests walk every op through them). */
const ib_op_desc *const *ib_op_all(size_t *count);

/* Helpers shared by rows. ib_op_fail: the row's error, at the stage its
 * caller names (infer: VALIDATE; cpu: EXECUTE) - nothing rewrites it. */
ib_status ib_op_fail(ib_error *err, ib_status st, ib_stage stage, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "<op>: mode <M> not supported" style rejection when in->mode is not in desc->modes. */
ib_status ib_op_check_mode(const ib_op_desc *d, const ib_shape *in, ib_error *err);
uint64_t ib_op_no_params(const struct ib_node *node);

#endif
