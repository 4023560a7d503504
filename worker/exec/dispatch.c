/*
 * dispatch.c - pending jobs become backend submissions: FIFO order, as many
 * jobs per submission as fit 256 ops, at most max_in_flight outstanding.
 * Full batches go out as soon as they exist; a partial batch only when the
 * driver would otherwise have to wait (nothing completed to deliver); large
 * jobs on an idle device in a ramp of smaller ones first (due_jobs).
 * A completed submission returns its jobs' working credits at once and
 * frees their graphs (sources included); outputs wait in the completed FIFO.
 */
#include <stdlib.h>
#include <time.h>

#include "core/error.h"
#include "exec/exec_internal.h"

static void complete_job(ib_executor *ex, ib_job *j, ib_backend_job *bj, uint64_t exec_us) {
#ifdef IB_FAULTS
  ib_fault_job(ex, j, bj);
#endif
  if (bj->status == IB_OK && j->resident && !bj->dev) {
    bj->status = IB_INTERNAL;
    ib_error_set(&bj->err, IB_INTERNAL, IB_STAGE_EXECUTE,
                 "job %llu: backend %s kept no device buffer for output gpu",
                 (unsigned long long)j->id, ex->backend->name);
  }
  j->status = bj->status;
  j->exec_us = exec_us;
  if (bj->status == IB_OK) {
    j->out = bj->out;
    j->renditions = bj->renditions;
    j->n_renditions = bj->n_renditions;
    bj->renditions = NULL;
    bj->n_renditions = 0;
    j->dev = bj->dev;
    bj->dev = NULL;
  } else {
    ib_image_release(&bj->out);
    ib_renditions_release(&bj->renditions, &bj->n_renditions);
    if (bj->dev) ex->backend->release(ex->backend_state, bj->dev);
    bj->dev = NULL;
    j->err = bj->err;
    j->err.status = bj->status;
    if (j->err.stage == IB_STAGE_NONE) j->err.stage = IB_STAGE_EXECUTE;
  }
  bj->out = (ib_image){0};
  /* The buffer went with the result (or back to the backend already). */
  if (bj->buffer_lent) ib_graph_take_buffer(j->graph);
  ib_graph_free(j->graph);
  j->graph = NULL;
  ib_credits_return_work(ex->credits, &j->charge,
                         bj->status == IB_OK ? IB_COUNT_COMPLETED : IB_COUNT_FAILED);
  ib_job_fifo_push(&ex->completed, j);
}

/* Every job of a submission the backend refused gets the device-wide error. */
static void fail_all(ib_sub *s, ib_status st, const ib_error *err) {
  for (size_t i = 0; i < s->n; i++) {
    s->bjobs[i].status = st;
    s->bjobs[i].err = *err;
    s->bjobs[i].err.status = st;
  }
}

static void finish_sub(ib_executor *ex, ib_sub *s, bool wait) {
  if (wait && s->backend_sub) {
    ib_error err = {0};
    ib_status st = ex->backend->wait(ex->backend_state, s->backend_sub, &err);
    if (st != IB_OK) fail_all(s, st, &err);
  }
  uint64_t exec_us = ib_now_us() - s->started_us;
  ib_exec_adopt_lent(ex, s);
  for (size_t i = 0; i < s->n; i++) complete_job(ex, s->jobs[i], &s->bjobs[i], exec_us);
  if (!ex->in_flight_head && !ex->pending.head) ex->ramp_last = 0; /* idle: ramp anew */
  ib_credits_submission_end(ex->credits);
  free(s->bjobs);
  free(s->jobs);
  free(s);
}

static uint64_t unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool has_deadline(const ib_job *j) {
  return j->graph->job->deadline_present_case ==
         IMGBATCH__V1__JOB__DEADLINE_PRESENT_DEADLINE_UNIX_MS;
}

/* A job whose Job.deadline_unix_ms passed while it waited is answered with
 * Timeout instead of being executed (late work only delays live work). */
