/* A CUDA submission's staging pass (cuda_internal.h), on the host pool:
 * sources straight into pinned staging (raw bytes copied in chunks, encoded
 * ones decoded there by the source row), parameter blocks filled or copied
 * from an equal predecessor's. A submission that decodes is posted to the
 * pool and left there (ib_cuda_sub_stage_begin): its decodes take tens of
 * milliseconds a job, and the driving thread plans and posts the next
 * submissions meanwhile, so the decodes of every submission in flight share
 * the cores instead of one submission's few jobs at a time. */
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "gpu/graph_like.h"
#include "ops/op.h"

#define CHUNK (1u << 20)
typedef enum { HT_COPY, HT_SOURCE, HT_PARAMS } htask_kind;
/* HT_PARAMS: n is the job whose blocks to copy afterwards (SIZE_MAX: fill
 * them here). */
typedef struct htask {
  htask_kind kind;
  size_t job;
  int buf;
  uint8_t *dst;
  const uint8_t *src;
  size_t n;
  ib_status st;
  ib_error err;
} htask;

struct ib_cuda_staging {
  ib_backend_submission *s;
  htask *tasks;
  size_t n_tasks;
  uint8_t *host;
  bool posted; /* batch is on the pool */
  ib_hostpar_batch batch;
};
typedef struct ib_cuda_staging stage_ctx;

static void fill_params(const stage_ctx *x, size_t job) {
  const ib_jstate *js = &x->s->js[job];
  for (int q = 0; q < js->plan.n_stages; q++) {
    const ib_gstage *st = &js->plan.stages[q];
    uint8_t *blk = x->host + js->par_off[q];
    memset(blk, 0, st->chain.param_bytes);
    ib_gstage_fill(st, x->s->jobs[job].graph, blk);
  }
}

static void host_task(void *ctx, size_t t) {
  const stage_ctx *x = ctx;
  htask *k = &x->tasks[t];
  switch (k->kind) {
    case HT_COPY: memcpy(k->dst, k->src, k->n); break;
    case HT_SOURCE: {
      const ib_jstate *js = &x->s->js[k->job];
      const ib_node *nd = &x->s->jobs[k->job].graph->nodes[js->plan.bufs[k->buf].source_node];
      ib_image im = {.mode = nd->shape.mode,
                     .width = nd->shape.width,
                     .height = nd->shape.height,
                     .data = x->host + js->buf_off[k->buf]};
      k->st = nd->op->cpu(nd, NULL, &im, &k->err);
      break;
    }
    case HT_PARAMS:
      if (k->n == SIZE_MAX) fill_params(x, k->job);
      break;
  }
}

static bool live(const ib_backend_submission *s, size_t i) {
  return s->js[i].planned && s->jobs[i].status == IB_OK;
}

/* Upper bound of the tasks: per job one parameter task and, per staged
 * source, one per chunk (or one decode). */
static size_t count_tasks(const ib_backend_submission *s) {
  size_t cap = 0;
  for (size_t i = 0; i < s->n; i++) {
    const ib_jstate *js = &s->js[i];
    if (!live(s, i)) continue;
    cap += 1;
    for (int b = 0; b < js->plan.n_bufs; b++)
      if (js->plan.bufs[b].source_node >= 0 && !js->direct[b])
        cap += js->plan.bufs[b].bytes / CHUNK + 1;
  }
  return cap;
}

static void add_source_tasks(stage_ctx *x, size_t i) {
  const ib_backend_job *j = &x->s->jobs[i];
  const ib_jstate *js = &x->s->js[i];
  for (int b = 0; b < js->plan.n_bufs; b++) {
    int sn = js->plan.bufs[b].source_node;
    if (sn < 0 || js->direct[b]) continue;
    const ib_source *src = &j->graph->sources[j->graph->nodes[sn].pb->source->index];
    size_t bytes = js->plan.bufs[b].bytes;
    if (src->pb->kind_case == IMGBATCH__V1__SOURCE__KIND_RAW && src->len >= bytes) {
      for (size_t o = 0; o < bytes; o += CHUNK)
        x->tasks[x->n_tasks++] = (htask){.kind = HT_COPY,
                                         .job = i,
                                         .dst = x->host + js->buf_off[b] + o,
                                         .src = src->bytes + o,
                                         .n = bytes - o < CHUNK ? bytes - o : CHUNK};
    } else {
      x->tasks[x->n_tasks++] = (htask){.kind = HT_SOURCE, .job = i, .buf = b};
    }
  }
}

