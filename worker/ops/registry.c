/*
 * registry.c - the list of op rows, one per entry of ops/ops.def. Each row
 * lives beside its op in worker/ops/op_<family>.c as ib_op_<field> and is
 * referenced here by name, so an op file left out of the build is a link
 * error, never a runtime Unsupported (the shared library links with
 * --no-undefined for the same reason).
 * tests/unit/test_wire_constants.c checks that every Node oneof case of the
 * proto has exactly one row, named as its field.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"
#include "ops/op.h"
#include "model/graph.h"

#define IB_OP(field, ...) extern const ib_op_desc ib_op_##field;
#include "ops/ops.def"
#undef IB_OP

static const ib_op_desc *const rows[] = {
#define IB_OP(field, ...) &ib_op_##field,
#include "ops/ops.def"
#undef IB_OP
};

#define N_ROWS (sizeof rows / sizeof rows[0])

const ib_op_desc *const *ib_op_all(size_t *count) {
  *count = N_ROWS;
  return rows;
}

const ib_op_desc *ib_op_for_case(Imgbatch__V1__Node__OpCase c) {
  for (size_t i = 0; i < N_ROWS; i++)
    if (rows[i]->op_case == c) return rows[i];
  return NULL;
}

ib_status ib_op_fail(ib_error *err, ib_status st, ib_stage stage, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ib_error_vset(err, st, stage, fmt, ap);
  va_end(ap);
  return st;
}

ib_status ib_op_check_mode(const ib_op_desc *d, const ib_shape *in, ib_error *err) {
  if (in->mode > IB_MODE_NONE && in->mode < IB_MODE_COUNT && (d->modes & IB_MODE_BIT(in->mode)))
    return IB_OK;
  return ib_op_fail(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE, "op %s: mode %s not supported", d->name,
                    ib_mode_name(in->mode));
}

uint64_t ib_op_no_params(const ib_node *node) {
  (void)node;
  return 0;
}
