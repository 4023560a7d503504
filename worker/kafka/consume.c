/*
 * consume.c - the jobs consumer: group membership (cooperative-sticky,
 * manual offsets), the executor's input, backpressure and commits.
 */
#include "kafka/consume.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka/clock.h"
#include "kafka/conf.h"
#include "kafka/gap.h"
#include "kafka/json_escape.h"
#include "kafka/log.h"
#include "kafka/phase.h"
#include "kafka/publish.h"
#include "kafka/track.h"
#include "kafka/txn.h"
#include "kafka/wstate.h"

bool ib_wresults_backlogged(const ib_worker *w) {
  return w->held_bytes > w->cfg->exec.host_bytes / 2;
}

static void log_parts(ib_worker *w, const char *event, const rd_kafka_topic_partition_list_t *l) {
  char buf[4096];
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < l->cnt && n + 300 < sizeof buf; i++) {
    char t[260];
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s[\"%s\",%" PRId32 "]", i ? "," : "",
                          ib_json_escape(t, sizeof t, l->elems[i].topic), l->elems[i].partition);
  }
  ib_wlog(w, "info", event, "\"partitions\":[%s]", buf);
}

/* rd_kafka_commit, counted until librdkafka answers it (on_commit). */
static rd_kafka_resp_err_t commit(ib_worker *w, const rd_kafka_topic_partition_list_t *l,
                                  bool async) {
  const rd_kafka_resp_err_t e = rd_kafka_commit(w->consumer, l, async);
  if (!e) w->commits_unanswered++;
  return e;
}

static void commit_sync_parts(ib_worker *w, const rd_kafka_topic_partition_list_t *revoked) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(revoked->cnt);
  for (int i = 0; i < revoked->cnt; i++) {
    ib_wpart *p = ib_wpart_get(w, revoked->elems[i].partition, false);
    int64_t at = p ? ib_wpart_commit_offset(p) : -1;
    if (at >= 0) rd_kafka_topic_partition_list_add(l, w->cfg->jobs_topic, p->id)->offset = at;
  }
  if (l->cnt) {
    rd_kafka_resp_err_t e = commit(w, l, false);
    for (int i = 0; i < l->cnt; i++) {
      rd_kafka_resp_err_t pe = e ? e : l->elems[i].err;
      if (pe)
        ib_wlog(w, "warn", "commit_failed",
                "\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"error\":\"%s\"",
                l->elems[i].partition, l->elems[i].offset, rd_kafka_err2name(pe));
      else
        ib_wlog(w, "info", "committed",
                "\"topic\":\"%s\",\"partition\":%" PRId32 ",\"offset\":%" PRId64,
                w->cfg->jobs_topic, l->elems[i].partition, l->elems[i].offset);
    }
  }
  rd_kafka_topic_partition_list_destroy(l);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
  ib_worker *w = opaque;
  rd_kafka_error_t *e = NULL;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    for (int i = 0; i < parts->cnt; i++) {
      ib_wpart *p = ib_wpart_get(w, parts->elems[i].partition, true);
      if (!p) continue;
      ib_wpart_drop(w, p); /* anything left from an earlier ownership is stale */
      p->assigned = true;
      p->next_offset = -1;
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      p->assigned_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    }
    e = rd_kafka_incremental_assign(rk, parts);
    w->joined = true;
    /* New partitions arrive unpaused: a worker in backpressure pauses them. */
    if (!e && w->paused) rd_kafka_pause_partitions(rk, parts);
    log_parts(w, "assigned", parts);
  } else {
    bool lost = rd_kafka_assignment_lost(rk);
    if (lost) w->joined = false; /* out of the group until it rejoins */
    /* Revoked in an orderly rebalance: what is done is still ours to
     * commit; the rest is dropped uncommitted (a later owner redoes it). A
     * lost assignment is no longer ours at all: nothing is committed. */
    if (w->cfg->transactional) {
      /* The open transaction carries their offsets: commit it while the
       * partitions are still ours, or abort it when they are lost. */
      if (lost)
        ib_wtxn_lost(w);
      else
        ib_wtxn_commit(w);
    } else if (!lost) {
      commit_sync_parts(w, parts);
    }
    for (int i = 0; i < parts->cnt; i++) {
      ib_wpart *p = ib_wpart_get(w, parts->elems[i].partition, false);
      if (p) ib_wpart_drop(w, p);
    }
    e = rd_kafka_incremental_unassign(rk, parts);
    log_parts(w, lost ? "lost" : "revoked", parts);
  }
  if (e) {
    char m[400];
    ib_wlog(w, "error", "rebalance_failed", "\"message\":\"%s\"",
            ib_json_escape(m, sizeof m, rd_kafka_error_string(e)));
    rd_kafka_error_destroy(e);
  }
}

