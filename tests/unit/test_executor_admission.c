/* Executor admission: ids, keys, caps, statuses, ownership (docs/design.md). */
#include "exec/test_hooks.h"
#include "exec_jobs.h"

static ib_status submit(ib_executor *ex, ib_graph *g, uint64_t *id, ib_error *err) {
  return ib_executor_submit(ex, g, NULL, id, err);
}

Test(admission, ids_are_monotonic_from_one) {
  ib_executor *ex = test_executor(8, true);
  ib_error err = {0};
  for (uint64_t want = 1; want <= 5; want++) {
    uint64_t id = 0;
    cr_assert_eq(submit(ex, test_graph_u64(want), &id, &err), IB_OK, "%s", err.message);
    cr_assert_eq(id, want);
  }
  ib_executor_destroy(ex);
}

Test(admission, rejected_admission_consumes_an_id) {
  ib_executor *ex = test_executor(1, true);
  ib_error err = {0};
  uint64_t a = 0, b = 0, c = 0;
  cr_assert_eq(submit(ex, test_graph_u64(1), &a, &err), IB_OK);
  ib_graph *g = test_graph_u64(2);
  cr_assert_eq(submit(ex, g, &b, &err), IB_QUEUE_FULL);
  cr_assert_eq(b, a + 1, "the rejection got id %llu", (unsigned long long)b);
  /* The caller kept the graph; a retry after draining gets a new id. */
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_END);
  ib_results_close(rs);
  cr_assert_eq(submit(ex, g, &c, &err), IB_OK, "%s", err.message);
  cr_assert_eq(c, b + 1);
  ib_executor_counters k = test_counters(ex);
  cr_assert_eq(k.admitted, 2);
  cr_assert_eq(k.rejected_queue_full, 1);
  ib_executor_destroy(ex);
}

Test(admission, id_overflow_is_an_error) {
  ib_executor *ex = test_executor(8, true);
  ib_executor_test_set_next_id(ex, UINT64_MAX - 1);
  ib_error err = {0};
  uint64_t id = 0;
  cr_assert_eq(submit(ex, test_graph_u64(1), &id, &err), IB_OK);
  cr_assert_eq(id, UINT64_MAX - 1);
  cr_assert_eq(submit(ex, test_graph_u64(2), &id, &err), IB_OK);
  cr_assert_eq(id, UINT64_MAX);
  ib_graph *g = test_graph_u64(3);
  id = 42;
  cr_assert_eq(submit(ex, g, &id, &err), IB_LIMIT);
  cr_assert_eq(id, 42, "no id is assigned after UINT64_MAX (no wrap)");
  cr_assert(strstr(err.message, "exhausted"), "%s", err.message);
  cr_assert_eq(submit(ex, g, &id, &err), IB_LIMIT, "stays exhausted");
  ib_graph_free(g);
  ib_executor_destroy(ex);
}

Test(admission, queue_full_at_max_jobs_for_manual_submit) {
  ib_executor *ex = test_executor(3, true);
  ib_error err = {0};
  uint64_t id;
  for (int i = 0; i < 3; i++) cr_assert_eq(submit(ex, test_graph_u64(i), &id, &err), IB_OK);
  ib_graph *g = test_graph_u64(9);
  cr_assert_eq(submit(ex, g, &id, &err), IB_QUEUE_FULL);
  cr_assert(strstr(err.message, "max_jobs"), "%s", err.message);
  cr_assert_eq(test_counters(ex).jobs.in_use, 3);
  ib_graph_free(g);
  ib_executor_destroy(ex);
}

Test(admission, job_over_a_byte_cap_alone_is_a_limit_not_queue_full) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.host_bytes = 4096;
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  test_job t = {.w = 64, .h = 64}; /* 4 KiB per image: source + work + output exceed 4 KiB */
  ib_graph *g = test_graph(&t);
  ib_error err = {0};
  uint64_t id = 0;
  cr_assert_eq(submit(ex, g, &id, &err), IB_LIMIT);
  cr_assert(strstr(err.message, "host_bytes"), "%s", err.message);
  cr_assert_eq(id, 1);
  cr_assert_eq(test_counters(ex).rejected_limit, 1);
  cr_assert_eq(test_counters(ex).host_bytes.in_use, 0);
  ib_graph_free(g);
  ib_executor_destroy(ex);
}

Test(admission, valid_job_that_does_not_fit_beside_live_work_is_queue_full) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  /* An 8x8 L source-only job's device working set is its one 64-byte node
   * output: three fit, not four. */
  o.gpu_bytes = 3 * 64 + 30;
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  ib_error err = {0};
  uint64_t id;
  for (int i = 0; i < 3; i++)
    cr_assert_eq(submit(ex, test_graph_u64(i), &id, &err), IB_OK, "%s", err.message);
  ib_graph *g = test_graph_u64(3);
  cr_assert_eq(submit(ex, g, &id, &err), IB_QUEUE_FULL);
  cr_assert(strstr(err.message, "gpu bytes"), "%s", err.message);
  cr_assert_eq(test_counters(ex).gpu_bytes.in_use, 3 * 64);
  ib_graph_free(g);
  ib_executor_destroy(ex);
}

