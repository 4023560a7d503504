/* Admission credits: conservative reservations against the four caps. */
#include "exec/credits.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "exec/backend.h"
#include "ops/op.h"

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static uint64_t shape_bytes(const ib_shape *s) {
  return (uint64_t)s->width * s->height * ib_mode_bands(s->mode);
}

void ib_credits_init(ib_credits *cr, const ib_executor_options *o) {
  pthread_mutex_init(&cr->lock, NULL);
  cr->c = (ib_executor_counters){0};
  cr->c.gpu_bytes.cap = o->gpu_bytes;
  cr->c.host_bytes.cap = o->host_bytes;
  cr->c.jobs.cap = o->max_jobs;
  cr->c.in_flight.cap = o->max_in_flight;
}

void ib_credits_destroy(ib_credits *cr) { pthread_mutex_destroy(&cr->lock); }

ib_charge_rules ib_charge_rules_of(const ib_backend *be, void *state, const ib_graph *g,
                                   uint64_t echo_bytes, bool resident) {
  const bool lends = be->lent_release != NULL;
  return (ib_charge_rules){
      .echo_bytes = echo_bytes,
      .host_working_set = be->host_working_set,
      .resident = resident,
      .staging_by_backend = be->job_bytes_stages,
      .lends = lends,
      .out_in_buffer = lends && !resident && g && be->out_in_buffer && be->out_in_buffer(state, g)};
}

/* Every buffer that really exists is charged once, at its largest (the
 * formulas, per backend, are in docs/credits.md):
 * - host-memory backend (CPU): the source bytes, the working set (its
 *   host_working_set: ib_cpu_working_set)
 *   while running; its terminal buffer (it becomes the result) and the
 *   snapshot until delivered. The device charge is the working set (the
 *   device is the host).
 * - device backend: device working set = every node output alive at once
 *   (peak_bytes) plus params/LUTs/scratch; a resident output keeps its
 *   buffer and an equal download workspace until delivered. Host: the
 *   source bytes and - unless the backend's own estimate covers them - one
 *   upload staging per decoded source and the parameter staging while
 *   running; until delivered the output's host copy (the lent arena range,
 *   or download staging + copy when the backend does not lend or the
 *   output is resident) and the snapshot. A backend that downloads the
 *   output into the Job buffer (out_in_buffer) holds that buffer instead:
 *   held = max(buffer, out) + snapshot, working = the sources outside it. */
static uint64_t renditions_bytes(const ib_graph *g, uint64_t *distinct) {
  uint64_t all = 0, once = 0;
  for (size_t i = 0; i < g->job->n_renditions; i++) {
    uint32_t node = g->job->renditions[i]->node;
    uint64_t b = shape_bytes(&g->nodes[node].shape);
    all = sat_add(all, b);
    size_t k = 0;
    while (k < i && g->job->renditions[k]->node != node) k++;
    if (k == i) once = sat_add(once, b);
  }
  *distinct = once;
  return all;
}

ib_charge ib_charge_for(const ib_graph *g, const ib_charge_rules *r) {
  uint64_t src = 0, decoded = 0;
  for (size_t i = 0; i < g->n_sources; i++) {
    src = sat_add(src, g->sources[i].len);
    decoded = sat_add(decoded, shape_bytes(&g->sources[i].shape));
  }
  uint64_t out = shape_bytes(&g->nodes[g->n_nodes - 1].shape);
  /* Renditions: every output's bytes are held (a node named twice is a
   * copy); the distinct nodes are what the working set keeps alive. */
  uint64_t distinct = out;
  if (g->job->n_renditions) out = renditions_bytes(g, &distinct);
  ib_charge c = {0};
  if (r->host_working_set) {
    uint64_t work = r->host_working_set(g); /* >= distinct: alive at the end */
    c.gpu_work = work;
    c.host_work = sat_add(src, work > distinct ? work - distinct : 0);
    c.host_held = sat_add(out, r->echo_bytes);
    return c;
  }
  c.gpu_work = sat_add(g->peak_bytes, g->param_bytes);
  if (r->resident) {
    c.gpu_work -= out;
    c.gpu_held = sat_add(out, out);
  }
  /* A Job buffer that comes back holding the output outlives the run: the
   * sources in it are charged with it, held, not as working bytes. */
  const uint64_t in_buf = r->out_in_buffer ? ib_graph_bytes_in_buffer(g) : 0;
  const uint64_t work_src = src > in_buf ? src - in_buf : 0;
  c.host_work =
      r->staging_by_backend ? work_src : sat_add(work_src, sat_add(decoded, g->param_bytes));
  uint64_t held = r->out_in_buffer           ? (g->buffer_len > out ? g->buffer_len : out)
                  : r->lends && !r->resident ? out
                                             : sat_add(out, out);
  c.host_held = sat_add(held, r->echo_bytes);
  return c;
}

