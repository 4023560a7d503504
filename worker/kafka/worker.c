/*
 * worker.c - the Kafka worker's loop. One thread drives everything: the
 * executor's run stream pulls messages through ib_wnext_input; each result
 * is published; between results the clients are polled (deliveries,
 * rebalances, control commands), watermarks committed, partitions paused
 * while credits are full. A worker fault (device, host allocation, output
 * sink) goes to the fault policy (fault.c), never into an error Result.
 */
#include "kafka/worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include "kafka/clock.h"
#include "kafka/consume.h"
#include "kafka/control.h"
#include "kafka/fault.h"
#include "kafka/hist.h"
#include "kafka/http.h"
#include "kafka/json_escape.h"
#include "kafka/log.h"
#include "kafka/metrics.h"
#include "kafka/phase.h"
#include "kafka/pool.h"
#include "kafka/publish.h"
#include "kafka/stall.h"
#include "kafka/track.h"
#include "kafka/wake.h"
#include "kafka/wstate.h"

/* Commits go out as soon as a watermark moves (up to IB_COMMITS_IN_FLIGHT
 * per partition, consume.c): a done job stays unsettled for about one
 * commit round trip. A
 * transaction (--transactional) commits at most this often. */
#define TXN_EVERY_US 200000u
#define STATUS_EVERY_US 1000000u
#define SWEEP_EVERY_US 60000000u
/* The driving thread inside the executor this long: the standby thread
 * does its Kafka work meanwhile (see wstate.h). */
#define STANDBY_AFTER_US 200000u
#define STANDBY_TICK_MS 50

static void status_log(ib_worker *w) {
  uint64_t oldest = 0, now = ib_wnow_us();
  for (int32_t i = 0; i < w->n_parts; i++)
    if (w->parts[i].assigned && w->parts[i].head && now - w->parts[i].head->consumed_us > oldest)
      oldest = now - w->parts[i].head->consumed_us;
  ib_executor_counters c;
  ib_executor_counters_get(w->ex, &c);
  /* Encode pool: mean prepare time since start (CPU work per Result). */
  ib_hist enc = {0};
  if (w->pool) ib_wpool_encode_hist(w->pool, &enc);
  ib_wlog(w, "info", "status",
          "\"consumed\":%" PRIu64 ",\"results\":%" PRIu64 ",\"error_results\":%" PRIu64
          ",\"faults\":%" PRIu64 ",\"retries\":%" PRIu64 ",\"offset_resets\":%" PRIu64
          ",\"jobs_deleted_unconsumed\":%" PRIu64 ",\"republished\":%" PRIu64
          ",\"waiting\":%zu,\"running\":%zu,\"pooled\":%zu,\"ready\":%zu"
          ",\"delivering\":%" PRIu64 ",\"undelivered\":%" PRIu64
          ",\"handles\":%zu,\"oldest_uncommitted_ms\":%" PRIu64 ",\"host_bytes_in_use\":%" PRIu64
          ",\"gpu_bytes_in_use\":%" PRIu64 ",\"paused\":%s,\"unsettled\":%" PRIu64
          ",\"timed_out\":%" PRIu64 ",\"late_results_dropped\":%" PRIu64
          ",\"phase_avg_us\":{\"fetch\":%" PRIu64 ",\"wait\":%" PRIu64 ",\"exec\":%" PRIu64
          ",\"pool\":%" PRIu64 ",\"deliver\":%" PRIu64 ",\"settle\":%" PRIu64
          "},\"encode_avg_us\":%" PRIu64 ",\"driving_ms\":{\"input\":%" PRIu64
          ",\"executor\":%" PRIu64 ",\"loop\":%" PRIu64 ",\"idle\":%" PRIu64
          "},\"window_full_ms\":%" PRIu64 ",\"live_max\":%" PRIu64 ",\"idle_waits\":%" PRIu64
          ",\"idle_woken\":%" PRIu64 ",\"standby_sends\":%" PRIu64,
          w->counters[IB_WC_CONSUMED], w->counters[IB_WC_RESULTS], w->counters[IB_WC_ERRORS],
          w->counters[IB_WC_FAULTS], w->counters[IB_WC_RETRIES], w->counters[IB_WC_RESETS],
          w->counters[IB_WC_DELETED], w->counters[IB_WC_REPRODUCED], w->waiting.n, w->running,
          w->pooled, w->ready.n, w->delivering, w->undelivered, w->n_handles, oldest / 1000,
          c.host_bytes.in_use, c.gpu_bytes.in_use, w->paused ? "true" : "false", w->unsettled,
          w->counters[IB_WC_TIMED_OUT], w->counters[IB_WC_LATE_DROPPED],
          ib_wphase_avg(w, IB_WP_FETCH), ib_wphase_avg(w, IB_WP_WAIT), ib_wphase_avg(w, IB_WP_EXEC),
          ib_wphase_avg(w, IB_WP_POOL), ib_wphase_avg(w, IB_WP_DELIVER),
          ib_wphase_avg(w, IB_WP_SETTLE), enc.n ? enc.sum_us / enc.n : 0, w->drive_input_us / 1000,
          (w->drive_exec_us > w->drive_input_us ? w->drive_exec_us - w->drive_input_us : 0) / 1000,
          w->drive_loop_us / 1000, w->drive_idle_us / 1000, w->window_full_us / 1000, w->live_max,
          w->idle_waits, w->idle_woken, w->standby_sends);
  w->drive_input_us = w->drive_exec_us = w->drive_loop_us = w->drive_idle_us = 0;
  w->window_full_us = w->live_max = w->idle_waits = w->idle_woken = w->standby_sends = 0;
  memset(w->phase_sum_us, 0, sizeof w->phase_sum_us);
  memset(w->phase_n, 0, sizeof w->phase_n);
}