Test(admission, unsupported_context_is_rejected_at_admission) {
  ib_executor *ex = test_executor(8, true);
  test_job t = {.resident = true};
  ib_graph *g = test_graph(&t);
  ib_error err = {0};
  uint64_t id = 0;
  cr_assert_eq(submit(ex, g, &id, &err), IB_UNSUPPORTED);
  cr_assert_eq(err.stage, IB_STAGE_ADMIT);
  cr_assert(strstr(err.message, "output gpu: the cpu backend keeps no device memory"), "%s",
            err.message);
  cr_assert_eq(test_counters(ex).rejected_unsupported, 1);
  ib_graph_free(g);
  ib_executor_destroy(ex);
}

Test(admission, keys_are_strings_or_u64_and_duplicates_are_allowed) {
  ib_executor *ex = test_executor(8, true);
  ib_error err = {0};
  uint64_t id1, id2, id3;
  test_job empty = {.key_str = ""};
  cr_assert_eq(submit(ex, test_graph(&empty), &id1, &err), IB_OK, "%s", err.message);
  cr_assert_eq(submit(ex, test_graph_u64(5), &id2, &err), IB_OK);
  cr_assert_eq(submit(ex, test_graph_u64(5), &id3, &err), IB_OK, "duplicate key");
  cr_assert_neq(id2, id3);
  ib_key bad = {.str = "\xff\xfe"};
  ib_graph *g = test_graph_u64(6);
  cr_assert_eq(ib_executor_submit(ex, g, &bad, &id1, &err), IB_INVALID);
  cr_assert(strstr(err.message, "key"), "%s", err.message);
  ib_key ok = {.is_u64 = true, .u64 = UINT64_MAX};
  cr_assert_eq(ib_executor_submit(ex, g, &ok, &id1, &err), IB_OK);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  int seen_empty = 0, seen_five = 0, seen_max = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    if (!r.key.is_u64 && r.key.str && !r.key.str[0]) seen_empty++;
    if (r.key.is_u64 && r.key.u64 == 5) seen_five++;
    if (r.key.is_u64 && r.key.u64 == UINT64_MAX) seen_max++;
    ib_result_free(&r);
  }
  cr_assert_eq(seen_empty, 1);
  cr_assert_eq(seen_five, 2);
  cr_assert_eq(seen_max, 1, "the explicit key overrides the job's");
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(admission, metadata_is_snapshotted_and_charged) {
  ib_executor *ex = test_executor(8, false);
  test_job t = {.key_is_u64 = true, .key_u64 = 1, .meta_key = "m", .meta_depth = 2};
  ib_executor_counters before = test_counters(ex);
  uint64_t id;
  ib_error err = {0};
  cr_assert_eq(submit(ex, test_graph(&t), &id, &err), IB_OK, "%s", err.message);
  ib_executor_counters after = test_counters(ex);
  /* Completed, undelivered: the held part is the output and the snapshot. */
  cr_assert_gt(after.host_bytes.in_use, before.host_bytes.in_use + 64);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  Imgbatch__V1__Job *echo = imgbatch__v1__job__unpack(NULL, r.metadata_len, r.metadata);
  cr_assert_not_null(echo);
  cr_assert_eq(echo->n_metadata, 1);
  cr_assert_str_eq(echo->metadata[0]->key, "m");
  const Imgbatch__V1__Value *v = echo->metadata[0]->value;
  cr_assert_eq(v->kind_case, IMGBATCH__V1__VALUE__KIND_LIST_VALUE);
  cr_assert_eq(v->list_value->items[0]->list_value->items[0]->int_value, 7);
  imgbatch__v1__job__free_unpacked(echo, NULL);
  ib_result_free(&r);
  ib_results_close(rs);
  cr_assert_eq(test_counters(ex).host_bytes.in_use, 0);
  ib_executor_destroy(ex);
}

Test(admission, metadata_value_without_a_kind_is_invalid) {
  ib_executor *ex = test_executor(8, true);
  test_job t = {.meta_key = "odd", .meta_depth = 1, .meta_no_kind = true};
  ib_graph *g = test_graph(&t);
  ib_error err = {0};
  uint64_t id;
  cr_assert_eq(submit(ex, g, &id, &err), IB_INVALID);
  cr_assert(strstr(err.message, "'odd'"), "%s", err.message);
  ib_graph_free(g);
  ib_executor_destroy(ex);
}

Test(admission, metadata_nesting_beyond_depth_8_is_invalid) {
  /* The map is level 1; six lists and the scalar make 8 levels. */
  test_job ok = {.meta_key = "deep", .meta_depth = 6};
  ib_graph_free(test_graph(&ok));
  test_job deep = {.meta_key = "deep", .meta_depth = 7};
  size_t len;
  uint8_t *buf = test_job_pack(&deep, &len);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_graph_parse(buf, len, NULL, &g, NULL, &err), IB_INVALID);
  cr_assert(strstr(err.message, "deeper than 8"), "%s", err.message);
  free(buf);
}

