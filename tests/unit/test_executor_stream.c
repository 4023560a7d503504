/* Executor result streams: join, run, one driver, close (docs/design.md). */
#include <pthread.h>
#include <stdio.h>

#include "codec/codec.h"
#include "exec_jobs.h"

/* A counting input iterator: yields `limit` jobs keyed 1..limit. */
typedef struct counting_src {
  uint64_t pulled, limit;
  test_job tmpl;
  /* recursion probes, run from inside the callback */
  ib_executor *ex;
  ib_results **rs;
  ib_status probe_next, probe_submit, probe_join, probe_close;
  /* inputs at these positions fail the way a front end reports them */
  uint64_t parse_error_at, validate_error_at;
} counting_src;

static ib_status counting_next(void *user, ib_input *in, ib_error *err) {
  counting_src *c = user;
  if (c->pulled == c->limit) return IB_END;
  c->pulled++;
  if (c->ex && c->pulled == 2) {
    ib_result r;
    c->probe_next = ib_results_next(*c->rs, &r);
    ib_graph *g = test_graph_u64(0);
    c->probe_submit = ib_executor_submit(c->ex, g, NULL, NULL, NULL);
    ib_graph_free(g);
    ib_results *other = NULL;
    c->probe_join = ib_executor_join(c->ex, &other);
    c->probe_close = ib_executor_close(c->ex);
  }
  if (c->pulled == c->parse_error_at) {
    snprintf(err->message, sizeof err->message, "parse: not a Job");
    err->stage = IB_STAGE_PARSE;
    return IB_INVALID;
  }
  if (c->pulled == c->validate_error_at) {
    snprintf(err->message, sizeof err->message, "node 1: bad");
    err->stage = IB_STAGE_VALIDATE;
    in->has_key = true;
    in->key = (ib_key){.is_u64 = true, .u64 = c->pulled};
    return IB_INVALID;
  }
  test_job t = c->tmpl;
  t.key_is_u64 = true;
  t.key_u64 = c->pulled;
  in->graph = test_graph(&t);
  return IB_OK;
}

static void drain(ib_results *rs, uint64_t *n_ok, uint64_t *n_err) {
  ib_result r;
  ib_status st;
  while ((st = ib_results_next(rs, &r)) == IB_OK) {
    if (r.ok)
      (*n_ok)++;
    else
      (*n_err)++;
    ib_result_free(&r);
  }
  cr_assert_eq(st, IB_END, "stream ended with %s", ib_status_name(st));
}

static void assert_credits_zero(ib_executor *ex) {
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.jobs.in_use, 0);
  cr_assert_eq(c.gpu_bytes.in_use, 0);
  cr_assert_eq(c.host_bytes.in_use, 0);
  cr_assert_eq(c.in_flight.in_use, 0);
}

