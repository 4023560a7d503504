/*
 * The executor core against a fake asynchronous backend: submissions stay
 * outstanding until polled a few times, and failures can be injected. Pins
 * what the core promises any backend (worker/exec/backend.h). The fake also
 * keeps resident outputs (output gpu): a kept "device buffer" is a host
 * copy, so every rule of resident handles is tested here without a GPU.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "result/result_msg.h"
#include "cpu/cpu_backend.h"
#include "exec/exec_internal.h"
#include "exec_jobs.h"

typedef struct fake {
  int outstanding, max_outstanding, submits, waits;
  ib_status fail_submit, fail_wait; /* IB_OK: no failure */
  bool reject_admit;
  int full_admits;  /* admissions still to answer QueueFull (a compile queue) */
  bool wait_answer; /* what admit_wait answers */
  int admit_waits;
  uint64_t job_gpu_bytes;
  bool closed;          /* the backend state was closed */
  atomic_int live_bufs; /* kept resident buffers */
  atomic_int downloads, in_download, overlapped_downloads;
  bool lend;            /* results lent from a per-submission arena */
  bool lend_renditions; /* with lend: two renditions a job, lent, instead of the output */
  bool own;             /* outputs downloaded into their Job buffers */
  bool blank_fail;      /* jobs fail IB_INTERNAL with no message (a backend bug) */
  atomic_int live_own;  /* Job buffers lent to results */
  atomic_int live_arenas, arenas_released;
  atomic_int parse_allocs, parse_frees;
  /* Parking (job_ready): a graph of 3 nodes needs a kernel that compiles
   * in the background; it becomes ready at the compile_waits'th admit_wait
   * (0: never), which bumps the ready epoch. */
  bool park, kernel_ready;
  int compile_waits;
  uint64_t epoch;
  int unready_submitted; /* jobs submitted while their kernel was not ready */
  int max_wait_ms;
  size_t first_n;           /* jobs of the first submission */
  size_t sizes[8];          /* jobs of the first 8 submissions */
  const uint64_t *pulled;   /* the run source's inputs pulled so far (NULL: none) */
  uint64_t pulled_at_first; /* ... when the first submission was made */
  uint64_t pulled_at[8];    /* ... when each of the first 8 was */
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
  cr_assert_eq(atomic_load(&F.live_bufs), 0, "the backend closes after its last kept buffer");
  F.closed = true;
}

/* A kept buffer: the terminal image, moved off the job. */
static void fake_keep(ib_backend_job *j) {
  ib_image *buf = malloc(sizeof *buf);
  *buf = j->out;
  j->out.data = NULL;
  j->dev = buf;
  atomic_fetch_add(&F.live_bufs, 1);
}

static ib_status fake_download(void *state, void *dev, ib_image *into, ib_error *err) {
  (void)state;
  (void)err;
  const ib_image *buf = dev;
  if (atomic_fetch_add(&F.in_download, 1) != 0) atomic_fetch_add(&F.overlapped_downloads, 1);
  usleep(2000); /* long enough for an unserialized second download to overlap */
  cr_assert(into->data && into->mode == buf->mode && into->width == buf->width &&
            into->height == buf->height);
  memcpy(into->data, buf->data, ib_image_bytes(buf));
  atomic_fetch_add(&F.downloads, 1);
  atomic_fetch_sub(&F.in_download, 1);
  return IB_OK;
}

static void fake_release(void *state, void *dev) {
  (void)state;
  ib_image *buf = dev;
  ib_image_release(buf);
  free(buf);
  atomic_fetch_sub(&F.live_bufs, 1);
}

static ib_status fake_admit(void *state, const ib_graph *g, ib_error *err) {
  (void)state;
  (void)g;
  if (F.full_admits > 0) {
    F.full_admits--;
    err->status = IB_QUEUE_FULL;
    snprintf(err->message, sizeof err->message, "fake: the kernel compile queue is full");
    return IB_QUEUE_FULL;
  }
  if (!F.reject_admit) return IB_OK;
  err->status = IB_UNSUPPORTED;
  snprintf(err->message, sizeof err->message, "fake: op copy mode L not proven");
  return IB_UNSUPPORTED;
}

static bool fake_admit_wait(void *state, int timeout_ms) {
  (void)state;
  cr_assert_geq(timeout_ms, 0);
  F.admit_waits++;
  if (timeout_ms > F.max_wait_ms) F.max_wait_ms = timeout_ms;
  if (F.park && F.compile_waits > 0 && --F.compile_waits == 0) {
    F.kernel_ready = true;
    F.epoch++;
  } else if (F.park && F.wait_answer) {
    usleep((useconds_t)(timeout_ms < 20 ? timeout_ms : 20) * 1000); /* still compiling */
  }
  return F.wait_answer;
}

static bool needs_kernel(const ib_graph *g) { return g->n_nodes == 3; }

static bool fake_job_ready(void *state, const ib_graph *g) {
  (void)state;
  return !F.park || F.kernel_ready || !needs_kernel(g);
}

static uint64_t fake_ready_epoch(void *state) {
  (void)state;
  return F.epoch;
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
  for (size_t i = 0; i < n; i++) F.unready_submitted += !fake_job_ready(state, jobs[i].graph);
  *sub = calloc(1, sizeof **sub);
  (*sub)->jobs = jobs;
  (*sub)->n = n;
  if (!F.submits) F.first_n = n, F.pulled_at_first = F.pulled ? *F.pulled : 0;
  if (F.submits < 8) F.sizes[F.submits] = n, F.pulled_at[F.submits] = F.pulled ? *F.pulled : 0;
  F.submits++;
  if (++F.outstanding > F.max_outstanding) F.max_outstanding = F.outstanding;
  return IB_OK;
}

static bool fake_ready(void *state, ib_backend_submission *sub) {
  (void)state;
  return ++sub->polls > 2;
}

/* Lending, as the CUDA backend does it: every successful non-resident
 * output moves into one arena per submission and the results point into it. */
static void fake_lend(ib_backend_submission *sub) {
  size_t total = 0;
  for (size_t i = 0; i < sub->n; i++)
    if (sub->jobs[i].status == IB_OK && !sub->jobs[i].resident && !sub->jobs[i].lent)
      total += ib_image_bytes(&sub->jobs[i].out);
  if (!total) return;
  const size_t copies = F.lend_renditions ? 2 : 1;
  uint8_t *arena = malloc(total * copies), *at = arena;
  for (size_t i = 0; i < sub->n; i++) {
    ib_backend_job *j = &sub->jobs[i];
    if (j->status != IB_OK || j->resident || j->lent) continue; /* lent: in its Job buffer */
    size_t b = ib_image_bytes(&j->out);
    j->lent = arena;
    if (F.lend_renditions) { /* as the CUDA backend's rendition block */
      j->renditions = calloc(copies, sizeof *j->renditions);
      j->n_renditions = copies;
      for (size_t r = 0; r < copies; r++, at += b) {
        memcpy(at, j->out.data, b);
        j->renditions[r] = (ib_image){j->out.mode, j->out.width, j->out.height, at, NULL, NULL};
      }
      ib_image_release(&j->out);
      j->out = (ib_image){0};
      continue;
    }
    memcpy(at, j->out.data, b);
    ib_image_release(&j->out);
    j->out.data = at;
    at += b;
  }
  atomic_fetch_add(&F.live_arenas, 1);
}

/* A Job buffer lent to its result (backend.h "Own-buffer outputs"). */
typedef struct own_token {
  uint32_t magic;
  uint8_t *buf;
} own_token;
#define OWN_MAGIC 0x0b0f0e5du

static void fake_pa_free(void *data, void *p);

static void fake_lent_release(void *state, void *token) {
  (void)state;
  own_token *t = token;
  if (t->magic == OWN_MAGIC) { /* arenas are image bytes: never this word */
    fake_pa_free(NULL, t->buf);
    free(t);
    atomic_fetch_sub(&F.live_own, 1);
    return;
  }
  free(token);
  atomic_fetch_sub(&F.live_arenas, 1);
  atomic_fetch_add(&F.arenas_released, 1);
}