static void build_tasks(stage_ctx *x) {
  ib_backend_submission *s = x->s;
  size_t last_params = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (!live(s, i)) continue;
    add_source_tasks(x, i);
    /* The job whose blocks to copy: the previous one's source of them. */
    size_t like = SIZE_MAX;
    if (i && live(s, i - 1) && s->js[i].plan.n_stages == s->js[i - 1].plan.n_stages &&
        ib_cuda_same_nodes(s->jobs[i].graph, s->jobs[i - 1].graph))
      like = x->tasks[last_params].n == SIZE_MAX ? i - 1 : x->tasks[last_params].n;
    last_params = x->n_tasks;
    x->tasks[x->n_tasks++] = (htask){.kind = HT_PARAMS, .job = i, .n = like};
  }
}

/* The host pool pays off for decodes, bulk copies and many parameter
 * blocks; a few blocks alone run inline (see ib_cuda_sub_plan). Decodes
 * are posted (true) and left to the pool. */
static bool run_tasks(stage_ctx *x) {
  size_t heavy = 0, fills = 0, decodes = 0;
  for (size_t t = 0; t < x->n_tasks; t++) {
    const htask *k = &x->tasks[t];
    heavy += k->kind == HT_SOURCE ? CHUNK : k->kind == HT_COPY ? k->n : 0;
    fills += k->kind == HT_PARAMS && k->n == SIZE_MAX;
    decodes += k->kind == HT_SOURCE;
  }
  ib_hostpar *hp = x->s->c->hp;
  if (decodes && ib_hostpar_threads(hp) > 0) {
    ib_hostpar_post(hp, &x->batch, x->n_tasks, host_task, x);
    return true;
  }
  if (heavy >= 4 * (size_t)CHUNK || fills >= 16)
    ib_hostpar_for(hp, x->n_tasks, host_task, x);
  else
    for (size_t t = 0; t < x->n_tasks; t++) host_task(x, t);
  return false;
}

static void copy_params(const stage_ctx *x) {
  for (size_t t = 0; t < x->n_tasks; t++) {
    const htask *k = &x->tasks[t];
    if (k->kind != HT_PARAMS || k->n == SIZE_MAX) continue;
    const ib_jstate *js = &x->s->js[k->job], *from = &x->s->js[k->n];
    for (int q = 0; q < js->plan.n_stages; q++)
      memcpy(x->host + js->par_off[q], x->host + from->par_off[q],
             js->plan.stages[q].chain.param_bytes + js->plan.stages[q].extra_bytes);
  }
}

ib_status ib_cuda_sub_stage_begin(ib_backend_submission *s, ib_error *err) {
  const size_t cap = count_tasks(s);
  stage_ctx *x = calloc(1, sizeof *x);
  htask *tasks = calloc(cap ? cap : 1, sizeof *tasks);
  if (!x || !tasks) {
    free(x);
    free(tasks);
    return ib_cuda_oom(err);
  }
  *x = (stage_ctx){.s = s, .tasks = tasks, .host = ib_sub_host(s)};
  build_tasks(x);
  s->staging = x;
  x->posted = run_tasks(x);
  return IB_OK;
}

bool ib_cuda_sub_staged(ib_backend_submission *s) {
  return !s->staging || !s->staging->posted || ib_hostpar_done(&s->staging->batch);
}

void ib_cuda_sub_stage_end(ib_backend_submission *s) {
  stage_ctx *x = s->staging;
  if (!x) return;
  if (x->posted) ib_hostpar_wait(s->c->hp, &x->batch);
  copy_params(x);
  for (size_t t = 0; t < x->n_tasks; t++)
    if (x->tasks[t].st != IB_OK && s->jobs[x->tasks[t].job].status == IB_OK)
      ib_cuda_job_fail(&s->jobs[x->tasks[t].job], &x->tasks[t].err, IB_STAGE_DECODE);
  free(x->tasks);
  free(x);
  s->staging = NULL;
}

ib_status ib_cuda_sub_stage(ib_backend_submission *s, ib_error *err) {
  ib_status rs = ib_cuda_sub_stage_begin(s, err);
  if (rs == IB_OK) ib_cuda_sub_stage_end(s);
  return rs;
}