static void begin_stop(ib_worker *w, int code, const char *reason, uint64_t *deadline) {
  if (w->stopping) return;
  w->stopping = true;
  w->exit_code = code;
  *deadline = ib_wnow_us() + w->cfg->grace_s * 1000000u;
  w->stop_deadline = *deadline;
  ib_wconsume_pause(w, true);
  ib_wmetrics_refresh(w, true); /* /healthz and /readyz say so at once */
  ib_wlog(w, code ? "error" : "info", "shutdown", "\"reason\":\"%s\",\"grace_s\":%" PRIu64, reason,
          w->cfg->grace_s);
}

static bool is_worker_fault(const ib_result *res) {
  return !res->ok && (res->error.status == IB_DEVICE || res->error.status == IB_INTERNAL);
}

/* The real result of a job answered with Timeout meanwhile: dropped (one
 * Result per message); its credits return as the caller frees it. */
static void drop_late(ib_worker *w, ib_wjob *j) {
  w->counters[IB_WC_LATE_DROPPED]++;
  ib_wlog(w, "warn", "late_result_dropped", "\"partition\":%" PRId32 ",\"offset\":%" PRId64,
          j->partition, j->offset);
  ib_wjob_returned(w, j);
}

static void on_result(ib_worker *w, ib_result *res) {
  ib_wjob *j = res->tag;
  if (!j) return; /* every input carries its job */
  w->running--;
  w->last_exec_result_us = ib_wnow_us();
  j->in_exec = false;
  if (j->timed_out) {
    drop_late(w, j);
    return;
  }
  ib_wphase(w, IB_WP_EXEC, j->exec_since_us);
  ib_hist_observe(&w->queue_hist, res->queue_us);
  ib_hist_observe(&w->exec_hist, res->exec_us);
  if (is_worker_fault(res)) {
    /* Kept for the Internal Result should the fault turn out to be its own. */
    if (!j->has_key && ib_key_copy(&j->key, &res->key) == IB_OK) j->has_key = true;
    j->job_id = res->job_id;
    j->has_job_id = res->has_job_id;
    ib_wjob_fault(w, j, res->error.status == IB_DEVICE ? "device" : "internal", res->error.message);
    return;
  }
  if (res->ok && res->kind == IB_RESULT_IMAGE && w->pool) {
    ib_wout *o = calloc(1, sizeof *o);
    if (o) {
      *o = (ib_wout){.j = j, .res = *res};
      *res = (ib_result){0}; /* the pool owns it now */
      j->in_pool = true;
      j->pool_since_us = ib_wnow_us();
      w->pooled++;
      ib_wpool_push(w->pool, o);
      return;
    }
  }
  if (ib_wpublish_result(w, j, res)) ib_wjob_succeeded(w, j);
}