static bool expire_if_late(ib_executor *ex, ib_job *j, uint64_t now_ms, const char *waiting) {
  const Imgbatch__V1__Job *pb = j->graph->job;
  if (!has_deadline(j) || now_ms <= pb->deadline_unix_ms) return false;
  ib_backend_job bj = {.status = IB_TIMEOUT};
  ib_error_set(&bj.err, IB_TIMEOUT, IB_STAGE_ADMIT, "deadline: passed %llu ms %s",
               (unsigned long long)(now_ms - pb->deadline_unix_ms), waiting);
  complete_job(ex, j, &bj, 0);
  return true;
}

/* ------------------------------------------------------------ parked jobs
 * A job whose kernel is still compiling (backend job_ready) is held out of
 * submissions, so neither it nor the jobs that would share its submission
 * wait for the compile. It keeps its credits (the window stays bounded, and
 * a storm of such jobs becomes backpressure) and joins pending again, ahead
 * of later jobs, once the backend's ready_epoch moved and it answers ready;
 * or is answered Timeout at its deadline. */

static uint64_t ready_epoch(const ib_executor *ex) {
  return ex->backend->ready_epoch ? ex->backend->ready_epoch(ex->backend_state) : 0;
}

void ib_exec_queue(ib_executor *ex, ib_job *job) {
  /* The epoch before the question: a compile finishing after it moves the
   * epoch, so the next dispatch asks again. */
  const uint64_t epoch = ready_epoch(ex);
  if (!ex->backend->job_ready || ex->backend->job_ready(ex->backend_state, job->graph)) {
    ib_job_fifo_push(&ex->pending, job);
    return;
  }
  if (!ex->parked.head) ex->parked_epoch = epoch;
  ib_job_fifo_push(&ex->parked, job);
  ib_credits_count(ex->credits, IB_COUNT_PARKED);
}

/* Parked jobs past their deadline complete as Timeout; ready ones move to
 * the front of pending, in admission order. */
static void unpark(ib_executor *ex, uint64_t now_ms) {
  if (!ex->parked.head) return;
  const uint64_t epoch = ready_epoch(ex);
  const bool ask = ex->parked_force || epoch != ex->parked_epoch;
  ex->parked_epoch = epoch;
  ib_job_fifo keep = {0}, ready = {0};
  ib_job *j;
  while ((j = ib_job_fifo_pop(&ex->parked))) {
    if (expire_if_late(ex, j, now_ms, "while its kernel was still compiling")) continue;
    const bool go =
        ask && (ex->parked_force || ex->backend->job_ready(ex->backend_state, j->graph));
    ib_job_fifo_push(go ? &ready : &keep, j);
  }
  ex->parked = keep;
  ex->parked_force = false;
  if (!ready.head) return;
  ready.tail->next = ex->pending.head;
  if (!ex->pending.head) ex->pending.tail = ready.tail;
  ex->pending.head = ready.head;
  ex->pending.n += ready.n;
}

void ib_exec_wait_parked(ib_executor *ex, bool source_live) {
  uint64_t now_ms = unix_ms(), wait_ms = 1000;
  for (const ib_job *j = ex->parked.head; j; j = j->next) {
    if (!has_deadline(j)) continue;
    /* Until just past it (expire_if_late: a job at its deadline is on time). */
    const uint64_t d = j->graph->job->deadline_unix_ms;
    const uint64_t left = d < now_ms ? 0 : d + 1 - now_ms;
    if (left < wait_ms) wait_ms = left;
  }
  if (!wait_ms) return; /* a deadline passed: the next dispatch answers it */
  /* A live source has no wakeup of its own and may bring an input at any
   * moment: it is asked again every 100 us rather than an input being held
   * up behind a wait (a compile's end is seen through ready_epoch). */
  const int ms = source_live ? 0 : (int)wait_ms;
  if (!ex->backend->admit_wait || !ex->backend->admit_wait(ex->backend_state, ms))
    ex->parked_force = true; /* nothing compiles that they could wait for */
  else if (source_live)
    nanosleep(&(struct timespec){0, 100000}, NULL);
}

static size_t take_group(ib_executor *ex, ib_job **group, size_t cap) {
  size_t n = 0, ops = 0;
  uint64_t now_ms = 0; /* read once, at the first job with a deadline */
  while (ex->pending.head && n < cap) {
    size_t nodes = ex->pending.head->graph->n_nodes;
    if (n && ops + nodes > IB_MAX_OPS_PER_SUBMISSION) break;
    ib_job *j = ib_job_fifo_pop(&ex->pending);
    if (!now_ms && has_deadline(j)) now_ms = unix_ms();
    if (expire_if_late(ex, j, now_ms, "before the job could be submitted")) continue;
    ops += nodes;
    group[n++] = j;
  }
  return n;
}