static bool fake_out_in_buffer(void *state, const ib_graph *g) {
  (void)state;
  const ib_shape *sh = &g->nodes[g->n_nodes - 1].shape;
  return F.own && g->buffer &&
         (uint64_t)sh->width * sh->height * ib_mode_bands(sh->mode) <= g->buffer_len;
}

/* As the CUDA backend does for large outputs: the output overwrites the
 * Job buffer it came from (its pixels are dead once read). */
static void fake_own(ib_backend_job *j) {
  if (j->status != IB_OK || j->resident || !fake_out_in_buffer(NULL, j->graph)) return;
  own_token *t = malloc(sizeof *t);
  *t = (own_token){OWN_MAGIC, j->graph->buffer};
  memcpy(t->buf, j->out.data, ib_image_bytes(&j->out));
  ib_image_release(&j->out);
  j->out.data = t->buf;
  j->lent = t;
  j->buffer_lent = true;
  atomic_fetch_add(&F.live_own, 1);
}

static void *fake_pa_alloc(void *data, size_t n) {
  (void)data;
  atomic_fetch_add(&F.parse_allocs, 1);
  return malloc(n ? n : 1);
}
static void fake_pa_free(void *data, void *p) {
  (void)data;
  if (p) atomic_fetch_add(&F.parse_frees, 1);
  free(p);
}
static ProtobufCAllocator fake_pa = {.alloc = fake_pa_alloc, .free = fake_pa_free};
static ProtobufCAllocator *fake_parse_allocator(void *state) {
  (void)state;
  return &fake_pa;
}

static ib_status fake_wait(void *state, ib_backend_submission *sub, ib_error *err) {
  (void)state;
  for (size_t i = 0; i < sub->n; i++) {
    ib_backend_job *j = &sub->jobs[i];
    j->status = ib_cpu_execute(j->graph, &j->out, &j->err);
    if (F.blank_fail) {
      ib_image_release(&j->out);
      j->status = IB_INTERNAL;
      j->err = (ib_error){.status = IB_INTERNAL};
    }
    if (j->status == IB_OK && j->resident) fake_keep(j);
    if (F.own) fake_own(j);
  }
  if (F.lend) fake_lend(sub);
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
    .admit_wait = fake_admit_wait,
    .job_ready = fake_job_ready,
    .ready_epoch = fake_ready_epoch,
    .job_bytes = fake_job_bytes,
    .submit = fake_submit,
    .wait = fake_wait,
    .ready = fake_ready,
    .download = fake_download,
    .release = fake_release,
    .lent_release = fake_lent_release,
    .out_in_buffer = fake_out_in_buffer,
    .parse_allocator = fake_parse_allocator,
};

static ib_executor *fake_executor_gpu(uint32_t max_jobs, uint32_t max_in_flight,
                                      uint64_t gpu_bytes) {
  F = (fake){0};
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = max_jobs;
  o.max_in_flight = max_in_flight;
  if (gpu_bytes) o.gpu_bytes = gpu_bytes;
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_exec_create_with(&o, &fake_backend, &ex, &err), IB_OK, "%s", err.message);
  return ex;
}

static ib_executor *fake_executor(uint32_t max_jobs, uint32_t max_in_flight) {
  return fake_executor_gpu(max_jobs, max_in_flight, 0);
}

typedef struct n_src {
  uint64_t pulled, limit;
  bool resident; /* output gpu */
} n_src;

static ib_status n_next(void *user, ib_input *in, ib_error *err) {
  (void)err;
  n_src *s = user;
  if (s->pulled == s->limit) return IB_END;
  test_job t = {.key_is_u64 = true, .key_u64 = ++s->pulled, .resident = s->resident};
  in->graph = test_graph(&t);
  return IB_OK;
}

static void assert_credits_zero(ib_executor *ex) {
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.jobs.in_use + c.gpu_bytes.in_use + c.host_bytes.in_use + c.in_flight.in_use, 0);
}

/* Every Result of `rs` read and freed; how many were ok. */
static int drain_ok(ib_results *rs) {
  ib_result r;
  int ok = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    ok += r.ok;
    ib_result_free(&r);
  }
  return ok;
}