Test(stream, creating_join_does_not_wait_iterating_drives_execution) {
  ib_executor *ex = test_executor(8, true);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(ib_executor_submit(ex, test_graph_u64(i), NULL, NULL, NULL), IB_OK);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  cr_assert_eq(test_counters(ex).submissions, 0);
  cr_assert_eq(test_counters(ex).completed, 0);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert_gt(test_counters(ex).completed, 0);
  ib_result_free(&r);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, every_result_carries_job_id_input_key_and_image) {
  ib_executor *ex = test_executor(8, true);
  uint64_t ids[4];
  for (int i = 0; i < 4; i++)
    cr_assert_eq(ib_executor_submit(ex, test_graph_u64(100 + i), NULL, &ids[i], NULL), IB_OK);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  unsigned seen = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    cr_assert(r.ok && r.has_job_id);
    cr_assert(r.key.is_u64);
    unsigned i = (unsigned)(r.key.u64 - 100);
    cr_assert_lt(i, 4u);
    cr_assert_eq(r.job_id, ids[i], "result matches its submission by id and key");
    cr_assert_eq(r.image.mode, IB_MODE_L);
    cr_assert_eq(r.image.width, 8);
    cr_assert_eq(r.image.data[1], 10, "raw pixel i is i*7+3");
    seen |= 1u << i;
    ib_result_free(&r);
  }
  cr_assert_eq(seen, 0xf);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, run_never_pulls_past_window_plus_one) {
  ib_executor *ex = test_executor(4, true);
  counting_src src = {.limit = 200};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  cr_assert_eq(src.pulled, 0, "creating the stream pulls nothing");
  ib_result r;
  uint64_t delivered = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    delivered++;
    cr_assert(r.ok);
    cr_assert_leq(src.pulled, delivered + 4 + 1, "pulled %llu after %llu results",
                  (unsigned long long)src.pulled, (unsigned long long)delivered);
    ib_result_free(&r);
  }
  cr_assert_eq(delivered, 200);
  cr_assert_leq(test_counters(ex).jobs.peak, 4);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, slow_consumer_stops_admission) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  /* 16x16 L, source only, CPU backend: host charge = 256 source bytes +
   * 256 output bytes; a completed job keeps only its 256 output bytes. */
  o.host_bytes = 3000;
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  counting_src src = {.limit = 50, .tmpl = {.w = 16, .h = 16}};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  ib_result_free(&r);
  ib_executor_counters c = test_counters(ex);
  cr_assert_lt(c.admitted, 50, "admission stopped at the host_bytes window");
  cr_assert_gt(c.host_bytes.in_use + 512, 3000, "no room for another job");
  cr_assert_eq(src.pulled, c.admitted + 1, "one input waits for credits");
  cr_assert_eq(c.jobs.in_use, c.admitted - 1, "undelivered results keep their credits");
  /* The consumer pauses: nothing runs, nothing is pulled. */
  cr_assert_eq(test_counters(ex).admitted, c.admitted);
  uint64_t delivered = 1;
  while (ib_results_next(rs, &r) == IB_OK) {
    delivered++;
    c = test_counters(ex);
    cr_assert_leq(c.admitted - c.delivered, 3000 / 256);
    cr_assert_leq(c.host_bytes.in_use, 3000);
    cr_assert_leq(src.pulled, c.admitted + 1);
    ib_result_free(&r);
  }
  cr_assert_eq(delivered, 50);
  cr_assert_leq(test_counters(ex).host_bytes.peak, 3000);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, run_retries_a_queue_full_input_itself) {
  ib_executor *ex = test_executor(1, true);
  counting_src src = {.limit = 10};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  uint64_t ok = 0, bad = 0;
  drain(rs, &ok, &bad);
  cr_assert_eq(ok, 10);
  cr_assert_eq(bad, 0);
  cr_assert_gt(test_counters(ex).rejected_queue_full, 0);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, rejected_inputs_become_error_results_and_the_stream_goes_on) {
  ib_executor *ex = test_executor(4, true);
  counting_src src = {.limit = 6, .parse_error_at = 2, .validate_error_at = 4};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  ib_result r;
  uint64_t ok = 0;
  bool saw_parse = false, saw_validate = false;
  while (ib_results_next(rs, &r) == IB_OK) {
    if (r.ok)
      ok++;
    else if (r.error.stage == IB_STAGE_PARSE) {
      cr_assert(!r.has_job_id, "bytes that are not a Job get no id");
      saw_parse = true;
    } else {
      cr_assert(r.has_job_id, "a validation failure is a rejected admission with an id");
      cr_assert(r.key.is_u64 && r.key.u64 == 4);
      cr_assert_eq(r.error.status, IB_INVALID);
      saw_validate = true;
    }
    ib_result_free(&r);
  }
  cr_assert(saw_parse && saw_validate);
  cr_assert_eq(ok, 4);
  cr_assert_eq(test_counters(ex).rejected_invalid, 1);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, exhausting_a_stream_allows_another) {
  ib_executor *ex = test_executor(4, true);
  counting_src src = {.limit = 5};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  uint64_t ok = 0, bad = 0;
  drain(rs, &ok, &bad);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_END, "an exhausted stream stays exhausted");
  cr_assert_eq(ib_executor_submit(ex, test_graph_u64(1), NULL, NULL, NULL), IB_OK);
  ib_results *rs2;
  cr_assert_eq(ib_executor_join(ex, &rs2), IB_OK);
  drain(rs2, &ok, &bad);
  cr_assert_eq(ok, 6);
  ib_results_close(rs);
  ib_results_close(rs2);
  ib_executor_destroy(ex);
}

