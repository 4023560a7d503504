/* graph.c - what a graph answers about itself (model/graph.h). */
#include "model/graph.h"

const ib_key *ib_graph_key(const ib_graph *g) { return &g->key; }

bool ib_graph_in_buffer(const ib_graph *g, const void *p) {
  const uint8_t *b = g->buffer, *q = p;
  return b && q >= b && q < b + g->buffer_len;
}

uint64_t ib_graph_bytes_in_buffer(const ib_graph *g) {
  uint64_t n = 0;
  for (size_t i = 0; i < g->n_sources; i++)
    if (ib_graph_in_buffer(g, g->sources[i].bytes)) n += g->sources[i].len;
  return n;
}

uint8_t *ib_graph_take_buffer(ib_graph *g) {
  uint8_t *b = g->buffer;
  g->buffer = NULL;
  return b;
}
