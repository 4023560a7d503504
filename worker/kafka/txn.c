/*
 * txn.c - --transactional: consume-transform-produce in Kafka transactions
 * (for real brokers). Results, DLQ copies and the consumed offsets of one
 * interval share a transaction: they become visible to read_committed
 * readers, and the offsets are committed, atomically; a zombie worker is
 * fenced by its transactional.id. A job whose Result the broker
 * acknowledged waits (IB_WJOB_ACKED) until its transaction commits; an
 * aborted transaction sends its Results again in the next one.
 * librdkafka's mock cluster accepts these calls but neither hides aborted
 * messages nor stores transactional offsets (README), so tests on it check
 * the call sequence only.
 */
#include "kafka/txn.h"

#include <inttypes.h>
#include <stdio.h>

#include "kafka/json_escape.h"
#include "kafka/log.h"
#include "kafka/track.h"
#include "kafka/wstate.h"

#define TXN_TIMEOUT_MS 30000

static bool txn_failed(ib_worker *w, const char *call, rd_kafka_error_t *e) {
  if (!e) return false;
  char m[400];
  ib_wlog(w, "error", "txn_failed",
          "\"call\":\"%s\",\"retriable\":%s,\"abort\":%s,\"message\":\"%s\"", call,
          rd_kafka_error_is_retriable(e) ? "true" : "false",
          rd_kafka_error_txn_requires_abort(e) ? "true" : "false",
          ib_json_escape(m, sizeof m, rd_kafka_error_string(e)));
  if (rd_kafka_error_is_fatal(e)) w->fatal = true;
  return true;
}

bool ib_wtxn_init(ib_worker *w) {
  rd_kafka_error_t *e = rd_kafka_init_transactions(w->producer, TXN_TIMEOUT_MS);
  bool ok = !txn_failed(w, "init_transactions", e);
  if (e) rd_kafka_error_destroy(e);
  return ok;
}

bool ib_wtxn_begin(ib_worker *w) {
  if (!w->cfg->transactional || w->txn_open) return true;
  rd_kafka_error_t *e = rd_kafka_begin_transaction(w->producer);
  bool ok = !txn_failed(w, "begin_transaction", e);
  if (e) rd_kafka_error_destroy(e);
  w->txn_open = ok;
  return ok;
}

/* A partition's position counting jobs acknowledged in this transaction. */
static int64_t txn_position(const ib_wpart *p) {
  const ib_wjob *j = p->head;
  int64_t at = p->done_upto;
  while (j && (j->state == IB_WJOB_DONE || j->state == IB_WJOB_ACKED)) {
    at = j->offset + 1;
    j = j->next;
  }
  if (j) at = j->offset;
  return at > p->committed ? at : -1;
}

static void abort_txn(ib_worker *w) {
  rd_kafka_error_t *e = rd_kafka_abort_transaction(w->producer, TXN_TIMEOUT_MS);
  txn_failed(w, "abort_transaction", e);
  if (e) rd_kafka_error_destroy(e);
  w->txn_open = false;
  /* Their Results were discarded with the transaction: send them again. */
  size_t n = w->txn.n;
  ib_wjob *j;
  while ((j = ib_wq_pop(&w->txn))) {
    j->state = IB_WJOB_PUBLISHING;
    j->not_before_us = 0;
    ib_wq_push(&w->republish, j);
  }
  ib_wlog(w, "warn", "txn_aborted", "\"results\":%zu", n);
}

void ib_wtxn_commit(ib_worker *w) {
  if (!w->txn_open) return;
  /* Every delivery report first: what is acknowledged is in this
   * transaction, and its offset can go with it. */
  rd_kafka_flush(w->producer, TXN_TIMEOUT_MS);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
  for (int32_t i = 0; i < w->n_parts; i++) {
    ib_wpart *p = &w->parts[i];
    int64_t at = p->assigned ? txn_position(p) : -1;
    if (at >= 0) rd_kafka_topic_partition_list_add(l, w->cfg->jobs_topic, p->id)->offset = at;
  }
  rd_kafka_error_t *e = NULL;
  if (l->cnt) {
    rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata(w->consumer);
    e = rd_kafka_send_offsets_to_transaction(w->producer, l, md, TXN_TIMEOUT_MS);
    rd_kafka_consumer_group_metadata_destroy(md);
    if (txn_failed(w, "send_offsets_to_transaction", e)) goto failed;
  }
  e = rd_kafka_commit_transaction(w->producer, TXN_TIMEOUT_MS);
  if (txn_failed(w, "commit_transaction", e)) goto failed;
  w->txn_open = false;
  size_t n = w->txn.n;
  ib_wjob *j;
  while ((j = ib_wq_pop(&w->txn))) ib_wjob_done(w, j);
  for (int i = 0; i < l->cnt; i++) {
    ib_wpart *p = ib_wpart_get(w, l->elems[i].partition, false);
    if (p) p->committed = l->elems[i].offset;
    if (p) ib_wpart_settled(w, p, l->elems[i].offset);
    ib_wlog(w, "info", "committed",
            "\"topic\":\"%s\",\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"txn\":true",
            w->cfg->jobs_topic, l->elems[i].partition, l->elems[i].offset);
  }
  ib_wlog(w, "info", "txn_committed", "\"results\":%zu,\"offsets\":%d", n, l->cnt);
  rd_kafka_topic_partition_list_destroy(l);
  return;
failed:
  rd_kafka_topic_partition_list_destroy(l);
  if (e && rd_kafka_error_txn_requires_abort(e)) abort_txn(w);
  /* Retriable: the transaction stays open and the next tick commits it. */
  if (e) rd_kafka_error_destroy(e);
}

void ib_wtxn_lost(ib_worker *w) {
  if (w->txn_open) abort_txn(w);
}
