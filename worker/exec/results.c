/*
 * results.c - result streams. join drains what was admitted; run also pulls
 * inputs, keeping at most the credit window admitted plus one pulled input
 * waiting for credits. Each ib_results_next tops the window up, issues full
 * batches, and returns the oldest completed result; only when nothing is
 * ready does it issue a partial batch and wait for the oldest submission.
 * A batch of the start ramp (dispatch.c due_jobs), or a full one beside
 * running work, goes out as soon as it is due (ib_exec_batch_due), before
 * the rest of the window is admitted.
 * When held resident handles leave no room for the pending input and
 * nothing else is live, next answers IB_RESULT_BACKPRESSURE and the stream
 * stays open.
 */
#include <stdlib.h>

#include "core/error.h"
#include "exec/exec_internal.h"

static ib_status open_stream(ib_executor *ex, bool is_run, ib_input_next_fn next, void *user,
                             ib_results **out) {
  *out = NULL;
  if (!ex) return IB_INVALID;
  if (!ib_exec_enter(ex)) return IB_BUSY;
  ib_status st = IB_OK;
  if (ex->closed)
    st = IB_CLOSED;
  else if (ex->stream)
    st = IB_BUSY;
  else if (!(*out = calloc(1, sizeof **out)))
    st = IB_INTERNAL;
  if (st == IB_OK) {
    **out = (ib_results){.ex = ex, .is_run = is_run, .next = next, .user = user};
    ex->stream = *out;
  }
  ib_exec_leave(ex);
  return st;
}

ib_status ib_executor_join(ib_executor *ex, ib_results **out) {
  return open_stream(ex, false, NULL, NULL, out);
}

ib_status ib_executor_run(ib_executor *ex, ib_input_next_fn next, void *user, ib_results **out) {
  if (!next) return IB_INVALID;
  return open_stream(ex, true, next, user, out);
}

/* An input that failed before admission becomes the held error result. */
static void hold_error(ib_results *rs, bool has_id, uint64_t id, ib_key *key, void *tag,
                       const ib_error *err) {
  rs->held = (ib_result){.job_id = id, .has_job_id = has_id, .error = *err, .tag = tag};
  ib_error_ensure_message(&rs->held.error);
  if (key) {
    rs->held.key = *key;
    *key = (ib_key){0};
  }
  rs->has_held = true;
}

/* Pulls one input into the lookahead slot; false when none came. */
static bool pull(ib_results *rs) {
  ib_input in = {0};
  ib_error err = {0};
  ib_status st = rs->next(rs->user, &in, &err);
  if (st == IB_END) {
    rs->input_end = true;
    return false;
  }
  if (st == IB_AGAIN) {
    rs->input_again = true;
    return false;
  }
  if (st != IB_OK || !in.graph) {
    ib_graph_free(in.graph);
    if (st == IB_OK) ib_error_set(&err, IB_INTERNAL, IB_STAGE_PARSE, "run: input without a graph");
    err.status = st == IB_OK ? IB_INTERNAL : st;
    /* A job that unpacked but failed validation was rejected at admission:
     * it consumes an id like any other rejection. */
    uint64_t id = 0;
    bool has_id = err.stage != IB_STAGE_PARSE && ib_exec_reject(rs->ex, err.status, &id);
    hold_error(rs, has_id, id, in.has_key ? &in.key : NULL, in.tag, &err);
    return false;
  }
  rs->lookahead = in;
  rs->has_lookahead = true;
  return true;
}

/* Admits inputs until the window is full, the input ends or an input is
 * rejected (held for delivery). QueueFull leaves the input waiting. */
static void fill(ib_results *rs) {
  ib_executor *ex = rs->ex;
  rs->input_again = false;
  rs->due = false;
  while (!rs->input_end && !rs->has_held && !rs->input_again) {
    /* A submission is due: issued before the rest of the window is
     * parsed and admitted, so the device starts on it meanwhile. */
    if ((rs->due = ib_exec_batch_due(ex))) return;
    if (!rs->has_lookahead && !pull(rs)) return;
    ib_input *in = &rs->lookahead;
    ib_error err = {0};
    uint64_t id = 0;
    bool consumed = false;
    ib_status st = IB_OK;
    if (!rs->prepared)
      st = ib_exec_prepare(ex, in->graph, in->has_key ? &in->key : NULL, in->tag, &rs->prepared,
                           &id, &consumed, &err);
    if (st == IB_OK) {
      st = ib_exec_commit(ex, rs->prepared, in->graph, true, &id, &consumed, &err);
      /* Only credits refused it: the checked job waits with the input. */
      if (st == IB_QUEUE_FULL) return;
      if (st == IB_OK) rs->prepared = NULL; /* the executor's now */
    }
    if (st == IB_QUEUE_FULL) return; /* the backend's own bound: checked again */
    ib_exec_unprepare(rs->prepared);
    rs->prepared = NULL;
    rs->has_lookahead = false;
    if (st == IB_OK) {
      ib_key_clear(&in->key);
    } else {
      ib_key key = {0};
      ib_key_copy(&key, in->has_key ? &in->key : ib_graph_key(in->graph));
      ib_graph_free(in->graph);
      ib_key_clear(&in->key);
      hold_error(rs, consumed, id, &key, in->tag, &err);
    }
    *in = (ib_input){0};
  }
}