/* A host backend (host_working_set) runs a submission's jobs one after
 * another on the driving thread and hands none back before the last is
 * done; with config key host_stream (docs/tuning.md) a submission there
 * is one job, so each result goes out as it is made. */
static bool host_stream(const ib_executor *ex) {
  return ex->config.host_stream && ex->backend->host_working_set;
}

/* A full batch: the job window shared by the submissions that may be in
 * flight, so max_in_flight submissions of this size cover the window. */
static size_t batch_target(const ib_executor *ex) {
  if (host_stream(ex)) return 1;
  size_t t = ex->opts.max_jobs / ex->opts.max_in_flight;
  return t ? t : 1;
}

/* Most of the first n pending jobs are large (ib_job.large: the backend's
 * notion, the one its pipeline goes by); *bytes: their device charge. A
 * window of many 256^2 jobs also sums past SPLIT_MIN_BYTES and would
 * only pay a second submission's fixed cost. */
static bool large_head(const ib_executor *ex, size_t n, uint64_t *bytes) {
  uint64_t b = 0;
  size_t k = 0, large = 0;
  for (const ib_job *j = ex->pending.head; j && k < n; j = j->next, k++) {
    b += j->charge.gpu_work;
    large += j->large;
  }
  *bytes = b;
  return k && 2 * large >= k;
}

/* The start ramp (config key ramp_jobs, docs/tuning.md): a device backend
 * that gets large jobs while nothing is in flight idles until the first
 * submission's first upload, and a full batch only goes out once its jobs
 * were admitted (a run stream parses each in its callback) and the backend
 * planned and staged all of them. So the first submission goes out once
 * ramp_jobs jobs are pending, each next one once twice as many as the one
 * before (ex->ramp_last) are, up to a full batch: the device starts after
 * a few jobs, and each submission runs long enough for the host to admit
 * and stage the next, larger one behind it (the CUDA pipeline's streams
 * are shared, so the submissions' copies queue back to back). The ramp
 * starts again once the executor was idle. Returns the jobs a submission
 * is due at now (a full batch when no ramp applies).
 * Off unless ramp_jobs is set: the runs measured so far showed no gain
 * beyond the spread between processes, and one a stalled staging
 * (bench/RESULTS.md, bench/PROFILE_NOTES.md). */
static size_t due_jobs(const ib_executor *ex) {
  const size_t target = batch_target(ex);
  const size_t ramp = ex->config.ramp_jobs;
  if (!ramp || ramp >= target || ex->backend->host_working_set) return target;
  const size_t due = ex->ramp_last * 2 > ramp ? ex->ramp_last * 2 : ramp;
  /* At most 1/max_in_flight of gpu_bytes: a window that gpu_bytes bounds
   * to a few jobs (4096^2) is cut by partial_size instead. */
  uint64_t bytes;
  if (due >= target || !large_head(ex, due, &bytes) ||
      bytes > ex->opts.gpu_bytes / ex->opts.max_in_flight)
    return target;
  return due;
}

bool ib_exec_batch_due(const ib_executor *ex) {
  /* Cheap refusals first: this runs before every admission of a run
   * stream. */
  const size_t n = ex->pending.n, target = batch_target(ex);
  if (!ex->pending.head || ex->backend->host_working_set) return false;
  const size_t ramp = ex->config.ramp_jobs;
  const bool ramping = ramp && ramp < target && ex->ramp_last * 2 < target;
  const size_t due = ramping && n >= ramp ? due_jobs(ex) : target;
  if (n < due) return false;
  /* A full batch with nothing in flight waits for the rest of the window
   * (as before the ramp: one submission of many small jobs); beside
   * running work, or a batch of the ramp, it goes out now. */
  if (due >= target && !ex->in_flight_head) return false;
  if (ib_credits_submission_room(ex->credits)) return true;
  /* No room, but the oldest submission completed: collected next (step),
   * which makes room, rather than after the rest of the window was
   * admitted while the device runs dry on the smaller submission in
   * flight. A driver call (cuEventQuery), only while a batch waits. */
  const ib_sub *old = ex->in_flight_head;
  return old && (!old->backend_sub || ex->backend->ready(ex->backend_state, old->backend_sub));
}

