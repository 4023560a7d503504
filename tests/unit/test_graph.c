/* Graph parsing and validation: every rejection names what was wrong. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/graph.h"

static uint8_t raw_px[IB_DEFAULT_MAX_SIDE + 1];

/* A hand-built Job and its source in one block (the Source's oneof shares
 * storage, so the RawImage must not be reached through it to be freed). */
typedef struct job_mem {
  Imgbatch__V1__Job job; /* first: the block's address */
  Imgbatch__V1__Source src;
  Imgbatch__V1__RawImage raw;
} job_mem;

static Imgbatch__V1__Job *job_new(const char *mode, uint32_t w, uint32_t h, size_t nbytes) {
  job_mem *m = calloc(1, sizeof *m);
  Imgbatch__V1__Job *j = &m->job;
  imgbatch__v1__job__init(j);
  Imgbatch__V1__Source *s = &m->src;
  imgbatch__v1__source__init(s);
  Imgbatch__V1__RawImage *r = &m->raw;
  imgbatch__v1__raw_image__init(r);
  r->mode = (char *)mode;
  r->width = w;
  r->height = h;
  r->data.data = raw_px;
  r->data.len = nbytes;
  s->kind_case = IMGBATCH__V1__SOURCE__KIND_RAW;
  s->raw = r;
  j->source = s;
  return j;
}

static Imgbatch__V1__Node *add_node(Imgbatch__V1__Job *j, Imgbatch__V1__Node__OpCase c) {
  Imgbatch__V1__Node *n = calloc(1, sizeof *n);
  imgbatch__v1__node__init(n);
  n->op_case = c;
  j->nodes = realloc(j->nodes, (j->n_nodes + 1) * sizeof *j->nodes);
  j->nodes[j->n_nodes++] = n;
  if (c == IMGBATCH__V1__NODE__OP_SOURCE) {
    n->source = calloc(1, sizeof *n->source);
    imgbatch__v1__source_op__init(n->source);
  } else if (c == IMGBATCH__V1__NODE__OP_COPY) {
    n->copy = calloc(1, sizeof *n->copy);
    imgbatch__v1__copy_op__init(n->copy);
  }
  return n;
}

static void link_input(Imgbatch__V1__Node *n, uint32_t from) {
  n->inputs = realloc(n->inputs, (n->n_inputs + 1) * sizeof *n->inputs);
  n->inputs[n->n_inputs++] = from;
}

static void job_free(Imgbatch__V1__Job *j) {
  for (size_t i = 0; i < j->n_nodes; i++) {
    Imgbatch__V1__Node *n = j->nodes[i];
    if (n->op_case == IMGBATCH__V1__NODE__OP_SOURCE) free(n->source);
    if (n->op_case == IMGBATCH__V1__NODE__OP_COPY) free(n->copy);
    free(n->inputs);
    free(n);
  }
  free(j->nodes);
  free(j); /* the job_mem block */
}

/* Packs, frees the hand-built job, parses. */
static ib_status parse_with(Imgbatch__V1__Job *j, const ib_graph_limits *lim, ib_graph **g,
                            ib_error *err) {
  size_t len = imgbatch__v1__job__get_packed_size(j);
  uint8_t *buf = malloc(len + 1);
  imgbatch__v1__job__pack(j, buf);
  job_free(j);
  ib_status st = ib_graph_parse(buf, len, lim, g, NULL, err);
  free(buf);
  return st;
}

static ib_status parse(Imgbatch__V1__Job *j, ib_graph **g, ib_error *err) {
  return parse_with(j, NULL, g, err);
}

Test(graph, garbage_bytes_are_invalid_at_parse) {
  ib_graph *g = NULL;
  ib_error err = {0};
  const uint8_t junk[] = {0x0f, 0xff, 0x01};
  cr_assert_eq(ib_graph_parse(junk, sizeof junk, NULL, &g, NULL, &err), IB_INVALID);
  cr_assert_eq(err.stage, IB_STAGE_PARSE);
  cr_assert_null(g);
}

Test(graph, source_then_copy_validates_with_shape) {
  Imgbatch__V1__Job *j = job_new("RGB", 4, 3, 36);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  link_input(add_node(j, IMGBATCH__V1__NODE__OP_COPY), 0);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(parse(j, &g, &err), IB_OK, "%s", err.message);
  cr_assert_eq(g->nodes[1].shape.mode, IB_MODE_RGB);
  cr_assert_eq(g->nodes[1].shape.width, 4);
  ib_graph_free(g);
}

