/* Graphs that plan alike (graph_like.h). */
#include "gpu/graph_like.h"

#include <stdlib.h>
#include <string.h>

/* Two graphs whose nodes are equal on the wire (parse.c kept their bytes)
 * and in shape get equal device plans, equal parameter blocks and equal
 * charges (given the same rendition nodes, which last_use marks: gplan.h):
 * the staging pass copies an equal predecessor's parameter blocks
 * (a folded point table costs microseconds to build, the copy nothing; batches of
 * one operation over many images are the common case) and admission reuses
 * the last charge (ib_charge_memo). A graph without its wire bytes equals
 * none. */
bool ib_cuda_same_nodes(const ib_graph *g, const ib_graph *like) {
  if (!g->nodes_wire || !like->nodes_wire || g->n_nodes != like->n_nodes ||
      g->nodes_wire_len != like->nodes_wire_len ||
      memcmp(g->nodes_wire, like->nodes_wire, g->nodes_wire_len) != 0)
    return false;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ib_node *a = &g->nodes[i], *b = &like->nodes[i];
    /* last_use too: it marks rendition nodes (gplan.h), which plan apart. */
    if (a->op != b->op || a->last_use != b->last_use ||
        memcmp(&a->shape, &b->shape, sizeof a->shape) != 0)
      return false;
  }
  return true;
}

bool ib_cuda_like_keep(ib_graph *like, const ib_graph *g) {
  like->n_nodes = 0;
  like->nodes_wire_len = 0;
  uint8_t *w = realloc(like->nodes_wire, g->nodes_wire_len ? g->nodes_wire_len : 1);
  if (w) like->nodes_wire = w;
  ib_node *nd = realloc(like->nodes, (g->n_nodes ? g->n_nodes : 1) * sizeof *nd);
  if (nd) like->nodes = nd;
  if (!w || !nd || !g->nodes_wire) return false;
  memcpy(w, g->nodes_wire, g->nodes_wire_len);
  for (size_t i = 0; i < g->n_nodes; i++)
    nd[i] = (ib_node){
        .op = g->nodes[i].op, .shape = g->nodes[i].shape, .last_use = g->nodes[i].last_use};
  like->nodes_wire_len = g->nodes_wire_len;
  like->n_nodes = g->n_nodes;
  return true;
}

void ib_cuda_like_free(ib_graph *like) {
  free(like->nodes);
  free(like->nodes_wire);
  like->nodes = NULL;
  like->nodes_wire = NULL;
}
