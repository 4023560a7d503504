/*
 * stall.c - the hung-job rule (README, "The Kafka worker"): a hung job must not pin its
 * partition's watermark forever. The oldest unfinished job of an assigned
 * partition that is older than --stall-seconds, and stuck in its stage, is
 * answered with a Timeout error Result (and its DLQ copy) naming that
 * stage; once that Result is acknowledged its offset commits like any
 * other. Its real result, should it come back later, is dropped (worker.c):
 * one Result per message from this worker.
 *
 * "Stuck" is judged per stage, so that a long queue or a broker outage is
 * never mistaken for a hang. The executor's progress is the latest job it
 * began running (its start callback) or result it handed back. A job
 * waiting for admission is stuck only while the executor takes nothing
 * because the driving thread has been inside it for the whole bound, with
 * no progress meanwhile. A job in the executor is stuck when it has been
 * there for the bound and the executor made no progress for the bound: the
 * job it began last is the one running, so that is judged by its own
 * running time (or since the last result, a device submission enqueued
 * behind another starting with it but running after it), and every other
 * job there waits behind it or for its submission to end (the cpu backend
 * runs a submission's jobs one after another, with --tune
 * host_stream=false in one go): not stuck while each job takes less than
 * the bound, however long the queue. A job on the encode pool is stuck
 * when its encode took the bound. A job whose Result is already out is
 * never answered twice: its delivery is waited out.
 */
#include "kafka/stall.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/clock.h"
#include "kafka/log.h"
#include "kafka/publish.h"
#include "kafka/track.h"
#include "kafka/wstate.h"
#include "parse/wire_check.h"

/* The Job's input key, for the Timeout Result to carry like any error
 * Result does (the executor, which parsed it, still holds the job). Read
 * off the wire (Job fields 1 key_string, 2 key_u64; the last one wins, as
 * in a oneof): no unpack, so no copy of a large payload and no recursion
 * into hostile nesting. */
static void take_key(ib_wjob *j) {
  if (j->has_key || !j->msg->len) return;
  const uint8_t *p = j->msg->payload, *end = p + j->msg->len;
  ib_wire_field f;
  ib_key k = {0};
  bool found = false;
  int r;
  while ((r = ib_wire_next(&p, end, &f)) == 1) {
    if (f.fn == 1 && f.wt == IB_WT_LEN) {
      char *s = malloc(f.vlen + 1);
      if (!s) return;
      memcpy(s, f.val, f.vlen);
      s[f.vlen] = 0;
      ib_key_clear(&k);
      k = (ib_key){.str = s};
      found = true;
    } else if (f.fn == 2 && f.wt == IB_WT_VARINT) {
      const uint8_t *v = f.val;
      uint64_t u = 0;
      if (!ib_wire_varint(&v, f.end, &u)) break;
      ib_key_clear(&k);
      k = (ib_key){.is_u64 = true, .u64 = u};
      found = true;
    }
  }
  if (r == 0 && found) {
    j->key = k; /* takes the string */
    j->has_key = true;
  } else {
    ib_key_clear(&k); /* not a Job: the Result has no key, as for poison */
  }
}

static uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The stage p's head is stuck in, with when it entered it; false when it
 * is not stuck (or already answered). */
static bool stuck(const ib_worker *w, const ib_wjob *h, uint64_t now, uint64_t bound,
                  ib_stage *stage, uint64_t *since) {
  if (h->timed_out || now - h->consumed_us <= bound) return false;
  const uint64_t progress = later(w->last_exec_start_us, w->last_exec_result_us);
  if (h->state == IB_WJOB_WAITING) {
    *stage = IB_STAGE_ADMIT;
    *since = h->consumed_us;
    return w->in_exec_since_us && now - later(w->in_exec_since_us, progress) > bound;
  }
  if (h->state != IB_WJOB_RUNNING) return false; /* its Result is out */
  if (h->in_pool) {
    *stage = IB_STAGE_ENCODE;
    *since = h->pool_since_us;
    return now - h->pool_since_us > bound;
  }
  if (h->in_exec) {
    /* The executor decodes, uploads, executes and downloads inside one
     * submission: from outside it, that is the execute stage. */
    *stage = IB_STAGE_EXECUTE;
    *since = h->exec_since_us;
    return now - later(h->exec_since_us, progress) > bound;
  }
  return false;
}

void ib_wstall_check(ib_worker *w) {
  uint64_t bound = w->cfg->stall_s * 1000000u;
  /* A sick or failing worker stops instead: its jobs are not theirs to fail. */
  if (!bound || w->sick || w->fatal) return;
  uint64_t now = ib_wnow_us();
  for (int32_t i = 0; i < w->n_parts; i++) {
    ib_wpart *p = &w->parts[i];
    ib_wjob *h = p->head;
    ib_stage stage;
    uint64_t since;
    if (!p->assigned || !h || !stuck(w, h, now, bound, &stage, &since)) continue;
    if (h->state == IB_WJOB_WAITING) {
      /* Never started: it leaves the queue and is not started later. */
      if (!ib_wq_remove(&w->waiting, h)) ib_wq_remove(&w->retry, h);
    }
    h->timed_out = true;
    w->counters[IB_WC_TIMED_OUT]++;
    take_key(h);
    char msg[200];
    snprintf(msg, sizeof msg,
             "stall: no result after %" PRIu64 " s (%" PRIu64
             " s in this stage); --stall-seconds is %" PRIu64,
             (now - h->consumed_us) / 1000000u, (now - since) / 1000000u, w->cfg->stall_s);
    ib_wlog(w, "warn", "timed_out",
            "\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"stage\":\"%s\",\"age_ms\":%" PRIu64,
            h->partition, h->offset, ib_stage_name(stage), (now - h->consumed_us) / 1000u);
    bool was_waiting = h->state == IB_WJOB_WAITING;
    ib_wpublish_error(w, h, IB_TIMEOUT, stage, msg);
    if (h->state != IB_WJOB_PUBLISHING) {
      /* Out of memory packing it (a worker fault, queued for a retry): it
       * is still where it was; judged again on a later check. */
      ib_wq_remove(&w->retry, h);
      h->timed_out = false;
      w->counters[IB_WC_TIMED_OUT]--;
      h->state = was_waiting ? IB_WJOB_WAITING : IB_WJOB_RUNNING;
      if (was_waiting) ib_wq_push_front(&w->waiting, h);
    }
  }
}