Test(backend, outstanding_submissions_never_exceed_max_in_flight) {
  ib_executor *ex = fake_executor(8, 2);
  n_src src = {.limit = 100};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  cr_assert_eq(drain_ok(rs), 100);
  cr_assert_eq(F.max_outstanding, 2, "both submission slots were used, never more");
  cr_assert_eq(F.submits, F.waits, "every submission is waited exactly once");
  cr_assert_eq(test_counters(ex).in_flight.peak, 2);
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

/* A window bound by gpu_bytes before max_jobs: large jobs go out as two
 * submissions, so one completes while the other runs; small ones in one. */
static void run_window_of(uint32_t max_jobs, size_t window, uint64_t job_bytes, size_t want_first) {
  const size_t WINDOW = window;
  ib_executor *ex = fake_executor_gpu(max_jobs, 2, WINDOW * job_bytes + job_bytes / 2);
  F.job_gpu_bytes = job_bytes;
  n_src src = {.limit = 40};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  cr_assert_eq(drain_ok(rs), 40);
  const ib_executor_counters c = test_counters(ex);
  cr_assert_leq(c.gpu_bytes.peak, c.gpu_bytes.cap);
  cr_assert_geq(c.gpu_bytes.peak, (WINDOW - 1) * job_bytes, "gpu_bytes bounds the window");
  cr_assert_eq(F.first_n, want_first, "first submission: %zu jobs", F.first_n);
  if (want_first < WINDOW) cr_assert_eq(F.max_outstanding, 2, "the halves overlap");
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

static void run_window(uint64_t job_bytes, size_t want_first) {
  run_window_of(64, 8, job_bytes, want_first);
}

Test(backend, a_window_of_large_jobs_goes_out_in_halves) { run_window(32u << 20, 4); }

/* 40 jobs of 896 KiB (35 MiB, 256 a batch at max_jobs 512): many small
 * jobs sum past the part size but stay one submission. */
Test(backend, a_window_of_many_small_jobs_goes_out_whole) {
  run_window_of(512, 40, 896u << 10, 40);
}

Test(backend, a_window_of_small_jobs_goes_out_whole) { run_window(1u << 20, 8); }

/* The start ramp (config key ramp_jobs, docs/tuning.md): 48 large jobs (4 MiB of
 * device charge each) at max_jobs 64, max_in_flight 2. Without it the
 * first submission went out only once all 48 were pulled and admitted
 * (a run stream parses each in its callback) with 32 jobs, the device
 * idle meanwhile; with it the first goes out after 8 (ramp_jobs)
 * inputs, the next at twice the largest in flight, then full batches. */
static ib_config *ramp_config(uint32_t ramp) {
  ib_config *cfg = ib_config_new();
  char v[16];
  snprintf(v, sizeof v, "%u", ramp);
  ib_error err = {0};
  cr_assert_eq(ib_config_set(cfg, "ramp_jobs", v, &err), IB_OK, "%s", err.message);
  return cfg;
}

static void run_ramp_n(const ib_backend *be, uint32_t in_flight, uint32_t ramp, uint64_t job_bytes,
                       uint64_t jobs) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = 64;
  o.max_in_flight = in_flight;
  o.gpu_bytes = 1ull << 30;
  ib_config *cfg = ramp_config(ramp);
  o.config = cfg;
  F = (fake){0};
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_exec_create_with(&o, be, &ex, &err), IB_OK, "%s", err.message);
  ib_config_destroy(cfg); /* the executor keeps its own copy */
  F.job_gpu_bytes = job_bytes;
  n_src src = {.limit = jobs};
  F.pulled = &src.pulled;
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  cr_assert_eq(drain_ok(rs), (int)jobs);
  cr_assert_leq(F.max_outstanding, (int)in_flight);
  cr_assert_eq(F.submits, F.waits);
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

/* The common case: the fake backend, 2 in flight, 48 jobs. */
static void run_ramp(uint32_t ramp, uint64_t job_bytes) {
  run_ramp_n(&fake_backend, 2, ramp, job_bytes, 48);
}

Test(backend, large_jobs_start_the_device_after_a_few_with_a_ramp) {
  run_ramp(8, 4u << 20);
  cr_assert_eq(F.first_n, 8, "first submission: %zu jobs", F.first_n);
  cr_assert_eq(F.pulled_at_first, 8, "issued after %llu inputs",
               (unsigned long long)F.pulled_at_first);
  cr_assert_eq(F.sizes[1], 16, "second submission: %zu jobs", F.sizes[1]);
  size_t sum = 0;
  for (int i = 0; i < F.submits && i < 8; i++) {
    cr_assert_leq(F.sizes[i], 32, "never more than a full batch");
    sum += F.sizes[i];
  }
  cr_assert_eq(sum, 48);
  cr_assert_eq(F.max_outstanding, 2);
}

/* A device slower than the host: no poll finds a submission done, it
 * finishes only when the executor waits on it, so the batches depend on no
 * clock. With the fake's own rule (done at the third poll) they follow how
 * often it is polled, which results.c paces by the clock (POLL_US): on a
 * busy host more polls land and a submission is seen done sooner. */
static bool fake_never_ready(void *state, ib_backend_submission *sub) {
  (void)state;
  (void)sub;
  return false;
}

/* The ramp doubles even once a full batch is pending (the window was
 * admitted while the first two ran): 4, 8, 16, then the rest beside the
 * 16 - not 4, 8, 32 (a submission four times the one the device is
 * running, staged while it drains). The device must still be running the
 * 16 when the rest goes out: had it finished, the rest would go to an idle
 * device, cut in halves (partial_size). */
Test(backend, the_ramp_doubles_with_a_full_batch_pending) {
  ib_backend be = fake_backend;
  be.ready = fake_never_ready;
  run_ramp_n(&be, 2, 4, 4u << 20, 48);
  cr_assert_eq(F.sizes[0], 4);
  cr_assert_eq(F.sizes[1], 8);
  cr_assert_geq(F.pulled_at[2] - (4 + 8), 32, "pending at the third: %llu jobs",
                (unsigned long long)(F.pulled_at[2] - (4 + 8)));
  cr_assert_eq(F.sizes[2], 16, "third submission: %zu jobs", F.sizes[2]);
  cr_assert_eq(F.sizes[3], 20, "fourth submission: %zu jobs", F.sizes[3]);
  cr_assert_eq(F.submits, 4);
}

/* After the ramp (8, 16 in flight) the stream admits toward its window;
 * the first full batch goes out once the 8-job submission completed and
 * there is room - not after the whole window (64) was admitted, by when
 * the device had run dry on the 16 in flight. */
Test(backend, the_first_full_batch_goes_out_once_there_is_room) {
  run_ramp_n(&fake_backend, 2, 8, 4u << 20, 96);
  cr_assert_eq(F.sizes[0], 8);
  cr_assert_eq(F.sizes[1], 16);
  cr_assert_eq(F.sizes[2], 32);
  cr_assert_lt(F.pulled_at[2], 60, "third submission after %llu inputs",
               (unsigned long long)F.pulled_at[2]);
}

/* One submission in flight: the ramp doubles the one before (nothing is
 * in flight whenever there is room), so it still reaches full batches. */
Test(backend, the_ramp_grows_with_one_submission_in_flight) {
  run_ramp_n(&fake_backend, 1, 8, 4u << 20, 48);
  cr_assert_eq(F.sizes[0], 8);
  cr_assert_eq(F.sizes[1], 16, "second submission: %zu jobs", F.sizes[1]);
  cr_assert_eq(F.sizes[2], 24, "the rest: %zu jobs", F.sizes[2]);
  cr_assert_eq(F.submits, 3);
}

/* The ramp starts again once the executor was idle (a second stream). */
Test(backend, the_ramp_starts_again_after_idle) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = 64;
  o.max_in_flight = 2;
  o.gpu_bytes = 1ull << 30;
  ib_config *cfg = ramp_config(8);
  o.config = cfg;
  F = (fake){0};
  ib_executor *ex = NULL;
  cr_assert_eq(ib_exec_create_with(&o, &fake_backend, &ex, NULL), IB_OK);
  ib_config_destroy(cfg);
  F.job_gpu_bytes = 4u << 20;
  for (int round = 0; round < 2; round++) {
    const int before = F.submits;
    n_src src = {.limit = 48};
    ib_results *rs;
    cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
    cr_assert_eq(drain_ok(rs), 48);
    ib_results_close(rs);
    cr_assert_eq(F.sizes[before], 8, "round %d: first submission %zu", round, F.sizes[before]);
  }
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

/* Off by default (docs/tuning.md says why): the window is
 * admitted first and goes out as one full batch, as before the ramp. */
Test(backend, the_ramp_is_off_by_default) {
  run_ramp(0, 4u << 20);
  cr_assert_eq(F.first_n, 32, "first submission: %zu jobs", F.first_n);
  cr_assert_eq(F.pulled_at_first, 48, "issued after %llu inputs",
               (unsigned long long)F.pulled_at_first);
}

Test(backend, a_ramp_of_a_full_batch_or_more_is_off) {
  run_ramp(32, 4u << 20);
  cr_assert_eq(F.first_n, 32);
  cr_assert_eq(F.pulled_at_first, 48, "the window admitted first");
}

Test(backend, small_jobs_have_no_ramp) {
  run_ramp(8, 64u << 10);
  cr_assert_eq(F.first_n, 32);
  cr_assert_eq(F.pulled_at_first, 48);
}

/* A backend's own notion of a large job (backend.h large_job, the CUDA
 * pipeline's) decides, not the device charge: jobs it calls large get the
 * ramp whatever they charge, and jobs it does not get none. */
static bool large_hint;
static bool fake_large(void *state, const ib_graph *g, bool resident) {
  (void)state;
  (void)g;
  (void)resident;
  return large_hint;
}

Test(backend, the_backend_says_which_jobs_are_large) {
  ib_backend be = fake_backend;
  be.large_job = fake_large;
  large_hint = true;
  run_ramp_n(&be, 2, 8, 64u << 10, 48);
  cr_assert_eq(F.first_n, 8, "large by the backend's word, small by charge: the ramp");
  large_hint = false;
  run_ramp_n(&be, 2, 8, 4u << 20, 48);
  cr_assert_eq(F.first_n, 32, "small by the backend's word, large by charge: none");
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

/* A backend's own QueueFull (the CUDA backend's compile queue) on an idle
 * executor: no completion will make room, so the run stream waits on the
 * backend (admit_wait) and admits again, instead of failing the input;
 * the worker meanwhile takes nothing more, so its partitions pause as
 * with credits. Each refusal consumed an id and is counted. */
Test(backend, a_backend_queue_full_on_an_idle_executor_waits_on_the_backend) {
  ib_executor *ex = fake_executor(8, 2);
  F.full_admits = 3;
  F.wait_answer = true;
  n_src src = {.limit = 5};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  ib_result r;
  int ok = 0;
  uint64_t first_id = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    cr_assert(r.ok, "%s", r.error.message);
    if (!first_id) first_id = r.job_id;
    ok++;
    ib_result_free(&r);
  }
  ib_results_close(rs);
  cr_assert_eq(ok, 5);
  cr_assert_eq(F.admit_waits, 3, "one wait per refusal while nothing was live");
  cr_assert_eq(first_id, 4, "three refusals consumed ids 1-3");
  ib_executor_counters k = test_counters(ex);
  cr_assert_eq(k.rejected_queue_full, 3);
  cr_assert_eq(k.admitted, 5);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

/* A backend that has nothing to wait for: the input fails as any job that
 * does not fit an idle executor (no spinning). Credit QueueFull with live
 * work never asks the backend. */
Test(backend, a_backend_queue_full_with_nothing_to_wait_for_fails_the_input) {
  ib_executor *ex = fake_executor(8, 2);
  F.full_admits = 1;
  F.wait_answer = false;
  n_src src = {.limit = 2};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(!r.ok);
  cr_assert_eq(r.error.status, IB_LIMIT, "%s", r.error.message);
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(r.ok, "%s", r.error.message);
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_END);
  ib_results_close(rs);
  cr_assert_eq(F.admit_waits, 1);
  ib_executor_destroy(ex);
  ex = fake_executor(2, 1); /* max_jobs 2: credit QueueFull beside live work */
  src = (n_src){.limit = 20};
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  const int ok = drain_ok(rs);
  ib_results_close(rs);
  cr_assert_eq(ok, 20);
  cr_assert_gt(test_counters(ex).rejected_queue_full, 0);
  cr_assert_eq(F.admit_waits, 0, "credits are not the backend's");
  ib_executor_destroy(ex);
}

/* ------------------------------------------------------------ parking
 * A job whose kernel still compiles (job_ready false; the CUDA backend's
 * gather and pass heads with the compile pool on) is held out of
 * submissions: the jobs beside it go on, it runs once the kernel is
 * ready, or is answered Timeout at its deadline, its credits returned. */

static uint64_t now_unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static ib_graph *head_graph(uint64_t key, uint64_t deadline_unix_ms) {
  test_job t = {
      .key_is_u64 = true, .key_u64 = key, .copies = 2, .deadline_unix_ms = deadline_unix_ms};
  return test_graph(&t);
}

static ib_executor *park_executor(int compile_waits) {
  ib_executor *ex = fake_executor(8, 2);
  F.park = true;
  F.compile_waits = compile_waits;
  F.wait_answer = true;
  return ex;
}

Test(park, a_job_whose_kernel_compiles_does_not_delay_the_jobs_beside_it) {
  ib_executor *ex = park_executor(3);
  ib_error err = {0};
  cr_assert_eq(ib_executor_submit(ex, head_graph(100, 0), NULL, NULL, &err), IB_OK, "%s",
               err.message);
  for (uint64_t k = 1; k <= 2; k++) ib_executor_submit(ex, test_graph_u64(k), NULL, NULL, NULL);
  cr_assert_eq(test_counters(ex).jobs_waited_compile, 1, "the head job was parked");
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  uint64_t order[3];
  bool ready_at[3];
  int n = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    cr_assert(r.ok, "%s", r.error.message);
    cr_assert_lt(n, 3);
    order[n] = r.key.u64;
    ready_at[n++] = F.kernel_ready;
    ib_result_free(&r);
  }
  ib_results_close(rs);
  cr_assert_eq(n, 3);
  cr_assert(order[0] == 1 && order[1] == 2 && order[2] == 100, "got %llu %llu %llu",
            (unsigned long long)order[0], (unsigned long long)order[1],
            (unsigned long long)order[2]);
  cr_assert(!ready_at[0] && !ready_at[1], "the other jobs did not wait for the compile");
  cr_assert(ready_at[2], "the head job ran once its kernel was ready");
  cr_assert_eq(F.unready_submitted, 0, "no submission held a job whose kernel compiled");
  cr_assert_eq(F.submits, 2, "the two ready jobs together, then the head job");
  cr_assert_eq(F.admit_waits, 3, "waited on the backend only while nothing else was live");
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

Test(park, a_parked_job_gets_timeout_at_its_deadline_and_its_credits_back) {
  ib_executor *ex = park_executor(0); /* the kernel never becomes ready */
  const uint64_t t0 = now_unix_ms();
  ib_executor_submit(ex, head_graph(100, t0 + 80), NULL, NULL, NULL);
  ib_executor_submit(ex, test_graph_u64(1), NULL, NULL, NULL);
  ib_executor_counters k = test_counters(ex);
  cr_assert_eq(k.jobs.in_use, 2, "the parked job keeps its credits");
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(r.ok && r.key.u64 == 1, "%s", r.error.message);
  cr_assert_eq(F.admit_waits, 0, "the ready job did not wait for the compile");
  ib_result_free(&r);
  cr_assert_eq(test_counters(ex).jobs.in_use, 1);
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  const uint64_t took = now_unix_ms() - t0;
  cr_assert(!r.ok && r.key.u64 == 100);
  cr_assert_eq(r.error.status, IB_TIMEOUT, "%s", r.error.message);
  cr_assert(strstr(r.error.message, "compiling"), "%s", r.error.message);
  cr_assert(took >= 80 && took < 1500, "answered at its deadline: %llu ms",
            (unsigned long long)took);
  cr_assert_leq(F.max_wait_ms, 81, "no wait on the backend reached past the deadline");
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_END);
  ib_results_close(rs);
  cr_assert_eq(F.submits, 1, "the parked job never reached a submission");
  cr_assert_eq(F.unready_submitted, 0);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

/* A run stream whose source has nothing more (IB_AGAIN) while a job is
 * parked: next must not answer AGAIN (imgbatch run would then block on
 * its input for good), but deliver the job once its kernel is ready,
 * asking the source again every few ms meanwhile. */
typedef struct quiet_src {
  int pulled, polls;
  bool done;
} quiet_src;

static ib_status quiet_next(void *user, ib_input *in, ib_error *err) {
  (void)err;
  quiet_src *s = user;
  if (s->done) return IB_END;
  if (s->pulled++ == 0) {
    in->graph = head_graph(100, 0);
    return IB_OK;
  }
  s->polls++;
  return IB_AGAIN;
}

Test(park, a_run_stream_with_a_quiet_source_still_delivers_a_parked_job) {
  ib_executor *ex = park_executor(4);
  quiet_src src = {0};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, quiet_next, &src, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK, "not AGAIN while a job is parked");
  cr_assert(r.ok && r.key.u64 == 100, "%s", r.error.message);
  cr_assert(F.kernel_ready);
  ib_result_free(&r);
  cr_assert_geq(src.polls, 3, "the source was asked again while the job waited");
  cr_assert_eq(F.max_wait_ms, 0, "no blocking wait while the source may bring more");
  cr_assert_eq(ib_results_next(rs, &r), IB_AGAIN, "nothing live now");
  src.done = true;
  cr_assert_eq(ib_results_next(rs, &r), IB_END);
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

/* Nothing compiles that the job could wait for (admit_wait false): it is
 * submitted as it is (the CUDA backend then compiles inline), never left
 * parked. */
Test(park, with_nothing_compiling_a_parked_job_is_submitted_as_it_is) {
  ib_executor *ex = park_executor(0);
  F.wait_answer = false;
  ib_executor_submit(ex, head_graph(100, 0), NULL, NULL, NULL);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(r.ok, "%s", r.error.message);
  ib_result_free(&r);
  cr_assert_eq(ib_results_next(rs, &r), IB_END);
  ib_results_close(rs);
  cr_assert_eq(F.unready_submitted, 1);
  cr_assert_eq(F.admit_waits, 1);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

Test(park, close_cancels_parked_jobs_and_returns_their_credits) {
  ib_executor *ex = park_executor(0);
  for (uint64_t k = 1; k <= 3; k++) ib_executor_submit(ex, head_graph(k, 0), NULL, NULL, NULL);
  cr_assert_eq(test_counters(ex).jobs.in_use, 3);
  cr_assert_eq(ib_executor_close(ex), IB_OK);
  cr_assert_eq(test_counters(ex).cancelled, 3);
  assert_credits_zero(ex);
  cr_assert_eq(F.submits, 0);
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

/* ------------------------------------------------------------ resident outputs */

/* The test jobs' 8x8 L output (64 bytes): a resident one holds its buffer
 * and a download workspace of the same size on gpu_bytes (2 x 64), and on
 * host_bytes the download staging, one CPU copy (2 x 64) and the echo (the
 * packed OutputSpec `gpu {}`, 2 bytes). */
#define OUT_BYTES 64u
#define HELD_GPU (2u * OUT_BYTES)
#define HELD_HOST (2u * OUT_BYTES + 2u)

static ib_graph *resident_graph(uint64_t key) {
  test_job t = {.key_is_u64 = true, .key_u64 = key, .resident = true};
  return test_graph(&t);
}

/* What the CPU reference makes of the same graph. */
static void assert_download_matches(ib_handle *h, uint64_t key) {
  ib_image want = {0}, got = {0};
  ib_graph *g = resident_graph(key);
  ib_error err = {0};
  cr_assert_eq(ib_cpu_execute(g, &want, &err), IB_OK, "%s", err.message);
  ib_graph_free(g);
  cr_assert_eq(ib_handle_download(h, &got, &err), IB_OK, "%s", err.message);
  cr_assert_eq(got.mode, want.mode);
  cr_assert_eq(got.width, want.width);
  cr_assert_eq(got.height, want.height);
  cr_assert_eq(memcmp(got.data, want.data, ib_image_bytes(&want)), 0);
  ib_image_release(&want);
  ib_image_release(&got);
}

/* Submits `n` resident jobs and joins them into results[]. */
static void join_resident(ib_executor *ex, ib_result *results, int n) {
  for (int i = 0; i < n; i++) {
    ib_error err = {0};
    cr_assert_eq(ib_executor_submit(ex, resident_graph((uint64_t)i + 1), NULL, NULL, &err), IB_OK,
                 "%s", err.message);
  }
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  for (int i = 0; i < n; i++) {
    cr_assert_eq(ib_results_next(rs, &results[i]), IB_OK);
    cr_assert(results[i].ok, "%s", results[i].error.message);
    cr_assert_eq(results[i].kind, IB_RESULT_RESIDENT);
    cr_assert_not_null(results[i].handle);
    cr_assert_null(results[i].image.data, "a resident result carries no pixels");
  }
  ib_result end;
  cr_assert_eq(ib_results_next(rs, &end), IB_END);
  ib_results_close(rs);
}

Test(resident, held_handles_keep_their_bytes_charged) {
  ib_executor *ex = fake_executor(8, 2);
  ib_result r[2];
  join_resident(ex, r, 2);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.jobs.in_use, 0, "a delivered result holds no job slot");
  cr_assert_eq(c.resident_live, 2);
  cr_assert_eq(c.gpu_bytes.in_use, 2 * HELD_GPU);
  cr_assert_eq(c.host_bytes.in_use, 2 * HELD_HOST);
  cr_assert_eq(c.resident_gpu_bytes, c.gpu_bytes.in_use);
  cr_assert_eq(c.resident_host_bytes, c.host_bytes.in_use);
  cr_assert_eq(ib_handle_mode(r[0].handle), IB_MODE_L);
  cr_assert_eq(ib_handle_width(r[0].handle), 8);
  cr_assert_eq(ib_handle_height(r[0].handle), 8);
  cr_assert_eq(ib_handle_job_id(r[0].handle), r[0].job_id);
  assert_download_matches(r[0].handle, 1);
  assert_download_matches(r[1].handle, 2);
  c = test_counters(ex);
  cr_assert_eq(c.gpu_bytes.in_use, 2 * HELD_GPU, "a download leaves the bytes charged");
  cr_assert_eq(c.host_bytes.in_use, 2 * HELD_HOST);
  ib_result_free(&r[0]);
  c = test_counters(ex);
  cr_assert_eq(c.resident_live, 1, "ib_result_free released its handle");
  cr_assert_eq(c.gpu_bytes.in_use, HELD_GPU);
  ib_result_free(&r[1]);
  assert_credits_zero(ex);
  cr_assert_eq(atomic_load(&F.live_bufs), 0);
  ib_executor_destroy(ex);
  cr_assert(F.closed);
}

Test(resident, download_workspace_is_reserved_at_admission) {
  /* Room for exactly one resident output and its workspace. */
  ib_executor *ex = fake_executor_gpu(8, 2, HELD_GPU);
  ib_error err = {0};
  cr_assert_eq(ib_executor_submit(ex, resident_graph(1), NULL, NULL, &err), IB_OK, "%s",
               err.message);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.gpu_bytes.in_use, HELD_GPU, "buffer + workspace reserved before it runs");
  cr_assert_eq(c.host_bytes.in_use, 2 * OUT_BYTES + HELD_HOST, "sources + staging + copy + echo");
  ib_result r;
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert_eq(r.kind, IB_RESULT_RESIDENT);
  ib_result end;
  cr_assert_eq(ib_results_next(rs, &end), IB_END);
  ib_results_close(rs);
  /* Later admission cannot take the workspace: the download still runs. */
  ib_graph *g = resident_graph(2);
  uint64_t id = 0;
  cr_assert_eq(ib_executor_submit(ex, g, NULL, &id, &err), IB_QUEUE_FULL,
               "submit reports QueueFull while held handles fill the budget");
  cr_assert(strstr(err.message, "resident handle"), "%s", err.message);
  cr_assert_eq(id, 2, "the rejection consumed an id");
  assert_download_matches(r.handle, 1);
  ib_result_free(&r);
  cr_assert_eq(ib_executor_submit(ex, g, NULL, &id, &err), IB_OK, "%s", err.message);
  ib_executor_destroy(ex);
}

Test(resident, backpressure_is_retryable_and_pulls_nothing_past_the_one_pending_input) {
  /* Three resident outputs fit the gpu budget. */
  ib_executor *ex = fake_executor_gpu(8, 2, 3 * HELD_GPU);
  n_src src = {.limit = 10, .resident = true};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  ib_result held[10];
  int n = 0;
  ib_status st;
  while ((st = ib_results_next(rs, &held[n])) == IB_OK) {
    cr_assert_eq(held[n].kind, IB_RESULT_RESIDENT, "%s", held[n].error.message);
    n++;
  }
  cr_assert_eq(st, IB_RESULT_BACKPRESSURE, "%s", ib_status_name(st));
  cr_assert_eq(n, 3);
  cr_assert_eq(src.pulled, 4, "the one pending input, nothing beyond it");
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_RESULT_BACKPRESSURE, "retrying without releasing");
  cr_assert_eq(src.pulled, 4);
  cr_assert_eq(test_counters(ex).jobs.in_use, 0, "the pending input is not admitted");
  /* Release one handle: the stream goes on from the pending input. */
  ib_result_free(&held[0]);
  cr_assert_eq(ib_results_next(rs, &held[0]), IB_OK);
  cr_assert_eq(held[0].key.u64, 4, "the retained input comes next");
  cr_assert_eq(ib_results_next(rs, &r), IB_RESULT_BACKPRESSURE);
  cr_assert_eq(src.pulled, 5);
  /* Release everything as it comes: the stream runs to its end. */
  for (int i = 0; i < 3; i++) ib_result_free(&held[i]);
  int more = 0;
  while ((st = ib_results_next(rs, &r)) == IB_OK) {
    cr_assert_eq(r.kind, IB_RESULT_RESIDENT);
    ib_result_free(&r);
    more++;
  }
  cr_assert_eq(st, IB_END);
  cr_assert_eq(more, 6);
  cr_assert_eq(src.pulled, 10);
  ib_results_close(rs);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

Test(resident, handles_outlive_executor_close) {
  ib_executor *ex = fake_executor(8, 2);
  ib_result r[2];
  join_resident(ex, r, 2);
  cr_assert_eq(ib_executor_close(ex), IB_OK);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.gpu_bytes.in_use, 2 * HELD_GPU, "close leaves held handles charged");
  cr_assert_eq(c.jobs.in_use, 0);
  assert_download_matches(r[0].handle, 1);
  ib_result_free(&r[0]);
  ib_executor_destroy(ex);
  cr_assert_not(F.closed, "a held handle keeps the backend open");
  assert_download_matches(r[1].handle, 2);
  ib_result_free(&r[1]);
  cr_assert(F.closed, "the last release closed the backend");
  cr_assert_eq(atomic_load(&F.live_bufs), 0);
}