/* A partial batch issued with nothing in flight is cut into as many
 * submissions as may be in flight when its jobs are large (large_head;
 * SPLIT_MIN_BYTES of device charge a part at least): a window that gpu_bytes bounds
 * before max_jobs does (4096^2 images) otherwise runs one submission at a
 * time - the device drains it (its last download alone), its credits come
 * back only once all of it completed, and the next one fills anew (its
 * first upload alone). Cut, the first part completes while the next runs,
 * and admission refills behind it. Small jobs stay in one submission: its
 * fixed cost would outweigh the overlap. Returns the jobs a submission of
 * this dispatch takes at most. */
#define SPLIT_MIN_BYTES ((uint64_t)16 << 20)
static size_t partial_size(const ib_executor *ex) {
  const size_t target = batch_target(ex), cap = ex->pending.n < target ? ex->pending.n : target;
  /* A host backend (host_working_set) runs one job at a time: nothing to overlap. */
  if (ex->in_flight_head || cap < 2 || ex->backend->host_working_set) return target;
  uint64_t bytes = 0;
  if (!large_head(ex, cap, &bytes)) return target;
  uint64_t parts = bytes / SPLIT_MIN_BYTES;
  if (parts > ex->opts.max_in_flight) parts = ex->opts.max_in_flight;
  if (parts > cap) parts = cap;
  return parts < 2 ? target : (cap + (size_t)parts - 1) / (size_t)parts;
}

/* Job starts (ib_executor_options.start_cb). A device backend's jobs start
 * together with their submission; a host backend (host_working_set) runs
 * them one after another inside submit, so only the first starts with it
 * and the backend reports each later one as it begins it. Reported before
 * the submission goes to the backend (and before an injected stall), so a
 * job that hangs there is seen as running. */
static void report_starts(ib_executor *ex, ib_sub *s) {
  if (!ex->start.fn) return;
  const bool host = ex->backend->host_working_set != NULL;
  for (size_t i = 0; i < s->n; i++) {
    if (!host || i == 0)
      ex->start.fn(ex->start.opaque, s->jobs[i]->id, s->jobs[i]->tag);
    else
      s->bjobs[i].start = &ex->start;
  }
}

/* Builds and enqueues one submission (at most `most` jobs, at most a full
 * batch) from the head of `pending`. */
static ib_status issue_one(ib_executor *ex, size_t most) {
  size_t cap = ex->pending.n < batch_target(ex) ? ex->pending.n : batch_target(ex);
  if (most < cap) cap = most;
  ib_sub *s = calloc(1, sizeof *s);
  ib_job **jobs = calloc(cap, sizeof *jobs);
  ib_backend_job *bjobs = calloc(cap, sizeof *bjobs);
  if (!s || !jobs || !bjobs) {
    free(s);
    free(jobs);
    free(bjobs);
    return IB_INTERNAL;
  }
  s->jobs = jobs;
  s->bjobs = bjobs;
  s->n = take_group(ex, jobs, cap);
  if (s->n == 0) { /* every job taken had expired */
    free(s);
    free(jobs);
    free(bjobs);
    return IB_OK;
  }
  s->started_us = ib_now_us();
  ex->ramp_last = s->n;
  for (size_t i = 0; i < s->n; i++) {
    jobs[i]->queue_us = s->started_us - jobs[i]->admitted_us;
    bjobs[i] = (ib_backend_job){.graph = jobs[i]->graph,
                                .job_id = jobs[i]->id,
                                .resident = jobs[i]->resident,
                                .tag = jobs[i]->tag};
  }
  report_starts(ex, s);
  ib_credits_submission_begin(ex->credits);
  ib_error err = {0};
  ex->submissions_issued++;
  ib_status st;
#ifdef IB_FAULTS
  ib_fault_stall(ex, s);
  if (ib_fault_submission(ex, s, ex->submissions_issued))
    st = ib_error_set(&err, IB_DEVICE, IB_STAGE_EXECUTE,
                      "submission %llu: device launch failed (injected fault)",
                      (unsigned long long)ex->submissions_issued);
  else
#endif
    st = ex->backend->submit(ex->backend_state, bjobs, s->n, &s->backend_sub, &err);
  if (st != IB_OK) {
    s->backend_sub = NULL;
    fail_all(s, st, &err);
  }
  if (ex->in_flight_tail)
    ex->in_flight_tail->next = s;
  else
    ex->in_flight_head = s;
  ex->in_flight_tail = s;
  return IB_OK;
}

