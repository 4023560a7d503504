/*
 * backend_cpu.c - the CPU reference backend behind the executor interface.
 * A submission runs its jobs inside submit, one after another on the
 * driving thread (the host is the device, so working buffers are host
 * memory: host_working_set); wait and ready only hand the finished
 * submission back. Job buffers and large results come from a block cache
 * (blockcache.h) bounded by host_bytes, the blocks in use and the freed
 * ones it keeps together, so the cache adds nothing to what the credits
 * let the jobs hold (two 4096^2 RGBA jobs' buffers at the default caps).
 */
#include <stdlib.h>

#include "core/error.h"
#include "core/hostpar.h"
#include "cpu/cpu_backend.h"
#include "exec/backend.h"

struct ib_backend_submission {
  size_t n;
};

typedef struct cpu_state {
  ib_hostpar *hp;
  ib_blockcache *bc;
  uint64_t host; /* the block cache's bound (host_bytes) */
} cpu_state;

/* One submission's jobs and the cache their results come from. */
typedef struct cpu_run {
  ib_backend_job *jobs;
  ib_blockcache *bc;
} cpu_run;

static ib_status cpu_open(const ib_executor_options *opts, void **state, ib_error *err) {
  cpu_state *s = calloc(1, sizeof *s);
  /* One job at a time on the driving thread: libvips keeps one error buffer
   * per process, so concurrent decodes would take each other's causes out
   * of their messages. host_threads is for device backends' staging. */
  int workers = 0;
  const uint64_t host = opts && opts->host_bytes ? opts->host_bytes : 256ull << 20;
  if (!s || !(s->hp = ib_hostpar_new(workers)) || !(s->bc = ib_blockcache_new(host))) {
    if (s) ib_hostpar_free(s->hp);
    free(s);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_NONE, "cpu backend: out of memory");
  }
  s->host = host;
  *state = s;
  return IB_OK;
}

static void cpu_close(void *state) {
  cpu_state *s = state;
  if (!s) return;
  ib_hostpar_free(s->hp);
  ib_blockcache_unref(s->bc);
  free(s);
}

static ProtobufCAllocator *cpu_parse_allocator(void *state) {
  return ib_blockcache_allocator(((cpu_state *)state)->bc);
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

static void run_job(void *ctx, size_t i) {
  const cpu_run *r = ctx;
  ib_backend_job *j = r->jobs + i;
  ib_backend_job_started(j);
  j->err = (ib_error){0};
  ib_cpu_renditions rd = {0};
  j->status = ib_cpu_execute_cached(j->graph, r->bc, &j->out, &rd, &j->err);
  j->renditions = rd.images;
  j->n_renditions = rd.n;
  if (j->status == IB_INTERNAL && !j->err.message[0])
    ib_error_set(&j->err, IB_INTERNAL, IB_STAGE_EXECUTE, "cpu execute: out of memory");
}

static ib_status cpu_submit(void *state, ib_backend_job *jobs, size_t n,
                            ib_backend_submission **sub, ib_error *err) {
  cpu_state *s = state;
  *sub = malloc(sizeof **sub);
  if (!*sub) return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "cpu submit: out of memory");
  (*sub)->n = n;
  cpu_run r = {jobs, s->bc};
  ib_hostpar_for(s->hp, n, run_job, &r);
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

static void cpu_pools(void *state, ib_executor_pools *out) {
  const cpu_state *s = state;
  out->host_bytes = ib_blockcache_held_bytes(s->bc);
  out->host_cap = s->host;
}

const ib_backend ib_backend_cpu = {
    .name = "cpu",
    .host_working_set = ib_cpu_working_set, /* execute.c */
    .open = cpu_open,
    .close = cpu_close,
    .admit = cpu_admit,
    .submit = cpu_submit,
    .wait = cpu_wait,
    .ready = cpu_ready,
    .parse_allocator = cpu_parse_allocator,
    .pools = cpu_pools,
};