Test(resident, release_of_last_clone_returns_credits) {
  ib_executor *ex = fake_executor(8, 2);
  ib_result r;
  join_resident(ex, &r, 1);
  ib_handle *a = NULL, *b = NULL;
  cr_assert_eq(ib_handle_clone(r.handle, &a), IB_OK);
  cr_assert_eq(ib_handle_clone(a, &b), IB_OK);
  ib_result_free(&r);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.resident_live, 1, "clones share one output");
  cr_assert_eq(c.gpu_bytes.in_use, HELD_GPU, "charged once, not per clone");
  assert_download_matches(b, 1);
  ib_handle_release(&a);
  cr_assert_null(a);
  cr_assert_eq(test_counters(ex).gpu_bytes.in_use, HELD_GPU);
  cr_assert_eq(atomic_load(&F.live_bufs), 1);
  ib_handle_release(&b);
  assert_credits_zero(ex);
  cr_assert_eq(test_counters(ex).resident_live, 0);
  cr_assert_eq(atomic_load(&F.live_bufs), 0);
  ib_executor_destroy(ex);
}

Test(resident, download_after_release_is_an_error) {
  ib_executor *ex = fake_executor(8, 2);
  ib_result r;
  join_resident(ex, &r, 1);
  ib_handle *h = r.handle;
  r.handle = NULL; /* taken: the result no longer owns it */
  ib_result_free(&r);
  ib_handle_release(&h);
  cr_assert_null(h);
  ib_image im = {.width = 1};
  ib_error err = {0};
  cr_assert_eq(ib_handle_download(h, &im, &err), IB_INVALID);
  cr_assert_eq(err.stage, IB_STAGE_DOWNLOAD);
  cr_assert(strstr(err.message, "released"), "%s", err.message);
  cr_assert_null(im.data);
  cr_assert_eq(atomic_load(&F.downloads), 0);
  ib_handle_release(&h); /* a second release is a no-op */
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

static void *download_thread(void *arg) {
  ib_image im = {0};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(ib_handle_download(arg, &im, NULL), IB_OK);
    ib_image_release(&im);
  }
  return NULL;
}

