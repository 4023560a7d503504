/* The CUDA backend: submissions of several jobs (see cuda_backend.h). */
#include "gpu/cuda_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/config.h"
#include "gpu/cuda_internal.h"
#include "gpu/cuda_resident.h"

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

/* Device `opts->device`: its properties and primary context, made current.
 * On failure nothing is held. */
static ib_status open_device(ib_cuda *c, const ib_executor_options *opts, ib_error *err) {
  const ib_cu *cu = c->cu;
  CUresult rc;
  int count = 0, major = 0, minor = 0;
  char name[128] = "";
  if ((rc = cu->cuDeviceGetCount(&count)) != CUDA_SUCCESS || opts->device < 0 ||
      opts->device >= count) {
    err->status = IB_DEVICE;
    err->stage = IB_STAGE_ADMIT;
    snprintf(err->message, sizeof err->message, "no CUDA device %d (%d present)", opts->device,
             count);
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
      (rc = cu->cuDevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS)
    return ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "device %d: query/context", opts->device);
  if ((rc = cu->cuCtxSetCurrent(c->ctx)) != CUDA_SUCCESS) {
    ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "device %d: cuCtxSetCurrent", opts->device);
    cu->cuDevicePrimaryCtxRelease(c->dev);
    return IB_DEVICE;
  }
  if (cu->cuDeviceGetAttribute(&c->smem_optin,
                               CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                               c->dev) != CUDA_SUCCESS)
    c->smem_optin = 48 * 1024;
  snprintf(c->arch, sizeof c->arch, "sm_%d%d", major, minor);
  snprintf(c->desc, sizeof c->desc, "%s, %s, %d SMs", name, c->arch, c->sm_count);
  return IB_OK;
}

/* The pipeline's streams and events (see ib_cuda), made before any other
 * stream: the driver spreads streams over a few hardware queues
 * (CUDA_DEVICE_MAX_CONNECTIONS, 8) in creation order, and two pipe streams
 * on one queue would hold the up stream's copies behind the down stream's
 * waits. */
static ib_status open_pipe(ib_cuda *c, uint32_t pieces, int32_t pipe_kib, ib_error *err) {
  const ib_cu *cu = c->cu;
  if (pipe_kib < 0 || pieces == 1) return IB_OK;
  CUresult rc = CUDA_SUCCESS;
  for (int p = 0; p < IB_PIPE_STREAMS && rc == CUDA_SUCCESS; p++)
    rc = cu->cuStreamCreate(&c->pipe[p], CU_STREAM_NON_BLOCKING);
  for (int e = 0; e < 2 && rc == CUDA_SUCCESS; e++)
    rc = cu->cuEventCreate(&c->pipe_ev[e], CU_EVENT_DISABLE_TIMING);
  if (rc != CUDA_SUCCESS)
    return ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "pipeline: streams/events");
  c->pipe_bytes = pipe_kib ? (size_t)pipe_kib << 10 : IB_DEFAULT_PIPE_BYTES;
  return IB_OK;
}

/* The streams and events of submissions split into pieces (see ib_cuda):
 * created up front, so a submission creates none. */
