/*
 * track.c - per-partition offset watermarks. Jobs finish out of order, and
 * offsets may skip (transaction markers, compaction), so a partition keeps
 * every message it consumed, in offset order; the committed position is
 * just after the highest consumed offset below which every consumed
 * message is done (its Result acknowledged by the broker).
 */
#include "kafka/track.h"

#include <stdlib.h>
#include <string.h>

#include "kafka/clock.h"
#include "kafka/phase.h"
#include "kafka/wstate.h"

void ib_wq_push(ib_wjob_queue *q, ib_wjob *j) {
  j->qnext = NULL;
  if (q->tail)
    q->tail->qnext = j;
  else
    q->head = j;
  q->tail = j;
  q->n++;
}

void ib_wq_push_front(ib_wjob_queue *q, ib_wjob *j) {
  j->qnext = q->head;
  q->head = j;
  if (!q->tail) q->tail = j;
  q->n++;
}

ib_wjob *ib_wq_pop(ib_wjob_queue *q) {
  ib_wjob *j = q->head;
  if (!j) return NULL;
  q->head = j->qnext;
  if (!q->head) q->tail = NULL;
  q->n--;
  j->qnext = NULL;
  return j;
}

bool ib_wq_remove(ib_wjob_queue *q, ib_wjob *j) {
  ib_wjob *prev = NULL;
  for (ib_wjob *c = q->head; c; prev = c, c = c->qnext) {
    if (c != j) continue;
    if (prev)
      prev->qnext = c->qnext;
    else
      q->head = c->qnext;
    if (q->tail == c) q->tail = prev;
    q->n--;
    c->qnext = NULL;
    return true;
  }
  return false;
}

ib_wpart *ib_wpart_get(ib_worker *w, int32_t id, bool create) {
  if (id < 0) return NULL;
  if (id >= w->n_parts) {
    if (!create) return NULL;
    int32_t n = id + 1;
    ib_wpart *p = realloc(w->parts, (size_t)n * sizeof *p);
    if (!p) return NULL;
    /* The array may have moved: every tracked job points into it (j->part),
     * and a partition's jobs are all on its list. A worker that owned low
     * partitions and is then given a higher one gets here with jobs in
     * flight (a rebalance after another worker left). */
    for (int32_t i = 0; i < w->n_parts; i++)
      for (ib_wjob *j = p[i].head; j; j = j->next)
        if (j->part) j->part = &p[i];
    for (int32_t i = w->n_parts; i < n; i++)
      p[i] = (ib_wpart){
          .id = i, .done_upto = -1, .committed = -1, .committing = -1, .next_offset = -1};
    w->parts = p;
    w->n_parts = n;
  }
  return &w->parts[id];
}

ib_wjob *ib_wjob_track(ib_worker *w, rd_kafka_message_t *msg) {
  ib_wpart *p = ib_wpart_get(w, msg->partition, false);
  if (!p || !p->assigned) return NULL; /* a message of a partition given up meanwhile */
  ib_wjob *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->msg = msg;
  j->partition = msg->partition;
  j->offset = msg->offset;
  j->part = p;
  j->consumed_us = ib_wnow_us();
  j->alive_next = w->alive;
  if (w->alive) w->alive->alive_prev = j;
  w->alive = j;
  if (p->tail)
    p->tail->next = j;
  else
    p->head = j;
  p->tail = j;
  return j;
}

void ib_wjob_free(ib_worker *w, ib_wjob *j) {
  if (!j) return;
  if (j->counted) w->unsettled--; /* never committed by us (revoked, teardown) */
  if (j->alive_prev)
    j->alive_prev->alive_next = j->alive_next;
  else
    w->alive = j->alive_next;
  if (j->alive_next) j->alive_next->alive_prev = j->alive_prev;
  if (j->msg) rd_kafka_message_destroy(j->msg);
  if (j->result_headers) rd_kafka_headers_destroy(j->result_headers);
  if (j->result) w->held_bytes -= j->result_len;
  free(j->result);
  ib_key_clear(&j->key);
  free(j);
}

/* A job off its partition's list: freed, unless the executor or the encode
 * pool still holds it (timed out): then freed when it comes back. */
static void release(ib_worker *w, ib_wjob *j) {
  j->part = NULL;
  j->next = NULL;
  if (!j->in_exec && !j->in_pool) ib_wjob_free(w, j);
}