void ib_charge_raise(ib_charge *ch, uint64_t gpu_bytes, uint64_t host_bytes) {
  if (gpu_bytes > ch->gpu_work) ch->gpu_work = gpu_bytes;
  if (host_bytes > ch->host_work) ch->host_work = host_bytes;
}

uint64_t ib_charge_gpu_total(const ib_charge *ch) { return sat_add(ch->gpu_work, ch->gpu_held); }
uint64_t ib_charge_host_total(const ib_charge *ch) { return sat_add(ch->host_work, ch->host_held); }

ib_status ib_credits_check_caps(ib_credits *cr, const ib_charge *ch, ib_error *err) {
  uint64_t gpu = ib_charge_gpu_total(ch), host = ib_charge_host_total(ch);
  if (gpu > cr->c.gpu_bytes.cap)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_ADMIT,
                        "admit: job needs %llu gpu bytes, more than the gpu_bytes cap %llu",
                        (unsigned long long)gpu, (unsigned long long)cr->c.gpu_bytes.cap);
  if (host > cr->c.host_bytes.cap)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_ADMIT,
                        "admit: job needs %llu host bytes, more than the host_bytes cap %llu",
                        (unsigned long long)host, (unsigned long long)cr->c.host_bytes.cap);
  return IB_OK;
}

static void use(ib_credit_counter *k, uint64_t n) {
  k->in_use += n;
  if (k->in_use > k->peak) k->peak = k->in_use;
}

static void unuse(ib_credit_counter *k, uint64_t n) {
  k->in_use = n > k->in_use ? 0 : k->in_use - n;
}

static void bump(ib_executor_counters *c, ib_count what) {
  switch (what) {
    case IB_COUNT_ADMITTED: c->admitted++; break;
    case IB_COUNT_COMPLETED: c->completed++; break;
    case IB_COUNT_FAILED: c->failed++; break;
    case IB_COUNT_CANCELLED: c->cancelled++; break;
    case IB_COUNT_DELIVERED: c->delivered++; break;
    case IB_COUNT_PARKED: c->jobs_waited_compile++; break;
    case IB_COUNT_NONE: break;
  }
}

ib_status ib_credits_reserve(ib_credits *cr, const ib_charge *ch, ib_error *err) {
  ib_status st = IB_OK;
  uint64_t gpu = ib_charge_gpu_total(ch), host = ib_charge_host_total(ch);
  pthread_mutex_lock(&cr->lock);
  ib_executor_counters *c = &cr->c;
  if (c->jobs.in_use >= c->jobs.cap)
    st = ib_error_set(err, IB_QUEUE_FULL, IB_STAGE_ADMIT,
                      "admit: %llu of max_jobs %llu jobs are live (pending, executing or "
                      "undelivered); drain results and retry",
                      (unsigned long long)c->jobs.in_use, (unsigned long long)c->jobs.cap);
  else if (gpu > c->gpu_bytes.cap - c->gpu_bytes.in_use)
    st = ib_error_set(err, IB_QUEUE_FULL, IB_STAGE_ADMIT,
                      "admit: job needs %llu gpu bytes, %llu of %llu are reserved by live work",
                      (unsigned long long)gpu, (unsigned long long)c->gpu_bytes.in_use,
                      (unsigned long long)c->gpu_bytes.cap);
  else if (host > c->host_bytes.cap - c->host_bytes.in_use)
    st = ib_error_set(err, IB_QUEUE_FULL, IB_STAGE_ADMIT,
                      "admit: job needs %llu host bytes, %llu of %llu are reserved by live work",
                      (unsigned long long)host, (unsigned long long)c->host_bytes.in_use,
                      (unsigned long long)c->host_bytes.cap);
  if (st == IB_QUEUE_FULL && err && c->resident_live) {
    size_t n = strlen(err->message);
    snprintf(err->message + n, sizeof err->message - n,
             " (%llu held resident handle(s) keep %llu gpu / %llu host bytes: release them)",
             (unsigned long long)c->resident_live, (unsigned long long)c->resident_gpu_bytes,
             (unsigned long long)c->resident_host_bytes);
  }
  if (st == IB_OK) {
    use(&c->jobs, 1);
    use(&c->gpu_bytes, gpu);
    use(&c->host_bytes, host);
    c->admitted++;
  } else {
    c->rejected_queue_full++;
  }
  pthread_mutex_unlock(&cr->lock);
  return st;
}