/* A refused commit's wait before the next, doubling from the first refusal
 * to the ceiling, back to none at the first commit taken. */
#define COMMIT_BACKOFF_MIN_US 10000u
#define COMMIT_BACKOFF_MAX_US 500000u

/* A commit of `offset` was answered: takes it off p's in-flight list.
 * True when no commit sent before it is still pending (or it was not
 * tracked: a synchronous commit, an answer after its loss was assumed). */
static bool inflight_answered(ib_wpart *p, int64_t offset) {
  int i = 0;
  while (i < p->n_inflight && p->inflight[i] != offset) i++;
  if (i == p->n_inflight) return true;
  memmove(p->inflight + i, p->inflight + i + 1,
          (size_t)(p->n_inflight - i - 1) * sizeof *p->inflight);
  p->n_inflight--;
  p->committing = p->n_inflight ? p->inflight[p->n_inflight - 1] : -1;
  p->committing_since_us = ib_wnow_us();
  return i == 0;
}

/* A commit of `offsets` was answered with err (or refused before it was
 * sent). */
static void commit_answered(ib_worker *w, rd_kafka_resp_err_t err,
                            const rd_kafka_topic_partition_list_t *offsets) {
  for (int i = 0; offsets && i < offsets->cnt; i++) {
    const rd_kafka_topic_partition_t *t = &offsets->elems[i];
    ib_wpart *p = ib_wpart_get(w, t->partition, false);
    rd_kafka_resp_err_t e = err ? err : t->err;
    /* The broker holds the offset it applied last. An answer with an
     * older commit still pending (librdkafka retrying it) may be undone
     * when that one lands: it settles nothing; the offset goes again. */
    bool last = p ? inflight_answered(p, t->offset) : false;
    if (e) {
      /* Sent again once the backoff has passed (the watermark has not
       * moved back): resent every loop, a refusing group got a commit a
       * millisecond during a drain. */
      if (p) {
        uint64_t b = p->commit_backoff_us * 2;
        p->commit_backoff_us = b < COMMIT_BACKOFF_MIN_US   ? COMMIT_BACKOFF_MIN_US
                               : b > COMMIT_BACKOFF_MAX_US ? COMMIT_BACKOFF_MAX_US
                                                           : b;
        p->commit_retry_us = ib_wnow_us() + p->commit_backoff_us;
      }
      ib_wlog(w, "warn", "commit_failed",
              "\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"error\":\"%s\"", t->partition,
              t->offset, rd_kafka_err2name(e));
      continue;
    }
    if (p) p->commit_backoff_us = 0, p->commit_retry_us = 0;
    if (!last) continue;
    /* Possibly lower than before (a retried commit landing late): the
     * watermark's offset is then committed again. */
    if (p->assigned) p->committed = t->offset;
    if (p->assigned) ib_wpart_settled(w, p, t->offset);
    w->counters[IB_WC_COMMITS]++;
    ib_wlog(w, "info", "committed",
            "\"topic\":\"%s\",\"partition\":%" PRId32 ",\"offset\":%" PRId64, t->topic,
            t->partition, t->offset);
  }
}

/* librdkafka's answer to each rd_kafka_commit that it took, sync or async
 * (rd_kafka_conf_set_offset_commit_cb). */
static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque) {
  (void)rk;
  ib_worker *w = opaque;
  if (w->commits_unanswered) w->commits_unanswered--;
  commit_answered(w, err, offsets);
}

void ib_wcommit(ib_worker *w, bool sync) {
  if (w->cfg->transactional) {
    ib_wtxn_commit(w);
    return;
  }
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
  for (int32_t i = 0; i < w->n_parts; i++) {
    ib_wpart *p = &w->parts[i];
    if (!p->assigned) continue;
    /* Commits in flight unanswered for a second are taken as lost and sent
     * again. */
    uint64_t now = ib_wnow_us();
    if (p->n_inflight && now - p->committing_since_us > 1000000u)
      p->n_inflight = 0, p->committing = -1;
    int64_t at = ib_wpart_commit_offset(p);
    if (at < 0 || (!sync && (p->n_inflight == IB_COMMITS_IN_FLIGHT || now < p->commit_retry_us)))
      continue;
    if (p->n_inflight < IB_COMMITS_IN_FLIGHT) {
      if (!p->n_inflight) p->committing_since_us = now;
      p->inflight[p->n_inflight++] = at;
      p->committing = at;
    }
    rd_kafka_topic_partition_list_add(l, w->cfg->jobs_topic, p->id)->offset = at;
  }
  if (l->cnt) {
    rd_kafka_resp_err_t e = commit(w, l, !sync);
    if (sync || e) commit_answered(w, e, l);
  }
  rd_kafka_topic_partition_list_destroy(l);
}