/* Results the encode pool prepared go out from here. */
static void send_prepared(ib_worker *w) {
  ib_wout *o = w->pool ? ib_wpool_take(w->pool) : NULL;
  while (o) {
    ib_wout *next = o->next;
    o->j->in_pool = false;
    w->pooled--;
    ib_wphase(w, IB_WP_POOL, o->j->pool_since_us);
    if (o->j->timed_out)
      drop_late(w, o->j);
    else if (ib_wout_send(w, o))
      ib_wjob_succeeded(w, o->j);
    free(o->packed);
    free(o);
    o = next;
  }
}

/* What frees max_jobs slots, for the standby while the driving thread is
 * inside the executor (a CPU batch running inline, a wait for a device
 * submission): prepared Results out, delivery reports served, Results held
 * for the kill bound sent, watermarks committed. */
static void service_slots(ib_worker *w) {
  w->standby_sends++;
  send_prepared(w);
  ib_wpublish_poll(w, 0);
  ib_wsend_ready(w);
  if (!w->cfg->transactional) ib_wcommit(w, false);
}

/* Everything but the executor: deliveries, the consumer (rebalances, the
 * next message), control commands, commits, backpressure, housekeeping. */
static void service(ib_worker *w, int wait_ms) {
  send_prepared(w);
  ib_wpublish_poll(w, 0);
  /* The one wait: on the consumer's queue (messages, commit answers), cut
   * short by a delivery report or a prepared Result (ib_wwake), which free
   * max_jobs slots. It used to be capped at 1-2 ms while those were
   * outstanding: each job then waited most of a cap twice (encode pool,
   * delivery) and the max_jobs window filled with jobs already done. */
  uint64_t t0 = wait_ms ? ib_wnow_us() : 0;
  uint64_t consumed = w->counters[IB_WC_CONSUMED];
  ib_wconsume_poll(w, wait_ms);
  if (wait_ms) {
    w->idle_waits++;
    /* Woken (or a commit answer served) well before the timeout. */
    if (w->counters[IB_WC_CONSUMED] == consumed &&
        ib_wnow_us() - t0 + 500 < (uint64_t)wait_ms * 1000u)
      w->idle_woken++;
  }
  ib_wsend_ready(w); /* commit acknowledgements free room under the kill bound */
  if (w->control) ib_wcontrol_poll(w);
  uint64_t now = ib_wnow_us();
  if (!w->cfg->transactional || now - w->last_commit_us >= TXN_EVERY_US) {
    ib_wcommit(w, false);
    w->last_commit_us = now;
  }
  if (now - w->last_sweep_us >= SWEEP_EVERY_US) {
    ib_woutdir_sweep(w);
    w->last_sweep_us = now;
  }
  ib_wstall_check(w);
  if (now - w->last_status_us >= STATUS_EVERY_US) {
    status_log(w);
    w->last_status_us = now;
  }
  ib_wmetrics_refresh(w, false);
  /* Backpressure: messages pile up only when the executor takes none. */
  if (!w->stopping) {
    /* Messages wait (fetched, not started) only when the executor has no
     * room: pause past a high-water mark, resume once they are nearly all
     * taken (pausing drops what librdkafka prefetched, so no thrash). */
    uint64_t bytes = 0;
    for (const ib_wjob *j = w->waiting.head; j; j = j->qnext) bytes += j->msg->len;
    uint64_t host = w->cfg->exec.host_bytes;
    /* Mostly bytes: a count-based pause at a few jobs would thrash (every
     * resume refetches what the pause dropped). */
    size_t high = 4096, low = 2048;
    bool backlog = ib_wresults_backlogged(w);
    if (!w->paused && (w->waiting.n >= high || bytes > host / 4 || backlog))
      ib_wconsume_pause(w, true);
    else if (w->paused && w->waiting.n <= low && bytes <= host / 8 && !backlog)
      ib_wconsume_pause(w, false);
  }
}