Test(resident, downloads_from_clones_serialize_through_the_workspace) {
  ib_executor *ex = fake_executor(8, 2);
  ib_result r;
  join_resident(ex, &r, 1);
  ib_handle *clone = NULL;
  cr_assert_eq(ib_handle_clone(r.handle, &clone), IB_OK);
  pthread_t t1, t2;
  pthread_create(&t1, NULL, download_thread, r.handle);
  pthread_create(&t2, NULL, download_thread, clone);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  cr_assert_eq(atomic_load(&F.downloads), 8);
  cr_assert_eq(atomic_load(&F.overlapped_downloads), 0, "never two at once in one workspace");
  ib_handle_release(&clone);
  ib_result_free(&r);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

Test(resident, a_failed_resident_job_keeps_nothing) {
  ib_executor *ex = fake_executor(8, 2);
  F.fail_wait = IB_DEVICE;
  cr_assert_eq(ib_executor_submit(ex, resident_graph(1), NULL, NULL, NULL), IB_OK);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(!r.ok && r.kind == IB_RESULT_ERROR && !r.handle);
  ib_result_free(&r);
  ib_results_close(rs);
  assert_credits_zero(ex);
  cr_assert_eq(atomic_load(&F.live_bufs), 0, "the kept buffer went back to the backend");
  ib_executor_destroy(ex);
}

Test(resident, a_resident_result_is_written_as_a_handle_ref) {
  ib_executor *ex = fake_executor(8, 2);
  ib_result r;
  join_resident(ex, &r, 1);
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_error err = {0};
  cr_assert_eq(ib_result_msg_from_result(&rm, &r, &err), IB_OK, "%s", err.message);
  cr_assert_eq(rm.msg.outcome_case, IMGBATCH__V1__RESULT__OUTCOME_RESIDENT);
  cr_assert_eq(rm.msg.job_id, r.job_id);
  cr_assert_eq(rm.msg.key_u64, 1);
  cr_assert_eq(rm.handle.handle_id, r.job_id);
  cr_assert_str_eq(rm.handle.mode, "L");
  cr_assert_eq(rm.handle.width, 8);
  cr_assert_eq(rm.handle.height, 8);
  size_t len = 0;
  uint8_t *buf = ib_result_msg_pack(&rm, &len);
  Imgbatch__V1__Result *back = imgbatch__v1__result__unpack(NULL, len, buf);
  cr_assert_not_null(back);
  cr_assert_eq(back->outcome_case, IMGBATCH__V1__RESULT__OUTCOME_RESIDENT);
  imgbatch__v1__result__free_unpacked(back, NULL);
  free(buf);
  ib_result_msg_clear(&rm);
  /* Downloaded into the result's image instead: a raw image Result. */
  cr_assert_eq(ib_handle_download(r.handle, &r.image, &err), IB_OK);
  r.kind = IB_RESULT_IMAGE;
  ib_handle_release(&r.handle);
  cr_assert_eq(ib_result_msg_from_result(&rm, &r, &err), IB_OK, "%s", err.message);
  cr_assert_eq(rm.msg.outcome_case, IMGBATCH__V1__RESULT__OUTCOME_IMAGE);
  cr_assert_eq(rm.image.format, IMGBATCH__V1__FORMAT__RAW);
  cr_assert_eq(rm.image.data.len, OUT_BYTES);
  ib_result_msg_clear(&rm);
  ib_result_free(&r);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

Test(resident, closing_a_backpressured_stream_frees_the_pending_input_and_keeps_handles) {
  ib_executor *ex = fake_executor_gpu(8, 2, HELD_GPU);
  n_src src = {.limit = 5, .resident = true};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  ib_result r, r2;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert_eq(ib_results_next(rs, &r2), IB_RESULT_BACKPRESSURE);
  cr_assert_eq(src.pulled, 2);
  ib_results_close(rs); /* cancels: the pending input is freed, the handle stays */
  cr_assert_eq(src.pulled, 2, "close pulls nothing");
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.jobs.in_use, 0);
  cr_assert_eq(c.gpu_bytes.in_use, HELD_GPU);
  assert_download_matches(r.handle, 1);
  ib_result_free(&r);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

/* ------------------------------------------------------------ lent outputs */

static ib_executor *lending_executor(uint32_t max_jobs, uint64_t host_bytes) {
  ib_executor *ex = fake_executor(max_jobs, 1);
  F.lend = true;
  if (host_bytes) {
    ib_executor_destroy(ex);
    F = (fake){.lend = true};
    ib_executor_options o;
    ib_executor_options_default(&o);
    o.max_jobs = max_jobs;
    o.max_in_flight = 1;
    o.host_bytes = host_bytes;
    ib_error err = {0};
    cr_assert_eq(ib_exec_create_with(&o, &fake_backend, &ex, &err), IB_OK, "%s", err.message);
  }
  return ex;
}

static void assert_image_matches(const ib_image *got, uint64_t key) {
  ib_image want = {0};
  ib_graph *g = test_graph_u64(key);
  ib_error err = {0};
  cr_assert_eq(ib_cpu_execute(g, &want, &err), IB_OK, "%s", err.message);
  ib_graph_free(g);
  cr_assert_eq(got->mode, want.mode);
  cr_assert_eq(got->width, want.width);
  cr_assert_eq(got->height, want.height);
  cr_assert_eq(memcmp(got->data, want.data, ib_image_bytes(&want)), 0);
  ib_image_release(&want);
}

static void join_n(ib_executor *ex, ib_result *r, int n) {
  for (int i = 0; i < n; i++) {
    ib_error err = {0};
    cr_assert_eq(ib_executor_submit(ex, test_graph_u64((uint64_t)i + 1), NULL, NULL, &err), IB_OK,
                 "%s", err.message);
  }
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  for (int i = 0; i < n; i++) {
    cr_assert_eq(ib_results_next(rs, &r[i]), IB_OK);
    cr_assert(r[i].ok, "%s", r[i].error.message);
    cr_assert_eq(r[i].kind, IB_RESULT_IMAGE);
    cr_assert_not_null(r[i].image.free_fn, "the image is a lent range");
  }
  ib_result end;
  cr_assert_eq(ib_results_next(rs, &end), IB_END);
  ib_results_close(rs);
}

Test(lent, the_arena_stays_charged_until_its_last_image_is_released) {
  ib_executor *ex = lending_executor(4, 0);
  ib_result r[4];
  join_n(ex, r, 4); /* max_in_flight 1: one submission, one arena */
  cr_assert_eq(F.submits, 1);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.jobs.in_use, 0, "delivered results hold no job slot");
  cr_assert_eq(c.lent_arenas, 1);
  cr_assert_gt(c.host_bytes.in_use, 0);
  cr_assert_eq(c.lent_host_bytes, c.host_bytes.in_use, "all that is held is the arena");
  const uint64_t held = c.host_bytes.in_use;
  for (int i = 0; i < 4; i++) assert_image_matches(&r[i].image, (uint64_t)i + 1);
  for (int i = 0; i < 3; i++) {
    ib_result_free(&r[i]);
    c = test_counters(ex);
    cr_assert_eq(c.host_bytes.in_use, held, "released range %d: the arena is still charged", i);
    cr_assert_eq(atomic_load(&F.live_arenas), 1);
  }
  ib_result_free(&r[3]);
  c = test_counters(ex);
  cr_assert_eq(c.lent_arenas, 0);
  cr_assert_eq(c.lent_host_bytes, 0);
  assert_credits_zero(ex);
  cr_assert_eq(atomic_load(&F.live_arenas), 0, "the last release gave the arena back");
  ib_executor_destroy(ex);
  cr_assert(F.closed);
}

/* Renditions lent as the CUDA backend lends them (ranges of one block a
 * submission): each image is a range the core counts, so the block stays
 * charged until the last image of the last job is released, whichever
 * result and whichever rendition that is. */
Test(lent, lent_renditions_keep_their_block_until_the_last_image_is_released) {
  ib_executor *ex = lending_executor(4, 0);
  F.lend_renditions = true;
  ib_result r[4];
  for (int i = 0; i < 4; i++) {
    ib_error err = {0};
    cr_assert_eq(ib_executor_submit(ex, test_graph_u64((uint64_t)i + 1), NULL, NULL, &err), IB_OK,
                 "%s", err.message);
  }
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(ib_results_next(rs, &r[i]), IB_OK);
    cr_assert(r[i].ok, "%s", r[i].error.message);
    cr_assert_null(r[i].image.data, "a rendition job's output stays empty");
    cr_assert_eq(r[i].n_renditions, 2);
    for (int k = 0; k < 2; k++) {
      cr_assert_not_null(r[i].renditions[k].free_fn, "rendition %d is a lent range", k);
      assert_image_matches(&r[i].renditions[k], (uint64_t)i + 1);
    }
  }
  ib_results_close(rs);
  cr_assert_eq(F.submits, 1);
  ib_executor_counters c = test_counters(ex);
  cr_assert_eq(c.lent_arenas, 1);
  cr_assert_gt(c.host_bytes.in_use, 0);
  cr_assert_eq(c.lent_host_bytes, c.host_bytes.in_use, "all that is held is the block");
  const uint64_t held = c.host_bytes.in_use;
  for (int i = 0; i < 3; i++) ib_result_free(&r[i]);
  ib_image_release(&r[3].renditions[1]);
  c = test_counters(ex);
  cr_assert_eq(c.host_bytes.in_use, held, "one image left: the block is still charged");
  cr_assert_eq(atomic_load(&F.live_arenas), 1);
  ib_result_free(&r[3]);
  c = test_counters(ex);
  cr_assert_eq(c.lent_arenas, 0);
  assert_credits_zero(ex);
  cr_assert_eq(atomic_load(&F.live_arenas), 0, "the last image gave the block back");
  ib_executor_destroy(ex);
}

