/*
 * Zero-copy ingest (worker/parse/hollow.c, ib_graph_parse_buffer): a Job
 * parsed in place must be the same graph as the copying unpack of the same
 * bytes - same sources byte for byte (large raw pixels pointing into the
 * buffer), same CPU output, same verdict on broken bytes - for jobs with
 * several sources, small and large, and for randomly corrupted messages.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "imgbatch.h"
#include "model/graph.h"
#include "parse/hollow.h"
#include "parse/parse.h"

typedef struct rng {
  uint64_t s;
} rng;
static uint32_t next(rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return (uint32_t)(r->s >> 11);
}

/* A Job with n_src raw sources of random modes and sizes (some small, some
 * large), a SourceOp per source and a copy of a random one last, a string
 * key and a correlation id around them on the wire. */
static uint8_t *build(rng *r, size_t n_src, size_t *len) {
  static const char *modes[] = {"L", "LA", "RGB", "RGBA", "RGBX", "CMYK"};
  Imgbatch__V1__Job job;
  imgbatch__v1__job__init(&job);
  job.input_key_case = IMGBATCH__V1__JOB__INPUT_KEY_KEY_STRING;
  job.key_string = "k";
  job.correlation_present_case = IMGBATCH__V1__JOB__CORRELATION_PRESENT_CORRELATION_ID;
  job.correlation_id = "corr";
  Imgbatch__V1__Source src[4], *extra[3];
  Imgbatch__V1__RawImage raw[4];
  for (size_t i = 0; i < n_src; i++) {
    imgbatch__v1__source__init(&src[i]);
    imgbatch__v1__raw_image__init(&raw[i]);
    raw[i].mode = (char *)modes[next(r) % 6];
    bool big = next(r) % 2;
    raw[i].width = 1 + next(r) % (big ? 300 : 20);
    raw[i].height = 1 + next(r) % (big ? 200 : 20);
    raw[i].data.len =
        (size_t)raw[i].width * raw[i].height * ib_mode_bands(ib_mode_parse(raw[i].mode));
    raw[i].data.data = malloc(raw[i].data.len);
    for (size_t b = 0; b < raw[i].data.len; b++) raw[i].data.data[b] = (uint8_t)next(r);
    src[i].kind_case = IMGBATCH__V1__SOURCE__KIND_RAW;
    src[i].raw = &raw[i];
    if (i) extra[i - 1] = &src[i];
  }
  job.source = &src[0];
  job.n_extra_sources = n_src - 1;
  job.extra_sources = extra;
  Imgbatch__V1__Node nodes[5], *np[5];
  Imgbatch__V1__SourceOp sop[4];
  Imgbatch__V1__CopyOp cop;
  imgbatch__v1__copy_op__init(&cop);
  uint32_t in = next(r) % (uint32_t)n_src;
  for (size_t i = 0; i <= n_src; i++) {
    imgbatch__v1__node__init(&nodes[i]);
    np[i] = &nodes[i];
    if (i < n_src) {
      imgbatch__v1__source_op__init(&sop[i]);
      sop[i].index = (uint32_t)i;
      nodes[i].op_case = IMGBATCH__V1__NODE__OP_SOURCE;
      nodes[i].source = &sop[i];
    } else {
      nodes[i].op_case = IMGBATCH__V1__NODE__OP_COPY;
      nodes[i].copy = &cop;
      nodes[i].n_inputs = 1;
      nodes[i].inputs = &in;
    }
  }
  job.n_nodes = n_src + 1;
  job.nodes = np;
  *len = imgbatch__v1__job__get_packed_size(&job);
  uint8_t *buf = malloc(*len ? *len : 1);
  imgbatch__v1__job__pack(&job, buf);
  for (size_t i = 0; i < n_src; i++) free(raw[i].data.data);
  return buf;
}

/* Parses `bytes` both ways and asserts the same outcome. */
static void same_both_ways(const uint8_t *bytes, size_t len, bool must_parse) {
  ib_graph *a = NULL, *b = NULL;
  ib_error ea = {0}, eb = {0};
  ib_status sa = ib_graph_parse(bytes, len, NULL, &a, NULL, &ea);
  uint8_t *buf = malloc(len ? len : 1);
  memcpy(buf, bytes, len);
  ib_status sb = ib_graph_parse_buffer(buf, len, NULL, NULL, &b, NULL, &eb); /* takes buf */
  cr_assert_eq(sa, sb, "copying unpack: %s (%s); in place: %s (%s)", ib_status_name(sa), ea.message,
               ib_status_name(sb), eb.message);
  if (must_parse) cr_assert_eq(sa, IB_OK, "%s", ea.message);
  if (sa != IB_OK) {
    cr_assert_eq(ea.stage, eb.stage);
    return;
  }
  cr_assert_not_null(a->nodes_wire);
  cr_assert_eq(a->nodes_wire_len, b->nodes_wire_len, "both ways keep the same node bytes");
  cr_assert_eq(memcmp(a->nodes_wire, b->nodes_wire, a->nodes_wire_len), 0);
  cr_assert_eq(a->n_sources, b->n_sources);
  for (size_t i = 0; i < a->n_sources; i++) {
    cr_assert_eq(a->sources[i].len, b->sources[i].len);
    cr_assert_eq(memcmp(a->sources[i].bytes, b->sources[i].bytes, a->sources[i].len), 0);
    bool in_place = b->sources[i].bytes >= buf && b->sources[i].bytes < buf + len;
    cr_assert_eq(in_place, b->sources[i].len >= 4096, "source %zu (%zu bytes) in place: %d", i,
                 b->sources[i].len, in_place);
  }
  cr_assert_str_eq(ib_graph_key(a)->str, ib_graph_key(b)->str);
  ib_image oa = {0}, ob = {0};
  cr_assert_eq(ib_cpu_execute(a, &oa, &ea), IB_OK, "%s", ea.message);
  cr_assert_eq(ib_cpu_execute(b, &ob, &eb), IB_OK, "%s", eb.message);
  cr_assert_eq(ib_image_bytes(&oa), ib_image_bytes(&ob));
  cr_assert_eq(memcmp(oa.data, ob.data, ib_image_bytes(&oa)), 0);
  ib_image_release(&oa);
  ib_image_release(&ob);
  ib_graph_free(a);
  ib_graph_free(b);
}

