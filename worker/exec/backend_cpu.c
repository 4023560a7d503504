/*
 * backend_cpu.c - the CPU reference backend behind the executor interface.
 * A submission runs its jobs one after another inside submit (the host is
 * the device, so working buffers are host memory: host_memory = true);
 * wait and ready only hand the finished submission back.
 */
#include <stdlib.h>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "exec/backend.h"

struct ib_backend_submission {
  size_t n;
};

static ib_status cpu_open(const ib_executor_options *opts, void **state, ib_error *err) {
  (void)opts;
  (void)err;
  *state = NULL;
  return IB_OK;
}

static void cpu_close(void *state) {
  (void)state;
}

/* Resident outputs need device memory that outlives the submission. */
static ib_status cpu_admit(void *state, const ib_graph *g, ib_error *err) {
  (void)state;
  const Imgbatch__V1__OutputSpec *o = g->job->output;
  if (o && o->target_case == IMGBATCH__V1__OUTPUT_SPEC__TARGET_GPU)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_ADMIT,
                        "output gpu: the cpu backend keeps no device memory");
  return IB_OK;
}

static ib_status cpu_submit(void *state, ib_backend_job *jobs, size_t n,
                            ib_backend_submission **sub, ib_error *err) {
  (void)state;
  *sub = malloc(sizeof **sub);
  if (!*sub) return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "cpu submit: out of memory");
  (*sub)->n = n;
  for (size_t i = 0; i < n; i++) {
    jobs[i].err = (ib_error){0};
    jobs[i].status = ib_cpu_execute(jobs[i].graph, &jobs[i].out, &jobs[i].err);
    if (jobs[i].status == IB_INTERNAL && !jobs[i].err.message[0])
      ib_error_set(&jobs[i].err, IB_INTERNAL, IB_STAGE_EXECUTE, "cpu execute: out of memory");
  }
  return IB_OK;
}

static ib_status cpu_wait(void *state, ib_backend_submission *sub, ib_error *err) {
  (void)state;
  (void)err;
  free(sub);
  return IB_OK;
}

static bool cpu_ready(void *state, ib_backend_submission *sub) {
  (void)state;
  (void)sub;
  return true;
}

const ib_backend ib_backend_cpu = {
    .name = "cpu",
    .host_memory = true,
    .open = cpu_open,
    .close = cpu_close,
    .admit = cpu_admit,
    .submit = cpu_submit,
    .wait = cpu_wait,
    .ready = cpu_ready,
};