Test(lent, images_outlive_the_executor_and_keep_the_backend_open) {
  ib_executor *ex = lending_executor(2, 0);
  ib_result r[2];
  join_n(ex, r, 2);
  ib_executor_destroy(ex);
  cr_assert_not(F.closed, "a held range keeps the backend open");
  assert_image_matches(&r[0].image, 1);
  ib_image moved = r[1].image; /* ownership moves with the struct */
  r[1].image = (ib_image){0};
  ib_result_free(&r[0]);
  ib_result_free(&r[1]);
  cr_assert_not(F.closed);
  assert_image_matches(&moved, 2);
  ib_image_release(&moved);
  cr_assert_null(moved.data);
  cr_assert(F.closed, "the last release closed the backend");
  cr_assert_eq(atomic_load(&F.live_arenas), 0);
}

Test(lent, held_images_backpressure_a_run_stream_until_released) {
  /* Room for about one submission's worth of held output. */
  ib_executor *ex = lending_executor(2, 600);
  n_src src = {.limit = 12};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, n_next, &src, &rs), IB_OK);
  ib_result held[12];
  int n = 0;
  ib_status st;
  while (n < 12 && (st = ib_results_next(rs, &held[n])) == IB_OK) {
    cr_assert(held[n].ok, "%s", held[n].error.message);
    n++;
  }
  cr_assert_eq(st, IB_RESULT_BACKPRESSURE, "%s after %d results", ib_status_name(st), n);
  cr_assert_lt(n, 12);
  uint64_t pulled = src.pulled;
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_RESULT_BACKPRESSURE, "retry without releasing");
  cr_assert_eq(src.pulled, pulled, "nothing more is pulled");
  for (int i = 0; i < n; i++) ib_result_free(&held[i]);
  int more = 0;
  while ((st = ib_results_next(rs, &r)) == IB_OK) {
    assert_image_matches(&r.image, r.key.u64);
    ib_result_free(&r);
    more++;
  }
  cr_assert_eq(st, IB_END, "%s", ib_status_name(st));
  cr_assert_eq(n + more, 12);
  ib_results_close(rs);
  assert_credits_zero(ex);
  cr_assert_eq(atomic_load(&F.live_arenas), 0);
  ib_executor_destroy(ex);
}

