/*
 * parse.h - serialized Job -> validated ib_graph (model/graph.h): the
 * variants of ib_graph_parse (imgbatch.h) the executor uses, and the node
 * validation they end with.
 */
#ifndef IB_PARSE_PARSE_H
#define IB_PARSE_PARSE_H

#include "model/graph.h"

/* Where a graph's unpacked Job lives: protobuf-c's allocator (NULL = the
 * heap) and a reference on the allocator's owner, which the graph drops
 * (unref(owner)) after freeing the Job, also when parsing fails. */
typedef struct ib_graph_memory {
  ProtobufCAllocator *alloc;
  void (*unref)(void *owner);
  void *owner;
} ib_graph_memory;

/* ib_graph_parse_in that takes `buf` (allocated through mem's allocator, or
 * malloc'd when mem has none) and keeps raw source pixels where they lie in
 * it (hollow.h) instead of copying them; buf is freed with the graph, or
 * before returning on failure. */
ib_status ib_graph_parse_buffer(uint8_t *buf, size_t len, const ib_graph_limits *limits,
                                const ib_graph_memory *mem, ib_graph **out, ib_key *key_on_error,
                                ib_error *err);

/* ib_graph_parse with the Job unpacked through `mem` (NULL = the heap). */
ib_status ib_graph_parse_in(const uint8_t *bytes, size_t len, const ib_graph_limits *limits,
                            const ib_graph_memory *mem, ib_graph **out, ib_key *key_on_error,
                            ib_error *err);

/* Builds graph nodes from job->nodes and validates them in order (shapes,
 * params, modes, cycles). Sources must already be filled in. */
ib_status ib_graph_validate(ib_graph *g, ib_error *err);

/* Checks Job.renditions against the validated nodes (renditions.c): the
 * contract version, the count, node indices, duplicates, each CpuOutput
 * against its node's mode, and that Job.output is absent; then keeps every
 * rendition node alive to the end of the run (last_use). */
ib_status ib_renditions_check(ib_graph *g, ib_error *err);

#endif