Test(stream, driving_while_a_stream_is_open_is_busy) {
  ib_executor *ex = test_executor(8, true);
  for (int i = 0; i < 3; i++) ib_executor_submit(ex, test_graph_u64(i), NULL, NULL, NULL);
  ib_results *rs, *other = NULL;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  ib_result_free(&r);
  ib_graph *g = test_graph_u64(9);
  ib_error err = {0};
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, &err), IB_BUSY);
  cr_assert(strstr(err.message, "stream"), "%s", err.message);
  cr_assert_eq(ib_executor_join(ex, &other), IB_BUSY);
  counting_src src = {.limit = 1};
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &other), IB_BUSY);
  cr_assert_null(other);
  ib_graph_free(g);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, recursive_iteration_is_rejected) {
  ib_executor *ex = test_executor(8, true);
  ib_results *rs;
  counting_src src = {.limit = 3, .ex = ex, .rs = &rs};
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  uint64_t ok = 0, bad = 0;
  drain(rs, &ok, &bad);
  cr_assert_eq(src.probe_next, IB_BUSY);
  cr_assert_eq(src.probe_submit, IB_BUSY);
  cr_assert_eq(src.probe_join, IB_BUSY);
  cr_assert_eq(src.probe_close, IB_BUSY);
  cr_assert_eq(ok, 3, "the stream itself was not disturbed");
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

/* A callback that parks inside the stream until another thread has tried
 * to drive the same executor. */
typedef struct parked {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int phase; /* 1: callback entered, 2: other thread done */
  uint64_t pulled;
  ib_results *rs;
  ib_executor *ex;
  ib_status other_next, other_submit;
} parked;

static ib_status parked_next(void *user, ib_input *in, ib_error *err) {
  (void)err;
  parked *p = user;
  if (p->pulled == 2) return IB_END;
  if (p->pulled++ == 0) {
    pthread_mutex_lock(&p->mu);
    p->phase = 1;
    pthread_cond_broadcast(&p->cv);
    while (p->phase != 2) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  in->graph = test_graph_u64(p->pulled);
  return IB_OK;
}

static void *other_driver(void *arg) {
  parked *p = arg;
  pthread_mutex_lock(&p->mu);
  while (p->phase != 1) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  ib_result r;
  p->other_next = ib_results_next(p->rs, &r);
  ib_graph *g = test_graph_u64(7);
  p->other_submit = ib_executor_submit(p->ex, g, NULL, NULL, NULL);
  ib_graph_free(g);
  pthread_mutex_lock(&p->mu);
  p->phase = 2;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

Test(stream, concurrent_iteration_is_rejected) {
  ib_executor *ex = test_executor(8, true);
  parked p = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .ex = ex};
  cr_assert_eq(ib_executor_run(ex, parked_next, &p, &p.rs), IB_OK);
  pthread_t t;
  pthread_create(&t, NULL, other_driver, &p);
  uint64_t ok = 0, bad = 0;
  drain(p.rs, &ok, &bad);
  pthread_join(t, NULL);
  cr_assert_eq(p.other_next, IB_BUSY);
  cr_assert_eq(p.other_submit, IB_BUSY);
  cr_assert_eq(ok, 2);
  ib_results_close(p.rs);
  ib_executor_destroy(ex);
}

Test(stream, close_returns_all_credits_to_zero) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = 16;
  o.max_in_flight = 1;
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  counting_src src = {.limit = 1000, .tmpl = {.copies = 100}};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  ib_result kept;
  cr_assert_eq(ib_results_next(rs, &kept), IB_OK);
  ib_executor_counters c = test_counters(ex);
  cr_assert_gt(c.jobs.in_use, 1, "pending and undelivered work is live before close");
  uint64_t pulled = src.pulled;
  cr_assert_eq(ib_executor_close(ex), IB_OK);
  assert_credits_zero(ex);
  c = test_counters(ex);
  cr_assert_gt(c.cancelled, 0);
  cr_assert_eq(c.admitted, c.delivered + c.cancelled);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_CLOSED);
  cr_assert_eq(src.pulled, pulled, "close stops pulling inputs");
  ib_graph *g = test_graph_u64(1);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, NULL), IB_CLOSED);
  ib_graph_free(g);
  cr_assert_eq(kept.image.data[2], 17, "a delivered result stays valid");
  ib_result_free(&kept);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, closing_an_unfinished_stream_cancels_the_executor) {
  ib_executor *ex = test_executor(8, true);
  counting_src src = {.limit = 100};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, counting_next, &src, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_graph *g = test_graph_u64(1);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, NULL), IB_CLOSED);
  ib_graph_free(g);
  cr_assert_eq(r.image.width, 8);
  ib_result_free(&r);
  ib_executor_destroy(ex);
}

