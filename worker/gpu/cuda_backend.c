/* The CUDA backend: submissions of several jobs (see cuda_backend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/charge.h"
#include "gpu/cu.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_resident.h"
#include "gpu/gplan.h"
#include "core/hostpar.h"
#include "core/log.h"
#include "gpu/module_store.h"
#include "gpu/nvrtc_cache.h"
#include "gpu/pinned.h"
#include "gpu/pool.h"

#define IB_MAX_STREAMS 8
#define ALIGN IB_CUDA_ALIGN
#define THREADS 256u

/* A loaded kernel module, an entry of ib_cuda.mods. */
typedef struct kfunc {
  char sig[512];
  CUmodule mod;
  CUfunction chain, lsum, post;
  unsigned smem_max; /* PASSES heads: dynamic shared bytes ib_chain may take */
} kfunc;

struct ib_cuda {
  const ib_cu *cu;
  CUdevice dev;
  CUcontext ctx;
  int sm_count;
  int smem_optin; /* opt-in dynamic shared memory per block */
  char arch[16];
  char desc[200];
  ib_kcache *kc;
  ib_pool dpool;
  ib_pinned *pin; /* upload staging, download arenas, parsed Jobs */
  CUstream streams[IB_MAX_STREAMS];
  unsigned n_streams, next_stream;
  /* Loaded modules by chain signature: the in-memory module cache, an LRU
   * bounded by module_cache_bytes (a module counts its image's bytes).
   * The rule that keeps eviction safe: every module a submission launches
   * from is pinned from the lookup in submit until sub_release, which runs
   * only once the submission's work is complete or fenced; the LRU never
   * evicts a pinned entry, so cuModuleUnload never races a launch. The
   * memory layer of kc is off: a module is kept here or read from disk. */
  ib_lru mods;
  ib_hostpar *hp;
  /* IB_CUDA_PROFILE=1: host seconds per phase, printed to stderr at close
   * (plan, staging, launch = submit; device = blocked in wait; results =
   * result copies). */
  int no_batch_copy; /* cuMemcpyBatchAsync refused once: copy one by one */
  ib_log_sink log;
  /* The last admission charge (be_job_bytes, driving thread): a graph whose
   * nodes equal these on the wire and in shape has the same charge, so a
   * stream of one operation over many images plans once for its charges. */
  uint8_t *jb_wire;
  size_t jb_wire_len, jb_nodes;
  ib_shape *jb_shapes;
  uint64_t jb_in_place; /* bit i: source i uploaded in place */
  uint64_t jb_gpu, jb_host_plan; /* jb_host_plan: the host charge less the source bytes */
  int prof;
  bool blur_global_rows;
  double t_plan, t_stage, t_launch, t_device, t_results;
  uint64_t n_sub, n_jobs;
};