Test(graph, self_reference_is_a_cycle) {
  Imgbatch__V1__Job *j = job_new("L", 2, 2, 4);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  link_input(add_node(j, IMGBATCH__V1__NODE__OP_COPY), 1);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(parse(j, &g, &err), IB_INVALID);
  cr_assert(strstr(err.message, "cycle"), "%s", err.message);
}

Test(graph, unadmitted_mode_is_unsupported_and_named) {
  Imgbatch__V1__Job *j = job_new("P", 2, 2, 4);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(parse(j, &g, &err), IB_UNSUPPORTED);
  cr_assert(strstr(err.message, "'P'"), "%s", err.message);
}

Test(graph, raw_byte_count_must_match_shape) {
  Imgbatch__V1__Job *j = job_new("RGBA", 3, 3, 35);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(parse(j, &g, &err), IB_INVALID);
  cr_assert(strstr(err.message, "36 bytes"), "%s", err.message);
}

Test(graph, more_than_256_ops_is_a_limit) {
  Imgbatch__V1__Job *j = job_new("L", 1, 1, 1);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  for (uint32_t i = 1; i <= 256; i++) link_input(add_node(j, IMGBATCH__V1__NODE__OP_COPY), i - 1);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(parse(j, &g, &err), IB_LIMIT);
}

Test(graph, sides_over_the_default_max_side_are_a_limit_naming_size_and_bound) {
  Imgbatch__V1__Job *j = job_new("L", IB_DEFAULT_MAX_SIDE + 1, 1, IB_DEFAULT_MAX_SIDE + 1);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(parse(j, &g, &err), IB_LIMIT);
  cr_expect(strstr(err.message, "16385x1") && strstr(err.message, "maximum side 16384") &&
                strstr(err.message, "--max-side"),
            "%s", err.message);
}

Test(graph, max_side_is_the_callers_bound_for_sources_and_every_node) {
  ib_graph *g = NULL;
  ib_error err = {0};
  Imgbatch__V1__Job *j = job_new("L", 100, 1, 100);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  cr_assert_eq(parse_with(j, &(ib_graph_limits){.max_side = 99}, &g, &err), IB_LIMIT);
  cr_expect(strstr(err.message, "100x1") && strstr(err.message, "maximum side 99"), "%s",
            err.message);
  j = job_new("L", 100, 1, 100);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  cr_assert_eq(parse_with(j, &(ib_graph_limits){.max_side = 100}, &g, &err), IB_OK, "%s",
               err.message);
  ib_graph_free(g);
  /* A node past the bound though its source is inside it: expand by one. */
  Imgbatch__V1__ExpandOp ex = IMGBATCH__V1__EXPAND_OP__INIT;
  ex.right = 1;
  j = job_new("L", 100, 1, 100);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  Imgbatch__V1__Node *n = add_node(j, IMGBATCH__V1__NODE__OP_EXPAND);
  n->expand = &ex;
  link_input(n, 0);
  cr_assert_eq(parse_with(j, &(ib_graph_limits){.max_side = 100}, &g, &err), IB_LIMIT);
  cr_expect(strstr(err.message, "101") && strstr(err.message, "maximum side 100"), "%s",
            err.message);
}

Test(graph, max_side_past_the_limit_is_invalid_naming_the_range) {
  Imgbatch__V1__Job *j = job_new("L", 1, 1, 1);
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(parse_with(j, &(ib_graph_limits){.max_side = IB_MAX_SIDE_LIMIT + 1}, &g, &err),
               IB_INVALID);
  cr_expect(strstr(err.message, "1..65535") != NULL, "%s", err.message);
}

Test(graph, path_sources_cannot_escape_the_root) {
  Imgbatch__V1__Job *j = job_new("L", 1, 1, 1);
  j->source->kind_case = IMGBATCH__V1__SOURCE__KIND_PATH;
  j->source->path = "../etc/passwd";
  add_node(j, IMGBATCH__V1__NODE__OP_SOURCE);
  size_t len = imgbatch__v1__job__get_packed_size(j);
  uint8_t *buf = malloc(len);
  imgbatch__v1__job__pack(j, buf);
  job_free(j);
  ib_graph_limits lim = {.source_root = "/tmp"};
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_graph_parse(buf, len, &lim, &g, NULL, &err), IB_INVALID);
  cr_assert(strstr(err.message, "source root"), "%s", err.message);
  free(buf);
}