ib_status ib_wconsume_start(ib_worker *w, char *errbuf, size_t cap) {
  rd_kafka_conf_t *c = ib_wconf_new(w, errbuf, cap);
  if (!c) return IB_INVALID;
  /* Fetched but unadmitted messages stay within the host credits. */
  char kb[32];
  uint64_t k = w->cfg->exec.host_bytes / 1024 / 2;
  snprintf(kb, sizeof kb, "%" PRIu64, k < 1024 ? 1024 : k > 2097151 ? 2097151 : k);
  bool ok =
      ib_wconf_set(w, c, "group.id", w->cfg->group, errbuf, cap) &&
      ib_wconf_set(w, c, "partition.assignment.strategy", "cooperative-sticky", errbuf, cap) &&
      ib_wconf_set(w, c, "enable.auto.commit", "false", errbuf, cap) &&
      ib_wconf_set(w, c, "enable.auto.offset.store", "false", errbuf, cap) &&
      ib_wconf_set(w, c, "auto.offset.reset", "earliest", errbuf, cap) &&
      ib_wconf_set(w, c, "isolation.level", "read_committed", errbuf, cap) &&
      ib_wconf_set(w, c, "queued.max.messages.kbytes", kb, errbuf, cap) &&
      ib_wconf_props(w, c, errbuf, cap);
  const char *sid = ib_wconf_static_id(w);
  if (ok && sid) ok = ib_wconf_set(w, c, "group.instance.id", sid, errbuf, cap);
  /* What librdkafka holds, for the start event. */
  size_t n = sizeof w->group_instance_id;
  if (ok && rd_kafka_conf_get(c, "group.instance.id", w->group_instance_id, &n) != RD_KAFKA_CONF_OK)
    w->group_instance_id[0] = 0;
  if (!ok) {
    rd_kafka_conf_destroy(c);
    return IB_INVALID;
  }
  rd_kafka_conf_set_rebalance_cb(c, on_rebalance);
  rd_kafka_conf_set_offset_commit_cb(c, on_commit);
  w->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, c, errbuf, cap);
  if (!w->consumer) {
    rd_kafka_conf_destroy(c);
    return IB_INVALID;
  }
  rd_kafka_poll_set_consumer(w->consumer);
  rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, w->cfg->jobs_topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t e = rd_kafka_subscribe(w->consumer, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (e) {
    snprintf(errbuf, cap, "subscribe %s: %s", w->cfg->jobs_topic, rd_kafka_err2str(e));
    return IB_INVALID;
  }
  return IB_OK;
}

void ib_wconsume_pause(ib_worker *w, bool pause) {
  if (w->paused == pause) return;
  rd_kafka_topic_partition_list_t *l = NULL;
  if (rd_kafka_assignment(w->consumer, &l) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  rd_kafka_resp_err_t e = pause ? rd_kafka_pause_partitions(w->consumer, l)
                                : rd_kafka_resume_partitions(w->consumer, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (e) {
    ib_wlog(w, "warn", pause ? "pause_failed" : "resume_failed", "\"error\":\"%s\"",
            rd_kafka_err2name(e));
    return;
  }
  w->paused = pause;
  ib_wlog(w, "info", pause ? "paused" : "resumed", "\"waiting\":%zu", w->waiting.n);
}

/* A consumer event that is not a message: partition EOF, offset resets,
 * errors. Logged (and counted); none of them ends the worker. */
static void consumer_event(ib_worker *w, rd_kafka_message_t *m) {
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
  if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) w->counters[IB_WC_RESETS]++;
  char r[400];
  ib_wlog(w, m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ? "warn" : "warn",
          m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ? "offset_reset" : "consume_error",
          "\"partition\":%" PRId32 ",\"error\":\"%s\",\"message\":\"%s\"", m->partition,
          rd_kafka_err2name(m->err), ib_json_escape(r, sizeof r, rd_kafka_message_errstr(m)));
}

void ib_wconsume_poll(ib_worker *w, int timeout_ms) {
  rd_kafka_message_t *m = rd_kafka_consumer_poll(w->consumer, timeout_ms);
  if (!m) return;
  if (m->err) {
    consumer_event(w, m);
    rd_kafka_message_destroy(m);
    return;
  }
  ib_wpart *part = ib_wpart_get(w, m->partition, false);
  if (part && part->assigned) ib_wgap_check(w, part, m);
  ib_wjob *j = ib_wjob_track(w, m);
  if (!j) {
    /* Not ours any more (revoked between fetch and poll), or out of
     * memory: not tracked, so never committed; the owner redoes it. */
    rd_kafka_message_destroy(m);
    return;
  }
  w->counters[IB_WC_CONSUMED]++;
  w->consumed_bytes += m->len;
  /* From the producer's CreateTime: how late input arrives (the broker,
   * the fetch) beside the phases inside the worker; not for input that was
   * waiting before the partition was ours (a backlog, the group's join). */
  rd_kafka_timestamp_type_t tt;
  int64_t ts_ms = rd_kafka_message_timestamp(m, &tt);
  if (ts_ms > 0 && tt == RD_KAFKA_TIMESTAMP_CREATE_TIME && j->part &&
      ts_ms >= j->part->assigned_ms) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    if (now_us >= ts_ms * 1000) ib_wphase_add(w, IB_WP_FETCH, (uint64_t)(now_us - ts_ms * 1000));
  }
  ib_wq_push(&w->waiting, j);
}

