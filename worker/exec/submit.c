/*
 * submit.c - admission: id, key, backend support, snapshot, hard caps,
 * then the reservation beside live work. Every decision after the id is
 * taken consumes it; nothing here decodes or touches the device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/exec_internal.h"

/* Well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF),
 * as a protobuf string field must be. */
static bool utf8_ok(const unsigned char *s) {
  while (*s) {
    unsigned c = *s, n;
    uint32_t cp;
    if (c < 0x80) {
      s++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF)
      n = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      n = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
      n = 3, cp = c & 0x07;
    else
      return false;
    for (unsigned k = 1; k <= n; k++) {
      if ((s[k] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (s[k] & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    s += n + 1;
  }
  return true;
}

static ib_status check_key(const ib_key *key, ib_error *err) {
  if (!key->is_u64 && key->str && !utf8_ok((const unsigned char *)key->str))
    return ib_error_set(err, IB_INVALID, IB_STAGE_ADMIT,
                        "key: a string key must be UTF-8 (keys are strings or u64 only)");
  return IB_OK;
}

static ib_status take_id(ib_executor *ex, uint64_t *id, ib_error *err) {
  if (ex->ids_exhausted)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_ADMIT,
                        "admit: job ids are exhausted (u64 overflow; ids never wrap)");
  *id = ex->next_id;
  if (ex->next_id == UINT64_MAX)
    ex->ids_exhausted = true;
  else
    ex->next_id++;
  return IB_OK;
}

static bool resident_output(const ib_graph *g) {
  const Imgbatch__V1__OutputSpec *o = g->job->output;
  return o && o->target_case == IMGBATCH__V1__OUTPUT_SPEC__TARGET_GPU;
}

/* Raises the working charge to the backend's own estimate, if it has one. */
static ib_status backend_bytes(ib_executor *ex, const ib_graph *g, ib_charge *ch, ib_error *err) {
  if (!ex->backend->job_bytes) return IB_OK;
  uint64_t gpu = 0, host = 0;
  ib_status st = ex->backend->job_bytes(ex->backend_state, g, &gpu, &host, err);
  if (st != IB_OK) {
    err->stage = IB_STAGE_ADMIT;
    return st;
  }
  ib_charge_raise(ch, gpu, host);
  return IB_OK;
}

/* A job too large for a cap on its own also names its largest image, so
 * the refusal says which photo and which cap (docs/credits.md). */
static ib_status name_largest(const ib_graph *g, ib_status st, ib_error *err) {
  if (st != IB_LIMIT) return st;
  const ib_shape *big = NULL;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ib_shape *s = &g->nodes[i].shape;
    if (!big || (uint64_t)s->width * s->height * ib_mode_bands(s->mode) >
                    (uint64_t)big->width * big->height * ib_mode_bands(big->mode))
      big = s;
  }
  size_t n = strlen(err->message);
  if (big && n < sizeof err->message)
    snprintf(err->message + n, sizeof err->message - n,
             " (largest image %ux%u %s; raise --host-bytes / --gpu-bytes)", big->width, big->height,
             ib_mode_name(big->mode));
  return st;
}

/* Every check but the reservation; on IB_OK `job` holds its charge. */
static ib_status admit_checks(ib_executor *ex, ib_graph *g, ib_job *job, ib_error *err) {
  ex->backend_full = false;
  ib_status st = check_key(&job->key, err);
  if (st != IB_OK) return st;
  if (g->n_nodes == 0 || g->n_nodes > IB_MAX_OPS_PER_SUBMISSION)
    return ib_error_set(err, IB_LIMIT, IB_STAGE_ADMIT, "admit: %zu ops exceed the %u op bound",
                        g->n_nodes, IB_MAX_OPS_PER_SUBMISSION);
  if (ex->backend->admit && (st = ex->backend->admit(ex->backend_state, g, err)) != IB_OK) {
    err->stage = IB_STAGE_ADMIT;
    ex->backend_full = st == IB_QUEUE_FULL;
    return st;
  }
  job->resident = resident_output(g);
  if (job->resident && (!ex->backend->download || !ex->backend->release))
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_ADMIT,
                        "output gpu: the %s backend keeps no device memory", ex->backend->name);
  if ((st = ib_snapshot_take(g, &job->snap, err)) != IB_OK) return st;
  ib_charge_rules rules = ib_charge_rules_of(ex->backend, ex->backend_state, g,
                                             ib_snapshot_bytes(&job->snap), job->resident);
  job->charge = ib_charge_for(g, &rules);
  if ((st = backend_bytes(ex, g, &job->charge, err)) != IB_OK) return st;
  job->large = ex->backend->large_job ? ex->backend->large_job(ex->backend_state, g, job->resident)
                                      : job->charge.gpu_work >= IB_EXEC_LARGE_JOB_BYTES;
  return name_largest(g, ib_credits_check_caps(ex->credits, &job->charge, err), err);
}

bool ib_exec_reject(ib_executor *ex, ib_status st, uint64_t *job_id) {
  ib_error err;
  if (take_id(ex, job_id, &err) != IB_OK) return false;
  ib_credits_count_rejection(ex->credits, st);
  return true;
}

void ib_exec_unprepare(ib_job *job) {
  if (!job) return;
  ib_snapshot_clear(&job->snap);
  ib_key_clear(&job->key);
  free(job);
}

ib_status ib_exec_prepare(ib_executor *ex, ib_graph *g, const ib_key *key, void *tag, ib_job **out,
                          uint64_t *job_id, bool *id_consumed, ib_error *err) {
  *out = NULL;
  *id_consumed = false;
  if (ex->closed) return ib_error_set(err, IB_CLOSED, IB_STAGE_ADMIT, "admit: executor is closed");
  if (!g) return ib_error_set(err, IB_INVALID, IB_STAGE_ADMIT, "admit: no graph");
  /* Exhausted ids fail before any check, consuming none. */
  if (ex->ids_exhausted) return take_id(ex, job_id, err);
  ib_job *job = calloc(1, sizeof *job);
  ib_status st;
  if (!job || ib_key_copy(&job->key, key ? key : ib_graph_key(g)) != IB_OK) {
    free(job);
    job = NULL;
    st = ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT, "admit: out of memory");
  } else {
    job->tag = tag;
    st = admit_checks(ex, g, job, err);
  }
  if (st != IB_OK) {
    /* A decision: it consumes the id it would have had. */
    ib_exec_unprepare(job);
    *id_consumed = take_id(ex, job_id, &(ib_error){0}) == IB_OK;
    if (*id_consumed) ib_credits_count_rejection(ex->credits, st);
    return st;
  }
  *out = job;
  return IB_OK;
}