Test(lent, a_failed_wait_gives_its_arena_back) {
  ib_executor *ex = lending_executor(3, 0);
  F.fail_wait = IB_DEVICE;
  for (int i = 0; i < 3; i++)
    ib_executor_submit(ex, test_graph_u64((uint64_t)i + 1), NULL, NULL, NULL);
  drain_errors(ex, IB_DEVICE, 3);
  cr_assert_eq(atomic_load(&F.live_arenas), 0);
  cr_assert_eq(atomic_load(&F.arenas_released), 1);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

Test(lent, close_discards_undelivered_lent_results) {
  ib_executor *ex = lending_executor(4, 0);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(ib_executor_submit(ex, test_graph_u64((uint64_t)i + 1), NULL, NULL, NULL), IB_OK);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  ib_results_close(rs); /* three results undelivered */
  cr_assert_eq(atomic_load(&F.live_arenas), 1, "the delivered one still holds the arena");
  assert_image_matches(&r.image, r.key.u64);
  ib_result_free(&r);
  cr_assert_eq(atomic_load(&F.live_arenas), 0);
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
}

Test(backend, an_error_result_always_has_a_message) {
  ib_executor *ex = fake_executor(4, 1);
  F.blank_fail = true;
  ib_error err = {0};
  cr_assert_eq(ib_executor_submit(ex, test_graph_u64(1), NULL, NULL, &err), IB_OK, "%s",
               err.message);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert_not(r.ok);
  cr_assert_eq(r.error.status, IB_INTERNAL);
  cr_assert_str_eq(r.error.message, "execute: internal (no detail)");
  ib_result_free(&r);
  ib_results_close(rs);
  ib_executor_destroy(ex);
}

/* ------------------------------------------------------------ own-buffer outputs */

/* A 64x64 RGBA job (16 KiB of pixels) parsed in place into the executor's
 * buffer, as imgbatch run and the worker do. */
static ib_graph *own_graph(ib_executor *ex, uint64_t key, size_t *buffer_len) {
  test_job t = {.key_is_u64 = true, .key_u64 = key, .mode = "RGBA", .w = 64, .h = 64, .copies = 1};
  size_t len;
  uint8_t *bytes = test_job_pack(&t, &len);
  uint8_t *buf = ib_executor_buffer(ex, len);
  memcpy(buf, bytes, len);
  free(bytes);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_parse_buffer(ex, buf, len, NULL, &g, NULL, &err), IB_OK, "%s",
               err.message);
  *buffer_len = len;
  return g;
}