/* The next job to hand to the executor: a retry once nothing else is in
 * the executor (a fault is judged alone, after in-flight work drained),
 * else a fresh message. */
static ib_wjob *next_job(ib_worker *w) {
  /* Results the broker has not acknowledged stay in memory (to produce them
   * again): while they fill the host budget, no new work starts. */
  if (ib_wresults_backlogged(w)) return NULL;
  /* A retry runs alone, once its backoff passed and in-flight work drained;
   * meanwhile new work goes on (its successes tell a job's fault from the
   * worker's). */
  ib_wjob *r = w->retry.head;
  if (r && r->not_before_us <= ib_wnow_us()) return w->running ? NULL : ib_wq_pop(&w->retry);
  /* max_jobs as docs/credits.md counts it: a job holds its slot from admission
   * until its Result's delivery is acknowledged. The commit after that is
   * bounded apart (max_uncommitted, at the send in publish.c: the Results a
   * crash would repeat), so executing, encoding and delivering overlap
   * the commit round trips of earlier jobs instead of waiting for them. */
  uint64_t live = ib_wlive_jobs(w);
  if (live > w->live_max) w->live_max = live;
  if (live >= w->cfg->exec.max_jobs) {
    /* The window binds: input waits while the executor asks for more. */
    if (w->waiting.head && !w->window_full_since_us) w->window_full_since_us = ib_wnow_us();
    return NULL;
  }
  if (w->window_full_since_us) {
    w->window_full_us += ib_wnow_us() - w->window_full_since_us;
    w->window_full_since_us = 0;
  }
  if (!w->waiting.head) ib_wconsume_poll(w, 0);
  return ib_wq_pop(&w->waiting);
}

static ib_status next_input(ib_worker *w, ib_input *in, ib_error *err) {
  if (w->stopping) return IB_END;
  ib_wjob *j = next_job(w);
  if (!j) return IB_AGAIN;
  j->state = IB_WJOB_RUNNING;
  j->start_seq = ++w->started;
  /* From here its tag is the executor's until the result comes back. */
  j->in_exec = true;
  j->exec_since_us = ib_wnow_us();
  ib_wphase(w, IB_WP_WAIT, j->consumed_us);

  w->running++;
  in->tag = j;
  const rd_kafka_message_t *m = j->msg;
  /* The payload's one copy: librdkafka's buffer -> the executor's (pinned
   * on CUDA), parsed in place. */
  uint8_t *buf = ib_executor_buffer(w->ex, m->len);
  if (!buf) {
    snprintf(err->message, sizeof err->message, "parse: out of memory for a %zu-byte message",
             m->len);
    err->stage = IB_STAGE_PARSE;
    return IB_INTERNAL;
  }
  if (m->len) memcpy(buf, m->payload, m->len);
  ib_key key = {0};
  ib_status st = ib_executor_parse_buffer(
      w->ex, buf, m->len,
      &(ib_graph_limits){.source_root = w->cfg->source_root, .max_side = w->cfg->max_side},
      &in->graph, &key, err);
  if (st != IB_OK && err->stage != IB_STAGE_PARSE) {
    in->key = key;
    in->has_key = true;
  } else {
    ib_key_clear(&key);
  }
  return st;
}

/* A job's own running time starts: the executor's progress, which the
 * hung-job rule goes by (stall.c). Called like ib_wnext_input, from inside
 * the executor without the worker's lock. */
void ib_wjob_started(void *user, uint64_t job_id, void *tag) {
  (void)job_id;
  (void)tag;
  ib_worker *w = user;
  pthread_mutex_lock(&w->mu);
  w->last_exec_start_us = ib_wnow_us();
  pthread_mutex_unlock(&w->mu);
}

/* Called on the driving thread from inside ib_results_next, which runs
 * without the worker's lock (the standby thread may hold it meanwhile). */
ib_status ib_wnext_input(void *user, ib_input *in, ib_error *err) {
  ib_worker *w = user;
  uint64_t t0 = ib_wnow_us();
  pthread_mutex_lock(&w->mu);
  ib_status st = next_input(w, in, err);
  w->drive_input_us += ib_wnow_us() - t0;
  pthread_mutex_unlock(&w->mu);
  return st;
}
