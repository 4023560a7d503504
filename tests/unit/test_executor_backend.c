/*
 * The executor core against a fake asynchronous backend: submissions stay
 * outstanding until polled a few times, and failures can be injected. Pins
 * what the core promises any backend (worker/exec/backend.h).
 */
#include <stdio.h>

#include "cpu/cpu_backend.h"
#include "exec/executor.h"
#include "exec_jobs.h"

typedef struct fake {
  int outstanding, max_outstanding, submits, waits;
  ib_status fail_submit, fail_wait; /* IB_OK: no failure */
  bool reject_admit;
  uint64_t job_gpu_bytes;
} fake;

static fake F;

struct ib_backend_submission {
  ib_backend_job *jobs;
  size_t n;
  int polls;
};

static ib_status fake_open(const ib_executor_options *o, void **state, ib_error *err) {
  (void)o;
  (void)err;
  *state = &F;
  return IB_OK;
}

static void fake_close(void *state) {
  (void)state;
}

static ib_status fake_admit(void *state, const ib_graph *g, ib_error *err) {
  (void)state;
  (void)g;
  if (!F.reject_admit) return IB_OK;
  err->status = IB_UNSUPPORTED;
  snprintf(err->message, sizeof err->message, "fake: op copy mode L not proven");
  return IB_UNSUPPORTED;
}

static ib_status fake_job_bytes(void *state, const ib_graph *g, uint64_t *gpu, uint64_t *host,
                                ib_error *err) {
  (void)state;
  (void)g;
  (void)err;
  *gpu = F.job_gpu_bytes;
  *host = 0;
  return IB_OK;
}

static ib_status fake_submit(void *state, ib_backend_job *jobs, size_t n,
                             ib_backend_submission **sub, ib_error *err) {
  (void)state;
  if (F.fail_submit != IB_OK) {
    err->status = F.fail_submit;
    snprintf(err->message, sizeof err->message, "fake: device lost at submit");
    return F.fail_submit;
  }
  *sub = calloc(1, sizeof **sub);
  (*sub)->jobs = jobs;
  (*sub)->n = n;
  F.submits++;
  if (++F.outstanding > F.max_outstanding) F.max_outstanding = F.outstanding;
  return IB_OK;
}

static bool fake_ready(void *state, ib_backend_submission *sub) {
  (void)state;
  return ++sub->polls > 2;
}

static ib_status fake_wait(void *state, ib_backend_submission *sub, ib_error *err) {
  (void)state;
  for (size_t i = 0; i < sub->n; i++)
    sub->jobs[i].status = ib_cpu_execute(sub->jobs[i].graph, &sub->jobs[i].out, &sub->jobs[i].err);
  free(sub);
  F.outstanding--;
  F.waits++;
  if (F.fail_wait != IB_OK) {
    err->status = F.fail_wait;
    snprintf(err->message, sizeof err->message, "fake: device lost at wait");
    return F.fail_wait;
  }
  return IB_OK;
}

static const ib_backend fake_backend = {
    .name = "fake",
    .open = fake_open,
    .close = fake_close,
    .admit = fake_admit,
    .job_bytes = fake_job_bytes,
    .submit = fake_submit,
    .wait = fake_wait,
    .ready = fake_ready,
};

static ib_executor *fake_executor(uint32_t max_jobs, uint32_t max_in_flight) {
  F = (fake){0};
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = max_jobs;
  o.max_in_flight = max_in_flight;
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_exec_create_with(&o, &fake_backend, &ex, &err), IB_OK, "%s", err.message);
  return ex;
}

typedef struct n_src {
  uint64_t pulled, limit;
} n_src;

static ib_status n_next(void *user, ib_input *in, ib_error *err) {
  (void)err;
  n_src *s = user;
  if (s->pulled == s->limit) return IB_END;
  in->graph = test_graph_u64(++s->pulled);
  return IB_OK;
}

static void assert_credits_zero(ib_executor *ex) {
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.jobs.in_use + c.gpu_bytes.in_use + c.host_bytes.in_use + c.in_flight.in_use, 0);
}

