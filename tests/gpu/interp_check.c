/*
 * interp_check - the pointwise interpreter tier (worker/gpu/interp.h)
 * against the specialised chain kernels, byte for byte, on the GPU: every
 * pointwise op x admitted mode (x variant) and N random pointwise chains
 * (jobgen.h), each planned by ib_gplan_build; every stage the interpreter
 * can run runs through both on random input bytes with the stage's real
 * parameter block, the interpreter with two descriptors per launch
 * (blockIdx.y). The specialised kernels compile on a compile pool
 * (compile_pool.h) with the module cache the CLI would use.
 *
 *   interp_check [--random N] [--seed S] [--log FILE] [--compile-only 1]
 *
 * --compile-only 1 needs no GPU: it builds every case and compiles the
 * interpreter and every specialised kernel for sm_90 (exit 0 when all
 * compile), checking the tool's own generation on any machine.
 * Prints one line per op, a timing line, and last "interp: E/N equal";
 * exit status 0 only when all N stages are byte-equal (N > 0). Without a
 * GPU it prints "interp_check: no GPU (...)" and exits 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gpu/compile_pool.h"
#include "gpu/cu.h"
#include "gpu/gplan.h"
#include "gpu/interp.h"
#include "gpu/nvrtc_cache.h"
#include "tools/jobgen.h"

static const char *const nvrtc_opts[] = {"--fmad=false"}; /* as cuda_backend.c */
static FILE *logf_;

typedef struct gpu {
  const ib_cu *cu;
  CUdevice dev;
  CUcontext ctx;
  int sm_count;
  char arch[16];
  CUfunction interp, interp_lsum;
  int compile_only;
} gpu;

/* A specialised module, loaded once per signature. */
typedef struct kmod {
  char sig[IB_CPOOL_SIG_MAX];
  CUmodule mod;
  CUfunction chain, lsum;
  int failed;
} kmod;

typedef struct item {
  ib_graph *g;
  ib_gplan plan;
  int stage;
  int op; /* JG_* (single-op cases) or -1 (random chain) */
  char label[200];
} item;

static int check(const gpu *d, CUresult rc, const char *what) {
  if (rc == CUDA_SUCCESS) return 1;
  const char *name = "?";
  d->cu->cuGetErrorName(rc, &name);
  fprintf(logf_, "CUDA error: %s: %s\n", what, name);
  return 0;
}

static int pointwise(int op) { return op <= JG_BLEND; /* jobgen.h lists the pointwise ops first */ }

