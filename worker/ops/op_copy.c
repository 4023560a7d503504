/* Image.copy(): the identity; exists so a graph can name it. */
#include <string.h>

#include "ops/op.h"
#include "model/graph.h"

static ib_status copy_infer(const ib_node *node, const ib_shape *in, ib_shape *out, ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  *out = in[0];
  return IB_OK;
}

static ib_status copy_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                          ib_error *err) {
  (void)node;
  (void)err;
  memcpy(out->data, in[0]->data, ib_image_bytes(out));
  return IB_OK;
}

/* The identity step (kernels/chain.cuh); also what a graph that is only its
 * source runs on the device. */
const ib_dev_op ib_dev_copy = {.tag = 'Y',
                               .role = IB_DEV_PIXEL,
                               .header = "chain.cuh",
                               .fn = "ib_step_copy",
                               .rt = "ib_step_copy_rt"};

static ib_status copy_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &ib_dev_copy;
  return IB_OK;
}

const ib_op_desc ib_op_copy = {
    IB_OP_HEAD(copy),
    .infer = copy_infer,
    .param_bytes = ib_op_no_params,
    .cpu = copy_cpu,
    .dev = copy_dev,
    .dev_ops = (const ib_dev_op *const[]){&ib_dev_copy, NULL},
};
