/*
 * metrics.c - what /metrics, /healthz and /readyz say. The driving thread
 * copies the worker's counters and gauges into a snapshot (at most every
 * 100 ms, and at once where health changes); the listener formats that
 * snapshot only, so it never races the worker's own state.
 */
#include "kafka/metrics.h"
#include "kafka/clock.h"
#include "kafka/fault.h"
#include "kafka/hist.h"
#include "kafka/pool.h"
#include "kafka/publish.h"
#include "kafka/wstate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REFRESH_EVERY_US 100000u

/* ---------------------------------------------------------------- snapshot */

static void fill(ib_worker *w, ib_wsnap *s) {
  memcpy(s->counters, w->counters, sizeof s->counters);
  memcpy(s->outcomes, w->outcomes, sizeof s->outcomes);
  memcpy(s->faults, w->faults, sizeof s->faults);
  s->consumed_bytes = w->consumed_bytes;
  s->result_bytes = w->result_bytes;
  s->queue = w->queue_hist;
  s->exec = w->exec_hist;
  if (w->pool) ib_wpool_encode_hist(w->pool, &s->encode);
  s->waiting = w->waiting.n + w->retry.n;
  s->running = w->running;
  s->undelivered = w->undelivered;
  s->live = ib_wlive_jobs(w);
  s->unsettled = w->unsettled;
  s->handles = w->n_handles;
  uint64_t now = ib_wnow_us();
  s->partitions = 0;
  s->oldest_us = 0;
  s->lag = -1;
  for (int32_t i = 0; i < w->n_parts; i++) {
    const ib_wpart *p = &w->parts[i];
    if (!p->assigned) continue;
    s->partitions++;
    if (p->head && now - p->head->consumed_us > s->oldest_us)
      s->oldest_us = now - p->head->consumed_us;
    /* Lag: messages past the first one not yet finished (or past the
     * committed offset), up to the last known high watermark (cached from
     * fetches: no broker round trip). */
    int64_t lo, hi = -1;
    if (!w->consumer ||
        rd_kafka_get_watermark_offsets(w->consumer, w->cfg->jobs_topic, p->id, &lo, &hi) || hi < 0)
      continue;
    int64_t from = p->head ? p->head->offset : p->done_upto >= 0 ? p->done_upto : p->committed;
    if (from < 0) {
      /* Nothing tracked or committed by us yet: from the fetch position. */
      rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(l, w->cfg->jobs_topic, p->id);
      if (rd_kafka_position(w->consumer, l) == RD_KAFKA_RESP_ERR_NO_ERROR)
        from = l->elems[0].offset;
      rd_kafka_topic_partition_list_destroy(l);
      if (from < 0) continue;
    }
    s->lag = (s->lag < 0 ? 0 : s->lag) + (hi > from ? hi - from : 0);
  }
  if (w->ex) {
    ib_executor_counters c;
    ib_executor_counters_get(w->ex, &c);
    s->credits[IB_CREDIT_GPU] = c.gpu_bytes;
    s->credits[IB_CREDIT_HOST] = c.host_bytes;
    s->credits[IB_CREDIT_JOBS] = c.jobs;
    s->credits[IB_CREDIT_IN_FLIGHT] = c.in_flight;
    s->compile_depth = c.compile_queue_depth;
    s->compile_full = c.compile_queue_full;
    s->module_entries = c.module_cache_entries;
    s->module_bytes = c.module_cache_bytes;
    s->pinned_bytes = c.pinned_pool_bytes;
    s->disk_cache_bytes = c.disk_cache_bytes;
    ib_executor_pools_get(w->ex, &s->pools);
  }
  ib_codec_scratch_get(&s->scratch_bytes, &s->scratch_cap);
  /* The kernel caches' bounds from the worker's own configuration (0 is
   * the library's default); the cpu backend keeps no kernels, so there
   * they bound nothing. */
  ib_executor_options dflt;
  ib_executor_options_default(&dflt);
  const ib_executor_options *o = &w->cfg->exec;
  s->module_cap = o->module_cache_bytes ? o->module_cache_bytes : dflt.module_cache_bytes;
  s->disk_cache_cap = o->disk_cache_bytes ? o->disk_cache_bytes : dflt.disk_cache_bytes;
  s->paused = w->paused;
  s->joined = w->joined;
  s->stopping = w->stopping;
  s->sick = w->sick;
  s->fatal = w->fatal;
  s->exit_code = w->exit_code;
  s->stop_deadline = w->stop_deadline;
}

void ib_wmetrics_refresh(ib_worker *w, bool force) {
  ib_wmetrics *m = w->metrics;
  if (!m) return;
  uint64_t now = ib_wnow_us();
  if (!force && now - m->refreshed_us < REFRESH_EVERY_US) return;
  m->refreshed_us = now;
  /* Filled outside the lock (it reads the executor and the pool's lock). */
  ib_wsnap s;
  pthread_mutex_lock(&m->mu);
  s = m->snap;
  pthread_mutex_unlock(&m->mu);
  fill(w, &s);
  pthread_mutex_lock(&m->mu);
  m->snap = s;
  pthread_mutex_unlock(&m->mu);
}