Test(stream, results_stay_valid_after_destroy_and_a_detached_stream_is_closed) {
  ib_executor *ex = test_executor(8, true);
  for (int i = 0; i < 3; i++) ib_executor_submit(ex, test_graph_u64(i), NULL, NULL, NULL);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  ib_executor_destroy(ex);
  ib_result r2;
  cr_assert_eq(ib_results_next(rs, &r2), IB_CLOSED);
  ib_results_close(rs);
  cr_assert_eq(r.image.data[63], (uint8_t)(63 * 7 + 3));
  ib_result_free(&r);
}

Test(stream, queue_off_completes_before_submit_returns_and_occupies_the_window) {
  ib_executor *ex = test_executor(2, false);
  cr_assert_eq(ib_executor_submit(ex, test_graph_u64(1), NULL, NULL, NULL), IB_OK);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.completed, 1);
  cr_assert_eq(c.submissions, 1);
  cr_assert_eq(c.jobs.in_use, 1, "its undelivered result holds a slot");
  cr_assert_eq(ib_executor_submit(ex, test_graph_u64(2), NULL, NULL, NULL), IB_OK);
  ib_graph *g = test_graph_u64(3);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, NULL), IB_QUEUE_FULL);
  ib_graph_free(g);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  uint64_t ok = 0, bad = 0;
  drain(rs, &ok, &bad);
  cr_assert_eq(ok, 2);
  cr_assert_eq(test_counters(ex).submissions, 2, "join ran nothing new");
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, jobs_are_grouped_into_at_most_max_in_flight_submissions) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = 40;
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  for (int i = 0; i < 40; i++) ib_executor_submit(ex, test_graph_u64(i), NULL, NULL, NULL);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  uint64_t ok = 0, bad = 0;
  drain(rs, &ok, &bad);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(ok, 40);
  cr_assert_lt(c.submissions, 40, "several jobs per submission");
  cr_assert_leq(c.in_flight.peak, 2);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

/* Job starts as start_cb reports them, beside the results delivered. */
typedef struct start_log {
  int tags[6];
  uint64_t pulled;
  void *started[6];
  uint64_t started_id[6];
  size_t n_started, delivered_at_start[6], delivered;
} start_log;

static ib_status tagged_next(void *user, ib_input *in, ib_error *err) {
  (void)err;
  start_log *l = user;
  if (l->pulled == 6) return IB_END;
  in->graph = test_graph_u64(l->pulled);
  in->tag = &l->tags[l->pulled++];
  return IB_OK;
}

static void log_start(void *opaque, uint64_t job_id, void *tag) {
  start_log *l = opaque;
  cr_assert_lt(l->n_started, 6, "one start per job");
  l->started[l->n_started] = tag;
  l->started_id[l->n_started] = job_id;
  l->delivered_at_start[l->n_started++] = l->delivered;
}

