/*
 * exec_jobs.h - graphs for the executor tests: a raw source followed by
 * copies (the only rows every build has), built as a protobuf Job, packed
 * and parsed exactly as a front end would.
 */
#ifndef IB_TEST_EXEC_JOBS_H
#define IB_TEST_EXEC_JOBS_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "imgbatch.h"
#include "model/graph.h"

typedef struct test_job {
  const char *mode; /* default "L" */
  uint32_t w, h;    /* default 8x8 */
  unsigned copies;  /* copy nodes after the source (default 0 = source only) */
  bool key_is_u64;
  uint64_t key_u64;
  const char *key_str;  /* NULL = no key on the wire (empty string) */
  bool resident;        /* output gpu */
  const char *meta_key; /* one metadata entry: meta_key -> int 7, wrapped in `meta_depth` lists */
  unsigned meta_depth;
  bool meta_no_kind;      /* the entry's value has no kind set */
  const uint8_t *encoded; /* when set: an encoded source instead of raw pixels */
  size_t encoded_len;
  uint64_t deadline_unix_ms; /* 0: no deadline */
} test_job;

static inline void test_job_free_pb(Imgbatch__V1__Job *j) {
  imgbatch__v1__job__free_unpacked(j, NULL);
}

static inline uint8_t *test_job_pack(const test_job *t, size_t *len) {
  const char *mode = t->mode ? t->mode : "L";
  uint32_t w = t->w ? t->w : 8, h = t->h ? t->h : 8;
  Imgbatch__V1__Job job;
  imgbatch__v1__job__init(&job);
  if (t->key_is_u64) {
    job.input_key_case = IMGBATCH__V1__JOB__INPUT_KEY_KEY_U64;
    job.key_u64 = t->key_u64;
  } else if (t->key_str) {
    job.input_key_case = IMGBATCH__V1__JOB__INPUT_KEY_KEY_STRING;
    job.key_string = (char *)t->key_str;
  }
  if (t->deadline_unix_ms) {
    job.deadline_present_case = IMGBATCH__V1__JOB__DEADLINE_PRESENT_DEADLINE_UNIX_MS;
    job.deadline_unix_ms = t->deadline_unix_ms;
  }
  Imgbatch__V1__Source src;
  imgbatch__v1__source__init(&src);
  Imgbatch__V1__RawImage raw;
  imgbatch__v1__raw_image__init(&raw);
  raw.mode = (char *)mode;
  raw.width = w;
  raw.height = h;
  size_t bands = ib_mode_bands(ib_mode_parse(mode));
  raw.data.len = (size_t)w * h * bands;
  raw.data.data = malloc(raw.data.len ? raw.data.len : 1);
  for (size_t i = 0; i < raw.data.len; i++) raw.data.data[i] = (uint8_t)(i * 7 + 3);
  if (t->encoded) {
    src.kind_case = IMGBATCH__V1__SOURCE__KIND_ENCODED;
    src.encoded.data = (uint8_t *)t->encoded;
    src.encoded.len = t->encoded_len;
  } else {
    src.kind_case = IMGBATCH__V1__SOURCE__KIND_RAW;
    src.raw = &raw;
  }
  job.source = &src;
  size_t n = 1 + t->copies;
  Imgbatch__V1__Node *nodes = calloc(n, sizeof *nodes);
  Imgbatch__V1__Node **np = calloc(n, sizeof *np);
  uint32_t *inputs = calloc(n, sizeof *inputs);
  Imgbatch__V1__SourceOp sop;
  imgbatch__v1__source_op__init(&sop);
  Imgbatch__V1__CopyOp cop;
  imgbatch__v1__copy_op__init(&cop);
  for (size_t i = 0; i < n; i++) {
    imgbatch__v1__node__init(&nodes[i]);
    np[i] = &nodes[i];
    if (i == 0) {
      nodes[i].op_case = IMGBATCH__V1__NODE__OP_SOURCE;
      nodes[i].source = &sop;
    } else {
      nodes[i].op_case = IMGBATCH__V1__NODE__OP_COPY;
      nodes[i].copy = &cop;
      inputs[i] = (uint32_t)(i - 1);
      nodes[i].n_inputs = 1;
      nodes[i].inputs = &inputs[i];
    }
  }
  job.n_nodes = n;
  job.nodes = np;
  Imgbatch__V1__OutputSpec out;
  imgbatch__v1__output_spec__init(&out);
  Imgbatch__V1__GpuOutput gout;
  imgbatch__v1__gpu_output__init(&gout);
  if (t->resident) {
    out.target_case = IMGBATCH__V1__OUTPUT_SPEC__TARGET_GPU;
    out.gpu = &gout;
    job.output = &out;
  }
  /* metadata: meta_key -> list(list(...(int 7))) */
  Imgbatch__V1__Job__MetadataEntry entry;
  imgbatch__v1__job__metadata_entry__init(&entry);
  Imgbatch__V1__Job__MetadataEntry *entries[1] = {&entry};
  Imgbatch__V1__Value vals[16];
  Imgbatch__V1__ValueList lists[16];
  Imgbatch__V1__Value *items[16];
  if (t->meta_key) {
    unsigned d = t->meta_depth < 15 ? t->meta_depth : 15;
    for (unsigned i = 0; i <= d; i++) imgbatch__v1__value__init(&vals[i]);
    if (!t->meta_no_kind) {
      vals[d].kind_case = IMGBATCH__V1__VALUE__KIND_INT_VALUE;
      vals[d].int_value = 7;
    }
    for (unsigned i = 0; i < d; i++) {
      imgbatch__v1__value_list__init(&lists[i]);
      items[i] = &vals[i + 1];
      lists[i].n_items = 1;
      lists[i].items = &items[i];
      vals[i].kind_case = IMGBATCH__V1__VALUE__KIND_LIST_VALUE;
      vals[i].list_value = &lists[i];
    }
    entry.key = (char *)t->meta_key;
    entry.value = &vals[0];
    job.n_metadata = 1;
    job.metadata = entries;
  }
  *len = imgbatch__v1__job__get_packed_size(&job);
  uint8_t *buf = malloc(*len + 1);
  imgbatch__v1__job__pack(&job, buf);
  free(raw.data.data);
  free(nodes);
  free(np);
  free(inputs);
  return buf;
}

/* Parses the job; asserts it parses. */
static inline ib_graph *test_graph(const test_job *t) {
  size_t len;
  uint8_t *buf = test_job_pack(t, &len);
  ib_graph *g = NULL;
  ib_error err = {0};
  ib_status st = ib_graph_parse(buf, len, NULL, &g, NULL, &err);
  free(buf);
  cr_assert_eq(st, IB_OK, "test job does not parse: %s", err.message);
  return g;
}

static inline ib_graph *test_graph_u64(uint64_t key) {
  test_job t = {.key_is_u64 = true, .key_u64 = key};
  return test_graph(&t);
}

static inline ib_executor *test_executor(uint32_t max_jobs, bool queue) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = max_jobs;
  o.queue = queue;
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_create(&o, &ex, &err), IB_OK, "%s", err.message);
  return ex;
}

static inline ib_executor_counters test_counters(ib_executor *ex) {
  ib_executor_counters c;
  ib_executor_counters_get(ex, &c);
  return c;
}

#endif