bool ib_wsnap_healthy(const ib_wsnap *s, uint64_t now_us) {
  if (s->sick || s->fatal) return false;
  /* A drain within its grace period is healthy; a failed exit or a drain
   * past its grace is not. */
  return !s->stopping || (s->exit_code == 0 && now_us <= s->stop_deadline);
}

bool ib_wsnap_ready(const ib_wsnap *s) {
  return s->joined && !s->stopping && !s->sick && !s->fatal;
}

/* ---------------------------------------------------------------- format */

typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void put(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)k < b->cap - b->n) {
      b->n += (size_t)k;
      return;
    }
    size_t cap = b->cap * 2 + (size_t)k;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

static void family(sbuf *b, const char *name, const char *type, const char *help) {
  put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(sbuf *b, const char *name, const char *type, const char *help, uint64_t v) {
  family(b, name, type, help);
  put(b, "%s %" PRIu64 "\n", name, v);
}

static void histogram(sbuf *b, const char *name, const char *help, const ib_hist *h) {
  family(b, name, "histogram", help);
  uint64_t cum = 0;
  for (size_t i = 0; i < IB_HIST_BUCKETS; i++) {
    cum += h->counts[i];
    put(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, (double)ib_hist_bound_us(i) / 1e6, cum);
  }
  put(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->n);
  put(b, "%s_sum %.6f\n%s_count %" PRIu64 "\n", name, (double)h->sum_us / 1e6, name, h->n);
}

char *ib_wsnap_format(const ib_wsnap *s, size_t *len) {
  sbuf b = {.cap = 16384};
  if (!(b.p = malloc(b.cap))) return NULL;
  b.p[0] = 0;
  scalar(&b, "imgbatch_messages_consumed_total", "counter", "Job messages consumed.",
         s->counters[IB_WC_CONSUMED]);
  scalar(&b, "imgbatch_consumed_bytes_total", "counter", "Bytes of Job messages consumed.",
         s->consumed_bytes);
  static const char *const outcomes[IB_WO_N] = {"image", "error", "file", "resident"};
  family(&b, "imgbatch_results_total", "counter", "Results published, by outcome.");
  for (int i = 0; i < IB_WO_N; i++)
    put(&b, "imgbatch_results_total{outcome=\"%s\"} %" PRIu64 "\n", outcomes[i], s->outcomes[i]);
  scalar(&b, "imgbatch_result_bytes_total", "counter", "Bytes of packed Results published.",
         s->result_bytes);
  family(&b, "imgbatch_worker_faults_total", "counter",
         "Worker faults (no Result, no commit: retried or the worker stops), by kind.");
  for (int i = 0; i < IB_WF_N; i++)
    put(&b, "imgbatch_worker_faults_total{kind=\"%s\"} %" PRIu64 "\n", ib_wfault_name(i),
        s->faults[i]);
  scalar(&b, "imgbatch_retries_total", "counter", "Jobs resubmitted after a worker fault.",
         s->counters[IB_WC_RETRIES]);
  scalar(&b, "imgbatch_offset_resets_total", "counter", "Consumer offset resets.",
         s->counters[IB_WC_RESETS]);
  scalar(&b, "imgbatch_jobs_deleted_unconsumed_total", "counter",
         "Jobs the broker deleted (retention) before this worker consumed them: no Result.",
         s->counters[IB_WC_DELETED]);
  scalar(&b, "imgbatch_results_republished_total", "counter",
         "Results produced again after a failed delivery.", s->counters[IB_WC_REPRODUCED]);
  scalar(&b, "imgbatch_commits_total", "counter", "Partition offsets committed.",
         s->counters[IB_WC_COMMITS]);
  scalar(&b, "imgbatch_jobs_timed_out_total", "counter",
         "Jobs answered with Timeout: the oldest unfinished job of a partition, stuck past "
         "--stall-seconds.",
         s->counters[IB_WC_TIMED_OUT]);
  scalar(&b, "imgbatch_late_results_dropped_total", "counter",
         "Real results of timed-out jobs that came back later, dropped (one Result per message).",
         s->counters[IB_WC_LATE_DROPPED]);
  scalar(&b, "imgbatch_jobs_waiting", "gauge",
         "Jobs consumed, not yet in the executor (retries included).", s->waiting);
  scalar(&b, "imgbatch_jobs_running", "gauge", "Jobs in the executor.", s->running);
  scalar(&b, "imgbatch_results_undelivered", "gauge",
         "Results and DLQ copies produced, not yet acknowledged.", s->undelivered);
  scalar(&b, "imgbatch_jobs_live", "gauge",
         "Jobs holding a --max-jobs slot: admitted, their Result not yet acknowledged.", s->live);
  scalar(&b, "imgbatch_results_uncommitted", "gauge",
         "Results out that no acknowledged commit covers (what a crash would repeat; at most "
         "--max-uncommitted).",
         s->unsettled);
  family(&b, "imgbatch_oldest_uncommitted_seconds", "gauge",
         "Age of the oldest message not yet finished in an assigned partition.");
  put(&b, "imgbatch_oldest_uncommitted_seconds %.3f\n", (double)s->oldest_us / 1e6);
  scalar(&b, "imgbatch_partitions_assigned", "gauge", "Partitions of the jobs topic assigned.",
         s->partitions);
  if (s->lag >= 0)
    scalar(&b, "imgbatch_consumer_lag_messages", "gauge",
           "Messages of assigned partitions not yet finished, to the last known high watermark.",
           (uint64_t)s->lag);
  scalar(&b, "imgbatch_paused", "gauge", "1 while fetching is paused.", s->paused);
  static const char *const credits[IB_CREDIT_N] = {"gpu_bytes", "host_bytes", "jobs", "in_flight"};
  family(&b, "imgbatch_credit_in_use", "gauge",
         "Executor credits in use (admission reservations).");
  for (int i = 0; i < IB_CREDIT_N; i++)
    put(&b, "imgbatch_credit_in_use{credit=\"%s\"} %" PRIu64 "\n", credits[i],
        s->credits[i].in_use);
  family(&b, "imgbatch_credit_cap", "gauge", "Executor credit caps.");
  for (int i = 0; i < IB_CREDIT_N; i++)
    put(&b, "imgbatch_credit_cap{credit=\"%s\"} %" PRIu64 "\n", credits[i], s->credits[i].cap);
  scalar(&b, "imgbatch_module_cache_entries", "gauge", "Kernel modules loaded (cuda).",
         s->module_entries);
  scalar(&b, "imgbatch_module_cache_bytes", "gauge",
         "Kernel modules loaded: their image sizes (cuda).", s->module_bytes);
  scalar(&b, "imgbatch_module_cache_cap_bytes", "gauge",
         "The most the loaded kernel modules may hold (--module-cache-bytes; cuda).",
         s->module_cap);
  scalar(&b, "imgbatch_pinned_pool_bytes", "gauge",
         "Pinned host memory the pool holds, in use or kept for reuse (cuda).", s->pinned_bytes);
  scalar(&b, "imgbatch_disk_cache_bytes", "gauge", "The kernel disk cache's size (cuda).",
         s->disk_cache_bytes);
  scalar(&b, "imgbatch_disk_cache_cap_bytes", "gauge",
         "The most the kernel disk cache may hold (--disk-cache-bytes; cuda).", s->disk_cache_cap);
  scalar(&b, "imgbatch_host_pool_bytes", "gauge",
         "Host memory the backend keeps for reuse, in use or kept (cuda: pinned; cpu: large "
         "blocks).",
         s->pools.host_bytes);
  scalar(&b, "imgbatch_host_pool_cap_bytes", "gauge", "The most the host pool may hold.",
         s->pools.host_cap);
  scalar(&b, "imgbatch_device_pool_bytes", "gauge",
         "Device memory the block pool holds, in use or kept for reuse (cuda).",
         s->pools.device_bytes);
  scalar(&b, "imgbatch_device_pool_cap_bytes", "gauge", "The most the device pool may hold.",
         s->pools.device_cap);
  scalar(&b, "imgbatch_codec_scratch_bytes", "gauge",
         "PNG codec buffers the decode and encode threads keep for their next image.",
         s->scratch_bytes);
  scalar(&b, "imgbatch_codec_scratch_cap_bytes", "gauge",
         "The most the codec threads may keep together.", s->scratch_cap);
  scalar(&b, "imgbatch_resident_handles", "gauge", "Resident (GPU) outputs held for clients.",
         s->handles);
  scalar(&b, "imgbatch_compile_queue_depth", "gauge",
         "Kernel signatures queued or compiling (--compile-threads; 0 on the cpu backend).",
         s->compile_depth);
  scalar(&b, "imgbatch_compile_queue_full_total", "counter",
         "Compile requests refused at the compile queue's bound (those jobs wait, as for "
         "credits).",
         s->compile_full);
  histogram(&b, "imgbatch_queue_seconds", "Admission to the start of a job's submission.",
            &s->queue);
  histogram(&b, "imgbatch_exec_seconds", "Duration of a job's submission (shared by its jobs).",
            &s->exec);
  histogram(&b, "imgbatch_encode_seconds", "Encoding and packing an image Result (encode pool).",
            &s->encode);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.n;
  return b.p;
}
