/* op.c - the helpers that op rows share (op.h), apart from the registry that
 * lists the rows: the rows call these, the registry names the rows. */
#include "core/error.h"
#include "model/graph.h"
#include "ops/op.h"

ib_status ib_op_check_mode(const ib_op_desc *d, const ib_shape *in, ib_error *err) {
  if (in->mode > IB_MODE_NONE && in->mode < IB_MODE_COUNT && (d->modes & IB_MODE_BIT(in->mode)))
    return IB_OK;
  return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE, "op %s: mode %s not supported",
                      d->name, ib_mode_name(in->mode));
}

uint64_t ib_op_no_params(const ib_node *node) {
  (void)node;
  return 0;
}
