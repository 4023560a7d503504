/*
 * fault.c - test-only fault injection (CMake option IB_FAULTS). Lets the
 * worker's end-to-end tests make submissions fail the way a sick device or
 * a failed host allocation would, in front of the backend's driver calls,
 * so that worker faults can be told from job faults end to end. Compiled
 * to nothing in a normal build.
 */
#ifdef IB_FAULTS
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "exec/exec_internal.h"

ib_status ib_executor_test_fault(ib_executor *ex, const char *spec, ib_error *err) {
  ib_fault_plan f = {0};
  char *end = NULL;
  if (strncmp(spec, "device@", 7) == 0) {
    f.device_at = strtoull(spec + 7, &end, 10);
    f.device_sticky = *end == '+';
    if (f.device_sticky) end++;
  } else if (strncmp(spec, "alloc@", 6) == 0) {
    f.alloc_at = strtoull(spec + 6, &end, 10);
  } else if (strncmp(spec, "stall=", 6) == 0) {
    f.stall_ms = strtoull(spec + 6, &end, 10);
    if (*end == ':' && end[1]) {
      snprintf(f.stall_key, sizeof f.stall_key, "%s", end + 1);
      end = (char *)"";
    }
  } else if (strncmp(spec, "key=", 4) == 0) {
    snprintf(f.key, sizeof f.key, "%s", spec + 4);
    f.has_key = true;
    end = (char *)"";
  }
  if (!end || *end || (!f.device_at && !f.alloc_at && !f.has_key && !f.stall_ms))
    return ib_error_set(err, IB_INVALID, IB_STAGE_NONE,
                        "fault: '%s' is not device@N, device@N+, alloc@N, key=K or stall=MS:K",
                        spec);
  ex->fault = f;
  return IB_OK;
}

/* A job that completes with the injected allocation failure instead. */
void ib_fault_job(ib_executor *ex, const ib_job *j, ib_backend_job *bj) {
  /* Counted in jobs that ran, not ids: a QueueFull admission consumes ids. */
  if (!ex->fault.alloc_at || ++ex->fault.jobs_run != ex->fault.alloc_at) return;
  ex->fault.alloc_at = 0;
  ib_image_release(&bj->out);
  if (bj->dev) ex->backend->release(ex->backend_state, bj->dev);
  bj->dev = NULL;
  bj->status = IB_INTERNAL;
  ib_error_set(&bj->err, IB_INTERNAL, IB_STAGE_EXECUTE,
               "job %llu: host allocation failed (injected fault)", (unsigned long long)j->id);
}

/* A hung job: the first submission holding a job keyed stall_key blocks
 * the driving thread for stall_ms before the backend runs it, as a decode
 * or a kernel that does not return would (its credits stay held). Once. */
void ib_fault_stall(ib_executor *ex, const ib_sub *s) {
  ib_fault_plan *f = &ex->fault;
  if (!f->stall_ms) return;
  for (size_t i = 0; i < s->n; i++) {
    const ib_key *k = &s->jobs[i]->key;
    if (k->is_u64 || !k->str || strcmp(k->str, f->stall_key) != 0) continue;
    struct timespec ts = {(time_t)(f->stall_ms / 1000), (long)(f->stall_ms % 1000) * 1000000L};
    f->stall_ms = 0;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    return;
  }
}

/* Whether submission number `n` fails as a whole, before the backend
 * sees it. */
bool ib_fault_submission(ib_executor *ex, ib_sub *s, uint64_t n) {
  ib_fault_plan *f = &ex->fault;
  bool hit = f->device_at && (n == f->device_at || (f->device_sticky && n > f->device_at));
  for (size_t i = 0; !hit && f->has_key && i < s->n; i++)
    hit =
        !s->jobs[i]->key.is_u64 && s->jobs[i]->key.str && strcmp(s->jobs[i]->key.str, f->key) == 0;
  return hit;
}
#endif
