/*
 * validate.c - node-by-node validation: op rows, input arity, topological
 * order (a reference to the node itself or a later node is a cycle), shapes
 * via each row's infer(), the max_side and 256-op bounds, and the
 * conservative working-set estimate used for credits. Every op's
 * floating-point parameters meet one rule here, before its row sees them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "model/graph.h"
#include "ops/op.h"
#include "parse/job_arena.h"

#define MAX_OPS 256

#define FIELD(m, fd, type) (*(type *)((const char *)(m) + (fd)->offset))
#define QUANTIFIER(m, fd, type) (*(type *)((const char *)(m) + (fd)->quantifier_offset))

static double float_at(const ProtobufCFieldDescriptor *fd, const void *p, size_t i) {
  return fd->type == PROTOBUF_C_TYPE_DOUBLE ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* NaN and the infinities are never a valid parameter, for any op: Pillow
 * raises on some and hands the rest to C conversions that are undefined for
 * them. The op message is read through its descriptor, so every double of
 * every op (repeated ones and those in sub-messages such as ResizeOp.box)
 * is covered, including ops added later. `depth` guards the (acyclic) op
 * schema. */
static ib_status check_finite(const ProtobufCMessage *m, const char *op, const char *prefix,
                              int depth, ib_error *err) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned f = 0; f < d->n_fields; f++) {
    const ProtobufCFieldDescriptor *fd = &d->fields[f];
    if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && QUANTIFIER(m, fd, uint32_t) != fd->id)
      continue;
    bool repeated = fd->label == PROTOBUF_C_LABEL_REPEATED;
    if (fd->type == PROTOBUF_C_TYPE_DOUBLE || fd->type == PROTOBUF_C_TYPE_FLOAT) {
      const void *values = repeated ? FIELD(m, fd, void *) : (const char *)m + fd->offset;
      size_t n = repeated ? QUANTIFIER(m, fd, size_t) : 1;
      for (size_t i = 0; i < n; i++) {
        double v = float_at(fd, values, i);
        if (isfinite(v)) continue;
        char index[24] = "";
        if (repeated) snprintf(index, sizeof index, "[%zu]", i);
        return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                            "op %s: %s%s%s=%g is not finite (NaN and infinities are never valid)",
                            op, prefix, fd->name, index, v);
      }
    } else if (fd->type == PROTOBUF_C_TYPE_MESSAGE && !repeated && depth < 4) {
      const ProtobufCMessage *sub = FIELD(m, fd, const ProtobufCMessage *);
      char inner[64];
      snprintf(inner, sizeof inner, "%s%s.", prefix, fd->name);
      ib_status st = sub ? check_finite(sub, op, inner, depth + 1, err) : IB_OK;
      if (st != IB_OK) return st;
    }
  }
  return IB_OK;
}

/* The node's op message (the set member of Node.op). */
static const ProtobufCMessage *op_message(const Imgbatch__V1__Node *pb) {
  const ProtobufCFieldDescriptor *fd =
      protobuf_c_message_descriptor_get_field(&imgbatch__v1__node__descriptor, pb->op_case);
  return fd && fd->type == PROTOBUF_C_TYPE_MESSAGE ? FIELD(pb, fd, const ProtobufCMessage *) : NULL;
}

static ib_status check_node(ib_graph *g, size_t i, ib_error *err) {
  const Imgbatch__V1__Node *pb = g->job->nodes[i];
  ib_node *n = &g->nodes[i];
  n->pb = pb;
  n->graph = g;
  n->op = ib_op_for_case(pb->op_case);
  if (pb->op_case == IMGBATCH__V1__NODE__OP__NOT_SET)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "node %zu: no op set", i);
  if (!n->op)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "node %zu: op #%d is not implemented", i, (int)pb->op_case);
  if (pb->n_inputs != n->op->n_inputs)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "node %zu: op %s takes %u input(s), got %zu", i, n->op->name,
                        n->op->n_inputs, pb->n_inputs);
  ib_shape in[2] = {{0}};
  for (size_t k = 0; k < pb->n_inputs; k++) {
    uint32_t ref = pb->inputs[k];
    if (ref >= i)
      return ib_error_set(
          err, IB_INVALID, IB_STAGE_VALIDATE,
          "node %zu: op %s input %zu refers to node %u (cycle or forward reference)", i,
          n->op->name, k, ref);
    n->inputs[k] = ref;
    in[k] = g->nodes[ref].shape;
    g->nodes[ref].last_use = (unsigned)i;
  }
  n->n_inputs = (unsigned)pb->n_inputs;
  const ProtobufCMessage *params = op_message(pb);
  ib_status st = params ? check_finite(params, n->op->name, "", 0, err) : IB_OK;
  if (st == IB_OK) st = n->op->infer(n, in, &n->shape, err);
  if (st != IB_OK) {
    ib_error_prefix(err, "node %zu", i);
    return st;
  }
  if (n->shape.width == 0 || n->shape.height == 0)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "node %zu: op %s produces an empty %ux%u image", i, n->op->name,
                        n->shape.width, n->shape.height);
  if (n->shape.width > g->max_side || n->shape.height > g->max_side)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "node %zu: op %s output %ux%u exceeds the maximum side %u (max_side; "
                        "imgbatch --max-side)",
                        i, n->op->name, n->shape.width, n->shape.height, g->max_side);
  n->last_use = (unsigned)i;
  g->param_bytes += n->op->param_bytes(n);
  g->peak_bytes += (uint64_t)n->shape.width * n->shape.height * ib_mode_bands(n->shape.mode);
  return IB_OK;
}

ib_status ib_graph_validate(ib_graph *g, ib_error *err) {
  size_t n = g->job->n_nodes;
  if (n == 0) return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "graph: no nodes");
  if (n > MAX_OPS)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE, "graph: %zu ops exceed the %d op bound",
                        n, MAX_OPS);
  g->nodes = ib_job_arena_calloc(g->arena, n, sizeof *g->nodes);
  if (!g->nodes) return ib_error_set(err, IB_INTERNAL, IB_STAGE_VALIDATE, "graph: out of memory");
  g->n_nodes = n;
  for (size_t i = 0; i < n; i++) {
    ib_status st = check_node(g, i, err);
    if (st != IB_OK) return st;
  }
  return IB_OK;
}