static ib_status open_gpu(gpu *d, ib_error *err) {
  memset(d, 0, sizeof *d);
  if (!(d->cu = ib_cu_get(err))) return IB_DEVICE;
  const ib_cu *cu = d->cu;
  int count = 0, major = 0, minor = 0;
  CUresult rc;
  if ((rc = cu->cuDeviceGetCount(&count)) != CUDA_SUCCESS || count < 1)
    return ib_cu_fail(cu, rc == CUDA_SUCCESS ? CUDA_ERROR_NO_DEVICE : rc, err, IB_STAGE_ADMIT,
                      "no CUDA device");
  if ((rc = cu->cuDeviceGet(&d->dev, 0)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     d->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     d->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDeviceGetAttribute(&d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                     d->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuDevicePrimaryCtxRetain(&d->ctx, d->dev)) != CUDA_SUCCESS ||
      (rc = cu->cuCtxSetCurrent(d->ctx)) != CUDA_SUCCESS)
    return ib_cu_fail(cu, rc, err, IB_STAGE_ADMIT, "device 0: query/context");
  snprintf(d->arch, sizeof d->arch, "sm_%d%d", major, minor);
  return IB_OK;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int load_interp(gpu *d, ib_kcache *kc, double *secs) {
  const double t0 = now_s();
  char *src = ib_interp_source();
  if (!src) {
    fprintf(logf_, "interp: no source\n");
    return 0;
  }
  void *img = NULL;
  size_t len = 0;
  char *log = NULL;
  ib_error err = {0};
  ib_status st =
      ib_kcache_get(kc, "interp.cu", src, d->arch, nvrtc_opts, 1, &img, &len, NULL, &log, &err);
  free(src);
  if (st != IB_OK) {
    fprintf(logf_, "interp: %s\n%s\n", err.message, log ? log : "");
    free(log);
    return 0;
  }
  free(log);
  if (d->compile_only) {
    free(img);
    *secs = now_s() - t0;
    return 1;
  }
  CUmodule mod;
  int ok = check(d, d->cu->cuModuleLoadData(&mod, img), "load interp") &&
           check(d, d->cu->cuModuleGetFunction(&d->interp, mod, IB_INTERP_KERNEL), "ib_interp") &&
           check(d, d->cu->cuModuleGetFunction(&d->interp_lsum, mod, IB_INTERP_LSUM_KERNEL),
                 "ib_interp_lsum");
  free(img);
  *secs = now_s() - t0;
  return ok;
}

static kmod *module_for(gpu *d, ib_cpool *pool, kmod *mods, int *n_mods, const char *sig,
                        int reduce_luma) {
  for (int i = 0; i < *n_mods; i++)
    if (strcmp(mods[i].sig, sig) == 0) return &mods[i];
  kmod *m = &mods[(*n_mods)++];
  memset(m, 0, sizeof *m);
  snprintf(m->sig, sizeof m->sig, "%s", sig);
  ib_cpool_result r;
  if (ib_cpool_wait(pool, sig, -1) != IB_CP_DONE || ib_cpool_take(pool, sig, &r) != IB_CP_DONE) {
    fprintf(logf_, "FAIL %s: never compiled\n", sig);
    m->failed = 1;
    return m;
  }
  if (r.status != IB_OK) {
    fprintf(logf_, "FAIL %s: %s\n", sig, r.err.message);
    m->failed = 1;
    return m;
  }
  if (d->compile_only) {
    free(r.image);
    return m;
  }
  m->failed = !(check(d, d->cu->cuModuleLoadData(&m->mod, r.image), "load chain") &&
                check(d, d->cu->cuModuleGetFunction(&m->chain, m->mod, "ib_chain"), "ib_chain") &&
                (!reduce_luma ||
                 check(d, d->cu->cuModuleGetFunction(&m->lsum, m->mod, "ib_lsum"), "ib_lsum")));
  free(r.image);
  return m;
}

static size_t bytes_of(uint32_t w, uint32_t h, int mode) {
  return (size_t)w * h * ib_mode_bands((ib_mode)mode);
}

static unsigned grid(const gpu *d, uint64_t work) {
  uint64_t g = (work + 255) / 256, cap = (uint64_t)d->sm_count * 8;
  return (unsigned)(g < 1 ? 1 : g > cap ? cap : g);
}

typedef struct timing {
  double chain_ms, interp_ms;
} timing;

/* Runs stage `it` through its specialised kernel and the interpreter:
 * 1 when the outputs are equal. */
static int run_item(gpu *d, const kmod *m, const item *it, jg_rng *r, timing *tm) {
  const ib_cu *cu = d->cu;
  const ib_gstage *st = &it->plan.stages[it->stage];
  const ib_gchain *ch = &st->chain;
  ib_iprog prog;
  ib_error err = {0};
  if (ib_interp_prog(ch, &prog, &err) != IB_OK) {
    fprintf(logf_, "FAIL %s: %s\n", it->label, err.message);
    return 0;
  }
  const size_t in0 = bytes_of(st->in_width[0], st->in_height[0], ib_gchain_mode_in(ch)),
               in1 = ch->n_inputs == 2 ? bytes_of(st->in_width[1], st->in_height[1], ch->mode_in1)
                                       : 0,
               out = bytes_of(st->width, st->height, ib_gchain_mode_out(ch)),
               par = ch->param_bytes + st->extra_bytes;
  /* One allocation: inputs, three outputs, three parameter blocks. */
  size_t off[8], total = 0;
  const size_t sz[8] = {in0, in1, out, out, out, par, par, par};
  for (int k = 0; k < 8; k++) {
    off[k] = total;
    total += (sz[k] + 255) & ~(size_t)255;
  }
  uint8_t *host = calloc(1, total + 1), *got = malloc(3 * out + 1);
  CUdeviceptr dev = 0;
  int ok = host && got && check(d, cu->cuMemAlloc(&dev, total), "alloc");
  if (ok) {
    for (size_t i = 0; i < in0; i++) host[off[0] + i] = (uint8_t)jg_u32(r);
    for (size_t i = 0; i < in1; i++) host[off[1] + i] = (uint8_t)jg_u32(r);
    ib_gstage_fill(st, it->g, host + off[5]);
    memcpy(host + off[6], host + off[5], par);
    memcpy(host + off[7], host + off[5], par);
    memset(host + off[2], 0xa5, 3 * ((out + 255) & ~(size_t)255));
    ok = check(d, cu->cuMemcpyHtoDAsync(dev, host, total, NULL), "upload");
  }
  ib_gdesc desc[3];
  for (int k = 0; k < 3; k++)
    desc[k] = (ib_gdesc){.in0 = dev + off[0],
                         .in1 = ch->n_inputs == 2 ? dev + off[1] : dev + off[0],
                         .out = dev + off[2 + k],
                         .params = dev + off[5 + k],
                         .width = st->width,
                         .height = st->height,
                         .stride0 = st->in_width[0],
                         .stride1 = ch->n_inputs == 2 ? st->in_width[1] : st->in_width[0],
                         .contig = st->in_width[0] == st->width &&
                                   (ch->n_inputs < 2 || st->in_width[1] == st->width),
                         .job = (uint32_t)k,
                         .height0 = st->in_height[0],
                         .height1 = ch->n_inputs == 2 ? st->in_height[1] : st->in_height[0]};
  CUdeviceptr dtab = 0;
  CUevent ev[3] = {0};
  if (ok)
    ok = check(d, cu->cuMemAlloc(&dtab, sizeof desc), "alloc descs") &&
         check(d, cu->cuMemcpyHtoDAsync(dtab, desc, sizeof desc, NULL), "upload descs");
  for (int k = 0; ok && k < 3; k++) ok = check(d, cu->cuEventCreate(&ev[k], 0), "event");
  const uint64_t n = (uint64_t)st->width * st->height;
  if (ok) {
    /* Specialised: descriptor 0. */
    CUdeviceptr t0 = dtab, t1 = dtab + sizeof(ib_gdesc);
    void *a0[] = {&t0}, *a1[] = {&t1, &prog};
    const unsigned gx = grid(d, n / (uint64_t)ib_gchain_ppt(ch) + 1), lx = grid(d, n);
    ok = check(d, cu->cuEventRecord(ev[0], NULL), "record");
    if (ok && m->lsum)
      ok = check(d, cu->cuLaunchKernel(m->lsum, lx, 1, 1, 256, 1, 1, 0, NULL, a0, NULL), "ib_lsum");
    if (ok)
      ok = check(d, cu->cuLaunchKernel(m->chain, gx, 1, 1, 256, 1, 1, 0, NULL, a0, NULL),
                 "ib_chain");
    if (ok) ok = check(d, cu->cuEventRecord(ev[1], NULL), "record");
    /* Interpreter: descriptors 1 and 2 in one launch (blockIdx.y). */
    if (ok && prog.luma)
      ok = check(d, cu->cuLaunchKernel(d->interp_lsum, lx, 2, 1, 256, 1, 1, 0, NULL, a1, NULL),
                 "ib_interp_lsum");
    if (ok)
      ok = check(d, cu->cuLaunchKernel(d->interp, grid(d, n), 2, 1, 256, 1, 1, 0, NULL, a1, NULL),
                 "ib_interp");
    if (ok) ok = check(d, cu->cuEventRecord(ev[2], NULL), "record");
    if (ok) ok = check(d, cu->cuMemcpyDtoHAsync(got, dev + off[2], out, NULL), "download");
    if (ok) ok = check(d, cu->cuMemcpyDtoHAsync(got + out, dev + off[3], out, NULL), "download");
    if (ok) ok = check(d, cu->cuMemcpyDtoHAsync(got + 2 * out, dev + off[4], out, NULL), "dl");
    if (ok) ok = check(d, cu->cuCtxSynchronize(), "sync");
    float a = 0, b = 0;
    if (ok && cu->cuEventElapsedTime(&a, ev[0], ev[1]) == CUDA_SUCCESS &&
        cu->cuEventElapsedTime(&b, ev[1], ev[2]) == CUDA_SUCCESS) {
      tm->chain_ms += a;
      tm->interp_ms += b / 2; /* two jobs */
    }
  }
  int equal = 0;
  if (ok) {
    equal = memcmp(got, got + out, out) == 0 && memcmp(got, got + 2 * out, out) == 0;
    if (!equal) {
      size_t i = 0;
      while (i < out && got[i] == got[out + i] && got[i] == got[2 * out + i]) i++;
      char sig[512];
      ib_gchain_signature(ch, sig, sizeof sig);
      fprintf(logf_, "DIFF %s [%s]: byte %zu of %zu: chain %u interp %u / %u\n", it->label, sig, i,
              out, got[i], got[out + i], got[2 * out + i]);
    }
  }
  for (int k = 0; k < 3; k++)
    if (ev[k]) cu->cuEventDestroy(ev[k]);
  if (dtab) cu->cuMemFree(dtab);
  if (dev) cu->cuMemFree(dev);
  free(host);
  free(got);
  return equal;
}

/* Adds every stage of `g` the interpreter can run; requests its compile. */
static void add_items(ib_graph *g, int op, const char *label, item **items, int *n, int *cap,
                      ib_cpool *pool, int *skipped) {
  ib_gplan plan;
  ib_error err = {0};
  if (ib_gplan_build(g, &plan, &err) != IB_OK) {
    fprintf(logf_, "unplanned %s: %s\n", label, err.message);
    ib_graph_free(g);
    return;
  }
  int any = 0;
  for (int s = 0; s < plan.n_stages; s++) {
    if (!ib_interp_can_run(&plan.stages[s].chain)) {
      (*skipped)++;
      continue;
    }
    if (*n == *cap) {
      *cap *= 2;
      *items = realloc(*items, (size_t)*cap * sizeof **items);
    }
    item *it = &(*items)[(*n)++];
    memset(it, 0, sizeof *it);
    it->g = g;
    it->stage = s;
    it->op = op;
    snprintf(it->label, sizeof it->label, "%s stage %d", label, s);
    /* Each item gets its own copy of the plan (freed with the last one). */
    it->plan = plan;
    if (ib_cpool_request_chain(pool, &plan.stages[s].chain) == IB_CP_NONE)
      fprintf(logf_, "request failed: %s\n", it->label);
    any = 1;
  }
  if (!any) {
    ib_gplan_free(&plan);
    ib_graph_free(g);
  }
}

int main(int argc, char **argv) {
  int n_random = 300;
  unsigned seed = 14;
  const char *logpath = NULL;
  int compile_only = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--random"))
      n_random = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed"))
      seed = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--log"))
      logpath = argv[i + 1];
    else if (!strcmp(argv[i], "--compile-only"))
      compile_only = atoi(argv[i + 1]);
  }
  logf_ = logpath ? fopen(logpath, "w") : stderr;
  if (!logf_) logf_ = stderr;
  gpu d;
  ib_error err = {0};
  if (compile_only) {
    memset(&d, 0, sizeof d);
    d.compile_only = 1;
    snprintf(d.arch, sizeof d.arch, "sm_90");
  } else if (open_gpu(&d, &err) != IB_OK) {
    printf("interp_check: no GPU (%s)\n", err.message);
    return 2;
  }
  ib_kcache *kc = ib_kcache_new(ib_cli_cache_dir(), 256ull << 20, 2ull << 30);
  double t_interp = 0;
  if (!kc || !load_interp(&d, kc, &t_interp)) {
    printf("interp_check: the interpreter did not load (see the log)\n");
    return 1;
  }
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const ib_cpool_options po = {.threads = ncpu > 1 ? (int)ncpu : 1,
                               .max_pending = 1u << 16,
                               .arch = d.arch,
                               .opts = nvrtc_opts,
                               .n_opts = 1};
  ib_cpool *pool = ib_cpool_new(kc, &po, &err);
  if (!pool) {
    printf("interp_check: %s\n", err.message);
    return 1;
  }
  printf("device: %s, interpreter module ready in %.0f ms\n", d.arch, t_interp * 1e3);

  jg_arena arena = {malloc(1u << 26), 0, 1u << 26};
  jg_rng r = {seed};
  jg_job j;
  uint64_t key = 1;
  int cap = 1024, n = 0, skipped = 0;
  item *items = malloc((size_t)cap * sizeof *items);
  static const uint32_t sizes[][2] = {{1, 1},   {3, 5},   {7, 1},     {1, 9},    {17, 13},
                                      {255, 3}, {64, 64}, {333, 101}, {1000, 7}, {129, 257}};
  int si = 0;
  /* 1. every pointwise op x mode (x variant) */
  for (int op = 0; op < JG_COUNT; op++) {
    if (!pointwise(op)) continue;
    const int variants = op == JG_CHOPS ? 12 : op == JG_CONVERT ? 6 : op == JG_GETCHANNEL ? 4 : 2;
    for (int m = 1; m <= 6; m++) {
      if (!jg_admitted(op, (ib_mode)m)) continue;
      for (int v = 0; v < variants; v++) {
        const uint32_t w = sizes[si % 10][0], h = sizes[si % 10][1];
        si++;
        jg_begin(&j, &arena, &r, (ib_mode)m, w, h, key++);
        jg_op(&j, &r, op, 0, (ib_mode)m, w, h, v);
        char label[200];
        snprintf(label, sizeof label, "%s %s v%d %ux%u", jg_names[op], ib_mode_name((ib_mode)m), v,
                 w, h);
        ib_graph *g = jg_finish(&j, &err);
        if (!g) {
          fprintf(logf_, "refused %s: %s\n", label, err.message);
          continue;
        }
        add_items(g, op, label, &items, &n, &cap, pool, &skipped);
      }
    }
  }
  const int n_single = n;
  /* 2. random pointwise chains (fused runs, two-input heads, contrast) */
  for (int k = 0; k < n_random; k++) {
    ib_mode m = (ib_mode)(1 + jg_below(&r, 6));
    uint32_t w = 1 + jg_below(&r, 300), h = 1 + jg_below(&r, 200);
    if (k % 10 == 0) w = (w | 3) + 1;
    jg_begin(&j, &arena, &r, m, w, h, key++);
    int prev = 0, len = 1 + (int)jg_below(&r, 8);
    char label[200];
    int lw = snprintf(label, sizeof label, "chain %s %ux%u:", ib_mode_name(m), w, h);
    for (int s = 0; s < len; s++) {
      int op;
      do op = (int)jg_below(&r, JG_BLEND + 1);
      while (!jg_admitted(op, m));
      prev = jg_chain_op(&j, &r, op, prev, &m, &w, &h);
      if (lw < (int)sizeof label)
        lw += snprintf(label + lw, sizeof label - (size_t)lw, " %s", jg_names[op]);
    }
    ib_graph *g = jg_finish(&j, &err);
    if (!g) {
      fprintf(logf_, "refused %s: %s\n", label, err.message);
      continue;
    }
    add_items(g, -1, label, &items, &n, &cap, pool, &skipped);
  }

  /* Run: modules as their compiles finish (in item order). */
  kmod *mods = calloc((size_t)n + 1, sizeof *mods);
  int n_mods = 0, equal = 0, per_eq[JG_COUNT + 1] = {0}, per_n[JG_COUNT + 1] = {0};
  timing tm = {0};
  const double t0 = now_s();
  for (int i = 0; i < n; i++) {
    const ib_gchain *ch = &items[i].plan.stages[items[i].stage].chain;
    char sig[512];
    ib_gchain_signature(ch, sig, sizeof sig);
    const kmod *m = module_for(&d, pool, mods, &n_mods, sig, ch->reduce_luma);
    const int e = !m->failed && (d.compile_only || run_item(&d, m, &items[i], &r, &tm));
    equal += e;
    const int slot = items[i].op >= 0 ? items[i].op : JG_COUNT;
    per_n[slot]++;
    per_eq[slot] += e;
  }
  const double t_run = now_s() - t0;
  for (int op = 0; op <= JG_COUNT; op++)
    if (per_n[op])
      printf(d.compile_only ? "%-12s %4d stages, %4d compiled\n" : "%-12s %4d stages, %4d equal\n",
             op < JG_COUNT ? jg_names[op] : "chains", per_n[op], per_eq[op]);
  ib_cpool_stats ps = ib_cpool_stats_get(pool);
  printf(
      "%d single-op stages, %d chain stages, %d stages not pointwise (skipped); %d modules, "
      "%llu compiled (%.1f s of NVRTC), %llu from cache; run %.1f s; kernels: specialised "
      "%.2f ms, interpreter %.2f ms\n",
      n_single, n - n_single, skipped, n_mods, (unsigned long long)ps.compiles,
      (double)ps.compile_us * 1e-6, (unsigned long long)ps.cache_hits, t_run, tm.chain_ms,
      tm.interp_ms);
  if (d.compile_only)
    printf("interp: %d/%d compiled (no GPU: nothing compared)\n", equal, n);
  else
    printf("interp: %d/%d equal\n", equal, n);
  /* Tear down: graphs are shared by their stages' items. */
  for (int i = 0; i < n; i++)
    if (i + 1 == n || items[i + 1].g != items[i].g) {
      ib_gplan_free(&items[i].plan);
      ib_graph_free(items[i].g);
    }
  for (int i = 0; i < n_mods; i++)
    if (mods[i].mod && d.cu) d.cu->cuModuleUnload(mods[i].mod);
  free(mods);
  free(items);
  free(arena.p);
  ib_cpool_free(pool);
  ib_kcache_free(kc);
  if (logf_ != stderr) fclose(logf_);
  return n > 0 && equal == n ? 0 : 1;
}