static ib_status open_pieces(ib_cuda *c, uint32_t pieces, ib_error *err) {
  const ib_cu *cu = c->cu;
  const unsigned k = pieces < 1               ? IB_DEFAULT_PIECES
                     : pieces > IB_MAX_PIECES ? IB_MAX_PIECES
                                              : pieces;
  CUresult rc = CUDA_SUCCESS;
  for (unsigned i = 0; i < c->n_streams && k > 1 && rc == CUDA_SUCCESS; i++) {
    rc = cu->cuEventCreate(&c->fork_ev[i], CU_EVENT_DISABLE_TIMING);
    for (unsigned p = 0; p + 1 < k && rc == CUDA_SUCCESS; p++)
      if ((rc = cu->cuStreamCreate(&c->aux[i][p], CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS)
        rc = cu->cuEventCreate(&c->join_ev[i][p], CU_EVENT_DISABLE_TIMING);
  }
  if (rc != CUDA_SUCCESS) return ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "pieces: streams/events");
  c->pieces = k;
  return IB_OK;
}

ib_status ib_cuda_open(const ib_executor_options *opts, ib_cuda **out, ib_error *err) {
  /* Zero fields take the documented defaults below (no dependency on the
   * executor core's ib_executor_options_default). */
  ib_executor_options def = {.backend = IB_BACKEND_CUDA, .host_threads = -1};
  if (!opts) opts = &def;
  const ib_config *cfg = ib_config_of(opts);
  const ib_cu *cu = ib_cu_get(err);
  if (!cu) return IB_DEVICE;
  ib_cuda *c = calloc(1, sizeof *c);
  if (!c) return IB_INTERNAL;
  c->cu = cu;
  if (open_device(c, opts, err) != IB_OK) {
    free(c);
    return IB_DEVICE;
  }
  const uint64_t mem_cap = opts->module_cache_bytes ? opts->module_cache_bytes : 256ull << 20;
  const uint64_t disk_cap = opts->disk_cache_bytes ? opts->disk_cache_bytes : 2ull << 30;
  c->kc = ib_kcache_new(opts->cache_dir, 0, disk_cap);
  const int mods_ok = ib_lru_init(&c->mods, mem_cap, ib_cuda_unload_module, c) == 0;
  c->hp = ib_hostpar_new(opts->host_threads < 0   ? -1
                         : opts->host_threads > 0 ? opts->host_threads - 1
                                                  : 0);
  c->prof = cfg->cuda_profile;
  c->log = (ib_log_sink){opts->log_cb, opts->log_opaque};
  c->pass_global = cfg->cuda_blur_global_rows;
  c->batch_min = cfg->cuda_batch_min > 2 ? cfg->cuda_batch_min : 2;
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
  if (open_pipe(c, cfg->cuda_pieces, cfg->cuda_pipe_kib, err) != IB_OK) {
    ib_cuda_close(c);
    return IB_DEVICE;
  }
  c->n_streams = inflight < IB_MAX_STREAMS ? inflight : IB_MAX_STREAMS;
  CUresult rc;
  for (unsigned i = 0; i < c->n_streams; i++)
    if ((rc = cu->cuStreamCreate(&c->streams[i], CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
      ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "cuStreamCreate");
      c->n_streams = i;
      ib_cuda_close(c);
      return IB_DEVICE;
    }
  if (open_pieces(c, cfg->cuda_pieces, err) != IB_OK) {
    ib_cuda_close(c);
    return IB_DEVICE;
  }
  if (!c->kc || !c->pin || !mods_ok) {
    ib_cuda_close(c);
    return IB_INTERNAL;
  }
  ib_status tst = ib_cuda_tier_open(c, opts, err);
  if (tst != IB_OK) {
    ib_cuda_close(c);
    return tst;
  }
  *out = c;
  return IB_OK;
}

/* The timeline since ib_cuda_profile_reset (ms after its origin). */
static void report_timeline(ib_cuda *c, const char *label) {
  const ib_pinned_stats ps = ib_pinned_stats_get(c->pin);
  ib_log(&c->log, IB_LOG_INFO,
         "cuda timeline (%s): %u submissions; fresh device blocks %llu (%llu given back), fresh "
         "pinned blocks %llu (%llu given back)\n",
         label, c->n_prof_subs, (unsigned long long)(c->dpool.allocs - c->prof_dev_allocs),
         (unsigned long long)(c->dpool.trims - c->prof_dev_trims),
         (unsigned long long)(ps.allocs - c->prof_pin_allocs),
         (unsigned long long)(ps.trims - c->prof_pin_trims));
  for (unsigned i = 0; i < c->n_prof_subs; i++) {
    const ib_cuda_prof_sub *p = &c->prof_subs[i];
    ib_log(&c->log, IB_LOG_INFO,
           "cuda timeline (%s): sub %u: %u jobs, %u pieces; host submit %.3f enqueue %.3f "
           "return %.3f wait %.3f-%.3f; device up %.3f-%.3f down end %.3f; fresh dev %llu pin "
           "%llu\n",
           label, i, p->jobs, p->pieces, p->submit, p->enqueue, p->submitted, p->wait, p->waited,
           p->up0, p->up1, p->down1, (unsigned long long)p->dev_allocs,
           (unsigned long long)p->pin_allocs);
  }
}

/* The host profile's sums and the timeline's entries, from zero. */
static void profile_clear(ib_cuda *c) {
  c->t_plan = c->t_stage = c->t_stage_wait = c->t_launch = c->t_device = c->t_results = 0;
  c->t_load = c->t_load_max = c->t_tier = 0;
  c->n_sub = c->n_jobs = c->n_load = 0;
  c->n_prof_subs = 0;
}

void ib_cuda_profile_report(ib_cuda *c, const char *label) {
  if (c->prof && c->n_jobs)
    ib_log(&c->log, IB_LOG_INFO,
           "cuda host profile (%s): %llu submissions, %llu jobs; us per job: plan %.2f, staging "
           "%.2f (posted decodes waited for %.2f), launch %.2f, blocked on device %.2f, result "
           "copies %.2f\n",
           label, (unsigned long long)c->n_sub, (unsigned long long)c->n_jobs,
           c->t_plan * 1e6 / (double)c->n_jobs, c->t_stage * 1e6 / (double)c->n_jobs,
           c->t_stage_wait * 1e6 / (double)c->n_jobs, c->t_launch * 1e6 / (double)c->n_jobs,
           c->t_device * 1e6 / (double)c->n_jobs, c->t_results * 1e6 / (double)c->n_jobs);
  if (c->prof && (c->n_load || c->t_tier > 0))
    ib_log(&c->log, IB_LOG_INFO,
           "cuda host profile (%s): %llu module loads, %.2f ms in all (longest %.2f ms); tier "
           "admission and job_ready %.2f ms in all\n",
           label, (unsigned long long)c->n_load, c->t_load * 1e3, c->t_load_max * 1e3,
           c->t_tier * 1e3);
  if (c->prof && c->pin) {
    const ib_pinned_stats ps = ib_pinned_stats_get(c->pin);
    ib_log(&c->log, IB_LOG_INFO,
           "cuda host profile (%s): pinned: %llu fresh blocks, %.1f MiB in %.3f s; held at most "
           "%.1f MiB; %llu blocks given back over the cap; %llu parse buffers (%.1f MiB) on the "
           "heap past the parse cap\n",
           label, (unsigned long long)ps.allocs, (double)ps.alloc_bytes / 1048576.0, ps.alloc_s,
           (double)ps.held_max / 1048576.0, (unsigned long long)ps.trims,
           (unsigned long long)ps.parse_heap, (double)ps.parse_heap_bytes / 1048576.0);
  }
  if (c->prof && c->prof_timeline) report_timeline(c, label);
  profile_clear(c);
  c->prof_timeline = false;
}

double ib_cuda_profile_reset(ib_cuda *c) {
  if (!c->prof) return 0;
  profile_clear(c);
  c->prof_dev_allocs = c->dpool.allocs;
  c->prof_dev_trims = c->dpool.trims;
  const ib_pinned_stats ps = ib_pinned_stats_get(c->pin);
  c->prof_pin_allocs = ps.allocs;
  c->prof_pin_trims = ps.trims;
  const ib_cu *cu = c->cu;
  cu->cuCtxSetCurrent(c->ctx);
  /* Both origins at once: the base event on an idle stream completes as
   * soon as it is recorded, and the host clock is read once it did. */
  const CUstream st = c->pipe_bytes ? c->pipe[IB_PIPE_UP] : c->streams[0];
  c->prof_timeline =
      (c->prof_base_ev || cu->cuEventCreate(&c->prof_base_ev, CU_EVENT_DEFAULT) == CUDA_SUCCESS) &&
      cu->cuEventRecord(c->prof_base_ev, st) == CUDA_SUCCESS &&
      cu->cuEventSynchronize(c->prof_base_ev) == CUDA_SUCCESS;
  c->prof_base = ib_cuda_prof_now(c);
  return c->prof_base;
}

void ib_cuda_close(ib_cuda *c) {
  if (!c) return;
  ib_cuda_profile_report(c, "close");
  const ib_cu *cu = c->cu;
  cu->cuCtxSetCurrent(c->ctx);
  cu->cuCtxSynchronize();
  for (unsigned i = 0; i < c->n_ev_free; i++) cu->cuEventDestroy(c->ev_free[i]);
  for (unsigned i = 0; i < c->n_prof_ev_free; i++) cu->cuEventDestroy(c->prof_ev_free[i]);
  if (c->prof_base_ev) cu->cuEventDestroy(c->prof_base_ev);
  for (unsigned i = 0; i < c->n_streams; i++) {
    cu->cuStreamDestroy(c->streams[i]);
    if (c->fork_ev[i]) cu->cuEventDestroy(c->fork_ev[i]);
    for (unsigned p = 0; p + 1 < IB_MAX_PIECES; p++) {
      if (c->aux[i][p]) cu->cuStreamDestroy(c->aux[i][p]);
      if (c->join_ev[i][p]) cu->cuEventDestroy(c->join_ev[i][p]);
    }
  }
  for (int p = 0; p < IB_PIPE_STREAMS; p++)
    if (c->pipe[p]) cu->cuStreamDestroy(c->pipe[p]);
  for (int e = 0; e < 2; e++)
    if (c->pipe_ev[e]) cu->cuEventDestroy(c->pipe_ev[e]);
  ib_cuda_tier_close(c);
  ib_lru_destroy(&c->mods); /* after the fence above: nothing launches any more */
  ib_pool_destroy(&c->dpool);
  ib_pinned_free(c->pin);
  ib_charge_memo_free(&c->memo);
  ib_kcache_free(c->kc);
  ib_hostpar_free(c->hp);
  cu->cuDevicePrimaryCtxRelease(c->dev);
  free(c);
}

const char *ib_cuda_device_desc(const ib_cuda *c) { return c->desc; }

static void cuda_pools(void *state, ib_executor_pools *out) {
  ib_cuda *c = state;
  const ib_pinned_stats ps = ib_pinned_stats_get(c->pin);
  out->host_bytes = ps.held;
  out->host_cap = ps.cap;
  out->device_bytes = c->dpool.held;
  out->device_cap = c->dpool.cap;
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
  out->module_cache_entries = m.entries;
  out->pinned_pool_bytes = ib_pinned_stats_get(c->pin).held;
  out->disk_cache_bytes = s.disk_bytes;
  out->disk_cache_corrupt = s.disk_corrupt;
  out->blur_global_passes = atomic_load(&c->pass_slow);
  out->upload_direct_sources = atomic_load(&c->direct_sources);
  out->upload_direct_copies = atomic_load(&c->direct_copies);
  out->pinned_slab_misses = ib_pinned_slab_misses(c->pin);
  out->pipelined_submissions = atomic_load(&c->pipe_subs);
  out->pipelined_pieces = atomic_load(&c->pipe_pieces);
  if (c->cpool) {
    ib_cpool_stats p = ib_cpool_stats_get(c->cpool);
    out->compile_queue_depth = p.depth;
    out->compile_queue_full = p.rejected_full;
    out->jobs_waited_compile += p.jobs_waited; /* the core counts the jobs it parked */
    out->interp_executions = p.interp_runs;
  }
}

ProtobufCAllocator *ib_cuda_parse_allocator(ib_cuda *c) { return ib_pinned_allocator(c->pin); }
static ProtobufCAllocator *be_parse_allocator(void *state) {
  return ib_cuda_parse_allocator(state);
}

/* ------------------------------------------------------------ the backend row */

static ib_status be_open(const ib_executor_options *opts, void **state, ib_error *err) {
  ib_cuda *c = NULL;
  ib_status st = ib_cuda_open(opts, &c, err);
  *state = c;
  return st;
}
static void be_close(void *state) { ib_cuda_close(state); }
ib_status ib_cuda_job_bytes(const ib_graph *g, uint64_t *gpu_bytes, uint64_t *host_bytes,
                            ib_error *err) {
  return ib_cuda_charge(g, NULL, NULL, gpu_bytes, host_bytes, err);
}

/* The backend's own charge (gpu/charge.c): the device plan's buffers incl.
 * multi-pass heads' scratch, parameter blocks and descriptors; on the host
 * the source bytes, the staging of sources not uploaded in place, the
 * parameter staging (the core takes the larger charge). Through the memo
 * of the last few graphs' charges (ib_charge_memo); a new graph is charged
 * from the plan admission made of it when the compile pool is on. */
static const ib_gplan *tier_plan(void *ctx, const ib_graph *g) { return ib_cuda_tier_plan(ctx, g); }

static ib_status job_bytes(void *state, const ib_graph *g, uint64_t *gpu_bytes,
                           uint64_t *host_bytes, ib_error *err) {
  ib_cuda *c = state;
  return ib_cuda_charge_memo(&c->memo, g, ib_cuda_source_pinned, tier_plan, c, gpu_bytes,
                             host_bytes, err);
}

static bool be_out_in_buffer(void *state, const ib_graph *g) {
  return ib_cuda_own_download(state, g);
}

static ib_status be_job_bytes(void *state, const ib_graph *g, uint64_t *gpu_bytes,
                              uint64_t *host_bytes, ib_error *err) {
  ib_status st = job_bytes(state, g, gpu_bytes, host_bytes, err);
  if (st != IB_OK || !ib_cuda_own_download(state, g)) return st;
  /* The sources lying in the Job buffer are charged with the buffer, as
   * held bytes (credits.c), not as working ones. */
  const uint64_t in_buf = ib_graph_bytes_in_buffer(g);
  *host_bytes = *host_bytes > in_buf ? *host_bytes - in_buf : 0;
  return IB_OK;
}

static bool be_large_job(void *state, const ib_graph *g, bool resident) {
  return ib_cuda_large_job(state, g, resident);
}

static ib_status be_admit(void *state, const ib_graph *g, ib_error *err) {
  ib_cuda *c = state;
  /* Renditions run here too: the plan keeps every rendition node's image
   * (gplan.h) and the submission downloads each (cuda_layout.c). */
  const double t0 = ib_cuda_prof_now(c);
  ib_status st = ib_cuda_tier_admit(c, g, err);
  c->t_tier += ib_cuda_prof_now(c) - t0;
  return st;
}
static bool be_admit_wait(void *state, int timeout_ms) {
  return ib_cuda_tier_admit_wait(state, timeout_ms);
}
static bool be_job_ready(void *state, const ib_graph *g) {
  ib_cuda *c = state;
  const double t0 = ib_cuda_prof_now(c);
  const bool ready = ib_cuda_tier_ready(c, g);
  c->t_tier += ib_cuda_prof_now(c) - t0;
  return ready;
}
static uint64_t be_ready_epoch(void *state) { return ib_cuda_tier_epoch(state); }

const ib_backend ib_backend_cuda = {
    .name = "cuda",
    .open = be_open,
    .close = be_close,
    .admit = be_admit, /* cuda_tier.c: the compile queue's bound */
    .admit_wait = be_admit_wait,
    .job_ready = be_job_ready, /* heads whose kernel compiles are parked */
    .ready_epoch = be_ready_epoch,
    .job_bytes = be_job_bytes,
    .job_bytes_stages = true,
    .submit = ib_cuda_submit, /* cuda_submit.c */
    .wait = ib_cuda_wait,
    .ready = ib_cuda_ready,
    .download = ib_cuda_resident_download, /* cuda_resident.c */
    .release = ib_cuda_resident_release,
    .lent_release = ib_cuda_lent_release,
    .out_in_buffer = be_out_in_buffer,
    .large_job = be_large_job, /* cuda_layout.c: the pipeline's notion */
    .parse_allocator = be_parse_allocator,
    .counters = cuda_counters,
    .pools = cuda_pools,
};