ib_status ib_exec_commit(ib_executor *ex, ib_job *job, ib_graph *g, bool quiet_full,
                         uint64_t *job_id, bool *id_consumed, ib_error *err) {
  *id_consumed = false;
  uint64_t id = 0;
  ib_status st = take_id(ex, &id, err);
  if (st != IB_OK) return st;
  *id_consumed = true;
  *job_id = id;
  ex->backend_full = false;
  st = ib_credits_reserve(ex->credits, &job->charge, quiet_full ? NULL : err);
  if (st != IB_OK) {
    if (quiet_full && st == IB_QUEUE_FULL && err)
      *err = (ib_error){.status = st, .stage = IB_STAGE_ADMIT};
    return st; /* counted by the reservation */
  }
  job->id = id; /* counted admitted by the reservation */
  job->graph = g;
  job->admitted_us = ib_now_us();
  if (ex->opts.queue)
    ib_exec_queue(ex, job);
  else
    ib_exec_run_alone(ex, job);
  return IB_OK;
}

ib_status ib_exec_admit(ib_executor *ex, ib_graph *g, const ib_key *key, void *tag,
                        uint64_t *job_id, bool *id_consumed, ib_error *err) {
  ib_job *job = NULL;
  ib_status st = ib_exec_prepare(ex, g, key, tag, &job, job_id, id_consumed, err);
  if (st != IB_OK) return st;
  st = ib_exec_commit(ex, job, g, false, job_id, id_consumed, err);
  if (st != IB_OK) ib_exec_unprepare(job);
  return st;
}

ib_status ib_executor_submit(ib_executor *ex, ib_graph *g, const ib_key *key, uint64_t *job_id,
                             ib_error *err) {
  ib_error scratch;
  if (!err) err = &scratch;
  if (!ex || !g)
    return ib_error_set(err, IB_INVALID, IB_STAGE_ADMIT, "submit: no executor or graph");
  if (!ib_exec_enter(ex))
    return ib_error_set(err, IB_BUSY, IB_STAGE_ADMIT,
                        "submit: another call is driving this executor (recursive or concurrent)");
  ib_status st;
  if (ex->stream)
    st = ib_error_set(err, IB_BUSY, IB_STAGE_ADMIT,
                      "submit: a result stream is open and not exhausted; drain or close it first");
  else {
    uint64_t id = 0;
    bool consumed;
    st = ib_exec_admit(ex, g, key, NULL, &id, &consumed, err);
    if (consumed && job_id) *job_id = id;
  }
  ib_exec_leave(ex);
  return st;
}
