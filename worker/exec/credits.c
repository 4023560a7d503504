/* Admission credits: conservative reservations against the four caps. */
#include "exec/credits.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"

static uint64_t sat_add(uint64_t a, uint64_t b) {
  return a + b < a ? UINT64_MAX : a + b;
}

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

void ib_credits_destroy(ib_credits *cr) {
  pthread_mutex_destroy(&cr->lock);
}

/* The most node-output bytes alive at once when nodes run in order and an
 * output is freed right after its last reader (ib_cpu_execute's contract;
 * outputs nobody reads stay alive to the end). A node's inputs are still
 * alive while its output is written. */
static uint64_t live_peak(const ib_graph *g) {
  uint64_t live = 0, peak = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ib_node *n = &g->nodes[i];
    live = sat_add(live, shape_bytes(&n->shape));
    if (live > peak) peak = live;
    for (unsigned k = 0; k < n->n_inputs; k++) {
      uint32_t in = n->inputs[k];
      bool seen = k == 1 && n->inputs[0] == in; /* the same node read twice frees once */
      if (!seen && g->nodes[in].last_use == i) live -= shape_bytes(&g->nodes[in].shape);
    }
  }
  return peak;
}

/* Every distinct buffer is charged once, at its largest:
 * - device working set: node outputs (the source nodes' outputs are the
 *   upload targets, the last node's is the terminal buffer) - all alive at
 *   once on a device backend (peak_bytes), the liveness peak on a
 *   host-memory backend - plus params/LUTs. A resident output keeps its
 *   buffer and an equal download workspace until delivered.
 * - host, device backend: source bytes, pinned upload staging (decoded
 *   sources) and param staging while running; the download staging range
 *   and the delivered copy (2 x output) plus the snapshot until delivered.
 * - host, host-memory backend: source bytes and the working set while
 *   running; the terminal buffer (it becomes the result) and the snapshot
 *   until delivered. The device charge mirrors it (the device is the host). */
ib_charge ib_charge_for(const ib_graph *g, uint64_t echo_bytes, bool host_memory, bool resident) {
  uint64_t src = 0, decoded = 0;
  for (size_t i = 0; i < g->n_sources; i++) {
    src = sat_add(src, g->sources[i].len);
    decoded = sat_add(decoded, shape_bytes(&g->sources[i].shape));
  }
  uint64_t out = shape_bytes(&g->nodes[g->n_nodes - 1].shape);
  uint64_t work = sat_add(host_memory ? live_peak(g) : g->peak_bytes, g->param_bytes);
  ib_charge c = {.gpu_work = work};
  if (resident) {
    c.gpu_work -= out;
    c.gpu_held = sat_add(out, out);
  }
  if (host_memory) {
    c.host_work = sat_add(src, work - out);
    c.host_held = sat_add(out, echo_bytes);
  } else {
    c.host_work = sat_add(src, sat_add(decoded, g->param_bytes));
    c.host_held = sat_add(sat_add(out, out), echo_bytes);
  }
  return c;
}

static uint64_t gpu_total(const ib_charge *ch) {
  return sat_add(ch->gpu_work, ch->gpu_held);
}
static uint64_t host_total(const ib_charge *ch) {
  return sat_add(ch->host_work, ch->host_held);
}

ib_status ib_credits_check_caps(ib_credits *cr, const ib_charge *ch, ib_error *err) {
  uint64_t gpu = gpu_total(ch), host = host_total(ch);
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

ib_status ib_credits_reserve(ib_credits *cr, const ib_charge *ch, ib_error *err) {
  ib_status st = IB_OK;
  uint64_t gpu = gpu_total(ch), host = host_total(ch);
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
  }
  pthread_mutex_unlock(&cr->lock);
  return st;
}

void ib_credits_return_work(ib_credits *cr, ib_charge *ch) {
  pthread_mutex_lock(&cr->lock);
  unuse(&cr->c.gpu_bytes, ch->gpu_work);
  unuse(&cr->c.host_bytes, ch->host_work);
  pthread_mutex_unlock(&cr->lock);
  ch->gpu_work = ch->host_work = 0;
}

void ib_credits_return_all(ib_credits *cr, ib_charge *ch) {
  pthread_mutex_lock(&cr->lock);
  unuse(&cr->c.gpu_bytes, gpu_total(ch));
  unuse(&cr->c.host_bytes, host_total(ch));
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
  switch (what) {
    case IB_COUNT_ADMITTED: cr->c.admitted++; break;
    case IB_COUNT_COMPLETED: cr->c.completed++; break;
    case IB_COUNT_FAILED: cr->c.failed++; break;
    case IB_COUNT_CANCELLED: cr->c.cancelled++; break;
    case IB_COUNT_DELIVERED: cr->c.delivered++; break;
  }
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