static void make_worker_id(ib_worker *w) {
  if (w->cfg->worker_id) {
    snprintf(w->worker_id, sizeof w->worker_id, "%s", w->cfg->worker_id);
    return;
  }
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = (uint32_t)ib_wnow_us();
  snprintf(w->worker_id, sizeof w->worker_id, "%s-%d-%08x", host, (int)getpid(), r);
}

static int start(ib_worker *w) {
  char errbuf[512] = "";
  ib_error err = {0};
  ib_status hst = ib_wmetrics_start(w, errbuf, sizeof errbuf);
  if (hst != IB_OK) {
    char m[700];
    ib_wlog(w, "error", "start_failed", "\"stage\":\"http\",\"message\":\"%s\"",
            ib_json_escape(m, sizeof m, errbuf));
    return hst == IB_INVALID ? 2 : 1;
  }
  ib_executor_options eo = w->cfg->exec;
  eo.start_cb = ib_wjob_started;
  eo.start_opaque = w;
  if (ib_executor_create(&eo, &w->ex, &err) != IB_OK) {
    char m[700];
    ib_wlog(w, "error", "start_failed", "\"stage\":\"executor\",\"message\":\"%s\"",
            ib_json_escape(m, sizeof m, err.message));
    return 1;
  }
  if (w->cfg->fault) {
    if (strcmp(w->cfg->fault, "sink") == 0) {
      w->sink_fault = true;
    } else {
#ifdef IB_FAULTS
      if (ib_executor_test_fault(w->ex, w->cfg->fault, &err) != IB_OK) {
        ib_wlog(w, "error", "start_failed", "\"stage\":\"fault\",\"message\":\"%s\"", err.message);
        return 2;
      }
#else
      ib_wlog(w, "error", "start_failed", "\"stage\":\"fault\",\"message\":\"%s\"",
              "this build has no fault injection (CMake option IB_FAULTS)");
      return 2;
#endif
    }
  }
  const char *stage = "producer";
  ib_status st = ib_wpublish_start(w, errbuf, sizeof errbuf);
  if (st == IB_OK) stage = "consumer", st = ib_wconsume_start(w, errbuf, sizeof errbuf);
  if (st == IB_OK) stage = "control", st = ib_wcontrol_start(w, errbuf, sizeof errbuf);
  if (st == IB_OK && !ib_wwake_start(w)) {
    stage = "wake-up queues";
    snprintf(errbuf, sizeof errbuf, "no consumer or producer queue");
    st = IB_INTERNAL;
  }
  if (st == IB_OK) {
    int threads =
        w->cfg->decode_threads > 0 ? w->cfg->decode_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (!(w->pool = ib_wpool_new(w, threads))) {
      stage = "encode pool";
      snprintf(errbuf, sizeof errbuf, "no threads");
      st = IB_INTERNAL;
    }
  }
  if (st == IB_OK) stage = "executor", st = ib_executor_run(w->ex, ib_wnext_input, w, &w->rs);
  if (st != IB_OK) {
    char m[700];
    ib_wlog(w, "error", "start_failed", "\"stage\":\"%s\",\"message\":\"%s\"", stage,
            ib_json_escape(m, sizeof m, errbuf));
    return st == IB_INVALID ? 2 : 1;
  }
  char id[300], sid[300];
  ib_wlog(w, "info", "start",
          "\"worker_id\":\"%s\",\"group_instance_id\":\"%s\",\"backend\":\"%s\","
          "\"generation\":%" PRIu64 ",\"max_result_bytes\":%" PRIu64 ",\"contract_version\":%u",
          ib_json_escape(id, sizeof id, w->worker_id),
          ib_json_escape(sid, sizeof sid, w->group_instance_id),
          w->cfg->exec.backend == IB_BACKEND_CUDA ? "cuda" : "cpu", w->generation,
          w->max_result_bytes, IB_CONTRACT_VERSION);
  return 0;
}