void ib_wjob_returned(ib_worker *w, ib_wjob *j) {
  /* Still linked in its partition (done behind an unfinished one, or its
   * Timeout not yet acknowledged): freed when popped. */
  if (j->state == IB_WJOB_DONE && !j->part && !j->in_exec && !j->in_pool) ib_wjob_free(w, j);
}

/* A job done in order: its count waits in the partition until a commit
 * covers its offset. */
static void settle_later(ib_worker *w, ib_wpart *p, ib_wjob *j) {
  if (!j->counted) return;
  j->counted = false;
  if (p->settle_head + p->settle_n == p->settle_cap) {
    if (p->settle_head) {
      memmove(p->settle, p->settle + p->settle_head, p->settle_n * sizeof *p->settle);
      p->settle_head = 0;
    } else {
      size_t cap = p->settle_cap ? p->settle_cap * 2 : 64;
      struct ib_wsettle *s = realloc(p->settle, cap * sizeof *s);
      if (!s) {
        w->unsettled--; /* cannot wait for it: forget it (at worst one more duplicate) */
        return;
      }
      p->settle = s;
      p->settle_cap = cap;
    }
  }
  p->settle[p->settle_head + p->settle_n++] =
      (struct ib_wsettle){.offset = j->offset, .done_us = j->acked_us};
}

void ib_wpart_settled(ib_worker *w, ib_wpart *p, int64_t offset) {
  while (p->settle_n && p->settle[p->settle_head].offset < offset) {
    ib_wphase(w, IB_WP_SETTLE, p->settle[p->settle_head].done_us);
    p->settle_head++;
    p->settle_n--;
    w->unsettled--;
  }
  if (!p->settle_n) p->settle_head = 0;
}

void ib_wjob_done(ib_worker *w, ib_wjob *j) {
  j->state = IB_WJOB_DONE;
  if (!j->acked_us) j->acked_us = ib_wnow_us();
  ib_wpart *p = j->part;
  if (!p) {
    release(w, j);
    return;
  }
  /* Only a done prefix moves the watermark; later done jobs wait in place. */
  while (p->head && p->head->state == IB_WJOB_DONE) {
    ib_wjob *h = p->head;
    p->head = h->next;
    if (!p->head) p->tail = NULL;
    p->done_upto = h->offset + 1;
    settle_later(w, p, h);
    release(w, h);
  }
}

int64_t ib_wpart_commit_offset(const ib_wpart *p) {
  int64_t at = p->head ? p->head->offset : p->done_upto;
  if (at < 0 || at <= p->committed || at <= p->committing) return -1;
  /* Nothing done since the last commit: the head's own offset was already
   * the position. */
  if (p->head && p->done_upto < 0 && p->committed < 0) return -1;
  return at;
}

void ib_wpart_drop(ib_worker *w, ib_wpart *p) {
  /* Waiting jobs of the partition were never started: drop them. */
  for (ib_wjob_queue *q = &w->waiting; q; q = q == &w->waiting ? &w->retry : NULL) {
    ib_wjob_queue keep = {0};
    ib_wjob *j;
    while ((j = ib_wq_pop(q))) {
      if (j->part == p) {
        j->part = NULL;
        j->state = IB_WJOB_DONE;
      } else {
        ib_wq_push(&keep, j);
      }
    }
    *q = keep;
  }
  /* Acknowledged in an open transaction: it commits or aborts without them. */
  ib_wjob_queue keep = {0};
  ib_wjob *t;
  while ((t = ib_wq_pop(&w->txn))) {
    if (t->part == p) {
      t->part = NULL;
      t->state = IB_WJOB_DONE;
    } else {
      ib_wq_push(&keep, t);
    }
  }
  w->txn = keep;
  /* The rest (running, publishing) finish as orphans: never committed. */
  ib_wjob *j = p->head;
  while (j) {
    ib_wjob *next = j->next;
    j->next = NULL;
    if (j->state == IB_WJOB_DONE)
      release(w, j);
    else
      j->part = NULL;
    j = next;
  }
  p->head = p->tail = NULL;
  /* Not ours to commit any more: nothing here will be settled by us. */
  w->unsettled -= p->settle_n;
  p->settle_n = p->settle_head = 0;
  p->assigned = false;
  p->done_upto = -1;
  p->committed = -1;
  p->committing = -1;
  p->n_inflight = 0;
  p->commit_retry_us = p->commit_backoff_us = 0;
}