void ib_credits_return_work(ib_credits *cr, ib_charge *ch, ib_count what) {
  pthread_mutex_lock(&cr->lock);
  bump(&cr->c, what);
  unuse(&cr->c.gpu_bytes, ch->gpu_work);
  unuse(&cr->c.host_bytes, ch->host_work);
  pthread_mutex_unlock(&cr->lock);
  ch->gpu_work = ch->host_work = 0;
}

void ib_credits_return_all(ib_credits *cr, ib_charge *ch, ib_count what) {
  pthread_mutex_lock(&cr->lock);
  bump(&cr->c, what);
  unuse(&cr->c.gpu_bytes, ib_charge_gpu_total(ch));
  unuse(&cr->c.host_bytes, ib_charge_host_total(ch));
  unuse(&cr->c.jobs, 1);
  pthread_mutex_unlock(&cr->lock);
  *ch = (ib_charge){0};
}

void ib_credits_keep_resident(ib_credits *cr, ib_charge *ch, uint64_t *gpu, uint64_t *host) {
  pthread_mutex_lock(&cr->lock);
  /* The working part is already back (the submission completed). */
  unuse(&cr->c.gpu_bytes, ch->gpu_work);
  unuse(&cr->c.host_bytes, ch->host_work);
  cr->c.resident_live++;
  cr->c.resident_gpu_bytes += ch->gpu_held;
  cr->c.resident_host_bytes += ch->host_held;
  pthread_mutex_unlock(&cr->lock);
  *gpu = ch->gpu_held;
  *host = ch->host_held;
  *ch = (ib_charge){0};
}

void ib_credits_release_resident(ib_credits *cr, uint64_t gpu, uint64_t host) {
  pthread_mutex_lock(&cr->lock);
  unuse(&cr->c.gpu_bytes, gpu);
  unuse(&cr->c.host_bytes, host);
  cr->c.resident_live--;
  cr->c.resident_gpu_bytes -= gpu;
  cr->c.resident_host_bytes -= host;
  pthread_mutex_unlock(&cr->lock);
}

void ib_credits_lend(ib_credits *cr, uint64_t host) {
  pthread_mutex_lock(&cr->lock);
  cr->c.lent_arenas++;
  cr->c.lent_host_bytes += host;
  pthread_mutex_unlock(&cr->lock);
}

void ib_credits_release_lent(ib_credits *cr, uint64_t host) {
  pthread_mutex_lock(&cr->lock);
  unuse(&cr->c.host_bytes, host);
  cr->c.lent_arenas--;
  cr->c.lent_host_bytes -= host;
  pthread_mutex_unlock(&cr->lock);
}

bool ib_credits_outputs_held(ib_credits *cr) {
  pthread_mutex_lock(&cr->lock);
  bool held = cr->c.resident_live > 0 || cr->c.lent_arenas > 0;
  pthread_mutex_unlock(&cr->lock);
  return held;
}

bool ib_credits_submission_room(ib_credits *cr) {
  pthread_mutex_lock(&cr->lock);
  bool room = cr->c.in_flight.in_use < cr->c.in_flight.cap;
  pthread_mutex_unlock(&cr->lock);
  return room;
}

void ib_credits_submission_begin(ib_credits *cr) {
  pthread_mutex_lock(&cr->lock);
  use(&cr->c.in_flight, 1);
  cr->c.submissions++;
  pthread_mutex_unlock(&cr->lock);
}

void ib_credits_submission_end(ib_credits *cr) {
  pthread_mutex_lock(&cr->lock);
  unuse(&cr->c.in_flight, 1);
  pthread_mutex_unlock(&cr->lock);
}

void ib_credits_count(ib_credits *cr, ib_count what) {
  pthread_mutex_lock(&cr->lock);
  bump(&cr->c, what);
  pthread_mutex_unlock(&cr->lock);
}

void ib_credits_count_rejection(ib_credits *cr, ib_status st) {
  pthread_mutex_lock(&cr->lock);
  switch (st) {
    case IB_QUEUE_FULL: cr->c.rejected_queue_full++; break;
    case IB_LIMIT: cr->c.rejected_limit++; break;
    case IB_UNSUPPORTED: cr->c.rejected_unsupported++; break;
    case IB_INVALID: cr->c.rejected_invalid++; break;
    default: cr->c.rejected_other++; break;
  }
  pthread_mutex_unlock(&cr->lock);
}