Test(stream, start_cb_reports_each_job_once_in_order_before_its_result) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = 6;
  o.max_in_flight = 1;
  start_log l = {0};
  o.start_cb = log_start;
  o.start_opaque = &l;
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, tagged_next, &l, &rs), IB_OK);
  ib_result r;
  while (ib_results_next(rs, &r) == IB_OK) {
    cr_assert(r.ok);
    size_t i = (size_t)((int *)r.tag - l.tags);
    cr_assert_lt(i, l.n_started, "job %zu's result before its start", i);
    cr_assert_eq(l.started[i], r.tag);
    cr_assert_eq(l.started_id[i], r.job_id);
    l.delivered++;
    ib_result_free(&r);
  }
  cr_assert_eq(l.n_started, 6);
  /* The cpu backend ran them in fewer submissions than jobs, and reported
   * each start as it reached it (every start came before any result). */
  cr_assert_lt(test_counters(ex).submissions, 6, "several jobs per submission");
  cr_assert_eq(l.delivered_at_start[5], 0);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

Test(stream, a_submission_holds_at_most_256_ops) {
  ib_executor *ex = test_executor(8, true);
  test_job t = {.w = 2, .h = 2, .copies = 99}; /* 100 ops: two per submission */
  for (int i = 0; i < 5; i++) ib_executor_submit(ex, test_graph(&t), NULL, NULL, NULL);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  uint64_t ok = 0, bad = 0;
  drain(rs, &ok, &bad);
  cr_assert_eq(ok, 5);
  cr_assert_eq(test_counters(ex).submissions, 3);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

/* A PNG whose header is intact and whose pixel data is cut off. */
static uint8_t *truncated_png(uint32_t side, size_t *len) {
  ib_image im;
  cr_assert_eq(ib_image_alloc(&im, IB_MODE_RGB, side, side), IB_OK);
  for (size_t i = 0; i < ib_image_bytes(&im); i++) im.data[i] = (uint8_t)(i * 31 + i / 7);
  Imgbatch__V1__CpuOutput spec;
  imgbatch__v1__cpu_output__init(&spec);
  spec.format = IMGBATCH__V1__FORMAT__PNG;
  uint8_t *png;
  ib_error err = {0};
  cr_assert_eq(ib_codec_encode(&im, &spec, NULL, &png, len, &err), IB_OK, "%s", err.message);
  ib_image_release(&im);
  uint8_t *cut = malloc(200);
  memcpy(cut, png, 200);
  ib_codec_free(png);
  *len = 200;
  return cut;
}

Test(stream, hard_cap_fails_before_decode) {
  size_t len;
  uint8_t *png = truncated_png(512, &len);
  test_job t = {.encoded = png, .encoded_len = len, .key_is_u64 = true, .key_u64 = 1};
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.host_bytes = 512 << 10; /* 512x512 RGB decodes to 768 KiB */
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  ib_graph *g = test_graph(&t);
  ib_error err = {0};
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, &err), IB_LIMIT, "%s", err.message);
  cr_assert_eq(err.stage, IB_STAGE_ADMIT, "rejected at admission, not at decode");
  cr_assert_eq(test_counters(ex).failed, 0);
  ib_executor_destroy(ex);
  /* The same job under the default cap is admitted and only then fails to decode. */
  ex = test_executor(8, true);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, &err), IB_OK, "%s", err.message);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(!r.ok);
  cr_assert_eq(r.error.status, IB_DECODE, "%s", r.error.message);
  cr_assert_eq(r.error.stage, IB_STAGE_DECODE);
  cr_assert_eq(test_counters(ex).failed, 1);
  ib_result_free(&r);
  ib_results_close(rs);
  ib_executor_destroy(ex);
  free(png);
}