static double prof_now(const ib_cuda *c) {
  if (!c->prof) return 0.0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Host work of a submission, spread over the host pool: byte copies in
 * chunks, source decodes, parameter blocks. */
#define CHUNK (1u << 20)
typedef enum { HT_COPY, HT_SOURCE, HT_PARAMS, HT_PLAN } htask_kind;
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

typedef struct jstate {
  ib_gplan plan;
  int planned;
  size_t *buf_off; /* per plan buffer: offset in the device block */
  size_t *par_off; /* per stage: offset of its parameter block (host = device) */
  size_t dl_off;   /* terminal image: offset in the download arena */
  bool own;        /* terminal image downloaded into the Job buffer */
  uint8_t *direct; /* per plan buffer: 1 = a raw source uploaded from its
                    * own pinned memory (ib_executor_parse), not staged */
} jstate;

/* A submission's download arena, lent to its results (backend.h), or one
 * job's own Job buffer holding its output (job_buf set). */
typedef struct lent_arena {
  ib_cuda *c;
  ib_pool_block blk;
  uint8_t *job_buf;
} lent_arena;

struct ib_backend_submission {
  ib_cuda *c;
  ib_lru_entry **pins; /* modules this submission launches from (see mods) */
  size_t n_pins;
  CUstream stream;
  CUevent ev;
  ib_pool_block hblk, dblk;
  lent_arena *arena; /* NULL when nothing comes back to the host */
  ib_backend_job *jobs;
  size_t n;
  jstate *js;
  ib_status device_status;
  ib_error device_err;
  uint8_t *host_base;
  htask *tasks; /* during host work only */
};

static size_t up(size_t v) { return (v + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

/* ------------------------------------------------------------ pools */

static uint64_t dev_alloc(void *ctx, size_t n) {
  ib_cuda *c = ctx;
  CUdeviceptr p = 0;
  return c->cu->cuMemAlloc(&p, n) == CUDA_SUCCESS ? (uint64_t)p : 0;
}
static void dev_free(void *ctx, uint64_t a, size_t n) {
  (void)n;
  ib_cuda *c = ctx;
  c->cu->cuMemFree((CUdeviceptr)a);
}
/* Pinned memory is asked for and given back on whichever thread parses a
 * Job or releases a result: make the context current there first. */
static uint64_t host_alloc(void *ctx, size_t n) {
  ib_cuda *c = ctx;
  void *p = NULL;
  if (c->cu->cuCtxSetCurrent(c->ctx) != CUDA_SUCCESS) return 0;
  return c->cu->cuMemHostAlloc(&p, n, 0) == CUDA_SUCCESS ? (uint64_t)(uintptr_t)p : 0;
}
static void host_free(void *ctx, uint64_t a, size_t n) {
  (void)n;
  ib_cuda *c = ctx;
  c->cu->cuCtxSetCurrent(c->ctx);
  c->cu->cuMemFreeHost((void *)(uintptr_t)a);
}

/* ------------------------------------------------------------ open / close */

/* The module cache's drop: runs when an unpinned module is evicted (no
 * submission uses it, see ib_cuda.mods) or at close. */
static void unload_module(void *ctx, void *value) {
  ib_cuda *c = ctx;
  kfunc *f = value;
  c->cu->cuCtxSetCurrent(c->ctx);
  c->cu->cuModuleUnload(f->mod);
  free(f);
}

ib_status ib_cuda_open(const ib_executor_options *opts, ib_cuda **out, ib_error *err) {
  /* Zero fields take the documented defaults below (no dependency on the
   * executor core's ib_executor_options_default). */
  ib_executor_options def = {.backend = IB_BACKEND_CUDA, .host_threads = -1};
  if (!opts) opts = &def;
  const ib_cu *cu = ib_cu_get(err);
  if (!cu) return IB_DEVICE;
  ib_cuda *c = calloc(1, sizeof *c);
  if (!c) return IB_INTERNAL;
  c->cu = cu;
  CUresult rc;
  int count = 0, major = 0, minor = 0;
  char name[128] = "";
  if ((rc = cu->cuDeviceGetCount(&count)) != CUDA_SUCCESS || opts->device < 0 ||
      opts->device >= count) {
    err->status = IB_DEVICE;
    err->stage = IB_STAGE_ADMIT;
    snprintf(err->message, sizeof err->message, "no CUDA device %d (%d present)", opts->device,
             count);
    free(c);
    return IB_DEVICE;
  }
  if ((rc = cu->cuDeviceGet(&c->dev, opts->device)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     c->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     c->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&c->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                     c->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetName(name, sizeof name, c->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS) {
    ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "device %d: query/context", opts->device);
    free(c);
    return IB_DEVICE;
  }
  if ((rc = cu->cuCtxSetCurrent(c->ctx)) != CUDA_SUCCESS) {
    ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "device %d: cuCtxSetCurrent", opts->device);
    cu->cuDevicePrimaryCtxRelease(c->dev);
    free(c);
    return IB_DEVICE;
  }
  if (cu->cuDeviceGetAttribute(&c->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                               c->dev) != CUDA_SUCCESS)
    c->smem_optin = 48 * 1024;
  snprintf(c->arch, sizeof c->arch, "sm_%d%d", major, minor);
  snprintf(c->desc, sizeof c->desc, "%s, %s, %d SMs", name, c->arch, c->sm_count);
  const uint64_t mem_cap = opts->module_cache_bytes ? opts->module_cache_bytes : 256ull << 20;
  const uint64_t disk_cap = opts->disk_cache_bytes ? opts->disk_cache_bytes : 2ull << 30;
  c->kc = ib_kcache_new(opts->cache_dir, 0, disk_cap);
  const int mods_ok = ib_lru_init(&c->mods, mem_cap, unload_module, c) == 0;
  c->hp = ib_hostpar_new(opts->host_threads < 0 ? -1 : opts->host_threads > 0 ? opts->host_threads - 1 : 0);
  c->prof = opts->cuda_profile;
  c->log = (ib_log_sink){opts->log_cb, opts->log_opaque};
  c->blur_global_rows = opts->cuda_blur_global_rows;
  uint64_t gpu = opts->gpu_bytes ? opts->gpu_bytes : 512ull << 20;
  uint64_t host = opts->host_bytes ? opts->host_bytes : 256ull << 20;
  /* Classes round up to powers of two: twice the credit cap covers the
   * rounding of anything the credits admitted. */
  ib_pool_init(&c->dpool, dev_alloc, dev_free, c, 2 * gpu);
  /* Pinned: twice the host cap for staging and arenas (the credits bound
   * what they hold; classes round up) and as much again for Jobs parsed
   * ahead of admission (past that they stay on the heap). */
  c->pin = ib_pinned_new(host_alloc, host_free, c, 4 * host, 2 * host);
  unsigned inflight = opts->max_in_flight ? opts->max_in_flight : 2;
  c->n_streams = inflight < IB_MAX_STREAMS ? inflight : IB_MAX_STREAMS;
  for (unsigned i = 0; i < c->n_streams; i++)
    if ((rc = cu->cuStreamCreate(&c->streams[i], CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
      ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "cuStreamCreate");
      c->n_streams = i;
      ib_cuda_close(c);
      return IB_DEVICE;
    }
  if (!c->kc || !c->pin || !mods_ok) {
    ib_cuda_close(c);
    return IB_INTERNAL;
  }
  *out = c;
  return IB_OK;
}

void ib_cuda_profile_report(ib_cuda *c, const char *label) {
  if (c->prof && c->n_jobs)
    ib_log(&c->log, IB_LOG_INFO,
           "cuda host profile (%s): %llu submissions, %llu jobs; us per job: plan %.2f, staging "
            "%.2f, launch %.2f, blocked on device %.2f, result copies %.2f\n",
            label, (unsigned long long)c->n_sub, (unsigned long long)c->n_jobs,
            c->t_plan * 1e6 / (double)c->n_jobs, c->t_stage * 1e6 / (double)c->n_jobs,
            c->t_launch * 1e6 / (double)c->n_jobs, c->t_device * 1e6 / (double)c->n_jobs,
            c->t_results * 1e6 / (double)c->n_jobs);
  c->t_plan = c->t_stage = c->t_launch = c->t_device = c->t_results = 0;
  c->n_sub = c->n_jobs = 0;
}

void ib_cuda_close(ib_cuda *c) {
  if (!c) return;
  ib_cuda_profile_report(c, "close");
  const ib_cu *cu = c->cu;
  cu->cuCtxSetCurrent(c->ctx);
  cu->cuCtxSynchronize();
  for (unsigned i = 0; i < c->n_streams; i++) cu->cuStreamDestroy(c->streams[i]);
  ib_lru_destroy(&c->mods); /* after the fence above: nothing launches any more */
  ib_pool_destroy(&c->dpool);
  ib_pinned_free(c->pin);
  free(c->jb_wire);
  free(c->jb_shapes);
  ib_kcache_free(c->kc);
  ib_hostpar_free(c->hp);
  cu->cuDevicePrimaryCtxRelease(c->dev);
  free(c);
}

const char *ib_cuda_device_desc(const ib_cuda *c) { return c->desc; }

void ib_cuda_cache_desc(ib_cuda *c, char *buf, size_t n) {
  ib_kcache_stats s = ib_kcache_stats_get(c->kc);
  ib_lru_stats m = ib_lru_stats_get(&c->mods);
  snprintf(buf, n,
           "nvrtc: %llu compiled (%.1f s), %llu from disk (%llu corrupt), %llu from memory, %llu "
           "evicted; cache dir '%s'",
           (unsigned long long)s.compiles, (double)s.compile_us * 1e-6,
           (unsigned long long)s.disk_hits, (unsigned long long)s.disk_corrupt,
           (unsigned long long)m.hits, (unsigned long long)m.evictions, ib_kcache_dir(c->kc));
}

static void cuda_counters(void *state, ib_executor_counters *out) {
  ib_cuda *c = state;
  ib_kcache_stats s = ib_kcache_stats_get(c->kc);
  ib_lru_stats m = ib_lru_stats_get(&c->mods);
  out->nvrtc_compiles = s.compiles;
  out->nvrtc_compile_us = s.compile_us;
  out->module_cache_hits_memory = m.hits;
  out->module_cache_hits_disk = s.disk_hits;
  out->module_cache_evictions = m.evictions;
  out->module_cache_bytes = m.bytes;
  out->disk_cache_corrupt = s.disk_corrupt;
}

/* ------------------------------------------------------------ kernels */

static const char *const nvrtc_opts[] = {"--fmad=false"};

/* 128-bit key of a signature (two FNV-1a style streams). */
static void sig_key(const char *sig, uint64_t key[2]) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (const unsigned char *p = (const unsigned char *)sig; *p; p++) {
    a = (a ^ *p) * 0x100000001b3ull;
    b = (b ^ *p) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  }
  key[0] = a;
  key[1] = b;
}

/* The compiled kernel of a chain signature (loaded modules, then the module
 * cache: disk/NVRTC), returned pinned in *pin: the caller keeps the pin
 * until the work launched from it completed (see ib_cuda.mods). */
static ib_status chain_func(ib_cuda *c, const ib_gchain *ch, kfunc **out, ib_lru_entry **pin,
                            ib_error *err) {
  char sig[512];
  ib_gchain_signature(ch, sig, sizeof sig);
  uint64_t key[2];
  sig_key(sig, key);
  ib_lru_entry *e = ib_lru_get(&c->mods, key, true);
  if (e) {
    kfunc *f = ib_lru_value(e);
    if (strcmp(f->sig, sig) != 0) { /* a key collision: never run the other kernel */
      ib_lru_unpin(&c->mods, e);
      err->status = IB_INTERNAL;
      snprintf(err->message, sizeof err->message, "backend cuda: module key collision for %.200s",
               sig);
      return IB_INTERNAL;
    }
    *out = f;
    *pin = e;
    return IB_OK;
  }
  char *src = ib_gchain_source(ch);
  if (!src) {
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: out of memory generating %.200s", sig);
    return IB_INTERNAL;
  }
  void *img;
  size_t len;
  char name[64];
  snprintf(name, sizeof name, "chain.cu");
  ib_status st = ib_kcache_get(c->kc, name, src, c->arch, nvrtc_opts, 1, &img, &len, NULL, NULL, err);
  free(src);
  if (st != IB_OK) return st;
  kfunc *f = calloc(1, sizeof *f);
  if (!f) {
    free(img);
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: out of memory loading %.200s", sig);
    return IB_INTERNAL;
  }
  snprintf(f->sig, sizeof f->sig, "%s", sig);
  CUresult rc = c->cu->cuModuleLoadData(&f->mod, img);
  free(img);
  if (rc == CUDA_SUCCESS) rc = c->cu->cuModuleGetFunction(&f->chain, f->mod, "ib_chain");
  if (rc == CUDA_SUCCESS && ch->reduce_luma)
    rc = c->cu->cuModuleGetFunction(&f->lsum, f->mod, "ib_lsum");
  if (rc == CUDA_SUCCESS && ib_gchain_passes(ch)) {
    rc = c->cu->cuModuleGetFunction(&f->post, f->mod, "ib_post");
    /* cuda_blur_global_rows forces the global-memory row passes (tests). */
    f->smem_max = c->blur_global_rows ? 0 : 48 * 1024;
    if (rc == CUDA_SUCCESS && f->smem_max && c->smem_optin > 48 * 1024 &&
        c->cu->cuFuncSetAttribute(f->chain, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  c->smem_optin) == CUDA_SUCCESS)
      f->smem_max = (unsigned)c->smem_optin;
  }
  if (rc != CUDA_SUCCESS) {
    if (f->mod) c->cu->cuModuleUnload(f->mod);
    free(f);
    return ib_cu_fail(c->cu, rc, err, IB_STAGE_EXECUTE, "loading kernel %.150s", sig);
  }
  /* Inserted pinned: the bound may evict older unpinned modules, never this. */
  if (!(e = ib_lru_put(&c->mods, key, f, len, true))) {
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: out of memory keeping %.200s", sig);
    return IB_INTERNAL;
  }
  *out = ib_lru_value(e);
  *pin = e;
  return IB_OK;
}

/* Equal chains have equal signatures (ib_gchain_signature reads only these
 * fields), so they share a kernel. */
static int chain_eq(const ib_gchain *a, const ib_gchain *b) {
  if (a->n_inputs != b->n_inputs || a->mode_in1 != b->mode_in1 || a->n_steps != b->n_steps ||
      a->param_bytes != b->param_bytes || a->reduce_luma != b->reduce_luma)
    return 0;
  return memcmp(a->steps, b->steps, (size_t)a->n_steps * sizeof a->steps[0]) == 0;
}

/* ------------------------------------------------------------ submit */

static void job_fail(ib_backend_job *j, const ib_error *e, ib_stage stage) {
  j->status = e->status ? e->status : IB_DEVICE;
  j->err = *e;
  j->err.status = j->status;
  if (j->err.stage == IB_STAGE_NONE || j->err.stage == IB_STAGE_VALIDATE) j->err.stage = stage;
}

static void sub_release(ib_backend_submission *s) {
  if (!s) return;
  ib_cuda *c = s->c;
  /* Complete or fenced by now (every caller): its modules may be evicted. */
  for (size_t i = 0; i < s->n_pins; i++) ib_lru_unpin(&c->mods, s->pins[i]);
  free(s->pins);
  if (s->ev) c->cu->cuEventDestroy(s->ev);
  ib_pinned_put(c->pin, &s->hblk);
  ib_pool_put(&c->dpool, &s->dblk);
  if (s->arena) { /* not lent to any result */
    ib_pinned_put(c->pin, &s->arena->blk);
    free(s->arena);
  }
  for (size_t i = 0; s->js && i < s->n; i++) {
    ib_gplan_free(&s->js[i].plan);
    free(s->js[i].buf_off);
    free(s->js[i].par_off);
    free(s->js[i].direct);
  }
  free(s->js);
  free(s);
}

typedef struct launch_ent {
  int group;
  size_t job;
  int stage;
} launch_ent;

static int ent_cmp(const void *a, const void *b) {
  const launch_ent *x = a, *y = b;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  return x->job < y->job ? -1 : x->job > y->job;
}

static ib_status device_fail(ib_backend_submission *s, CUresult rc, const char *what, size_t job,
                             ib_error *err) {
  ib_cu_fail(s->c->cu, rc, &s->device_err, IB_STAGE_EXECUTE, "%s (job %llu)", what,
             (unsigned long long)s->jobs[job].job_id);
  s->device_status = IB_DEVICE;
  if (err) *err = s->device_err;
  return IB_DEVICE;
}

/* Pass 1 of a submission for one job (host pool): its device plan and
 * offset tables. A failure is the job's own. */
static void plan_job(ib_backend_job *j, jstate *js) {
  j->status = IB_OK;
  memset(&j->err, 0, sizeof j->err);
  memset(&j->out, 0, sizeof j->out);
  ib_error e = {0};
  if (ib_gplan_build(j->graph, &js->plan, &e) != IB_OK) {
    job_fail(j, &e, IB_STAGE_ADMIT);
    return;
  }
  js->planned = 1;
  js->buf_off = calloc((size_t)js->plan.n_bufs, sizeof *js->buf_off);
  js->par_off = calloc((size_t)js->plan.n_stages + 1, sizeof *js->par_off);
  js->direct = calloc((size_t)js->plan.n_bufs, 1);
  if (!js->buf_off || !js->par_off || !js->direct) {
    e = (ib_error){.status = IB_INTERNAL};
    snprintf(e.message, sizeof e.message, "backend cuda: out of memory");
    job_fail(j, &e, IB_STAGE_ADMIT);
    js->planned = 0;
  }
}

static void host_task(void *ctx, size_t t) {
  ib_backend_submission *s = ctx;
  htask *k = &s->tasks[t];
  switch (k->kind) {
    case HT_COPY: memcpy(k->dst, k->src, k->n); break;
    case HT_SOURCE: {
      const ib_backend_job *j = &s->jobs[k->job];
      const jstate *js = &s->js[k->job];
      const ib_node *nd = &j->graph->nodes[js->plan.bufs[k->buf].source_node];
      ib_image im = {.mode = nd->shape.mode, .width = nd->shape.width, .height = nd->shape.height, .data =
                     s->host_base + js->buf_off[k->buf]};
      k->st = nd->op->cpu(nd, NULL, &im, &k->err);
      break;
    }
    case HT_PLAN: plan_job(&s->jobs[k->job], &s->js[k->job]); break;
    case HT_PARAMS: {
      if (k->n != SIZE_MAX) break; /* copied from an equal job's blocks afterwards */
      const ib_backend_job *j = &s->jobs[k->job];
      const jstate *js = &s->js[k->job];
      for (int q = 0; q < js->plan.n_stages; q++) {
        const ib_gstage *st = &js->plan.stages[q];
        uint8_t *blk = s->host_base + js->par_off[q];
        memset(blk, 0, st->chain.param_bytes);
        ib_gstage_fill(st, j->graph, blk);
      }
      break;
    }
  }
}

/* Two graphs whose nodes are equal on the wire and in shape get equal
 * device plans and equal parameter blocks: the second job copies the
 * first's blocks instead of computing them (a folded point table costs
 * 2.7 us to build, the copy nothing; batches of one operation over many
 * images are the common case). */
static bool node_pb_equal(const Imgbatch__V1__Node *x, const Imgbatch__V1__Node *y) {
  if (x->op_case != y->op_case) return false;
  size_t n = imgbatch__v1__node__get_packed_size(x);
  uint8_t a[1024], b[1024];
  if (n > sizeof a || imgbatch__v1__node__get_packed_size(y) != n) return false;
  imgbatch__v1__node__pack(x, a);
  imgbatch__v1__node__pack(y, b);
  return memcmp(a, b, n) == 0;
}

static bool same_params(const ib_graph *g, const ib_graph *h) {
  if (g->n_nodes != h->n_nodes) return false;
  /* Both kept their nodes' wire bytes (parse.c): one memcmp for all. */
  const bool wire = g->nodes_wire && h->nodes_wire;
  if (wire && (g->nodes_wire_len != h->nodes_wire_len ||
               memcmp(g->nodes_wire, h->nodes_wire, g->nodes_wire_len) != 0))
    return false;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ib_node *a = &g->nodes[i], *b = &h->nodes[i];
    if (a->op != b->op || memcmp(&a->shape, &b->shape, sizeof a->shape) != 0 ||
        (!wire && !node_pb_equal(a->pb, b->pb)))
      return false;
  }
  return true;
}

/* A PASSES head (ops/op_dev.h; kernels/blur.cuh) over one launch group:
 * the row passes in shared memory when two rows of the widest image fit
 * (else one global launch per row pass), then one launch per column pass. */
static ib_status launch_passes(ib_backend_submission *s, const kfunc *f, const ib_gchain *ch,
                             const ib_gdesc *descs, size_t e, size_t e_end, size_t k0,
                             unsigned gy, CUdeviceptr table, ib_error *err) {
  const ib_cu *cu = s->c->cu;
  const uint64_t bands = ib_mode_bands((ib_mode)ib_gchain_mode_in(ch));
  const int passes = ch->steps[0].a;
  uint64_t row_bytes = 0, rows = 0, row_items = 0, col_items = 0;
  for (size_t q = e; q < e_end; q++) {
    uint64_t w = descs[q].width, h = descs[q].height;
    if (w * bands > row_bytes) row_bytes = w * bands;
    if (h > rows) rows = h;
    uint64_t ri = h * bands * ((w + IB_PASS_CSEG - 1) / IB_PASS_CSEG);
    uint64_t ci = w * bands * ((h + IB_PASS_CSEG - 1) / IB_PASS_CSEG);
    if (ri > row_items) row_items = ri;
    if (ci > col_items) col_items = ci;
  }
  const uint64_t cap = (uint64_t)s->c->sm_count * 32;
  uint64_t smem = 2 * ((row_bytes + 15) & ~(uint64_t)15);
  CUresult rc;
  void *args1[] = {&table};
  if (smem <= f->smem_max) {
    unsigned gx = (unsigned)(rows < 1 ? 1 : rows > cap ? cap : rows);
    rc = cu->cuLaunchKernel(f->chain, gx, gy, 1, THREADS, 1, 1, (unsigned)smem, s->stream, args1, NULL);
    if (rc != CUDA_SUCCESS) return device_fail(s, rc, "launch pass rows", k0, err);
  } else {
    uint64_t b = (row_items + THREADS - 1) / THREADS;
    unsigned gx = (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
    for (int k = 0; k < passes; k++) {
      int dir = 0;
      void *args[] = {&table, &dir, &k};
      rc = cu->cuLaunchKernel(f->post, gx, gy, 1, THREADS, 1, 1, 0, s->stream, args, NULL);
      if (rc != CUDA_SUCCESS) return device_fail(s, rc, "launch row pass", k0, err);
    }
  }
  uint64_t b = (col_items + THREADS - 1) / THREADS;
  unsigned gx = (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
  for (int k = 0; k < passes; k++) {
    int dir = 1;
    void *args[] = {&table, &dir, &k};
    rc = cu->cuLaunchKernel(f->post, gx, gy, 1, THREADS, 1, 1, 0, s->stream, args, NULL);
    if (rc != CUDA_SUCCESS) return device_fail(s, rc, "launch column pass", k0, err);
  }
  return IB_OK;
}

/* A raw source whose bytes lie in this backend's pinned memory (the Job was
 * unpacked by ib_executor_parse): uploaded from there, no staging copy.
 * Admission (be_job_bytes) asks the same question, so the charge knows. */
static bool source_pinned(void *state, const ib_graph *g, size_t index) {
  ib_cuda *c = state;
  const ib_source *src = &g->sources[index];
  size_t bytes = (size_t)src->shape.width * src->shape.height * ib_mode_bands(src->shape.mode);
  if (src->pb->kind_case != IMGBATCH__V1__SOURCE__KIND_RAW || src->len < bytes || !bytes) return false;
  /* Unpacked by ib_executor_parse: the pixels are an allocation of their
   * own; parsed in place: they lie in the graph's Job buffer. */
  const uint8_t *buf = g->buffer;
  const uint8_t *base =
      buf && src->bytes >= buf && src->bytes < buf + g->buffer_len ? buf : src->bytes;
  return ib_pinned_holds(c->pin, base, src->bytes, bytes);
}

/* A terminal image of 1 MiB or more goes back into its own Job buffer
 * (ib_executor_parse_buffer) when that buffer is pinned and large enough:
 * its source pixels are dead once uploaded, and the job then holds one
 * host copy, not two (at the default caps, two 4096^2 RGBA jobs in flight
 * instead of one). Smaller outputs share the submission's arena: one
 * download copy for all of them. Decided on the graph alone, so that the
 * charge (be_out_in_buffer) and the submission agree. */
#define OWN_DOWNLOAD_MIN ((uint64_t)1 << 20)
static bool own_download(ib_cuda *c, const ib_graph *g) {
  if (!g->buffer || !g->n_nodes) return false;
  const ib_shape *sh = &g->nodes[g->n_nodes - 1].shape;
  const uint64_t out = (uint64_t)sh->width * sh->height * ib_mode_bands(sh->mode);
  return out >= OWN_DOWNLOAD_MIN && out <= g->buffer_len &&
         ib_pinned_holds(c->pin, g->buffer, g->buffer, g->buffer_len);
}

static uint8_t pinned_source(ib_cuda *c, const ib_backend_job *j, const jstate *js, int b) {
  const ib_node *nd = &j->graph->nodes[js->plan.bufs[b].source_node];
  return source_pinned(c, j->graph, nd->pb->source->index);
}

/* The pinned raw sources of a submission, each copied from where it lies:
 * in batches of one driver call where the driver has cuMemcpyBatchAsync
 * (small images: one enqueue instead of one per job), else one by one. */
#define DIRECT_BATCH 256
static ib_status upload_direct(ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = s->c;
  const ib_cu *cu = c->cu;
  size_t cap = 0;
  for (size_t i = 0; i < s->n; i++)
    for (int b = 0; s->js[i].planned && b < s->js[i].plan.n_bufs; b++) cap += s->js[i].direct[b];
  CUdeviceptr *dst = malloc(cap * sizeof *dst), *src = malloc(cap * sizeof *src);
  size_t *len = malloc(cap * sizeof *len), *job = malloc(cap * sizeof *job), n = 0;
  if (!dst || !src || !len || !job) {
    free(dst), free(src), free(len), free(job);
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: out of memory");
    return IB_INTERNAL;
  }
  for (size_t i = 0; i < s->n; i++) {
    const jstate *js = &s->js[i];
    if (!js->planned || s->jobs[i].status != IB_OK) continue;
    for (int b = 0; b < js->plan.n_bufs; b++) {
      if (!js->direct[b]) continue;
      const ib_node *nd = &s->jobs[i].graph->nodes[js->plan.bufs[b].source_node];
      const ib_source *sc = &s->jobs[i].graph->sources[nd->pb->source->index];
      dst[n] = (CUdeviceptr)s->dblk.addr + js->buf_off[b];
      src[n] = (CUdeviceptr)(uintptr_t)sc->bytes;
      len[n] = js->plan.bufs[b].bytes;
      job[n++] = i;
    }
  }
  ib_status rs = IB_OK;
  CUresult rc;
  for (size_t k0 = 0; k0 < n && rs == IB_OK; k0 += DIRECT_BATCH) {
    size_t m = n - k0 < DIRECT_BATCH ? n - k0 : DIRECT_BATCH;
    if (m > 1 && cu->cuMemcpyBatchAsync && !c->no_batch_copy) {
      CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
      size_t at_idx = 0;
      const CUresult rc0 =
          cu->cuMemcpyBatchAsync(dst + k0, src + k0, len + k0, m, &at, &at_idx, 1, s->stream);
      if (rc0 == CUDA_SUCCESS) continue;
      c->no_batch_copy = 1; /* refused on this driver: one by one from now on */
      ib_log(&c->log, IB_LOG_WARN,
             "cuda: cuMemcpyBatchAsync refused (%d); raw sources are uploaded one by one from now "
             "on",
             (int)rc0);
    }
    for (size_t k = k0; k < k0 + m && rs == IB_OK; k++)
      if ((rc = cu->cuMemcpyHtoDAsync(dst[k], (const void *)(uintptr_t)src[k], len[k], s->stream)) !=
          CUDA_SUCCESS)
        rs = device_fail(s, rc, "upload of a pinned source", job[k], err);
  }
  free(dst), free(src), free(len), free(job);
  return rs;
}

static ib_status cuda_submit(void *state, ib_backend_job *jobs, size_t n,
                             ib_backend_submission **out, ib_error *err) {
  ib_cuda *c = state;
  const ib_cu *cu = c->cu;
  cu->cuCtxSetCurrent(c->ctx);
  const double t0 = prof_now(c);
  ib_backend_submission *s = calloc(1, sizeof *s);
  if (!s || !(s->js = calloc(n ? n : 1, sizeof *s->js))) {
    free(s);
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: out of memory");
    return IB_INTERNAL;
  }
  s->c = c;
  s->jobs = jobs;
  s->n = n;
  s->stream = c->streams[c->next_stream++ % c->n_streams];

  /* Pass 1: plans and sizes. Device block: [upload | direct | inter |
   * download]. Upload (host = device layout, one copy from the pinned
   * staging block): staged sources, parameter blocks, descriptor tables.
   * Direct: raw sources whose bytes already lie in pinned memory (Jobs
   * unpacked by ib_executor_parse), each copied from there. Inter: stage
   * outputs that stay on the device, resident outputs included. Download:
   * the other terminal images, packed so one copy brings them all back
   * into the arena lent to the results. */
  size_t upload = 0, direct = 0, inter = 0, download = 0, total_stages = 0;
  int max_stages = 0;
  {
    htask *pt = calloc(n ? n : 1, sizeof *pt);
    if (!pt) {
      err->status = IB_INTERNAL;
      snprintf(err->message, sizeof err->message, "backend cuda: out of memory");
      sub_release(s);
      return IB_INTERNAL;
    }
    for (size_t i = 0; i < n; i++) pt[i] = (htask){.kind = HT_PLAN, .job = i};
    s->tasks = pt;
    /* Inline: a plan is a fraction of a microsecond, while waking the host
     * pool costs far more (measured on the H200 host: 1.6 us per 256^2 job
     * with the pool against 0.3 serial). */
    for (size_t i = 0; i < n; i++) host_task(s, i);
    s->tasks = NULL;
    free(pt);
  }
  for (size_t i = 0; i < n; i++) {
    jstate *js = &s->js[i];
    if (!js->planned) continue;
    for (int b = 0; b < js->plan.n_bufs; b++)
      if (js->plan.bufs[b].source_node >= 0) {
        if ((js->direct[b] = pinned_source(c, &jobs[i], js, b))) {
          js->buf_off[b] = direct; /* relative; rebased below */
          direct += up(js->plan.bufs[b].bytes);
        } else {
          js->buf_off[b] = upload;
          upload += up(js->plan.bufs[b].bytes);
        }
      }
    for (int k = 0; k < js->plan.n_stages; k++) {
      js->par_off[k] = upload;
      upload += up(js->plan.stages[k].chain.param_bytes + js->plan.stages[k].extra_bytes);
    }
    total_stages += (size_t)js->plan.n_stages;
    if (js->plan.n_stages > max_stages) max_stages = js->plan.n_stages;
  }
  const double t1 = prof_now(c);
  size_t desc_off = upload;
  upload += up(total_stages * sizeof(ib_gdesc));
  for (size_t i = 0; i < n; i++) {
    jstate *js = &s->js[i];
    if (!js->planned) continue;
    for (int b = 0; b < js->plan.n_bufs; b++)
      if (js->plan.bufs[b].source_node < 0 && (!js->plan.bufs[b].is_output || jobs[i].resident)) {
        js->buf_off[b] = inter; /* relative; rebased below */
        inter += up(js->plan.bufs[b].bytes);
      }
  }
  /* Arena outputs first (one download copy), own-buffer ones after. */
  size_t arena_bytes = 0;
  for (int own = 0; own < 2; own++) {
    for (size_t i = 0; i < n; i++) {
      jstate *js = &s->js[i];
      if (!js->planned || jobs[i].resident) continue;
      const size_t bytes = js->plan.bufs[js->plan.out_buf].bytes;
      js->own = own_download(c, jobs[i].graph) && bytes <= jobs[i].graph->buffer_len;
      if (js->own != (own == 1)) continue;
      js->buf_off[js->plan.out_buf] = download;
      js->dl_off = download;
      download += up(bytes);
    }
    if (!own) arena_bytes = download;
  }
  const size_t direct_base = upload, inter_base = upload + direct, out_base = inter_base + inter;
  for (size_t i = 0; i < n; i++) {
    jstate *js = &s->js[i];
    if (!js->planned) continue;
    for (int b = 0; b < js->plan.n_bufs; b++) {
      if (js->plan.bufs[b].source_node >= 0) {
        if (js->direct[b]) js->buf_off[b] += direct_base;
        continue;
      }
      js->buf_off[b] += js->plan.bufs[b].is_output && !jobs[i].resident ? out_base : inter_base;
    }
  }
  bool got = ib_pinned_get(c->pin, upload, &s->hblk) &&
             ib_pool_get(&c->dpool, out_base + download, &s->dblk);
  if (got && arena_bytes) {
    got = (s->arena = calloc(1, sizeof *s->arena)) != NULL;
    if (got) s->arena->c = c;
    if (got && !ib_pinned_get(c->pin, arena_bytes, &s->arena->blk)) {
      free(s->arena);
      s->arena = NULL;
      got = false;
    }
  }
  if (!got) {
    err->status = IB_DEVICE;
    err->stage = IB_STAGE_UPLOAD;
    snprintf(err->message, sizeof err->message,
             "backend cuda: cannot get %zu + %zu pinned / %zu device bytes for a submission of "
             "%zu job(s) (job %llu)",
             upload, arena_bytes, out_base + download, n,
             n ? (unsigned long long)jobs[0].job_id : 0ull);
    sub_release(s);
    return IB_DEVICE;
  }
  uint8_t *host = (uint8_t *)(uintptr_t)s->hblk.addr;
  CUdeviceptr dev = (CUdeviceptr)s->dblk.addr;

  /* Pass 2 (host pool): sources straight into pinned staging (raw bytes
   * copied in chunks; encoded ones decoded there by the source row),
   * parameter blocks. */
  size_t n_tasks = 0, cap_tasks = 0;
  htask *tasks = NULL;
  for (size_t i = 0; i < n; i++) {
    jstate *js = &s->js[i];
    if (!js->planned || jobs[i].status != IB_OK) continue;
    cap_tasks += 1;
    for (int b = 0; b < js->plan.n_bufs; b++)
      if (js->plan.bufs[b].source_node >= 0 && !js->direct[b])
        cap_tasks += js->plan.bufs[b].bytes / CHUNK + 1;
  }
  tasks = calloc(cap_tasks ? cap_tasks : 1, sizeof *tasks);
  if (!tasks) {
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: out of memory");
    sub_release(s);
    return IB_INTERNAL;
  }
  size_t last_params = 0;
  for (size_t i = 0; i < n; i++) {
    ib_backend_job *j = &jobs[i];
    jstate *js = &s->js[i];
    if (!js->planned || j->status != IB_OK) continue;
    for (int b = 0; b < js->plan.n_bufs; b++) {
      int sn = js->plan.bufs[b].source_node;
      if (sn < 0 || js->direct[b]) continue;
      const ib_node *nd = &j->graph->nodes[sn];
      const ib_source *src = &j->graph->sources[nd->pb->source->index];
      size_t bytes = js->plan.bufs[b].bytes;
      if (src->pb->kind_case == IMGBATCH__V1__SOURCE__KIND_RAW && src->len >= bytes) {
        for (size_t o = 0; o < bytes; o += CHUNK)
          tasks[n_tasks++] = (htask){.kind = HT_COPY, .job = i, .dst = host + js->buf_off[b] + o,
                                     .src = src->bytes + o, .n = bytes - o < CHUNK ? bytes - o : CHUNK};
      } else {
        tasks[n_tasks++] = (htask){.kind = HT_SOURCE, .job = i, .buf = b};
      }
    }
    /* n: the job whose blocks to copy afterwards (SIZE_MAX: fill them). */
    size_t like = SIZE_MAX;
    if (i && s->js[i - 1].planned && jobs[i - 1].status == IB_OK &&
        js->plan.n_stages == s->js[i - 1].plan.n_stages && same_params(j->graph, jobs[i - 1].graph))
      like = tasks[last_params].n == SIZE_MAX ? i - 1 : tasks[last_params].n;
    last_params = n_tasks;
    tasks[n_tasks++] = (htask){.kind = HT_PARAMS, .job = i, .n = like};
  }
  s->host_base = host;
  s->tasks = tasks;
  /* The host pool pays off for decodes, bulk copies and many parameter
   * blocks; a few blocks alone run inline (see the plan pass). */
  size_t heavy = 0, fills = 0;
  for (size_t t = 0; t < n_tasks; t++) {
    heavy += tasks[t].kind == HT_SOURCE ? CHUNK : tasks[t].kind == HT_COPY ? tasks[t].n : 0;
    fills += tasks[t].kind == HT_PARAMS && tasks[t].n == SIZE_MAX;
  }
  if (heavy >= 4 * (size_t)CHUNK || fills >= 16)
    ib_hostpar_for(c->hp, n_tasks, host_task, s);
  else
    for (size_t t = 0; t < n_tasks; t++) host_task(s, t);
  for (size_t t = 0; t < n_tasks; t++) {
    const htask *k = &tasks[t];
    if (k->kind != HT_PARAMS || k->n == SIZE_MAX) continue;
    const jstate *js = &s->js[k->job], *from = &s->js[k->n];
    for (int q = 0; q < js->plan.n_stages; q++)
      memcpy(host + js->par_off[q], host + from->par_off[q],
             js->plan.stages[q].chain.param_bytes + js->plan.stages[q].extra_bytes);
  }
  const double t2 = prof_now(c);
  for (size_t t = 0; t < n_tasks; t++)
    if (tasks[t].st != IB_OK && jobs[tasks[t].job].status == IB_OK)
      job_fail(&jobs[tasks[t].job], &tasks[t].err, IB_STAGE_DECODE);
  free(tasks);
  s->tasks = NULL;

  /* Pass 3: launch groups. Level k = stage k of every job; within a level,
   * one launch per chain signature with a descriptor table. */
  launch_ent *ents = calloc(total_stages ? total_stages : 1, sizeof *ents);
  kfunc **gfunc = calloc(total_stages ? total_stages : 1, sizeof *gfunc);
  int *glevel = calloc(total_stages ? total_stages : 1, sizeof *glevel);
  s->pins = calloc(total_stages ? total_stages : 1, sizeof *s->pins);
  size_t n_ent = 0;
  int n_groups = 0;
  ib_status rs = IB_OK;
  if (!ents || !gfunc || !glevel || !s->pins) {
    rs = IB_INTERNAL;
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: out of memory");
  }
  const ib_gchain *last_ch = NULL;
  kfunc *last_f = NULL;
  for (int lv = 0; rs == IB_OK && lv < max_stages; lv++) {
    int level_first = n_groups;
    for (size_t i = 0; i < n; i++) {
      ib_backend_job *j = &jobs[i];
      jstate *js = &s->js[i];
      if (!js->planned || j->status != IB_OK || lv >= js->plan.n_stages) continue;
      kfunc *f = NULL;
      ib_error e = {0};
      const ib_gchain *ch = &js->plan.stages[lv].chain;
      if (last_ch && chain_eq(ch, last_ch)) {
        f = last_f; /* same chain as the previous job: no signature text */
      } else if (chain_func(c, ch, &f, &s->pins[s->n_pins], &e) != IB_OK) {
        job_fail(j, &e, IB_STAGE_EXECUTE);
        continue;
      } else {
        s->n_pins++; /* at most one per stage: total_stages bounds them */
        last_ch = ch;
        last_f = f;
      }
      int g = level_first;
      while (g < n_groups && gfunc[g] != f) g++;
      if (g == n_groups) {
        gfunc[g] = f;
        glevel[g] = lv;
        n_groups++;
      }
      ents[n_ent++] = (launch_ent){g, i, lv};
    }
  }
  /* A job that failed at a later level may have entries at earlier ones:
   * they still run (harmless, their output is dropped). */
  qsort(ents, n_ent, sizeof *ents, ent_cmp);
  ib_gdesc *descs = (ib_gdesc *)(host + desc_off);
  for (size_t e = 0; e < n_ent; e++) {
    const jstate *js = &s->js[ents[e].job];
    const ib_gstage *st = &js->plan.stages[ents[e].stage];
    ib_gdesc *d = &descs[e];
    d->in0 = dev + js->buf_off[st->in_buf[0]];
    d->in1 = st->chain.n_inputs == 2 ? dev + js->buf_off[st->in_buf[1]]
             : st->scratch_buf >= 0  ? dev + js->buf_off[st->scratch_buf]
                                     : d->in0;
    d->out = dev + js->buf_off[st->out_buf];
    d->params = dev + js->par_off[ents[e].stage];
    d->width = st->width;
    d->height = st->height;
    d->stride0 = st->in_width[0];
    d->stride1 = st->chain.n_inputs == 2 ? st->in_width[1] : st->in_width[0];
    d->contig = st->in_width[0] == st->width && (st->chain.n_inputs < 2 || st->in_width[1] == st->width);
    d->job = (uint32_t)ents[e].job;
    d->height0 = st->in_height[0];
    d->height1 = st->chain.n_inputs == 2 ? st->in_height[1] : st->in_height[0];
  }

  /* Pass 4: enqueue. One upload, the launches level by level, one
   * download, one event. */
  CUresult rc = CUDA_SUCCESS;
  if (rs == IB_OK && upload && (rc = cu->cuMemcpyHtoDAsync(dev, host, upload, s->stream)) != CUDA_SUCCESS)
    rs = device_fail(s, rc, "upload", 0, err);
  if (rs == IB_OK && direct) rs = upload_direct(s, err);
  for (int lv = 0; rs == IB_OK && lv < max_stages; lv++) {
    size_t e = 0;
    while (e < n_ent) {
      int g = ents[e].group;
      size_t e_end = e;
      while (e_end < n_ent && ents[e_end].group == g) e_end++;
      if (glevel[g] == lv) {
        kfunc *f = gfunc[g];
        const ib_gchain *ch = &s->js[ents[e].job].plan.stages[ents[e].stage].chain;
        /* Blocks per image: enough for the largest one, capped so a block
         * loops (grid stride) rather than re-staging its parameters. */
        uint64_t most = 0;
        for (size_t k = e; k < e_end; k++) {
          uint64_t px = (uint64_t)descs[k].width * descs[k].height;
          if (px > most) most = px;
        }
        uint64_t per = (most / (uint64_t)ib_gchain_ppt(ch) + THREADS - 1) / THREADS;
        uint64_t cap = (uint64_t)c->sm_count * 8;
        unsigned gx = (unsigned)(per < 1 ? 1 : per > cap ? cap : per);
        for (size_t k = e; k < e_end && rs == IB_OK; k += 65535) {
          unsigned gy = (unsigned)(e_end - k < 65535 ? e_end - k : 65535);
          CUdeviceptr table = dev + desc_off + k * sizeof(ib_gdesc);
          void *args[] = {&table};
          if (f->lsum) {
            unsigned lx = (unsigned)((most + THREADS - 1) / THREADS);
            if (lx > cap) lx = (unsigned)cap;
            if (lx < 1) lx = 1;
            rc = cu->cuLaunchKernel(f->lsum, lx, gy, 1, THREADS, 1, 1, 0, s->stream, args, NULL);
            if (rc != CUDA_SUCCESS) {
              rs = device_fail(s, rc, "launch ib_lsum", ents[k].job, err);
              break;
            }
          }
          if (f->post) {
            rs = launch_passes(s, f, ch, descs, e, e_end, ents[k].job, gy, table, err);
            continue;
          }
          rc = cu->cuLaunchKernel(f->chain, gx, gy, 1, THREADS, 1, 1, 0, s->stream, args, NULL);
          if (rc != CUDA_SUCCESS) rs = device_fail(s, rc, "launch ib_chain", ents[k].job, err);
        }
      }
      e = e_end;
    }
  }
  /* Resident outputs: copied into their own allocations inside the
   * submission, so its one event covers them too. */
  for (size_t i = 0; rs == IB_OK && i < n; i++) {
    const jstate *js = &s->js[i];
    if (!js->planned || jobs[i].status != IB_OK || !jobs[i].resident) continue;
    ib_cuda_keep(cu, c->ctx, s->stream, dev + js->buf_off[js->plan.out_buf], &js->plan.out_shape,
                 &jobs[i]);
  }
  if (rs == IB_OK && arena_bytes &&
      (rc = cu->cuMemcpyDtoHAsync((void *)(uintptr_t)s->arena->blk.addr, dev + out_base,
                                  arena_bytes, s->stream)) != CUDA_SUCCESS)
    rs = device_fail(s, rc, "download", 0, err);
  /* Own-buffer outputs: after the upload on the same stream, so the
   * source pixels they overwrite were already read. */
  for (size_t i = 0; rs == IB_OK && i < n; i++) {
    const jstate *js = &s->js[i];
    if (!js->planned || !js->own || jobs[i].status != IB_OK) continue;
    if ((rc = cu->cuMemcpyDtoHAsync(jobs[i].graph->buffer, dev + out_base + js->dl_off,
                                    js->plan.bufs[js->plan.out_buf].bytes, s->stream)) !=
        CUDA_SUCCESS)
      rs = device_fail(s, rc, "download", i, err);
  }
  if (rs == IB_OK && (rc = cu->cuEventCreate(&s->ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
    rs = device_fail(s, rc, "cuEventCreate", 0, err);
  if (rs == IB_OK && (rc = cu->cuEventRecord(s->ev, s->stream)) != CUDA_SUCCESS)
    rs = device_fail(s, rc, "cuEventRecord", 0, err);
  free(ents);
  free(gfunc);
  free(glevel);
  if (rs != IB_OK) {
    /* Something may have been enqueued: fence before the blocks go back. */
    cu->cuStreamSynchronize(s->stream);
    for (size_t i = 0; i < n; i++) {
      ib_cuda_resident_release(NULL, jobs[i].dev);
      jobs[i].dev = NULL;
    }
    sub_release(s);
    return rs;
  }
  if (c->prof) {
    const double t3 = prof_now(c);
    c->t_plan += t1 - t0;
    c->t_stage += t2 - t1;
    c->t_launch += t3 - t2;
    c->n_sub++;
    c->n_jobs += n;
  }
  *out = s;
  return IB_OK;
}

static ib_status cuda_wait(void *state, ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = state;
  const ib_cu *cu = c->cu;
  cu->cuCtxSetCurrent(c->ctx);
  const double w0 = prof_now(c);
  CUresult rc = cu->cuEventSynchronize(s->ev);
  const double w1 = prof_now(c);
  ib_status rs = IB_OK;
  if (rc != CUDA_SUCCESS) {
    device_fail(s, rc, "submission", 0, err);
    rs = IB_DEVICE;
  }
  /* Results are ranges of the arena (no copy); it is lent once at least
   * one of them succeeded, otherwise sub_release takes it back. */
  const uint8_t *dl = s->arena ? (const uint8_t *)(uintptr_t)s->arena->blk.addr : NULL;
  bool lent = false;
  for (size_t i = 0; i < s->n; i++) {
    ib_backend_job *j = &s->jobs[i];
    jstate *js = &s->js[i];
    if (j->status != IB_OK) continue;
    if (rs != IB_OK) {
      j->status = IB_DEVICE;
      j->err = s->device_err;
      continue;
    }
    if (j->resident) continue; /* j->dev kept at submit */
    const ib_shape *sh = &js->plan.out_shape;
    j->out = (ib_image){.mode = sh->mode, .width = sh->width, .height = sh->height};
    if (js->own) {
      lent_arena *a = calloc(1, sizeof *a);
      if (!a) {
        job_fail(j, &(ib_error){.status = IB_INTERNAL, .message = "backend cuda: out of memory"},
                 IB_STAGE_DOWNLOAD);
        continue;
      }
      *a = (lent_arena){.c = c, .job_buf = j->graph->buffer};
      j->out.data = a->job_buf;
      j->lent = a;
      j->buffer_lent = true;
      continue;
    }
    j->out.data = (uint8_t *)dl + js->dl_off;
    j->lent = s->arena;
    lent = true;
  }
  if (lent) s->arena = NULL; /* the core gives it back through lent_release */
  if (c->prof) {
    c->t_device += w1 - w0;
    c->t_results += prof_now(c) - w1;
  }
  sub_release(s);
  return rs;
}

static bool cuda_ready(void *state, ib_backend_submission *s) {
  ib_cuda *c = state;
  c->cu->cuCtxSetCurrent(c->ctx);
  return c->cu->cuEventQuery(s->ev) != CUDA_ERROR_NOT_READY;
}

static void cuda_lent_release(void *state, void *token) {
  (void)state;
  lent_arena *a = token;
  if (a->job_buf) {
    ProtobufCAllocator *al = ib_pinned_allocator(a->c->pin);
    al->free(al->allocator_data, a->job_buf);
  } else {
    ib_pinned_put(a->c->pin, &a->blk);
  }
  free(a);
}

ib_status ib_cuda_execute_batch(ib_cuda *c, ib_backend_job *jobs, size_t n, ib_error *err) {
  ib_backend_submission *s = NULL;
  ib_status st = cuda_submit(c, jobs, n, &s, err);
  if (st != IB_OK) {
    for (size_t i = 0; i < n; i++)
      if (jobs[i].status == IB_OK) job_fail(&jobs[i], err, IB_STAGE_EXECUTE);
    return st;
  }
  st = cuda_wait(c, s, err);
  /* The caller owns plain images: copy out of the arena, then give it back.
   * A Job buffer stays the caller's graph's (its token alone goes). */
  void *arena = NULL;
  for (size_t i = 0; i < n; i++) {
    if (!jobs[i].lent) continue;
    lent_arena *tok = jobs[i].lent;
    if (tok->job_buf)
      free(tok);
    else
      arena = tok;
    jobs[i].lent = NULL;
    jobs[i].buffer_lent = false;
    ib_image lent = jobs[i].out;
    if (ib_image_alloc(&jobs[i].out, lent.mode, lent.width, lent.height) != IB_OK) {
      jobs[i].out = (ib_image){0};
      jobs[i].status = IB_INTERNAL;
      jobs[i].err = (ib_error){.status = IB_INTERNAL, .stage = IB_STAGE_DOWNLOAD};
      snprintf(jobs[i].err.message, sizeof jobs[i].err.message, "job %llu: out of host memory",
               (unsigned long long)jobs[i].job_id);
      continue;
    }
    memcpy(jobs[i].out.data, lent.data, ib_image_bytes(&lent));
  }
  if (arena) cuda_lent_release(c, arena);
  return st;
}

ProtobufCAllocator *ib_cuda_parse_allocator(ib_cuda *c) { return ib_pinned_allocator(c->pin); }
static ProtobufCAllocator *be_parse_allocator(void *state) { return ib_cuda_parse_allocator(state); }

/* ------------------------------------------------------------ the backend row */

static ib_status be_open(const ib_executor_options *opts, void **state, ib_error *err) {
  ib_cuda *c = NULL;
  ib_status st = ib_cuda_open(opts, &c, err);
  *state = c;
  return st;
}
static void be_close(void *state) { ib_cuda_close(state); }
/* The backend's own charge (gpu/charge.c): the device plan's buffers incl.
 * the blur's scratch image, parameter blocks and descriptors; on the host
 * the source bytes, the staging of sources not uploaded in place, the
 * parameter staging (the core takes the larger charge). A graph whose nodes
 * equal the last one's on the wire and in shape, with the same sources in
 * place, has the same charge but for its source bytes. */
static bool jb_hit(const ib_cuda *c, const ib_graph *g, uint64_t in_place) {
  if (!c->jb_wire || !g->nodes_wire || g->n_nodes != c->jb_nodes ||
      g->nodes_wire_len != c->jb_wire_len || in_place != c->jb_in_place ||
      memcmp(g->nodes_wire, c->jb_wire, c->jb_wire_len) != 0)
    return false;
  for (size_t i = 0; i < g->n_nodes; i++)
    if (memcmp(&g->nodes[i].shape, &c->jb_shapes[i], sizeof c->jb_shapes[i]) != 0) return false;
  return true;
}

static ib_status job_bytes(void *state, const ib_graph *g, uint64_t *gpu_bytes,
                           uint64_t *host_bytes, ib_error *err) {
  ib_cuda *c = state;
  uint64_t src = 0, in_place = 0;
  for (size_t i = 0; i < g->n_sources; i++) {
    src += g->sources[i].len;
    if (i < 64 && source_pinned(c, g, i)) in_place |= 1ull << i;
  }
  const bool cacheable = g->n_sources <= 64 && g->nodes_wire;
  if (cacheable && jb_hit(c, g, in_place)) {
    *gpu_bytes = c->jb_gpu;
    *host_bytes = src + c->jb_host_plan;
    return IB_OK;
  }
  ib_status st = ib_cuda_charge(g, source_pinned, c, gpu_bytes, host_bytes, err);
  if (st != IB_OK || !cacheable) return st;
  uint8_t *w = realloc(c->jb_wire, g->nodes_wire_len ? g->nodes_wire_len : 1);
  if (w) c->jb_wire = w;
  ib_shape *sh = realloc(c->jb_shapes, (g->n_nodes ? g->n_nodes : 1) * sizeof *sh);
  if (sh) c->jb_shapes = sh;
  if (!w || !sh) { /* no cache this time */
    c->jb_nodes = SIZE_MAX;
    return st;
  }
  memcpy(c->jb_wire, g->nodes_wire, g->nodes_wire_len);
  for (size_t i = 0; i < g->n_nodes; i++) c->jb_shapes[i] = g->nodes[i].shape;
  c->jb_wire_len = g->nodes_wire_len;
  c->jb_nodes = g->n_nodes;
  c->jb_in_place = in_place;
  c->jb_gpu = *gpu_bytes;
  c->jb_host_plan = *host_bytes - src;
  return IB_OK;
}

static bool be_out_in_buffer(void *state, const ib_graph *g) { return own_download(state, g); }

static ib_status be_job_bytes(void *state, const ib_graph *g, uint64_t *gpu_bytes,
                              uint64_t *host_bytes, ib_error *err) {
  ib_status st = job_bytes(state, g, gpu_bytes, host_bytes, err);
  if (st != IB_OK || !own_download(state, g)) return st;
  /* The sources lying in the Job buffer are charged with the buffer, as
   * held bytes (credits.c), not as working ones. */
  uint64_t in_buf = 0;
  for (size_t i = 0; i < g->n_sources; i++)
    if (ib_graph_in_buffer(g, g->sources[i].bytes)) in_buf += g->sources[i].len;
  *host_bytes = *host_bytes > in_buf ? *host_bytes - in_buf : 0;
  return IB_OK;
}

const ib_backend ib_backend_cuda = {
    .name = "cuda",
    .open = be_open,
    .close = be_close,
    .job_bytes = be_job_bytes,
    .job_bytes_stages = true,
    .submit = cuda_submit,
    .wait = cuda_wait,
    .ready = cuda_ready,
    .download = ib_cuda_resident_download, /* cuda_resident.c */
    .release = ib_cuda_resident_release,
    .lent_release = cuda_lent_release,
    .out_in_buffer = be_out_in_buffer,
    .parse_allocator = be_parse_allocator,
    .counters = cuda_counters,
};