Test(backend, outstanding_submissions_never_exceed_max_in_flight) {
  ib_executor *ex = fake_executor(8, 2);
  n_src src = {.limit = 100};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  ib_result r;
  int ok = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    ok += r.ok;
    ib_result_free(&r);
  }
  cr_assert_eq(ok, 100);
  cr_assert_eq(F.max_outstanding, 2, "both submission slots were used, never more");
  cr_assert_eq(F.submits, F.waits, "every submission is waited exactly once");
  cr_assert_eq(test_counters(ex).in_flight.peak, 2);
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

static void drain_errors(ib_executor *ex, ib_status want, int n) {
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  int errors = 0;
  uint64_t last_id = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    cr_assert(!r.ok && r.has_job_id);
    cr_assert_eq(r.error.status, want, "%s", r.error.message);
    cr_assert(strstr(r.error.message, "device lost"), "%s", r.error.message);
    cr_assert_neq(r.job_id, last_id);
    last_id = r.job_id;
    errors++;
    ib_result_free(&r);
  }
  cr_assert_eq(errors, n, "one error result per job of the failed submission");
  ib_results_close(rs);
  assert_credits_zero(ex);
}

Test(backend, a_failed_submission_fails_each_of_its_jobs) {
  ib_executor *ex = fake_executor(8, 2);
  F.fail_submit = IB_DEVICE;
  for (int i = 0; i < 3; i++) ib_executor_submit(ex, test_graph_u64(i), NULL, NULL, NULL);
  drain_errors(ex, IB_DEVICE, 3);
  cr_assert_eq(F.waits, 0, "nothing was enqueued, nothing is waited");
  cr_assert_eq(test_counters(ex).failed, 3);
  ib_executor_destroy(ex);
}

Test(backend, a_failed_wait_fails_each_of_its_jobs) {
  ib_executor *ex = fake_executor(8, 2);
  F.fail_wait = IB_TIMEOUT;
  for (int i = 0; i < 3; i++) ib_executor_submit(ex, test_graph_u64(i), NULL, NULL, NULL);
  drain_errors(ex, IB_TIMEOUT, 3);
  ib_executor_destroy(ex);
}

Test(backend, backend_admit_rejects_at_admission_and_consumes_an_id) {
  ib_executor *ex = fake_executor(8, 2);
  F.reject_admit = true;
  ib_graph *g = test_graph_u64(1);
  ib_error err = {0};
  uint64_t id = 0;
  cr_assert_eq(ib_executor_submit(ex, g, NULL, &id, &err), IB_UNSUPPORTED);
  cr_assert_eq(err.stage, IB_STAGE_ADMIT);
  cr_assert_eq(id, 1);
  cr_assert_eq(F.submits, 0);
  ib_graph_free(g);
  ib_executor_destroy(ex);
}

Test(backend, backend_job_bytes_can_only_raise_the_charge) {
  ib_executor *ex = fake_executor(8, 2);
  F.job_gpu_bytes = 100000;
  cr_assert_eq(ib_executor_submit(ex, test_graph_u64(1), NULL, NULL, NULL), IB_OK);
  cr_assert_eq(test_counters(ex).gpu_bytes.in_use, 100000);
  F.job_gpu_bytes = 1;
  cr_assert_eq(ib_executor_submit(ex, test_graph_u64(2), NULL, NULL, NULL), IB_OK);
  cr_assert_eq(test_counters(ex).gpu_bytes.in_use, 100000 + 64, "the core's 64 stands");
  ib_executor_destroy(ex);
}

Test(backend, close_fences_in_flight_submissions_before_releasing_credits) {
  ib_executor *ex = fake_executor(8, 2);
  n_src src = {.limit = 100};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert_eq(F.outstanding, 1, "a submission is still in flight");
  cr_assert_eq(ib_executor_close(ex), IB_OK);
  cr_assert_eq(F.outstanding, 0, "close waited for it");
  cr_assert_eq(F.submits, F.waits);
  assert_credits_zero(ex);
  cr_assert(r.ok && r.image.width == 8, "the delivered result stays valid");
  ib_result_free(&r);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}
