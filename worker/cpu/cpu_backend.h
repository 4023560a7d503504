/* cpu_backend.h - the CPU reference backend: runs a validated graph node by
 * node with each row's cpu function (the same pixel math NVRTC compiles). */
#ifndef IB_CPU_BACKEND_H
#define IB_CPU_BACKEND_H

#include "cpu/blockcache.h"
#include "model/graph.h"

/* Executes `g`; on success `out` holds the last node's image (caller releases). */
ib_status ib_cpu_execute(const ib_graph *g, ib_image *out, ib_error *err);
/* A job's rendition images (backend.h ib_backend_job.renditions). */
typedef struct ib_cpu_renditions {
  ib_image *images;
  size_t n;
} ib_cpu_renditions;

/* The same, with a terminal image of IB_BLOCKCACHE_MIN bytes or more taken
 * from `bc` (given back there when the caller releases it). A graph with
 * renditions fills `renditions` (when not NULL) instead of `out`: one image
 * per rendition, in the Job's order; the caller releases them, on failure
 * too. */
ib_status ib_cpu_execute_cached(const ib_graph *g, ib_blockcache *bc, ib_image *out,
                                ib_cpu_renditions *renditions, ib_error *err);

/* True when node `i` is a raw source that ib_cpu_execute reads where its
 * bytes lie (the Job buffer) instead of copying them: every raw source node
 * but the terminal one and renditions (results must outlive the graph). The credits
 * charge such a node nothing beyond its source bytes. */
bool ib_cpu_source_borrowed(const ib_graph *g, size_t i);

/* The CPU backend's working set (backend.h host_working_set): the most
 * bytes alive at once while ib_cpu_execute runs `g`. */
uint64_t ib_cpu_working_set(const ib_graph *g);

#endif