Test(admission, graph_bounds_are_limits_before_admission) {
  test_job ops = {.w = 1, .h = 1, .copies = 256};
  size_t len;
  uint8_t *buf = test_job_pack(&ops, &len);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_graph_parse(buf, len, NULL, &g, NULL, &err), IB_LIMIT, "257 ops");
  free(buf);
  test_job big = {.w = IB_DEFAULT_MAX_SIDE + 1, .h = 1};
  buf = test_job_pack(&big, &len);
  cr_assert_eq(ib_graph_parse(buf, len, NULL, &g, NULL, &err), IB_LIMIT, "16385 wide");
  cr_assert_eq(ib_graph_parse(buf, len, &(ib_graph_limits){.max_side = IB_DEFAULT_MAX_SIDE + 1}, &g,
                              NULL, &err),
               IB_OK, "16385 wide under max_side 16385: %s", err.message);
  ib_graph_free(g);
  free(buf);
  test_job most = {.w = 1, .h = 1, .copies = 255};
  ib_executor *ex = test_executor(8, true);
  uint64_t id;
  cr_assert_eq(submit(ex, test_graph(&most), &id, &err), IB_OK, "256 ops fit: %s", err.message);
  ib_executor_destroy(ex);
}

/* The cuda backend is always linked in; what can be missing at run time is
 * the driver (no libcuda.so.1: CI, laptops) or the device. An ordinal no
 * machine has fails on both kinds of machine, so this never skips. */
Test(admission, cuda_create_without_driver_or_device_is_a_device_error) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.backend = IB_BACKEND_CUDA;
  o.device = 999;
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_create(&o, &ex, &err), IB_DEVICE, "%s", err.message);
  cr_assert_null(ex);
  /* "no CUDA driver: ...", "no CUDA device: cuInit ..." or "no CUDA device 999 (1 present)" */
  cr_assert_not_null(strstr(err.message, "no CUDA d"), "names what is missing: %s", err.message);
}

Test(admission, zero_caps_are_invalid_options) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_in_flight = 0;
  ib_executor *ex = NULL;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_INVALID);
}

Test(admission, defaults_match_the_spec) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  cr_assert_eq(o.gpu_bytes, 512ull << 20);
  cr_assert_eq(o.host_bytes, 256ull << 20);
  cr_assert_eq(o.max_jobs, 64);
  cr_assert_eq(o.max_in_flight, 2);
}

/* A PNG that is only a header: IHDR for a 4096x4096 RGBA image, an empty
 * IDAT, IEND. Enough for the header check; it never decodes. */
static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

static size_t put_chunk(uint8_t *out, const char *type, const uint8_t *data, uint32_t len) {
  uint8_t *p = out;
  p[0] = len >> 24, p[1] = len >> 16, p[2] = len >> 8, p[3] = (uint8_t)len;
  memcpy(p + 4, type, 4);
  if (len) memcpy(p + 8, data, len);
  uint32_t crc = crc32_of(p + 4, 4 + len);
  p += 8 + len;
  p[0] = crc >> 24, p[1] = crc >> 16, p[2] = crc >> 8, p[3] = (uint8_t)crc;
  return 12 + len;
}

static size_t header_only_png(uint8_t *buf) {
  memcpy(buf, "\x89PNG\r\n\x1a\n", 8);
  const uint8_t ihdr[13] = {0, 0, 0x10, 0, 0, 0, 0x10, 0, 8, 6, 0, 0, 0};
  size_t n = 8 + put_chunk(buf + 8, "IHDR", ihdr, 13);
  n += put_chunk(buf + n, "IDAT", NULL, 0);
  return n + put_chunk(buf + n, "IEND", NULL, 0);
}

Test(admission, a_4096_square_rgba_job_with_several_ops_fits_the_default_caps) {
  uint8_t png[64];
  test_job t = {.encoded = png, .encoded_len = header_only_png(png), .copies = 6};
  ib_graph *g = test_graph(&t);
  ib_executor *ex = test_executor(8, true);
  ib_error err = {0};
  cr_assert_eq(submit(ex, g, NULL, &err), IB_OK, "%s", err.message);
  /* CPU liveness peak: two 64 MiB images at once, one of them the result. */
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.host_bytes.in_use, t.encoded_len + (128ull << 20));
  cr_assert_eq(c.gpu_bytes.in_use, 128ull << 20);
  ib_executor_destroy(ex); /* cancelled before anything decoded */
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.host_bytes = 128ull << 20;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  g = test_graph(&t);
  cr_assert_eq(submit(ex, g, NULL, &err), IB_LIMIT);
  ib_graph_free(g);
  ib_executor_destroy(ex);
}