static void stop_clients(ib_worker *w) {
  if (w->rs) ib_results_close(w->rs);
  w->rs = NULL;
  ib_wpool_free(w->pool);
  w->pool = NULL;
  ib_wcontrol_stop(w);
  ib_wwake_stop(w);
  if (w->consumer) {
    rd_kafka_consumer_close(w->consumer);
    rd_kafka_destroy(w->consumer);
  }
  /* Jobs still tracked were never acknowledged: freed, never committed. */
  for (int32_t i = 0; i < w->n_parts; i++) ib_wpart_drop(w, &w->parts[i]);
  ib_wjob *j;
  while ((j = ib_wq_pop(&w->republish))) j->part = NULL;
  for (int i = 0; i < 2; i++)
    if (w->out_topics[i]) rd_kafka_topic_destroy(w->out_topics[i]);
  if (w->producer) rd_kafka_destroy(w->producer);
  ib_executor_destroy(w->ex);
  /* What never finished (grace expired, a second signal): never committed. */
  while (w->alive) ib_wjob_free(w, w->alive);
  for (int32_t i = 0; i < w->n_parts; i++) free(w->parts[i].settle);
  free(w->parts);
}

/* How long a drain waits for earlier commits' answers before its final
 * commit (within the grace period): longer than librdkafka's retries of a
 * timed-out commit at its default backoff. */
#define COMMIT_ANSWER_WAIT_US (10u * 1000000u)

/* After the stream ended: wait for every delivery, then commit. */
static void drain_deliveries(ib_worker *w, uint64_t deadline) {
  while ((w->undelivered || w->republish.n || w->ready.n) && ib_wnow_us() < deadline &&
         *w->cfg->stop < 2) {
    /* Results held for the kill bound go out as commits settle earlier ones. */
    ib_wsend_ready(w);
    ib_wpublish_poll(w, w->ready.n ? 1 : 100);
    ib_wconsume_poll(w, 0);
    if (w->ready.n) ib_wcommit(w, false);
  }
  /* The final commit goes after every earlier one was answered: a commit
   * librdkafka still retries (a timed-out request, retry.backoff.ms later)
   * would land after it and take the group back to its older offset. */
  const uint64_t until = ib_wnow_us() + COMMIT_ANSWER_WAIT_US;
  while (w->commits_unanswered && ib_wnow_us() < deadline && ib_wnow_us() < until &&
         *w->cfg->stop < 2)
    ib_wconsume_poll(w, 10);
  if (w->commits_unanswered)
    ib_wlog(w, "warn", "commits_unanswered", "\"count\":%" PRIu64, w->commits_unanswered);
  ib_wcommit(w, true);
}

/* The standby servicer: Kafka work while the driving thread is held up
 * inside the executor (a hung job), so that polls, deliveries, commits and
 * the hung-job rule go on; and, woken by ib_wwake, the work that frees
 * max_jobs slots while the driving thread is in the executor at all. It
 * waits without the lock (an eventfd: a wake-up while it is busy is kept). */
static void *standby(void *arg) {
  ib_worker *w = arg;
  pthread_setname_np(pthread_self(), "ib-standby");
  for (;;) {
    struct pollfd pfd = {.fd = w->wake_fd, .events = POLLIN};
    bool woken = poll(&pfd, 1, STANDBY_TICK_MS) > 0;
    uint64_t n;
    if (woken && read(w->wake_fd, &n, sizeof n) < 0) woken = false;
    pthread_mutex_lock(&w->mu);
    if (w->standby_quit) {
      pthread_mutex_unlock(&w->mu);
      break;
    }
    uint64_t since = w->in_exec_since_us;
    if (since && ib_wnow_us() - since >= STANDBY_AFTER_US)
      service(w, 0);
    else if (since && woken)
      service_slots(w);
    pthread_mutex_unlock(&w->mu);
  }
  return NULL;
}

static bool standby_start(ib_worker *w) {
  if (pthread_create(&w->standby, NULL, standby, w) != 0) return false;
  w->standby_started = true;
  return true;
}

