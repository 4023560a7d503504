/* Validation of Job.renditions (docs/wire.md, "Renditions"): several outputs
 * of one graph run, each a node and the CpuOutput it is encoded as. */
#include <stdio.h>
#include <string.h>

#include "codec/output_spec.h"
#include "core/error.h"
#include "parse/parse.h"

/* Two renditions are the same when they name one node and their outputs
 * pack to the same bytes: the second would only repeat the first's encode.
 * A CpuOutput packs to a few dozen bytes; 64 leaves room. */
static bool same_rendition(const Imgbatch__V1__Rendition *a, const Imgbatch__V1__Rendition *b) {
  if (a->node != b->node) return false;
  uint8_t pa[64], pb[64];
  size_t la = a->output ? imgbatch__v1__cpu_output__get_packed_size(a->output) : 0;
  size_t lb = b->output ? imgbatch__v1__cpu_output__get_packed_size(b->output) : 0;
  if (la != lb) return false;
  if (la > sizeof pa) return false; /* too big to be a plain CpuOutput: not compared */
  if (la) imgbatch__v1__cpu_output__pack(a->output, pa);
  if (lb) imgbatch__v1__cpu_output__pack(b->output, pb);
  return memcmp(pa, pb, la) == 0;
}

static ib_status check_one(const ib_graph *g, size_t i, ib_error *err) {
  const Imgbatch__V1__Rendition *r = g->job->renditions[i];
  if (r->node >= g->n_nodes)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "renditions[%zu]: node %u out of range (the graph has %zu nodes)", i,
                        r->node, g->n_nodes);
  if (!r->output)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "renditions[%zu]: output missing (a rendition names its CpuOutput)", i);
  for (size_t k = 0; k < i; k++)
    if (same_rendition(g->job->renditions[k], r))
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                          "renditions[%zu]: duplicate of renditions[%zu] (node %u, same output)", i,
                          k, r->node);
  ib_error e = {0};
  ib_status st = ib_output_check(r->output, g->nodes[r->node].shape.mode, IB_STAGE_VALIDATE, &e);
  if (st != IB_OK)
    return ib_error_set(err, st, IB_STAGE_VALIDATE, "renditions[%zu]: node %u: %s", i, r->node,
                        e.message);
  return IB_OK;
}

ib_status ib_renditions_check(ib_graph *g, ib_error *err) {
  const Imgbatch__V1__Job *j = g->job;
  size_t n = j->n_renditions;
  if (n == 0) return IB_OK;
  uint32_t v = j->contract_version ? j->contract_version : 1;
  if (v < IB_CONTRACT_RENDITIONS)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "renditions: need contract_version >= %u, the job says %u",
                        IB_CONTRACT_RENDITIONS, v);
  if (n > IB_MAX_RENDITIONS)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_VALIDATE,
                        "renditions: %zu exceed the limit of %u per job (IB_MAX_RENDITIONS)", n,
                        IB_MAX_RENDITIONS);
  if (j->output && j->output->target_case == IMGBATCH__V1__OUTPUT_SPEC__TARGET_GPU)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "renditions: output gpu (resident) cannot be combined with renditions, "
                        "which are encoded on the host");
  if (j->output)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "renditions: output is set too; a job with renditions names each "
                        "output in its rendition");
  for (size_t i = 0; i < n; i++) {
    ib_status st = check_one(g, i, err);
    if (st != IB_OK) return st;
  }
  /* Every rendition is a result: none is freed while the graph runs. */
  for (size_t i = 0; i < n; i++) g->nodes[j->renditions[i]->node].last_use = (unsigned)g->n_nodes;
  return IB_OK;
}
