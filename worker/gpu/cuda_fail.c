/* How the CUDA backend's passes report a failure (cuda_internal.h): a
 * job's own, the device's for the whole submission, out of memory. Kept
 * apart from the submission (cuda_submit.c) because every pass reports
 * through them: planning, staging, grouping, launching and the tier. */
#include <stdio.h>

#include "gpu/cuda_internal.h"

void ib_cuda_job_fail(ib_backend_job *j, const ib_error *e, ib_stage stage) {
  j->status = e->status ? e->status : IB_DEVICE;
  j->err = *e;
  j->err.status = j->status;
  if (j->err.stage == IB_STAGE_NONE || j->err.stage == IB_STAGE_VALIDATE) j->err.stage = stage;
}

ib_status ib_cuda_device_fail(ib_backend_submission *s, CUresult rc, const char *what, size_t job,
                              ib_error *err) {
  ib_cu_fail(s->c->cu, rc, &s->device_err, IB_STAGE_EXECUTE, "%s (job %llu)", what,
             (unsigned long long)s->jobs[job].job_id);
  if (err) *err = s->device_err;
  return IB_DEVICE;
}

ib_status ib_cuda_oom(ib_error *err) {
  err->status = IB_INTERNAL;
  snprintf(err->message, sizeof err->message, "backend cuda: out of memory");
  return IB_INTERNAL;
}
