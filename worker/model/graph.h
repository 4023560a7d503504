/*
 * graph.h - the job graph model (internal), the bottom layer every other
 * folder includes: sources, nodes and their shapes. Nodes keep a pointer to
 * their protobuf message, so op rows read their typed params straight from
 * the wire struct; the graph owns the unpacked Job. Built by parse/
 * (parse.h); a node's op row is ops/op.h's.
 */
#ifndef IB_MODEL_GRAPH_H
#define IB_MODEL_GRAPH_H

#include "imgbatch.h"
#include "model/shape.h"
#include "proto/imgbatch.pb-c.h"

/* Raw sources a graph may read in place from its Job buffer: one per
 * source a Job may carry (parse/parse.c IB_MAX_SOURCES; equal to
 * IB_HOLLOW_MAX_SPANS, asserted there). */
#define IB_GRAPH_MAX_BORROWED 64

struct ib_op_desc;

typedef struct ib_source {
  const Imgbatch__V1__Source *pb;
  ib_shape shape;       /* from the header (encoded) or the message (raw/fill) */
  const uint8_t *bytes; /* encoded or raw bytes (borrowed from the job or file_bytes) */
  size_t len;
  uint8_t *file_bytes; /* owned: a path source read at parse time */
  /* ImageOps.exif_transpose's orientation of an encoded source read at
   * parse time (codec/metadata.h): 1..8, -1 for an EXIF header Pillow
   * raises on; 0 for raw and fill sources (no metadata). */
  int orientation;
} ib_source;

typedef struct ib_node {
  const Imgbatch__V1__Node *pb;
  const struct ib_op_desc *op; /* ops/op.h */
  ib_graph *graph;
  unsigned n_inputs;
  uint32_t inputs[2];
  ib_shape shape;    /* output shape, set by validation */
  unsigned last_use; /* index of the last node reading this one (for freeing) */
} ib_node;

struct ib_graph {
  Imgbatch__V1__Job *job;
  ib_key key;
  ib_source *sources;
  size_t n_sources;
  ib_node *nodes;
  size_t n_nodes;
  uint64_t param_bytes;       /* sum over nodes */
  uint64_t peak_bytes;        /* conservative working set: all node outputs alive */
  uint32_t max_side;          /* every node's sides (ib_graph_limits.max_side, resolved) */
  ProtobufCAllocator *alloc;  /* the Job's memory (NULL: the heap) */
  void (*unref)(void *owner); /* called once the Job is freed (may be NULL) */
  void *owner;
  /* What `job` was unpacked with: `alloc`, or - for a hollowed Job, whose
   * pixels stay in `buffer`, and wherever alloc is the heap - a bump arena
   * (parse/job_arena.h) freed in one piece: its small parts gain nothing
   * from alloc (the CUDA backend's pinned allocator takes its lock for every
   * free, to tell its blocks from the heap's). */
  ProtobufCAllocator *job_alloc;
  ProtobufCAllocator arena_alloc;
  struct ib_job_arena *arena;
  uint8_t *buffer; /* ib_graph_parse_buffer: the Job's bytes, owned (freed through alloc) */
  size_t buffer_len;
  /* The Job's node fields as they were on the wire, then, in a graph with
   * an exif_transpose node, one orientation byte per source (NULL when
   * unavailable):
   * two graphs with equal bytes here and equal node shapes run the same
   * device plan with the same parameters (the CUDA backend reuses them). */
  uint8_t *nodes_wire;
  size_t nodes_wire_len;
  Imgbatch__V1__RawImage *borrowed[IB_GRAPH_MAX_BORROWED]; /* data points into buffer */
  size_t n_borrowed;
};

/* True when `p` lies in the graph's Job buffer (ib_graph_parse_buffer). */
bool ib_graph_in_buffer(const ib_graph *g, const void *p);
/* The source bytes that lie in the Job buffer (raw and encoded sources of
 * a Job parsed in place; not path sources, nor Jobs parsed by copy). */
uint64_t ib_graph_bytes_in_buffer(const ib_graph *g);
/* Hands the Job buffer to the caller, who frees it through g->alloc (its
 * pixels may have been overwritten: a backend downloaded the output into
 * it); the graph then frees no buffer. */
uint8_t *ib_graph_take_buffer(ib_graph *g);

#endif
