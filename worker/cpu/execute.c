/* Node-by-node CPU execution; an intermediate is released right after its
 * last reader ran, so the working set stays near the graph's live width.
 * Raw sources are read where they lie (no copy) unless they are the
 * result. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "ops/op.h"

bool ib_cpu_source_borrowed(const ib_graph *g, size_t i) {
  const ib_node *n = &g->nodes[i];
  /* The terminal and every rendition become results, which own their pixels. */
  if (n->op->n_inputs != 0 || i + 1 == g->n_nodes || n->last_use == g->n_nodes) return false;
  const ib_source *s = &g->sources[n->pb->source->index];
  /* parse.c checked that raw bytes are exactly the shape's */
  return s->pb->kind_case == IMGBATCH__V1__SOURCE__KIND_RAW && s->len > 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static uint64_t shape_bytes(const ib_shape *s) {
  return (uint64_t)s->width * s->height * ib_mode_bands(s->mode);
}

/* The most bytes alive at once when nodes run in order (ib_cpu_execute):
 * every node output not yet past its last reader (outputs nobody reads
 * stay alive to the end; a node's inputs are still alive while its output
 * is written) plus the running node's own scratch (op param_bytes: blur's
 * transpose image, resize's tables), which the op frees before the next
 * node runs. A raw source the CPU reads where
 * it lies (ib_cpu_source_borrowed) has no output of its own: its bytes are
 * the source bytes, charged once as such. */
uint64_t ib_cpu_working_set(const ib_graph *g) {
  uint64_t live = 0, peak = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ib_node *n = &g->nodes[i];
    uint64_t own = ib_cpu_source_borrowed(g, i) ? 0 : shape_bytes(&n->shape);
    live = sat_add(live, own);
    uint64_t now = sat_add(live, n->op->param_bytes(n));
    if (now > peak) peak = now;
    for (unsigned k = 0; k < n->n_inputs; k++) {
      uint32_t in = n->inputs[k];
      bool seen = k == 1 && n->inputs[0] == in; /* the same node read twice frees once */
      if (!seen && g->nodes[in].last_use == i && !ib_cpu_source_borrowed(g, in))
        live -= shape_bytes(&g->nodes[in].shape);
    }
  }
  return peak;
}

/* A borrowed source's pixels belong to the graph. */
static void borrowed_free(void *ctx, uint8_t *data) {
  (void)ctx;
  (void)data;
}

static void cached_free(void *ctx, uint8_t *data) { ib_blockcache_put(ctx, data); }

/* Whether the node's cpu function writes every byte of its output when it
 * succeeds, so its image needs no clearing first: a source (raw pixels
 * copied whole, a fill written to every pixel, a decode into the whole
 * image - the GPU path decodes into uncleared pinned staging too) and
 * copy. A failed node's image is never read. */
static bool writes_every_byte(const ib_node *n) {
  const Imgbatch__V1__Node__OpCase c = n->op->op_case;
  return c == IMGBATCH__V1__NODE__OP_SOURCE || c == IMGBATCH__V1__NODE__OP_COPY;
}

/* The node's image, zeroed as ib_image_alloc's (ops rely on it: crop's and
 * resize's fill); the terminal one from the cache when large, cleared only
 * when the op may leave bytes unwritten (a 4096^2 RGBA result copied from
 * its source no longer pays a 64 MiB memset first). */
static ib_status node_alloc(ib_image *im, const ib_node *node, ib_blockcache *bc) {
  const ib_shape *sh = &node->shape;
  uint64_t n = shape_bytes(sh);
  if (!bc || n < IB_BLOCKCACHE_MIN || n > SIZE_MAX)
    return ib_image_alloc(im, sh->mode, sh->width, sh->height);
  uint8_t *p = writes_every_byte(node) ? ib_blockcache_get(bc, (size_t)n)
                                       : ib_blockcache_get_zeroed(bc, (size_t)n);
  if (!p) return IB_INTERNAL;
  *im = (ib_image){.mode = sh->mode,
                   .width = sh->width,
                   .height = sh->height,
                   .data = p,
                   .free_fn = cached_free,
                   .free_ctx = bc};
  return IB_OK;
}

ib_status ib_cpu_execute(const ib_graph *g, ib_image *out, ib_error *err) {
  return ib_cpu_execute_cached(g, NULL, out, NULL, err);
}

/* One image per rendition, in the Job's order: a node's image moves to its
 * first rendition, later renditions of the same node get a copy. */
static ib_status take_renditions(const ib_graph *g, ib_image *ims, ib_cpu_renditions *r,
                                 ib_error *err) {
  const size_t n = g->job->n_renditions;
  ib_image *out = calloc(n, sizeof *out);
  if (!out) return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "renditions: out of memory");
  ib_status st = IB_OK;
  for (size_t i = 0; i < n && st == IB_OK; i++) {
    ib_image *src = &ims[g->job->renditions[i]->node];
    size_t k = 0;
    while (k < i && g->job->renditions[k]->node != g->job->renditions[i]->node) k++;
    if (k == i) {
      out[i] = *src;
      src->data = NULL;
    } else if ((st = ib_image_alloc(&out[i], out[k].mode, out[k].width, out[k].height)) == IB_OK) {
      memcpy(out[i].data, out[k].data, ib_image_bytes(&out[k]));
    } else {
      ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "renditions[%zu]: out of memory", i);
    }
  }
  r->images = out;
  r->n = n;
  return st;
}

ib_status ib_cpu_execute_cached(const ib_graph *g, ib_blockcache *bc, ib_image *out,
                                ib_cpu_renditions *renditions, ib_error *err) {
  ib_image *ims = calloc(g->n_nodes, sizeof *ims);
  if (!ims) return IB_INTERNAL;
  ib_status st = IB_OK;
  size_t i;
  for (i = 0; i < g->n_nodes && st == IB_OK; i++) {
    const ib_node *n = &g->nodes[i];
    if (ib_cpu_source_borrowed(g, i)) { /* ops never write their inputs */
      ims[i] = (ib_image){.mode = n->shape.mode,
                          .width = n->shape.width,
                          .height = n->shape.height,
                          .data = (uint8_t *)g->sources[n->pb->source->index].bytes,
                          .free_fn = borrowed_free};
      continue;
    }
    if (node_alloc(&ims[i], n, i + 1 == g->n_nodes ? bc : NULL) != IB_OK) {
      snprintf(err->message, sizeof err->message, "node %zu: op %s: out of memory", i, n->op->name);
      err->status = st = IB_INTERNAL;
      err->stage = IB_STAGE_EXECUTE;
      break;
    }
    const ib_image *in[2] = {NULL, NULL};
    for (unsigned k = 0; k < n->n_inputs; k++) in[k] = &ims[n->inputs[k]];
    st = n->op->cpu(n, in, &ims[i], err);
    if (st != IB_OK) {
      if (err->stage == IB_STAGE_NONE) /* a row that named none: where it ran */
        err->stage = n->op->n_inputs == 0 ? IB_STAGE_DECODE : IB_STAGE_EXECUTE;
      break;
    }
    for (unsigned k = 0; k < n->n_inputs; k++)
      if (g->nodes[n->inputs[k]].last_use == i) ib_image_release(&ims[n->inputs[k]]);
  }
  if (st == IB_OK && g->job->n_renditions && renditions)
    st = take_renditions(g, ims, renditions, err);
  else if (st == IB_OK) {
    *out = ims[g->n_nodes - 1];
    ims[g->n_nodes - 1].data = NULL;
  }
  for (size_t k = 0; k < g->n_nodes; k++) ib_image_release(&ims[k]);
  free(ims);
  return st;
}