static ib_executor *own_executor(bool own, uint64_t host_bytes) {
  F = (fake){.lend = true, .own = own};
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.max_jobs = 4;
  o.max_in_flight = 1;
  o.host_bytes = host_bytes;
  ib_executor *ex = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_exec_create_with(&o, &fake_backend, &ex, &err), IB_OK, "%s", err.message);
  F.lend = true;
  F.own = own;
  return ex;
}

/* Room for two jobs only if each holds its buffer alone (source and output
 * in one place), not its source and a separate output. The fake stages
 * nothing by itself, so the core adds one decoded copy of the source
 * (docs/credits.md) either way. */
static int own_admitted_side_by_side(bool own) {
  size_t len = 0;
  ib_executor *probe = own_executor(own, 1ull << 30);
  ib_graph *g = own_graph(probe, 1, &len);
  ib_graph_free(g);
  ib_executor_destroy(probe);
  const uint64_t out = 64 * 64 * 4, cap = 2 * (len + out + 512);
  cr_assert_lt(cap, 2 * (len + 2 * out), "the cap must be too small for source + output");
  ib_executor *ex = own_executor(own, cap);
  int admitted = 0;
  ib_graph *gs[2];
  for (int k = 0; k < 2; k++) {
    gs[k] = own_graph(ex, (uint64_t)k + 1, &len);
    ib_error err = {0};
    if (ib_executor_submit(ex, gs[k], NULL, NULL, &err) == IB_OK)
      admitted++;
    else
      ib_graph_free(gs[k]);
  }
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r[2];
  for (int k = 0; k < admitted; k++) {
    cr_assert_eq(ib_results_next(rs, &r[k]), IB_OK);
    cr_assert(r[k].ok, "%s", r[k].error.message);
  }
  ib_results_close(rs);
  if (own) {
    cr_assert_eq(atomic_load(&F.live_own), admitted, "each result holds its own Job buffer");
    ib_executor_counters c = test_counters(ex);
    cr_assert_eq(c.lent_arenas, (uint64_t)admitted, "%llu lent", (unsigned long long)c.lent_arenas);
    cr_assert_geq(c.host_bytes.in_use, admitted * len, "the buffers stay charged while held");
  }
  for (int k = 0; k < admitted; k++) {
    /* The output, where the source was: equal to the CPU reference. */
    test_job t = {
        .key_is_u64 = true, .key_u64 = r[k].key.u64, .mode = "RGBA", .w = 64, .h = 64, .copies = 1};
    ib_graph *ref = test_graph(&t);
    ib_image want = {0};
    ib_error err = {0};
    cr_assert_eq(ib_cpu_execute(ref, &want, &err), IB_OK, "%s", err.message);
    cr_assert_eq(memcmp(want.data, r[k].image.data, ib_image_bytes(&want)), 0);
    ib_image_release(&want);
    ib_graph_free(ref);
    ib_result_free(&r[k]);
  }
  cr_assert_eq(atomic_load(&F.live_own), 0, "the last release freed every buffer");
  assert_credits_zero(ex);
  ib_executor_destroy(ex);
  cr_assert_eq(atomic_load(&F.parse_frees), atomic_load(&F.parse_allocs),
               "no buffer leaked or freed twice");
  return admitted;
}

Test(own, an_output_in_its_job_buffer_is_charged_once) {
  cr_assert_eq(own_admitted_side_by_side(true), 2);
}

Test(own, without_it_source_and_output_are_charged_apart) {
  cr_assert_eq(own_admitted_side_by_side(false), 1);
}

Test(parse, executor_parse_unpacks_with_the_backend_allocator_and_keeps_it_alive) {
  ib_executor *ex = fake_executor(4, 1);
  test_job t = {.key_is_u64 = true, .key_u64 = 9};
  size_t len;
  uint8_t *bytes = test_job_pack(&t, &len);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_parse(ex, bytes, len, NULL, &g, NULL, &err), IB_OK, "%s", err.message);
  cr_assert_gt(atomic_load(&F.parse_allocs), 0);
  ib_executor_destroy(ex);
  cr_assert_not(F.closed, "a parsed graph keeps the backend's memory alive");
  ib_graph_free(g);
  cr_assert_eq(atomic_load(&F.parse_frees), atomic_load(&F.parse_allocs));
  cr_assert(F.closed);
  /* Garbage: the error names the parse, the allocator balances, no leak of the reference. */
  ex = fake_executor(4, 1);
  cr_assert_eq(ib_executor_parse(ex, (const uint8_t *)"\xff\xff", 2, NULL, &g, NULL, &err),
               IB_INVALID);
  cr_assert_null(g);
  cr_assert_eq(err.stage, IB_STAGE_PARSE);
  cr_assert_eq(atomic_load(&F.parse_frees), atomic_load(&F.parse_allocs));
  ib_executor_destroy(ex);
  cr_assert(F.closed);
  free(bytes);
}

Test(parse, parse_buffer_takes_the_buffer_and_keeps_large_pixels_in_place) {
  ib_executor *ex = fake_executor(4, 1);
  test_job t = {.mode = "RGB", .w = 64, .h = 40, .key_is_u64 = true, .key_u64 = 3};
  size_t len;
  uint8_t *bytes = test_job_pack(&t, &len);
  uint8_t *buf = ib_executor_buffer(ex, len);
  cr_assert_not_null(buf);
  memcpy(buf, bytes, len);
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_executor_parse_buffer(ex, buf, len, NULL, &g, NULL, &err), IB_OK, "%s",
               err.message);
  cr_assert_eq(g->buffer_len, len);
  cr_assert(g->sources[0].bytes >= buf && g->sources[0].bytes < buf + len,
            "the raw pixels stay in the buffer");
  cr_assert_eq(ib_executor_submit(ex, g, NULL, NULL, &err), IB_OK, "%s", err.message);
  ib_results *rs;
  cr_assert_eq(ib_executor_join(ex, &rs), IB_OK);
  ib_result r;
  cr_assert_eq(ib_results_next(rs, &r), IB_OK);
  cr_assert(r.ok, "%s", r.error.message);
  ib_graph *ref = test_graph(&t);
  ib_image want = {0};
  cr_assert_eq(ib_cpu_execute(ref, &want, &err), IB_OK);
  cr_assert_eq(memcmp(r.image.data, want.data, ib_image_bytes(&want)), 0);
  ib_image_release(&want);
  ib_graph_free(ref);
  ib_result_free(&r);
  ib_results_close(rs);
  /* Garbage: the buffer is taken (and freed) on failure too. */
  buf = ib_executor_buffer(ex, 3);
  memcpy(buf, "\xff\xff\xff", 3);
  cr_assert_eq(ib_executor_parse_buffer(ex, buf, 3, NULL, &g, NULL, &err), IB_INVALID);
  /* A buffer never handed over is given back explicitly. */
  buf = ib_executor_buffer(ex, 100);
  ib_executor_buffer_free(ex, buf);
  ib_executor_destroy(ex);
  cr_assert(F.closed);
  cr_assert_eq(atomic_load(&F.parse_frees), atomic_load(&F.parse_allocs));
  free(bytes);
}
