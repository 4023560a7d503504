/*
 * gplan.h - how one job's graph runs on the device: its stages (each one
 * generated kernel launch: a fused chain of per-pixel steps) and its device
 * buffers (one per source upload and one per stage output). A pointwise node
 * joins the stage that produced its only input when that input has no other
 * reader, so a chain of pointwise ops reads once and writes once with no
 * intermediate buffers. Heads (ops/op_dev.h: two-input steps, gathers,
 * reductions, passes) start a stage. Ops without a device step reject the job at admission
 * (IB_UNSUPPORTED naming op and mode): no CPU fallback, no readback.
 */
#ifndef IB_GPU_GPLAN_H
#define IB_GPU_GPLAN_H

#include "gpu/codegen.h"
#include "model/graph.h"

#define IB_FOLD_MAX 16

typedef struct ib_gstage {
  ib_gchain chain;
  int nodes[IB_CHAIN_MAX_STEPS]; /* graph node of each step */
  /* A table step is a folded run of table nodes (IB_DEV_TABLE): the
   * nodes, in order, whose composition its table holds
   * (fold[k][0] == nodes[k]). */
  int fold[IB_CHAIN_MAX_STEPS][IB_FOLD_MAX];
  int n_fold[IB_CHAIN_MAX_STEPS];
  int in_buf[2];
  int out_buf;
  uint32_t in_width[2]; /* row length of each input, pixels */
  uint32_t in_height[2];
  size_t extra_bytes;     /* after the shared parameter block (the head's tables) */
  int scratch_buf;        /* >= 0: the head's scratch (ib_dev_passes.scratch_bytes), as in1 */
  uint32_t width, height; /* output shape */
} ib_gstage;

typedef struct ib_gbuf {
  size_t bytes;
  int source_node; /* >= 0: filled by uploading this source node */
  int is_output;
} ib_gbuf;

typedef struct ib_gplan {
  ib_gstage *stages;
  int n_stages;
  ib_gbuf *bufs;
  int n_bufs;
  int out_buf;
  ib_shape out_shape;
  /* Rendition nodes (ib_gplan_rendition_node): how many the graph has, and
   * per graph node the buffer holding its image once the plan ran (valid
   * for every rendition node: none is fused into a later step, so its
   * stage ends with it; a source's is its upload buffer). With renditions
   * no buffer is_output: each rendition buffer is downloaded by its own
   * copy from the device block (cuda_layout.c place_renditions). */
  int n_rendition_nodes;
  int *node_buf;
} ib_gplan;

/* Node i is named by a Job.rendition: validation (parse/renditions.c) kept
 * it alive to the end of the run (last_use = n_nodes), which no other node
 * is. A property of the graph's nodes, so graphs that plan alike
 * (graph_like.h, which compares last_use) agree on it. */
static inline bool ib_gplan_rendition_node(const ib_graph *g, size_t i) {
  return g->nodes[i].last_use == (unsigned)g->n_nodes;
}

ib_status ib_gplan_build(const ib_graph *g, ib_gplan *p, ib_error *err);
/* Writes a stage's per-job parameter block (zeroed by the caller). */
void ib_gstage_fill(const ib_gstage *s, const ib_graph *g, uint8_t *block);
size_t ib_gplan_out_bytes(const ib_gplan *p);
void ib_gplan_free(ib_gplan *p);

#endif
