/* Graph -> device stages and buffers (see gplan.h). */
#include "gpu/gplan.h"
#include "ops/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t shape_bytes(const ib_shape *s) {
  return (size_t)s->width * s->height * ib_mode_bands(s->mode);
}

static int new_buf(ib_gplan *p, size_t bytes, int source_node) {
  p->bufs[p->n_bufs] = (ib_gbuf){bytes, source_node, 0};
  return p->n_bufs++;
}

void ib_gplan_free(ib_gplan *p) {
  free(p->stages); /* bufs lie in the same allocation */
  memset(p, 0, sizeof *p);
}

static ib_status oom(ib_error *err) {
  err->status = IB_INTERNAL;
  err->stage = IB_STAGE_ADMIT;
  snprintf(err->message, sizeof err->message, "backend cuda: out of memory while planning");
  return IB_INTERNAL;
}

/* Graphs up to this many nodes (every admitted one: 256 ops per job) plan
 * with their per-node scratch on the stack: a plan is built per job on the
 * driving thread, and three calloc/free pairs were a good part of it. */
#define STACK_NODES 256

ib_status ib_gplan_build(const ib_graph *g, ib_gplan *p, ib_error *err) {
  memset(p, 0, sizeof *p);
  size_t n = g->n_nodes;
  /* One allocation: the stages, not zeroed (each is cleared when it is
   * opened, and a job uses few of the n + 1, 1.7 KB each, it might), then
   * the buffers, zeroed (per node: output + maybe a scratch). */
  const size_t stage_bytes = (n + 1) * sizeof *p->stages, buf_bytes = (2 * n + 1) * sizeof *p->bufs;
  _Static_assert(sizeof(ib_gstage) % _Alignof(ib_gbuf) == 0, "buffers follow the stages aligned");
  _Static_assert(sizeof(ib_gbuf) % _Alignof(int) == 0, "node buffers follow the buffers aligned");
  /* ... then each node's buffer (node_buf), kept for the renditions. */
  p->stages = malloc(stage_bytes + buf_bytes + (n ? n : 1) * sizeof *p->node_buf);
  if (p->stages) {
    p->bufs = (ib_gbuf *)((char *)p->stages + stage_bytes);
    memset(p->bufs, 0, buf_bytes);
    p->node_buf = (int *)((char *)p->bufs + buf_bytes);
  }
  int stack_buf[STACK_NODES], stack_stage[STACK_NODES];
  unsigned stack_readers[STACK_NODES];
  const bool heap = n > STACK_NODES;
  int *node_buf = heap ? calloc(n, sizeof *node_buf) : stack_buf;
  int *node_stage = heap ? calloc(n, sizeof *node_stage) : stack_stage;
  unsigned *readers = heap ? calloc(n, sizeof *readers) : stack_readers;
  if (!heap) { /* zeroed as calloc would */
    memset(node_buf, 0, n * sizeof *node_buf);
    memset(node_stage, 0, n * sizeof *node_stage);
    memset(readers, 0, n * sizeof *readers);
  }
  ib_status st = IB_OK;
  if (!p->stages || !p->bufs || !node_buf || !node_stage || !readers) {
    st = oom(err);
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    for (unsigned k = 0; k < g->nodes[i].n_inputs; k++) readers[g->nodes[i].inputs[k]]++;
  /* A rendition node's image is downloaded: counted as one more reader, so
   * no later step fuses onto it (its stage ends with it, its buffer keeps
   * it). Chains of other nodes fuse as before. */
  for (size_t i = 0; i < n; i++)
    if (ib_gplan_rendition_node(g, i)) {
      readers[i]++;
      p->n_rendition_nodes++;
    }
  for (size_t i = 0; i < n; i++) {
    const ib_node *nd = &g->nodes[i];
    node_stage[i] = -1;
    if (nd->op->n_inputs == 0) {
      node_buf[i] = new_buf(p, shape_bytes(&nd->shape), (int)i);
      continue;
    }
    int in_modes[2] = {0, 0};
    for (unsigned k = 0; k < nd->n_inputs && k < 2; k++)
      in_modes[k] = (int)g->nodes[nd->inputs[k]].shape.mode;
    ib_gstep step;
    st = ib_gstep_for_node(nd, in_modes, &step, err);
    if (st != IB_OK) goto out;
    int in0 = (int)nd->inputs[0], sidx = node_stage[in0];
    if (nd->n_inputs == 1 && ib_gstep_fusable(&step) && sidx >= 0 && readers[in0] == 1 &&
        !ib_gchain_passes(&p->stages[sidx].chain)) {
      ib_gstage *s = &p->stages[sidx];
      int k = s->chain.n_steps;
      ib_gstep *lastp = &s->chain.steps[k - 1];
      if (step.dev->role == IB_DEV_TABLE && lastp->dev->role == IB_DEV_TABLE &&
          lastp->mode_out == step.mode_in && s->n_fold[k - 1] < IB_FOLD_MAX) {
        /* Table after table: compose them into one lookup. */
        s->fold[k - 1][s->n_fold[k - 1]++] = (int)i;
        node_stage[i] = sidx;
        node_buf[i] = s->out_buf;
        continue;
      }
      if (ib_gchain_push(&s->chain, &step)) {
        s->nodes[k] = (int)i;
        s->fold[k][0] = (int)i;
        s->n_fold[k] = 1;
        p->bufs[s->out_buf].bytes = shape_bytes(&nd->shape);
        s->width = nd->shape.width;
        s->height = nd->shape.height;
        node_stage[i] = sidx;
        node_buf[i] = s->out_buf;
        continue;
      }
    }
    ib_gstage *s = &p->stages[p->n_stages];
    memset(s, 0, sizeof *s);
    ib_gchain_push(&s->chain, &step);
    s->nodes[0] = (int)i;
    s->fold[0][0] = (int)i;
    s->n_fold[0] = 1;
    for (unsigned k = 0; k < nd->n_inputs && k < 2; k++) {
      s->in_buf[k] = node_buf[nd->inputs[k]];
      s->in_width[k] = g->nodes[nd->inputs[k]].shape.width;
      s->in_height[k] = g->nodes[nd->inputs[k]].shape.height;
    }
    s->extra_bytes = ib_gstep_extra_bytes(&step, nd);
    const size_t scratch = ib_gstep_scratch_bytes(&step, nd, &g->nodes[nd->inputs[0]].shape);
    s->scratch_buf = scratch ? new_buf(p, scratch, -1) : -1;
    if (s->chain.n_inputs == 2) s->chain.mode_in1 = in_modes[1];
    s->out_buf = new_buf(p, shape_bytes(&nd->shape), -1);
    s->width = nd->shape.width;
    s->height = nd->shape.height;
    node_stage[i] = p->n_stages++;
    node_buf[i] = s->out_buf;
  }
  {
    const ib_node *last = &g->nodes[n - 1];
    int ob = node_buf[n - 1];
    if (last->op->n_inputs == 0) {
      /* A graph that is only its source still returns a fresh output buffer. */
      ib_gstage *s = &p->stages[p->n_stages];
      memset(s, 0, sizeof *s);
      ib_gstep cp = {
          .dev = &ib_dev_copy, .mode_in = (int)last->shape.mode, .mode_out = (int)last->shape.mode};
      ib_gchain_push(&s->chain, &cp);
      s->nodes[0] = (int)(n - 1);
      s->in_buf[0] = ob;
      s->in_width[0] = last->shape.width;
      s->in_height[0] = last->shape.height;
      s->scratch_buf = -1;
      s->width = last->shape.width;
      s->height = last->shape.height;
      s->out_buf = ob = new_buf(p, shape_bytes(&last->shape), -1);
      p->n_stages++;
    }
    p->out_buf = ob;
    /* With renditions the terminal is one more device buffer (downloaded
     * only when it is a rendition itself). */
    p->bufs[ob].is_output = p->n_rendition_nodes == 0;
    p->out_shape = last->shape;
    memcpy(p->node_buf, node_buf, n * sizeof *node_buf);
  }
out:
  if (heap) {
    free(node_buf);
    free(node_stage);
    free(readers);
  }
  if (st != IB_OK) ib_gplan_free(p);
  return st;
}

size_t ib_gplan_out_bytes(const ib_gplan *p) { return p->bufs[p->out_buf].bytes; }

void ib_gstage_fill(const ib_gstage *s, const ib_graph *g, uint8_t *block) {
  for (int k = 0; k < s->chain.n_steps; k++) {
    const ib_gstep *st = &s->chain.steps[k];
    if (st->dev->role == IB_DEV_TABLE) {
      const ib_node *nodes[IB_FOLD_MAX];
      for (int f = 0; f < s->n_fold[k]; f++) nodes[f] = &g->nodes[s->fold[k][f]];
      ib_gtable_fold(st, nodes, s->n_fold[k], block + st->param_off);
    } else {
      ib_gstep_fill(st, &g->nodes[s->nodes[k]], block);
    }
  }
  if (s->extra_bytes) {
    const ib_node *head = &g->nodes[s->nodes[0]];
    ib_gstep_fill_extra(&s->chain.steps[0], head, &g->nodes[head->inputs[0]].shape,
                        block + s->chain.param_bytes);
  }
}