/* Called with mu held; returns with it held. */
static void standby_stop(ib_worker *w) {
  if (!w->standby_started) return;
  w->standby_quit = true;
  uint64_t one = 1;
  if (write(w->wake_fd, &one, sizeof one) < 0) {
    /* Already woken (the counter is set): it sees standby_quit. */
  }
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->standby, NULL);
  pthread_mutex_lock(&w->mu);
  w->standby_started = false;
}

/* The loop; the driving thread holds w->mu except inside the executor. */
static int run(ib_worker *w) {
  const ib_worker_config *cfg = w->cfg;
  make_worker_id(w);
  int rc = start(w);
  if (rc) {
    stop_clients(w);
    ib_wmetrics_stop(w);
    return rc;
  }
  uint64_t deadline = UINT64_MAX;
  w->last_status_us = w->last_exec_result_us = ib_wnow_us();
  if (!standby_start(w)) {
    ib_wlog(w, "error", "start_failed", "\"stage\":\"standby\",\"message\":\"no thread\"");
    stop_clients(w);
    ib_wmetrics_stop(w);
    return 1;
  }
  for (;;) {
    if (*cfg->stop >= 2) break;
    if (*cfg->stop == 1) begin_stop(w, 0, "signal", &deadline);
    if (w->fatal) begin_stop(w, 1, "fatal librdkafka error", &deadline);
    if (w->sick) begin_stop(w, 1, "sticky worker fault", &deadline);
    if (ib_wnow_us() > deadline) {
      ib_wlog(w, "error", "grace_expired", "\"running\":%zu", w->running);
      w->exit_code = 1;
      break;
    }
    ib_result res;
    uint64_t t0 = ib_wnow_us();
    w->in_exec_since_us = t0;
    pthread_mutex_unlock(&w->mu);
    ib_status st = ib_results_next(w->rs, &res);
    pthread_mutex_lock(&w->mu);
    w->in_exec_since_us = 0;
    uint64_t t1 = ib_wnow_us();
    w->drive_exec_us += t1 - t0;
    if (st == IB_OK) {
      on_result(w, &res);
      ib_result_free(&res);
      service(w, 0);
    } else if (st == IB_AGAIN || st == IB_RESULT_BACKPRESSURE) {
      service(w, 50);
    }
    if (st == IB_OK) {
      w->drive_loop_us += ib_wnow_us() - t1;
    } else if (st == IB_AGAIN || st == IB_RESULT_BACKPRESSURE) {
      w->drive_idle_us += ib_wnow_us() - t1; /* polls that may wait for work */
    } else if (st == IB_END) {
      while (ib_wpool_outstanding(w->pool) && ib_wnow_us() < deadline && *cfg->stop < 2)
        service(w, 2);
      send_prepared(w);
      drain_deliveries(w, deadline);
      break;
    } else {
      ib_wlog(w, "error", "executor_failed", "\"status\":\"%s\"", ib_status_name(st));
      w->exit_code = 1;
      break;
    }
  }
  standby_stop(w);
  if (*cfg->stop >= 2) w->exit_code = 1;
  status_log(w);
  w->stopping = true; /* the listener answers until the clients are closed */
  ib_wmetrics_refresh(w, true);
  stop_clients(w);
  ib_wmetrics_stop(w);
  ib_wlog(w, w->exit_code ? "error" : "info", "exit", "\"code\":%d", w->exit_code);
  return w->exit_code;
}

int ib_worker_run(const ib_worker_config *cfg) {
  ib_worker w = {
      .cfg = cfg,
      .wake_fd = -1,
      .max_uncommitted = cfg->max_uncommitted ? cfg->max_uncommitted : IB_WORKER_MAX_UNCOMMITTED};
  if (pthread_mutex_init(&w.mu, NULL) != 0) return 1;
  pthread_mutex_lock(&w.mu);
  int rc = run(&w);
  pthread_mutex_unlock(&w.mu);
  pthread_mutex_destroy(&w.mu);
  return rc;
}