ib_status ib_exec_dispatch(ib_executor *ex, bool partial) {
  /* Called at least once per result: the clock only when something is
   * parked (a vDSO clock read is tens of ns, a 256² job's budget 5 us). */
  if (ex->parked.head) unpark(ex, unix_ms());
  const size_t psize = partial ? partial_size(ex) : 0;
  /* The room last: it takes the credits lock, and most calls (one per
   * result) find no full batch. A batch the start ramp made due goes
   * out at its size (due_jobs, again after each issue: it doubles), a
   * full batch pending or not: a submission staged while the device runs
   * one half its size keeps the device fed. */
  while (ex->pending.head) {
    /* A host backend's submission is done when submit returns: hand its
     * result back before running the next job (batch_target). */
    if (host_stream(ex) && ex->in_flight_head) break;
    const size_t n = ex->pending.n, target = batch_target(ex), due = due_jobs(ex);
    size_t most;
    if (due < target && n >= due) /* the ramp's size, even with a full batch pending */
      most = partial && psize < due ? psize : due;
    else if (partial)
      most = psize;
    else if (n >= target)
      most = target;
    else
      break;
    if (!ib_credits_submission_room(ex->credits)) break;
    ib_status st = issue_one(ex, most);
    if (st != IB_OK) return st;
  }
  return IB_OK;
}

static ib_sub *pop_in_flight(ib_executor *ex) {
  ib_sub *s = ex->in_flight_head;
  if (!s) return NULL;
  ex->in_flight_head = s->next;
  if (!ex->in_flight_head) ex->in_flight_tail = NULL;
  s->next = NULL;
  return s;
}

void ib_exec_wait_oldest(ib_executor *ex) {
  ib_sub *s = pop_in_flight(ex);
  if (s) finish_sub(ex, s, true);
}

/* Collects finished submissions from the front, so results keep the
 * submission order where completion allows. */
void ib_exec_collect_ready(ib_executor *ex) {
  while (ex->in_flight_head &&
         (!ex->in_flight_head->backend_sub ||
          ex->backend->ready(ex->backend_state, ex->in_flight_head->backend_sub)))
    ib_exec_wait_oldest(ex);
}

void ib_exec_run_alone(ib_executor *ex, ib_job *job) {
  ib_job_fifo_push(&ex->pending, job);
  /* Queue mode off never leaves a submission outstanding across calls, so
   * there is room unless max_in_flight is exhausted by nothing: fence first. */
  while (ex->in_flight_head) ib_exec_wait_oldest(ex);
  if (issue_one(ex, batch_target(ex)) != IB_OK) {
    ib_job *j = ib_job_fifo_pop(&ex->pending);
    ib_backend_job bj = {.status = IB_INTERNAL};
    ib_error_set(&bj.err, IB_INTERNAL, IB_STAGE_EXECUTE, "submit: out of memory");
    complete_job(ex, j, &bj, 0);
    return;
  }
  ib_exec_wait_oldest(ex);
}

bool ib_exec_has_live(const ib_executor *ex) {
  return ex->pending.head || ex->parked.head || ex->in_flight_head || ex->completed.head;
}

void ib_exec_cancel_all(ib_executor *ex) {
  ib_job *j;
  while ((j = ib_job_fifo_pop(&ex->parked)) || (j = ib_job_fifo_pop(&ex->pending))) {
    ib_job_discard(ex, j, IB_COUNT_CANCELLED);
  }
  /* Fence: in-flight work may still write its buffers. */
  while (ex->in_flight_head) ib_exec_wait_oldest(ex);
  while ((j = ib_job_fifo_pop(&ex->completed))) {
    ib_job_discard(ex, j, IB_COUNT_CANCELLED);
  }
}
