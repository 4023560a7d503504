/*
 * graph_like.h - whether two graphs plan alike on the device, and the copy
 * of a graph that such a question is asked against later. A graph whose
 * nodes equal a kept one's on the wire and in shape gets the same device
 * plan, parameter blocks and charge, so the staging pass, the tier memo and
 * the charge memo (charge.h) all reuse what the kept graph cost. Pure
 * compares on the graph model: no device and no backend state.
 */
#ifndef IB_GPU_GRAPH_LIKE_H
#define IB_GPU_GRAPH_LIKE_H

#include <stdbool.h>

#include "model/graph.h"

/* True when g's nodes equal like's on the wire and in op, shape and
 * last_use (rendition nodes: gplan.h); a graph
 * without its nodes' wire bytes equals none. */
bool ib_cuda_same_nodes(const ib_graph *g, const ib_graph *like);
/* Keeps in `like` what ib_cuda_same_nodes compares of `g` (its nodes' wire
 * bytes, ops, shapes and last uses); false when out of memory (like then equals
 * nothing until kept again). ib_cuda_like_free frees it. */
bool ib_cuda_like_keep(ib_graph *like, const ib_graph *g);
void ib_cuda_like_free(ib_graph *like);

#endif
