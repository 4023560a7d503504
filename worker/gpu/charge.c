/* The CUDA backend's charge of one job (see charge.h and docs/credits.md):
 * what ib_cuda_submit will take for it, range by range. */
#include "gpu/charge.h"

#include "gpu/gplan.h"
#include "gpu/graph_like.h"

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
  /* Device block: every plan buffer (uploaded sources, stage outputs,
   * multi-pass heads' scratch, the terminal image). Pinned staging: a source not uploaded in
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
   * the image itself (held until delivered). Renditions likewise: each is
   * an aligned range of the submission's rendition block, lent to the
   * result (docs/credits.md), so only the alignment is working bytes. */
  if (p->n_rendition_nodes) {
    for (size_t i = 0; i < g->n_nodes; i++)
      if (ib_gplan_rendition_node(g, i)) {
        const ib_shape *sh = &g->nodes[i].shape;
        const uint64_t b = (uint64_t)sh->width * sh->height * ib_mode_bands(sh->mode);
        host += up(b) - b;
      }
  } else {
    uint64_t out = ib_gplan_out_bytes(p);
    host += up(out) - out;
  }
  *gpu_bytes = dev;
  *host_bytes = host;
}

/* The entry whose graph equals g's with the same sources in place; NULL
 * when none does. */
static ib_charge_memo_entry *memo_find(ib_charge_memo *m, const ib_graph *g, uint64_t in_place) {
  ib_charge_memo_entry *e = m->last;
  if (e && e->valid && e->in_place == in_place && ib_cuda_same_nodes(g, &e->like)) return e;
  for (int i = 0; i < IB_CHARGE_MEMO_GRAPHS; i++) {
    e = &m->g[i];
    if (e->valid && e->in_place == in_place && ib_cuda_same_nodes(g, &e->like)) return e;
  }
  return NULL;
}

/* Keeps g's charge in place of an empty or the least recently used entry. */
static void memo_keep(ib_charge_memo *m, const ib_graph *g, uint64_t in_place, uint64_t gpu,
                      uint64_t host_plan) {
  ib_charge_memo_entry *e = &m->g[0];
  for (int i = 0; i < IB_CHARGE_MEMO_GRAPHS && e->valid; i++)
    if (!m->g[i].valid || m->g[i].used < e->used) e = &m->g[i];
  e->valid = ib_cuda_like_keep(&e->like, g); /* out of memory: no memo this time */
  e->in_place = in_place;
  e->gpu = gpu;
  e->host_plan = host_plan;
  e->used = ++m->clock;
  m->last = e;
}

ib_status ib_cuda_charge_memo(ib_charge_memo *m, const ib_graph *g, ib_cuda_in_place_fn in_place,
                              ib_cuda_planned_fn planned, void *ctx, uint64_t *gpu_bytes,
                              uint64_t *host_bytes, ib_error *err) {
  uint64_t src = 0, bits = 0;
  for (size_t i = 0; i < g->n_sources; i++) {
    src += g->sources[i].len;
    if (i < 64 && in_place && in_place(ctx, g, i)) bits |= 1ull << i;
  }
  const bool cacheable = g->n_sources <= 64 && g->nodes_wire;
  ib_charge_memo_entry *e = cacheable ? memo_find(m, g, bits) : NULL;
  if (e) {
    e->used = ++m->clock;
    m->last = e;
    *gpu_bytes = e->gpu;
    *host_bytes = src + e->host_plan;
    return IB_OK;
  }
  m->plans++;
  const ib_gplan *p = planned ? planned(ctx, g) : NULL;
  ib_status st = IB_OK;
  if (p)
    ib_cuda_charge_plan(g, p, in_place, ctx, gpu_bytes, host_bytes);
  else
    st = ib_cuda_charge(g, in_place, ctx, gpu_bytes, host_bytes, err);
  if (st == IB_OK && cacheable) memo_keep(m, g, bits, *gpu_bytes, *host_bytes - src);
  return st;
}

void ib_charge_memo_free(ib_charge_memo *m) {
  for (int i = 0; i < IB_CHARGE_MEMO_GRAPHS; i++) ib_cuda_like_free(&m->g[i].like);
  *m = (ib_charge_memo){0};
}
