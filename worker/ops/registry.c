/*
 * registry.c - the list of op rows, one per entry of ops/ops.def. Each row
 * lives beside its op in worker/ops/op_<family>.c as ib_op_<field> and is
 * referenced here by name, so an op file left out of the build is a link
 * error, never a runtime Unsupported (the shared library links with
 * --no-undefined for the same reason).
 * tests/unit/test_wire_constants.c checks that every Node oneof case of the
 * proto has exactly one row, named as its field.
 */
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