Test(hollow, jobs_parsed_in_place_equal_the_copying_unpack) {
  rng r = {0x9E3779B97F4A7C15ull};
  for (int it = 0; it < 60; it++) {
    size_t len;
    uint8_t *bytes = build(&r, 1 + next(&r) % 4, &len);
    same_both_ways(bytes, len, true);
    free(bytes);
  }
}

Test(hollow, only_large_raw_fields_are_hollowed) {
  rng r = {7};
  size_t len;
  uint8_t *bytes = build(&r, 4, &len);
  ib_hollow h;
  int got = ib_hollow_job(bytes, len, 4096, &h);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_graph_parse(bytes, len, NULL, &g, NULL, &err), IB_OK, "%s", err.message);
  size_t large = 0, kept = 0;
  for (size_t i = 0; i < g->n_sources; i++) large += g->sources[i].len >= 4096;
  if (got == 1) {
    kept = h.n_spans;
    size_t sum = 0;
    for (size_t i = 0; i < h.n_spans; i++) sum += h.spans[i].len;
    cr_assert_leq(h.len + sum, len, "the hollow message lacks exactly the spans");
    free(h.msg);
  }
  cr_assert_eq(kept, large);
  ib_graph_free(g);
  free(bytes);
}

Test(hollow, a_duplicated_source_is_merged_by_the_copying_unpack) {
  /* Two Jobs back to back are one Job on the wire (fields merge): not
   * canonical, so nothing is hollowed and protobuf's merge rules apply. */
  rng r = {11};
  size_t l1, l2;
  uint8_t *a = build(&r, 1, &l1), *b = build(&r, 1, &l2);
  uint8_t *both = malloc(l1 + l2);
  memcpy(both, a, l1);
  memcpy(both + l1, b, l2);
  ib_hollow h;
  cr_assert_eq(ib_hollow_job(both, l1 + l2, 4096, &h), 0);
  same_both_ways(both, l1 + l2, false);
  free(a);
  free(b);
  free(both);
}

Test(hollow, corrupted_messages_get_the_same_verdict_both_ways) {
  rng r = {12345};
  for (int it = 0; it < 400; it++) {
    size_t len;
    uint8_t *bytes = build(&r, 1 + next(&r) % 3, &len);
    /* Corrupt the structure, not just pixels: bytes near the front or in
     * the tail (keys, lengths, modes, nodes), or a truncation. */
    int kind = (int)(next(&r) % 3);
    if (kind == 2) {
      len = next(&r) % len;
    } else {
      for (int k = 0; k < 1 + (int)(next(&r) % 3); k++) {
        size_t at = kind == 0 ? next(&r) % (len < 64 ? len : 64)
                              : len - 1 - next(&r) % (len < 64 ? len : 64);
        bytes[at] = (uint8_t)next(&r);
      }
    }
    same_both_ways(bytes, len, false);
    free(bytes);
  }
}

Test(hollow, node_bytes_tell_equal_graphs_apart_from_different_ones) {
  rng r = {99}, r2 = {99};
  size_t la, lb;
  uint8_t *a = build(&r, 2, &la), *b = build(&r2, 2, &lb);
  cr_assert_eq(la, lb);
  /* Other pixels, same graph: flip bytes inside every raw data span. */
  ib_hollow h;
  cr_assert_eq(ib_hollow_job(b, lb, 1, &h), 1);
  for (size_t i = 0; i < h.n_spans; i++) ((uint8_t *)h.spans[i].data)[h.spans[i].len / 2] ^= 0x5a;
  free(h.msg);
  cr_assert_neq(memcmp(a, b, la), 0);
  ib_graph *ga = NULL, *gb = NULL, *gc = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_graph_parse(a, la, NULL, &ga, NULL, &err), IB_OK, "%s", err.message);
  cr_assert_eq(ib_graph_parse(b, lb, NULL, &gb, NULL, &err), IB_OK, "%s", err.message);
  cr_assert_eq(ga->nodes_wire_len, gb->nodes_wire_len);
  cr_assert_eq(memcmp(ga->nodes_wire, gb->nodes_wire, ga->nodes_wire_len), 0);
  /* A different graph (another seed: other modes, sizes, copy input). */
  rng r3 = {100};
  size_t lc;
  uint8_t *c = build(&r3, 3, &lc);
  cr_assert_eq(ib_graph_parse(c, lc, NULL, &gc, NULL, &err), IB_OK, "%s", err.message);
  cr_assert(gc->nodes_wire_len != ga->nodes_wire_len ||
            memcmp(gc->nodes_wire, ga->nodes_wire, ga->nodes_wire_len) != 0);
  ib_graph_free(ga);
  ib_graph_free(gb);
  ib_graph_free(gc);
  free(a);
  free(b);
  free(c);
}