Test(stream, counters_tally_every_outcome_without_history) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = 2;
  o.host_bytes = 1 << 20;
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  size_t len;
  uint8_t *png = truncated_png(64, &len);
  test_job broken = {.encoded = png, .encoded_len = len};
  test_job huge = {.w = 1024, .h = 1024};
  test_job resident = {.resident = true};
  ib_graph *g;
  cr_assert_eq(ib_executor_submit(ex, test_graph_u64(1), NULL, NULL, NULL), IB_OK);
  cr_assert_eq(ib_executor_submit(ex, test_graph(&broken), NULL, NULL, NULL), IB_OK);
  g = test_graph_u64(2);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, NULL), IB_QUEUE_FULL);
  ib_graph_free(g);
  g = test_graph(&huge);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, NULL), IB_LIMIT);
  ib_graph_free(g);
  g = test_graph(&resident);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, NULL), IB_UNSUPPORTED);
  ib_graph_free(g);
  ib_key bad = {.str = "\xc0\x80"};
  g = test_graph_u64(3);
  cr_assert_eq(ib_executor_submit(ex, g, &bad, NULL, NULL), IB_INVALID);
  ib_graph_free(g);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  uint64_t ok = 0, failed = 0;
  drain(rs, &ok, &failed);
  ib_results_close(rs);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.admitted, 2);
  cr_assert_eq(c.rejected_queue_full, 1);
  cr_assert_eq(c.rejected_limit, 1);
  cr_assert_eq(c.rejected_unsupported, 1);
  cr_assert_eq(c.rejected_invalid, 1);
  cr_assert_eq(c.completed, 1);
  cr_assert_eq(c.failed, 1);
  cr_assert_eq(c.delivered, 2);
  cr_assert_eq(c.jobs.peak, 2);
  cr_assert_leq(c.host_bytes.peak, c.host_bytes.cap);
  cr_assert_leq(c.gpu_bytes.peak, c.gpu_bytes.cap);
  cr_assert_leq(c.in_flight.peak, c.in_flight.cap);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
  free(png);
}

/* A live source: the test releases inputs in bursts; between them the
 * source has nothing now (IB_AGAIN). */
typedef struct bursty_src {
  int script[8]; /* >0 yield that key, -1 IB_END, -2 parse error */
  int pos, released;
} bursty_src;

static ib_status bursty_next(void *user, ib_input *in, ib_error *err) {
  bursty_src *b = user;
  if (b->pos == b->released) return IB_AGAIN;
  int v = b->script[b->pos++];
  if (v == -1) return IB_END;
  in->tag = (void *)(intptr_t)(1000 + b->pos);
  if (v == -2) {
    snprintf(err->message, sizeof err->message, "parse: not a Job");
    err->stage = IB_STAGE_PARSE;
    return IB_INVALID;
  }
  in->graph = test_graph_u64((uint64_t)v);
  return IB_OK;
}

Test(stream, an_input_with_nothing_now_delivers_what_completed_then_answers_again) {
  ib_executor *ex = test_executor(8, true);
  bursty_src b = {.script = {1, 2, -2, 3, -1}, .released = 2};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, bursty_next, &b, &rs), IB_OK);
  ib_result r;
  /* Two jobs released, then nothing now: both are delivered, each with its
   * input's tag, before the stream answers IB_AGAIN (and stays open). */
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(ib_results_next(rs, &r), IB_OK);
    cr_assert(r.ok, "%s", r.error.message);
    cr_assert_eq((intptr_t)r.tag, 1000 + (intptr_t)r.key.u64);
    ib_result_free(&r);
  }
  cr_assert_eq(ib_results_next(rs, &r), IB_AGAIN);
  cr_assert_eq(ib_results_next(rs, &r), IB_AGAIN, "asked again, still nothing");
  /* A parse error keeps its tag (no id); then key 3 runs. */
  b.released = 4;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(!r.ok && !r.has_job_id);
  cr_assert_eq((intptr_t)r.tag, 1003);
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(r.ok, "%s", r.error.message);
  cr_assert(r.key.u64 == 3 && (intptr_t)r.tag == 1004);
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_AGAIN);
  b.released = 5;
  cr_assert_eq(ib_results_next(rs, &r), IB_END);
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}