static void finish(ib_results *rs, ib_status final) {
  rs->finished = true;
  rs->final = final;
  if (rs->ex && rs->ex->stream == rs) rs->ex->stream = NULL;
}

/* A backend's ready() may be a driver call (the CUDA backend's
 * cuEventQuery): while completed results wait to be delivered - which come
 * first anyway - it is asked at most every POLL_US, not once per result
 * (a 256² job's share of its submission is a few microseconds). */
#define POLL_US 50u
static void collect_ready(ib_executor *ex) {
  if (!ex->in_flight_head) return;
  if (ex->completed.head) {
    uint64_t now = ib_now_us();
    if (now - ex->polled_us < POLL_US) return;
    ex->polled_us = now;
  }
  ib_exec_collect_ready(ex);
}

/* One step of driving; IB_OK with *out, IB_END, or IB_INTERNAL. */
static ib_status step(ib_results *rs, ib_result *out) {
  ib_executor *ex = rs->ex;
  for (;;) {
    if (rs->is_run) fill(rs);
    if (rs->has_held) {
      *out = rs->held;
      rs->has_held = false;
      return IB_OK;
    }
    if (ib_exec_dispatch(ex, false) != IB_OK) return IB_INTERNAL;
    collect_ready(ex);
    ib_job *j = ib_job_fifo_pop(&ex->completed);
    if (j) {
      ib_job_deliver(ex, j, out);
      return IB_OK;
    }
    /* fill stopped for a due submission (issued above): admit the rest
     * of the window before a partial batch or a wait. */
    if (rs->due) continue;
    if (ib_exec_dispatch(ex, true) != IB_OK) return IB_INTERNAL;
    if (ex->in_flight_head) {
      ib_exec_wait_oldest(ex);
      continue;
    }
    if (ex->pending.head) continue; /* room for a submission again */
    /* Dispatch may complete jobs without a submission (a passed deadline). */
    if (ex->completed.head) continue;
    /* Only jobs parked for a compiling kernel are live: they complete by
     * themselves (their compile, or their deadline), so neither END nor
     * AGAIN (whose caller may block on its source). A live source is asked
     * again meanwhile, so an input arriving then is not held up. */
    if (ex->parked.head) {
      ib_exec_wait_parked(ex, rs->is_run && !rs->input_end && !rs->has_lookahead);
      continue;
    }
    if (!rs->is_run || rs->input_end) return IB_END;
    if (rs->input_again && !rs->has_lookahead) return IB_AGAIN;
    /* Nothing live and the pending input does not fit: held outputs
     * (resident handles, lent images) fill the budget. Retryable - the
     * input stays pending and nothing beyond it is pulled until the
     * caller releases them. */
    if (rs->has_lookahead && ib_credits_outputs_held(ex->credits)) return IB_RESULT_BACKPRESSURE;
    /* The backend's own bound (its compile queue) refused it: that drains
     * by itself; wait for it, then admit again. */
    if (rs->has_lookahead && ex->backend_full && ex->backend->admit_wait &&
        ex->backend->admit_wait(ex->backend_state, 1000))
      continue;
    if (rs->has_lookahead) {
      /* Nothing live and it still does not fit: only a cap shrunk under
       * it could do that; fail it rather than spin. */
      ib_error err;
      ib_error_set(&err, IB_LIMIT, IB_STAGE_ADMIT, "admit: job does not fit an idle executor");
      ib_graph_free(rs->lookahead.graph);
      hold_error(rs, false, 0, rs->lookahead.has_key ? &rs->lookahead.key : NULL, rs->lookahead.tag,
                 &err);
      ib_exec_unprepare(rs->prepared);
      rs->prepared = NULL;
      rs->has_lookahead = false;
    }
  }
}

ib_status ib_results_next(ib_results *rs, ib_result *out) {
  *out = (ib_result){0};
  if (!rs) return IB_INVALID;
  if (rs->finished) return rs->final;
  ib_executor *ex = rs->ex;
  if (!ex) return IB_CLOSED;
  if (!ib_exec_enter(ex)) return IB_BUSY;
  ib_status st = step(rs, out);
  if (st != IB_OK && st != IB_RESULT_BACKPRESSURE && st != IB_AGAIN)
    finish(rs, st == IB_END ? IB_END : st);
  ib_exec_leave(ex);
  return st;
}

void ib_results_close(ib_results *rs) {
  if (!rs) return;
  if (!rs->finished && rs->ex) {
    if (ib_executor_close(rs->ex) != IB_OK) return; /* called while driving: leave it open */
  }
  if (rs->has_held) ib_result_free(&rs->held);
  if (rs->has_lookahead) {
    ib_graph_free(rs->lookahead.graph);
    ib_key_clear(&rs->lookahead.key);
  }
  ib_exec_unprepare(rs->prepared);
  free(rs);
}
