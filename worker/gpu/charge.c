/* The CUDA backend's charge of one job (see charge.h and imgbatch.h
 * "Credits"): what ib_cuda_submit will take for it, range by range. */
#include "gpu/charge.h"

#include "gpu/cuda_backend.h"
#include "gpu/gplan.h"

static uint64_t up(uint64_t v) { return (v + IB_CUDA_ALIGN - 1) & ~(uint64_t)(IB_CUDA_ALIGN - 1); }

ib_status ib_cuda_charge(const ib_graph *g, ib_cuda_in_place_fn in_place, void *ctx,
                         uint64_t *gpu_bytes, uint64_t *host_bytes, ib_error *err) {
  ib_gplan p;
  ib_status st = ib_gplan_build(g, &p, err);
  if (st != IB_OK) return st;
  ib_cuda_charge_plan(g, &p, in_place, ctx, gpu_bytes, host_bytes);
  ib_gplan_free(&p);
  return IB_OK;
}

void ib_cuda_charge_plan(const ib_graph *g, const ib_gplan *p, ib_cuda_in_place_fn in_place,
                         void *ctx, uint64_t *gpu_bytes, uint64_t *host_bytes) {
  uint64_t dev = 0, host = 0;
  for (size_t i = 0; i < g->n_sources; i++) host += g->sources[i].len;
  /* Device block: every plan buffer (uploaded sources, stage outputs, blur
   * scratch, the terminal image). Pinned staging: a source not uploaded in
   * place is copied or decoded into the upload block first. */
  for (int b = 0; b < p->n_bufs; b++) {
    dev += up(p->bufs[b].bytes);
    int sn = p->bufs[b].source_node;
    if (sn >= 0 && !(in_place && in_place(ctx, g, g->nodes[sn].pb->source->index)))
      host += up(p->bufs[b].bytes);
  }
  /* Parameter blocks and descriptors: written in the pinned upload block,
   * copied to the same offsets of the device block. */
  uint64_t par = up((uint64_t)p->n_stages * sizeof(ib_gdesc));
  for (int k = 0; k < p->n_stages; k++)
    par += up(p->stages[k].chain.param_bytes + p->stages[k].extra_bytes);
  dev += par;
  host += par;
  /* The output's range of the download arena is aligned; the core charges
   * the image itself (held until delivered). */
  uint64_t out = ib_gplan_out_bytes(p);
  host += up(out) - out;
  *gpu_bytes = dev;
  *host_bytes = host;
}

ib_status ib_cuda_job_bytes(const ib_graph *g, uint64_t *gpu_bytes, uint64_t *host_bytes,
                            ib_error *err) {
  return ib_cuda_charge(g, NULL, NULL, gpu_bytes, host_bytes, err);
}
