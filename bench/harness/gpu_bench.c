/*
 * gpu_bench - CUDA backend numbers against the physical floors
 * (docs/design.md, "The benchmark"):
 *   1. device copy bandwidth (D2D, 4096² RGBA = 64 MiB, read + write) vs one
 *      fused pointwise chain kernel over the same image (point -> brightness
 *      -> point, RGBA), kernel time only, median of 30 (CUDA events);
 *   2. pinned H2D / D2H bandwidth (the PCIe floor);
 *   3. raw bytes in -> raw bytes out per image through the public executor
 *      API (api_bench.h: serialized Job written into an ib_executor_buffer
 *      -> ib_executor_parse_buffer -> run stream -> lent result released at
 *      once; and the copy-parse path through ib_executor_parse), one op
 *      family per row at 2048² and 4096², against the PCIe floors of
 *      section 2;
 *   4. 256² RGB invert images/s through the same API (batched submissions);
 *   5. the device pipeline alone (pinned -> device -> pinned, no API).
 * Sections 3 and 4 check each case's first result through both ingest
 * paths against the CPU backend (MISMATCH: exit 1). The table at the end is
 * computed in print_api_table.
 *
 *   gpu_bench [--images N] [--batch B] [--big N] [--producers P] [--inflight F]
 *             [--api-jobs J] [--sizes LIST] [--modes LIST] [--families LIST] [--feeds all|zc]
 *             [--sections LIST] [--csv FILE]
 *     --images     256² images per timed stream (sections 4, 5); 20480
 *     --batch      max_jobs of the 256² executor (B/2 jobs per submission)
 *                  and images per launch in section 5; 512
 *     --big        timed images per 4096² case (2048²: twice as many); 12;
 *                  0 skips section 3
 *     --producers  producer threads of the threaded feeds; 4
 *     --inflight   max_in_flight of the section-3 executor (= its max_jobs,
 *                  so one job per submission); 3
 *     --api-jobs   max_jobs of the section-3 executor instead (several
 *                  images per submission); 0 = --inflight
 *     --parsers    section 4 also times its zero-copy feed (buffers written
 *                  ahead) with that many producer threads calling
 *                  ib_executor_parse_buffer beside the stream, the run
 *                  callback only popping graphs; 0 (default): not timed
 *     --reps       section 3 times each case's zero-copy feed written ahead
 *                  R times back to back and keeps the median (CSV rows
 *                  x_floor_bidir_min/_max: the spread); 1 (default)
 *     --profile-range 1: each timed stream of the zero-copy feed written
 *                  ahead between cuProfilerStart and cuProfilerStop (the
 *                  window of bench/trace_report.py); 0 (default): not
 *   Environment (besides the tools' own, cli/tool_env.c): IB_CUDA_PROFILE=1
 *   with IB_BENCH_TIMELINE=1 prints the backend's host profile and its
 *   submission timeline ("cuda timeline (timed ...)") of each timed
 *   zero-copy stream alone (timed_profile).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "api_bench.h"
#include "exec/exec_internal.h"
#include "gpu/codegen.h"
#include "gpu/cu.h"
#include "gpu/cuda_backend.h"
#include "gpu/nvrtc_cache.h"
#include "kernels/blur.h"
#include "kernels/enhance.h"
#include "kernels/tone.h"

#define CK(x)                                                                  \
  do {                                                                         \
    CUresult rc_ = (x);                                                        \
    if (rc_ != CUDA_SUCCESS) {                                                 \
      const char *nm = NULL;                                                   \
      cu->cuGetErrorName(rc_, &nm);                                            \
      printf("bench: %s failed: %s (line %d)\n", #x, nm ? nm : "?", __LINE__); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fcmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static const ib_cu *cu;

/* Median ms of `reps` runs of fn between events on `s`. */
typedef void (*work_fn)(void *ctx, CUstream s);
static float time_ms(work_fn fn, void *ctx, CUstream s, int reps) {
  CUevent a, b;
  CK(cu->cuEventCreate(&a, 0));
  CK(cu->cuEventCreate(&b, 0));
  float *t = calloc((size_t)reps, sizeof *t);
  fn(ctx, s); /* warm-up */
  CK(cu->cuStreamSynchronize(s));
  for (int i = 0; i < reps; i++) {
    CK(cu->cuEventRecord(a, s));
    fn(ctx, s);
    CK(cu->cuEventRecord(b, s));
    CK(cu->cuEventSynchronize(b));
    CK(cu->cuEventElapsedTime(&t[i], a, b));
  }
  qsort(t, (size_t)reps, sizeof *t, fcmp);
  float med = t[reps / 2];
  free(t);
  cu->cuEventDestroy(a);
  cu->cuEventDestroy(b);
  return med;
}

typedef struct copyctx {
  CUdeviceptr dst, src;
  size_t n;
  void *host;
  int dir; /* 0 D2D, 1 H2D, 2 D2H */
} copyctx;
/* The chain's kernel source compiled (or taken from the cache) and loaded;
 * exits on a failure, as CK does. */
static CUmodule chain_module(ib_kcache *kc, const char *name, const ib_gchain *ch,
                             const char *arch) {
  char *src = ib_gchain_source(ch);
  void *img;
  size_t len;
  const char *fm[] = {"--fmad=false"};
  ib_error err = {0};
  if (ib_kcache_get(kc, name, src, arch, fm, 1, &img, &len, NULL, NULL, &err) != IB_OK) {
    printf("bench: %s\n", err.message);
    exit(1);
  }
  free(src);
  CUmodule mod;
  CK(cu->cuModuleLoadData(&mod, img));
  free(img);
  return mod;
}

/* The device pipeline alone, two streams taking turns: a round copies one
 * slot (`bytes`) of pinned input up, runs f over the slot's descriptor
 * table and copies the slot's output back. Two rounds warm up; returns the
 * seconds the `rounds` after them take. */
typedef struct {
  CUfunction f;
  unsigned gx, gy;
  uint8_t *hin, *hout;
  CUdeviceptr din, dout, tab;
  size_t bytes, tab_bytes; /* one slot's pixels and descriptors */
} pipe_ctx;

static double pipe_s(const pipe_ctx *p, CUstream ps[2], int rounds) {
  double t0 = 0;
  for (int i = -2; i < rounds; i++) {
    if (i == 0) {
      CK(cu->cuStreamSynchronize(ps[0]));
      CK(cu->cuStreamSynchronize(ps[1]));
      t0 = now_s();
    }
    int sl = i & 1;
    CUstream st = ps[sl];
    CK(cu->cuMemcpyHtoDAsync(p->din + sl * p->bytes, p->hin + sl * p->bytes, p->bytes, st));
    CUdeviceptr t = p->tab + sl * p->tab_bytes;
    void *args[] = {&t};
    CK(cu->cuLaunchKernel(p->f, p->gx, p->gy, 1, 256, 1, 1, 0, st, args, NULL));
    CK(cu->cuMemcpyDtoHAsync(p->hout + sl * p->bytes, p->dout + sl * p->bytes, p->bytes, st));
  }
  CK(cu->cuStreamSynchronize(ps[0]));
  CK(cu->cuStreamSynchronize(ps[1]));
  return now_s() - t0;
}

static void do_copy(void *p, CUstream s) {
  copyctx *c = p;
  if (c->dir == 0) CK(cu->cuMemcpyDtoDAsync(c->dst, c->src, c->n, s));
  if (c->dir == 1) CK(cu->cuMemcpyHtoDAsync(c->dst, c->host, c->n, s));
  if (c->dir == 2) CK(cu->cuMemcpyDtoHAsync(c->host, c->src, c->n, s));
}

/* Both directions at once: H2D on the timed stream, D2H on a second one
 * joined to it by events (the floor of a job whose upload overlaps an
 * earlier job's download). */
typedef struct bidir {
  copyctx up, down;
  CUstream s2;
  CUevent fork, join;
} bidir;
static void do_bidir(void *p, CUstream s) {
  bidir *b = p;
  CK(cu->cuEventRecord(b->fork, s));
  CK(cu->cuStreamWaitEvent(b->s2, b->fork, 0));
  do_copy(&b->up, s);
  do_copy(&b->down, b->s2);
  CK(cu->cuEventRecord(b->join, b->s2));
  CK(cu->cuStreamWaitEvent(s, b->join, 0));
}

typedef struct kctx {
  CUfunction f;
  CUdeviceptr table;
  unsigned gx;
} kctx;
static void do_kernel(void *p, CUstream s) {
  kctx *k = p;
  void *args[] = {&k->table};
  CK(cu->cuLaunchKernel(k->f, k->gx, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

typedef struct blur_ctx {
  CUfunction rows, post, cols;
  CUdeviceptr table;
  unsigned cap, smem;
  int th; /* ib_blur_cols' tile height; 0: the 3 global column passes (ib_blur_pass); -1: rows only
           */
} blur_ctx;
/* As the blur's launch plan (worker/ops/op_blur.c blur_plan) for one
 * 4096^2 RGBA image of radius 7.47 (integer 7): ib_blur_cols' buffer holds
 * th + 2 * 3 * (7 + 1) rows. */
static unsigned blur_cols_smem(int th) { return 2u * (unsigned)(th + 48) * IB_BLUR_CW; }
static void do_blur(void *p, CUstream s) {
  blur_ctx *b = p;
  void *a1[] = {&b->table};
  CK(cu->cuLaunchKernel(b->rows, 4096 < b->cap ? 4096 : b->cap, 1, 1, 256, 1, 1, b->smem, s, a1,
                        NULL));
  if (b->th < 0) return;
  if (b->th > 0) {
    int th = b->th, rows = th + 48;
    uint64_t tiles = (4096ull * 4 / IB_BLUR_CW) * ((4096u + (unsigned)th - 1) / (unsigned)th);
    void *a3[] = {&b->table, &th, &rows};
    CK(cu->cuLaunchKernel(b->cols, (unsigned)(tiles < b->cap ? tiles : b->cap), 1, 1, 256, 1, 1,
                          blur_cols_smem(th), s, a3, NULL));
    return;
  }
  uint64_t items = 4096ull * 4 * ((4096 + IB_BLUR_CSEG - 1) / IB_BLUR_CSEG);
  uint64_t blocks = (items + 255) / 256;
  unsigned gx = (unsigned)(blocks < b->cap ? blocks : b->cap);
  for (int k = 0; k < 3; k++) {
    int dir = 1;
    void *a2[] = {&b->table, &dir, &k};
    CK(cu->cuLaunchKernel(b->post, gx, 1, 1, 256, 1, 1, 0, s, a2, NULL));
  }
}

/* Sections 3 and 4 against the PCIe floors measured in section 2. */
typedef struct floors {
  double h2d_bw, d2h_bw; /* GB/s, one direction alone */
  double bidir_bw;       /* GB/s each way while both directions run */
} floors;

/* Both directions overlapped: the larger direction at the slower link. */
/* A step as the planner makes it: the op row's device step for a node of
 * `pb` over a 4096² image of `mode`. */
static ib_gstep bench_step(Imgbatch__V1__Node *pb, ib_mode mode) {
  ib_node n = {.pb = pb, .op = ib_op_for_case(pb->op_case), .shape = {mode, 4096, 4096}};
  const int in_modes[2] = {(int)mode, 0};
  ib_gstep s;
  ib_error e = {0};
  if (ib_gstep_for_node(&n, in_modes, &s, &e) != IB_OK) {
    printf("bench: %s\n", e.message);
    exit(1);
  }
  return s;
}

static double floor_overlap_ms(const floors *f, uint64_t in, uint64_t out) {
  double bw = f->h2d_bw < f->d2h_bw ? f->h2d_bw : f->d2h_bw;
  return (double)(in > out ? in : out) / bw / 1e6;
}
/* The overlapped floor at the bandwidth both directions reach together:
 * the common part of in and out at bidir_bw, the rest alone. */
static double floor_bidir_ms(const floors *f, uint64_t in, uint64_t out) {
  uint64_t both = in < out ? in : out, rest = in < out ? out - in : in - out;
  double alone = in < out ? f->d2h_bw : f->h2d_bw;
  return (double)both / f->bidir_bw / 1e6 + (double)rest / alone / 1e6;
}
static double floor_serial_ms(const floors *f, uint64_t in, uint64_t out) {
  return (double)in / f->h2d_bw / 1e6 + (double)out / f->d2h_bw / 1e6;
}

/* ---- --csv: one row per number, the schema of bench/run.sh's CSV files */
static FILE *g_csv;
static char g_setting[64];

static void csv_row(const char *part, const char *impl, const char *workload, const char *mode,
                    unsigned side, int n, const char *metric, double value, const char *unit) {
  if (!g_csv) return;
  fprintf(g_csv, "%s,%s,%s,%s,%u,%d,%s,%.6g,%s,%s,ok,\n", part, impl, workload, mode, side, n,
          metric, value, unit, g_setting);
  fflush(g_csv);
}

static bool csv_open(const char *path) {
  if (!(g_csv = fopen(path, "a"))) return false;
  if (ftell(g_csv) == 0)
    fprintf(g_csv, "part,impl,workload,mode,side,n,metric,value,unit,setting,status,note\n");
  return true;
}

/* Section-3 selection from the command line. */
typedef struct matrix {
  uint32_t sides[8];
  int n_sides;
  ib_mode modes[3];
  int n_modes;
  int fams[AB_ALL];
  int n_fams;
  bool zc_only;
} matrix;

static bool parse_sizes(matrix *m, char *list) {
  m->n_sides = 0;
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    int v = atoi(t);
    if (v < 16 || v > 4096 || v % 2 || m->n_sides == 8) return false;
    m->sides[m->n_sides++] = (uint32_t)v;
  }
  return m->n_sides > 0;
}

static bool parse_modes(matrix *m, char *list) {
  m->n_modes = 0;
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    ib_mode md = !strcmp(t, "L")      ? IB_MODE_L
                 : !strcmp(t, "RGB")  ? IB_MODE_RGB
                 : !strcmp(t, "RGBA") ? IB_MODE_RGBA
                                      : IB_MODE_NONE;
    if (!md || m->n_modes == 3) return false;
    m->modes[m->n_modes++] = md;
  }
  return m->n_modes > 0;
}

static bool parse_families(matrix *m, char *list) {
  m->n_fams = 0;
  if (!strcmp(list, "all")) {
    for (int f = 0; f < AB_FAMILIES; f++) m->fams[m->n_fams++] = f;
    return true;
  }
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    int f = 0;
    while (f < AB_ALL && strcmp(ab_ids[f], t)) f++;
    if (f == AB_ALL || m->n_fams == AB_ALL) return false;
    m->fams[m->n_fams++] = f;
  }
  return m->n_fams > 0;
}

/* Families Pillow (and so the backends) refuse in a mode. */
static bool fam_admits(int fam, ib_mode m) {
  if (fam == AB_TONE) return m == IB_MODE_RGB || m == IB_MODE_RGBA;
  if (fam == AB_INVERT) return m == IB_MODE_L || m == IB_MODE_RGB;
  return true;
}

static int images_for(int big, uint32_t side) {
  return side >= 4096 ? big : side >= 2048 ? 2 * big : side >= 1024 ? 8 * big : 64 * big;
}

/* With IB_CUDA_PROFILE=1 and IB_BENCH_TIMELINE=1: the backend's host
 * profile and submission timeline of each timed zero-copy stream alone
 * (warm-ups, rewarms and the other feeds left out), with the stream's own
 * start and results on the same clock. The profile's "close" report then
 * covers only what ran after the last timed stream (bench/profile.sh sets
 * IB_CUDA_PROFILE alone: its reports stay as they were). */
static double g_prof_base;
static void timed_profile(ib_executor *ex, const char *label, int phase, const ab_run *run) {
  if (ex->backend != &ib_backend_cuda) return;
  ib_cuda *c = ex->backend_state;
  if (phase == 0) {
    g_prof_base = ib_cuda_profile_reset(c);
    return;
  }
  if (!g_prof_base) return;
  char lab[128];
  snprintf(lab, sizeof lab, "timed %s", label);
  fflush(stdout);
  fprintf(stderr,
          "cuda timeline (%s): stream start %.3f, first result %.3f, last result %.3f (ms after "
          "the origin)\n",
          lab, (run->t_start - g_prof_base) * 1e3, (run->t_first - g_prof_base) * 1e3,
          (run->t_end - g_prof_base) * 1e3);
  ib_cuda_profile_report(c, lab);
  fflush(stderr);
}

/* ---- 3. every op family (default: at 2048² and 4096², RGBA) through the
 * executor API; one group of cases per (side, mode). */
static int run_api_families(ab_case *cs, int big, int producers, int inflight, int api_jobs,
                            int reps, const matrix *mx) {
  if (big <= 0) return 0;
  /* One job per submission (max_jobs = max_in_flight) unless --api-jobs
   * says otherwise, so consecutive images overlap their H2D and D2H on
   * separate streams; with more jobs than submissions in flight, a
   * submission carries several images (the default max_jobs is 64).
   * host_bytes covers
   * the admitted window, lent arenas until release and the parsed graphs
   * waiting in the producer queue; its parse budget (2x) the zero-copy
   * buffers written ahead (prefill_bytes of Jobs, pool classes round each
   * up to a power of two). */
  ib_executor *ex = ab_executor(4ull << 30, 8ull << 30, (uint32_t)(api_jobs ? api_jobs : inflight),
                                (uint32_t)inflight);
  int n = 0;
  for (int si = 0; si < mx->n_sides; si++) {
    uint32_t side = mx->sides[si];
    for (int mi = 0; mi < mx->n_modes; mi++) {
      int first = n;
      for (int k = 0; k < mx->n_fams; k++)
        if (fam_admits(mx->fams[k], mx->modes[mi]))
          cs[n++] = (ab_case){.fam = mx->fams[k], .mode = mx->modes[mi], .side = side};
      if (n == first) continue;
      int images = images_for(big, side);
      ab_params p = {.images = images,
                     .distinct = side >= 4096   ? 4
                                 : side >= 2048 ? 8
                                                : 16,
                     .producers = producers,
                     .qcap = 4,
                     .warmup = 4 + producers + inflight + 1,
                     .prefill_bytes = 2ull << 30,
                     .zc_only = mx->zc_only,
                     .rewarm = (api_jobs ? api_jobs : inflight) + producers,
                     .reps = reps};
      if (mx->n_modes == 1 && mx->modes[0] == IB_MODE_RGBA)
        printf("section 3: %d op families at %u^2, %d images per feed\n", n - first, side, images);
      else
        printf("section 3: %d op families at %u^2 %s, %d images per feed\n", n - first, side,
               ib_mode_name(mx->modes[mi]), images);
      fflush(stdout);
      ab_cases_run(ex, cs + first, n - first, &p);
    }
  }
  ib_executor_counters k;
  ib_executor_counters_get(ex, &k);
  printf("section 3: %llu submissions, %llu of them pipelined in %llu pieces\n",
         (unsigned long long)k.submissions, (unsigned long long)k.pipelined_submissions,
         (unsigned long long)k.pipelined_pieces);
  fflush(stdout);
  fprintf(stderr,
          "bench: the next cuda host profile covers section 3 (all cases, warm-ups included)\n");
  ib_executor_destroy(ex);
  return n;
}

/* ---- 4. 256² RGB invert images/s: batched submissions of batch/2 jobs. */
static ab_case run_api_small(int images, int batch, int producers, int parsers) {
  ib_executor *ex = ab_executor(2ull << 30, 2ull << 30, (uint32_t)batch, 2);
  ab_case c = {.fam = AB_INVERT, .mode = IB_MODE_RGB, .side = 256};
  ab_params p = {.images = images,
                 .distinct = 64,
                 .producers = producers,
                 .qcap = batch,
                 .warmup = 2 * batch,
                 .producers2 = 2 * producers,
                 .prefill_bytes = 2ull << 30,
                 .parsers = parsers};
  printf("section 4: 256^2 RGB invert, %d images per feed, max_jobs %d\n", images, batch);
  fflush(stdout);
  ab_cases_run(ex, &c, 1, &p);
  ib_executor_counters k;
  ib_executor_counters_get(ex, &k);
  printf(
      "section 4: %llu submissions; raw sources uploaded from pinned memory: %llu in %llu copies "
      "(%llu slab misses)\n",
      (unsigned long long)k.submissions, (unsigned long long)k.upload_direct_sources,
      (unsigned long long)k.upload_direct_copies, (unsigned long long)k.pinned_slab_misses);
  fflush(stdout);
  fprintf(stderr, "bench: the next cuda host profile covers section 4 (warm-up included)\n");
  ib_executor_destroy(ex);
  return c;
}

/* One line per (family, size), per image: the zero-copy feed with its
 * buffers written before the stream (wall clock of the run stream / images;
 * "parse" = inside ib_executor_parse_buffer, "ingest" = the producer's
 * memcpy into the buffer, off the clock) against the overlapped
 * floor max(in, out) / min(H2D, D2H) and the serial floor in / H2D + out /
 * D2H; the zero-copy feed with P producer threads writing + parsing
 * concurrently (their memcpy on the clock); the copy-parse feeds
 * (ib_executor_parse in the callback, on P threads). */
static void print_api_table(const ab_case *cs, int n, const floors *f, int producers) {
  printf(
      "\nthrough the executor API: Job written into an ib_executor_buffer -> "
      "ib_executor_parse_buffer -> run stream -> lent result\n");
  printf("(per image; floors from pinned H2D/D2H above; target <= 1.25x overlapped floor)\n");
  char zc_p[32];
  snprintf(zc_p, sizeof zc_p, "zero copy, %d prod.", producers);
  printf("%-14s %5s %7s %7s | %-43s | %-17s | %-17s\n", "", "", "", "", "zero copy, written ahead",
         zc_p, "copy-parse");
  printf("%-14s %5s %7s %7s | %8s %8s %8s %7s %8s | %8s %8s | %8s %8s\n", "family", "side",
         "in MiB", "out MiB", "ms/img", "parse us", "ingest", "x overl", "x serial", "ms/img",
         "x overl", "1 thread", "P thr");
  for (int i = 0; i < n; i++) {
    const ab_case *c = &cs[i];
    double ov = floor_overlap_ms(f, c->in_bytes, c->out_bytes);
    double se = floor_serial_ms(f, c->in_bytes, c->out_bytes);
    printf("%-14s %5u %7.1f %7.1f | %8.3f %8.1f %8.3f %6.2fx %7.2fx | %8.3f %7.2fx | %8.3f %8.3f\n",
           ab_names[c->fam], c->side, (double)c->in_bytes / (1 << 20),
           (double)c->out_bytes / (1 << 20), c->zc.ms, c->zc.parse_ms * 1e3, c->zc.copy_ms,
           c->zc.ms / ov, c->zc.ms / se, c->zc_threaded.ms, c->zc_threaded.ms / ov, c->copy_one.ms,
           c->copy_threaded.ms);
  }
}

/* Every number of the run as --csv rows (the text table stays as it was). */
static void csv_rows(const floors *fl, float copy_ms, double copy_bw, const bool *sec,
                     const char *const *chain_ids, const float *chains_ms, int n_chains,
                     float blur_ms, const ab_case *cs, int ncs, const ab_case *small,
                     double pipe_big_ms, double pipe_small_ips, int producers, int batch,
                     int parsers) {
  const uint64_t N = 4096ull * 4096 * 4;
  csv_row("floors", "cuda", "d2d_copy", "RGBA", 4096, 30, "ms_kernel", copy_ms, "ms");
  csv_row("floors", "cuda", "d2d_copy", "RGBA", 4096, 30, "gbps", copy_bw, "GB/s r+w");
  csv_row("floors", "cuda", "h2d_pinned", "-", 4096, 10, "gbps", fl->h2d_bw, "GB/s");
  csv_row("floors", "cuda", "d2h_pinned", "-", 4096, 10, "gbps", fl->d2h_bw, "GB/s");
  csv_row("floors", "cuda", "bidir_pinned", "-", 4096, 10, "gbps", fl->bidir_bw, "GB/s each way");
  csv_row("floors", "cuda", "pcie_overlap", "RGBA", 4096, 0, "ms_per_img",
          floor_overlap_ms(fl, N, N), "ms");
  csv_row("floors", "cuda", "pcie_bidir", "RGBA", 4096, 0, "ms_per_img", floor_bidir_ms(fl, N, N),
          "ms");
  for (int ci = 0; sec[1] && ci < n_chains; ci++) {
    csv_row("kernels", "imgbatch-events", chain_ids[ci], "RGBA", 4096, 30, "ms_kernel",
            chains_ms[ci], "ms");
    csv_row("kernels", "imgbatch-events", chain_ids[ci], "RGBA", 4096, 30, "pct_copy_bw",
            100.0 * copy_ms / chains_ms[ci], "%");
  }
  if (sec[1])
    csv_row("kernels", "imgbatch-events", "k_gauss8", "RGBA", 4096, 10, "ms_kernel", blur_ms, "ms");
  for (int i = 0; i < ncs; i++) {
    const ab_case *c = &cs[i];
    const char *md = ib_mode_name(c->mode);
    double ov = floor_overlap_ms(fl, c->in_bytes, c->out_bytes);
    int n = c->timed;
    csv_row("api", "imgbatch-api-cuda", ab_ids[c->fam], md, c->side, n, "ms_per_img", c->zc.ms,
            "ms");
    csv_row("api", "imgbatch-api-cuda", ab_ids[c->fam], md, c->side, n, "x_floor_overlap",
            c->zc.ms / ov, "x");
    const double bd = floor_bidir_ms(fl, c->in_bytes, c->out_bytes);
    csv_row("api", "imgbatch-api-cuda", ab_ids[c->fam], md, c->side, n, "x_floor_bidir",
            c->zc.ms / bd, "x");
    if (c->reps > 1) { /* the spread of the timed streams whose median the row above is */
      csv_row("api", "imgbatch-api-cuda", ab_ids[c->fam], md, c->side, c->reps, "x_floor_bidir_min",
              c->zc_min_ms / bd, "x");
      csv_row("api", "imgbatch-api-cuda", ab_ids[c->fam], md, c->side, c->reps, "x_floor_bidir_max",
              c->zc_max_ms / bd, "x");
    }
    csv_row("api", "pcie-floor", ab_ids[c->fam], md, c->side, 0, "ms_per_img", ov, "ms");
    if (c->zc_threaded.ms > 0) {
      char impl[48];
      snprintf(impl, sizeof impl, "imgbatch-api-cuda-%dprod", producers);
      csv_row("api", impl, ab_ids[c->fam], md, c->side, n, "ms_per_img", c->zc_threaded.ms, "ms");
      csv_row("api", "imgbatch-api-cuda-copyparse", ab_ids[c->fam], md, c->side, n, "ms_per_img",
              c->copy_one.ms, "ms");
    }
  }
  if (sec[4]) { /* its own executor: max_jobs = --batch, max_in_flight 2 */
    char keep[sizeof g_setting];
    memcpy(keep, g_setting, sizeof keep);
    snprintf(g_setting, sizeof g_setting, "max_jobs=%d max_in_flight=2", batch);
    csv_row("api", "imgbatch-api-cuda-batched", "invert", "RGB", 256, batch, "img_per_s",
            1e3 / small->zc.ms, "img/s");
    csv_row("api", "imgbatch-api-cuda-batched", "invert", "RGB", 256, batch, "ms_per_img",
            small->zc.ms, "ms");
    csv_row("api", "pcie-floor", "invert", "RGB", 256, 0, "img_per_s",
            1e3 / floor_overlap_ms(fl, small->in_bytes, small->out_bytes), "img/s");
    if (parsers > 0) { /* a row of its own: not the callback-parses feed summary.py reads */
      snprintf(g_setting, sizeof g_setting, "max_jobs=%d max_in_flight=2 parsers=%d", batch,
               parsers);
      csv_row("api", "imgbatch-api-cuda-batched-parsers", "invert", "RGB", 256, batch, "img_per_s",
              1e3 / small->zc_parsers.ms, "img/s");
    }
    memcpy(g_setting, keep, sizeof keep);
  }
  if (sec[5]) {
    csv_row("floors", "cuda-pipeline-only", "point", "RGBA", 4096, 16, "ms_per_img", pipe_big_ms,
            "ms");
    csv_row("floors", "cuda-pipeline-only", "invert", "RGB", 256, batch, "img_per_s",
            pipe_small_ips, "img/s");
  }
}

/* cuProfilerStart / cuProfilerStop from the driver the library loaded
 * (its table has no profiler calls); [0] start, [1] stop. */
static CUresult (*profiler_call[2])(void);

static void profile_mark(bool start) {
  const CUresult rc = profiler_call[!start]();
  if (rc != CUDA_SUCCESS) printf("bench: cuProfiler%s returned %d\n", start ? "Start" : "Stop", rc);
}

static bool profile_range_on(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return false;
  profiler_call[0] = (CUresult(*)(void))dlsym(lib, "cuProfilerStart");
  profiler_call[1] = (CUresult(*)(void))dlsym(lib, "cuProfilerStop");
  if (!profiler_call[0] || !profiler_call[1]) return false;
  ab_timed_mark = profile_mark;
  return true;
}

static void usage(void) {
  printf(
      "usage: gpu_bench [--images N] [--batch B] [--big N] [--producers P] [--inflight F]\n"
      "                 [--api-jobs J (section 3's max_jobs; 0: F, one job a submission)]\n"
      "                 [--sizes 256,1024,2048,4096] [--modes L,RGB,RGBA] [--families all|ID,...]\n"
      "                 [--feeds all|zc] [--sections 1,3,4,5] [--parsers P] [--csv FILE]\n"
      "                 [--profile-range 0|1] [--reps R]\n");
}

int main(int argc, char **argv) {
  int images = 20480, batch = 512, big = 12, producers = 4, inflight = 3, api_jobs = 0, parsers = 0,
      profile_range = 0, reps = 1;
  matrix mx = {.sides = {2048, 4096}, .n_sides = 2, .modes = {IB_MODE_RGBA}, .n_modes = 1};
  char all[] = "all";
  parse_families(&mx, all);
  bool sec[6] = {false, true, true, true, true, true};
  const char *csv_path = NULL;
  const char *prof = getenv("IB_CUDA_PROFILE"), *tl = getenv("IB_BENCH_TIMELINE");
  if (prof && *prof == '1' && tl && *tl == '1') ab_timed_hook = timed_profile;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) {
      usage();
      return 2;
    }
    char *v = argv[i + 1];
    bool ok = true;
    if (!strcmp(argv[i], "--sizes")) {
      ok = parse_sizes(&mx, v);
    } else if (!strcmp(argv[i], "--modes")) {
      ok = parse_modes(&mx, v);
    } else if (!strcmp(argv[i], "--families")) {
      ok = parse_families(&mx, v);
    } else if (!strcmp(argv[i], "--feeds")) {
      ok = !strcmp(v, "all") || !strcmp(v, "zc");
      mx.zc_only = !strcmp(v, "zc");
    } else if (!strcmp(argv[i], "--sections")) {
      for (int k = 1; k < 6; k++) sec[k] = k == 2;
      for (char *t = strtok(v, ","); t; t = strtok(NULL, ",")) {
        int k = atoi(t);
        if (k < 1 || k > 5)
          ok = false;
        else
          sec[k] = true;
      }
    } else if (!strcmp(argv[i], "--csv")) {
      csv_path = v;
    } else {
      int *opt = !strcmp(argv[i], "--images")          ? &images
                 : !strcmp(argv[i], "--batch")         ? &batch
                 : !strcmp(argv[i], "--big")           ? &big
                 : !strcmp(argv[i], "--producers")     ? &producers
                 : !strcmp(argv[i], "--inflight")      ? &inflight
                 : !strcmp(argv[i], "--api-jobs")      ? &api_jobs
                 : !strcmp(argv[i], "--parsers")       ? &parsers
                 : !strcmp(argv[i], "--profile-range") ? &profile_range
                 : !strcmp(argv[i], "--reps")          ? &reps
                                                       : NULL;
      if (opt) *opt = atoi(v);
      ok = opt != NULL;
    }
    if (!ok) {
      usage();
      return 2;
    }
  }
  if (images < 1 || batch < 2 || big < 0 || producers < 1 || producers > 32 || inflight < 1 ||
      api_jobs < 0 || parsers < 0 || parsers > 32 || reps < 1 || reps > AB_MAX_REPS) {
    printf(
        "gpu_bench: --images >= 1, --batch >= 2, --big >= 0, --producers 1..32, --inflight >= 1, "
        "--parsers 0..32, --reps 1..%d\n",
        AB_MAX_REPS);
    return 2;
  }
  if (csv_path && !csv_open(csv_path)) {
    printf("bench: cannot open %s\n", csv_path);
    return 2;
  }
  if (api_jobs)
    snprintf(g_setting, sizeof g_setting, "max_jobs=%d max_in_flight=%d", api_jobs, inflight);
  else
    snprintf(g_setting, sizeof g_setting, "max_in_flight=%d", inflight);
  ib_error err = {0};
  ib_executor_options opts = {.backend = IB_BACKEND_CUDA,
                              .gpu_bytes = 1024ull << 20,
                              .host_bytes = 1024ull << 20,
                              .max_in_flight = 2,
                              .host_threads = -1};
  ib_config *cfg = ib_cli_tool_options(&opts);
  if (!cfg) return 2;
  void *state = NULL;
  const ib_status opened = ib_backend_cuda.open(&opts, &state, &err);
  ib_config_destroy(cfg); /* read at open */
  if (opened != IB_OK) {
    printf("bench: %s\n", err.message);
    return 2;
  }
  if (!(cu = ib_cu_get(&err))) {
    printf("bench: %s\n", err.message);
    return 2;
  }
  if (profile_range && !profile_range_on()) {
    printf("bench: --profile-range: no cuProfilerStart/cuProfilerStop in libcuda.so.1\n");
    return 2;
  }
  printf("device: %s\n", ib_cuda_device_desc(state));
  CUdevice dev;
  int sms = 0, major = 0, minor = 0;
  CK(cu->cuDeviceGet(&dev, 0));
  CK(cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CK(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
  CUstream s;
  CK(cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  /* ---- 1. D2D copy vs fused chain, 4096² RGBA */
  const size_t N = 4096u * 4096u * 4u;
  CUdeviceptr a, b, par, tab;
  CK(cu->cuMemAlloc(&a, N));
  CK(cu->cuMemAlloc(&b, N));
  CK(cu->cuMemsetD8Async(a, 0x5a, N, s));
  copyctx cc = {b, a, N, NULL, 0};
  float copy_ms = time_ms(do_copy, &cc, s, 30);
  double copy_bw = 2.0 * N / (copy_ms * 1e-3) / 1e9;

  ib_kcache *kc = ib_kcache_new(ib_cli_cache_dir(), 256ull << 20, 2ull << 30);
  uint64_t per = (4096ull * 4096 / 4 + 255) / 256, capb = (uint64_t)sms * 8;
  Imgbatch__V1__Node n_inv = IMGBATCH__V1__NODE__INIT, n_col = IMGBATCH__V1__NODE__INIT,
                     n_tone = IMGBATCH__V1__NODE__INIT, n_med = IMGBATCH__V1__NODE__INIT,
                     n_ker = IMGBATCH__V1__NODE__INIT, n_gb = IMGBATCH__V1__NODE__INIT;
  Imgbatch__V1__InvertOp o_inv = IMGBATCH__V1__INVERT_OP__INIT;
  Imgbatch__V1__EnhanceOp o_col = IMGBATCH__V1__ENHANCE_OP__INIT;
  Imgbatch__V1__ToneOp o_tone = IMGBATCH__V1__TONE_OP__INIT;
  Imgbatch__V1__RankFilterOp o_med = IMGBATCH__V1__RANK_FILTER_OP__INIT;
  Imgbatch__V1__KernelOp o_ker = IMGBATCH__V1__KERNEL_OP__INIT;
  Imgbatch__V1__GaussianBlurOp o_gb = IMGBATCH__V1__GAUSSIAN_BLUR_OP__INIT;
  n_inv.op_case = IMGBATCH__V1__NODE__OP_INVERT, n_inv.invert = &o_inv;
  o_col.kind = IMGBATCH__V1__ENHANCE_KIND__COLOR;
  n_col.op_case = IMGBATCH__V1__NODE__OP_ENHANCE, n_col.enhance = &o_col;
  n_tone.op_case = IMGBATCH__V1__NODE__OP_TONE, n_tone.tone = &o_tone;
  o_med.size = 3, o_med.rank = 4;
  n_med.op_case = IMGBATCH__V1__NODE__OP_RANK_FILTER, n_med.rank_filter = &o_med;
  o_ker.size = 3, o_ker.n_kernel = 9;
  n_ker.op_case = IMGBATCH__V1__NODE__OP_KERNEL, n_ker.kernel = &o_ker;
  n_gb.op_case = IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR, n_gb.gaussian_blur = &o_gb;
  const ib_gstep P = bench_step(&n_inv, IB_MODE_RGBA), Col = bench_step(&n_col, IB_MODE_RGBA),
                 Tone = bench_step(&n_tone, IB_MODE_RGBA), Med = bench_step(&n_med, IB_MODE_RGBA),
                 Ker = bench_step(&n_ker, IB_MODE_RGBA);
  /* Brightness unfolded: the float enhance step (as Color's) with kind 0. */
  ib_gstep Bri = Col;
  Bri.a = IB_ENHANCE_BRIGHTNESS;
  struct {
    const char *name;
    ib_gstep steps[5];
    int n;
    float ms;
  } chains[] = {
      {"point>brightness>point (planner folds: 1 LUT)", {P}, 1, 0},
      {"point>brightness>point unfolded (3 steps)", {P, Bri, P}, 3, 0},
      {"color>point (float blend + luma + LUT)", {Col, P}, 2, 0},
      {"tone (Oklab, kernels/tone.h)", {Tone}, 1, 0},
      {"median 3x3 (rank head, 3x3 network)", {Med}, 1, 0},
      {"kernel 3x3 (convolve head)", {Ker}, 1, 0},
      {"color>point>brightness>tone>point (5-op mix)", {Col, P, Bri, Tone, P}, 5, 0},
      /* The mix less tone: what the fused chain costs around a compute-bound step. */
      {"color>point>brightness>point (the mix without tone)", {Col, P, Bri, P}, 4, 0},
  };
  static const char *const chain_ids[] = {"k_chain_fold", "k_chain_unfold3", "k_color_point",
                                          "k_tone",       "k_median3",       "k_kernel3",
                                          "k_mix5",       "k_mix4_notone"};
  for (size_t ci = 0; sec[1] && ci < sizeof chains / sizeof chains[0]; ci++) {
    ib_gchain ch = {0};
    for (int k = 0; k < chains[ci].n; k++) ib_gchain_push(&ch, &chains[ci].steps[k]);
    CUmodule mod = chain_module(kc, "bench.cu", &ch, arch);
    CUfunction f;
    CK(cu->cuModuleGetFunction(&f, mod, "ib_chain"));
    uint8_t params[4096];
    memset(params, 0, sizeof params);
    for (int k = 0; k < ch.n_steps; k++) {
      uint8_t *q = params + ch.steps[k].param_off;
      if (ch.steps[k].dev == P.dev)
        for (int i = 0; i < 1024; i++) q[i] = (uint8_t)((k ? (i & 255) & 0xf0 : 255 - (i & 255)));
      if (ch.steps[k].dev == Col.dev) {
        float alpha = 1.25f;
        memcpy(q, &alpha, 4);
      }
      if (ch.steps[k].dev == Med.dev) {
        int rk = 4;
        memcpy(q, &rk, 4);
      }
      if (ch.steps[k].dev == Ker.dev) {
        float kw[10] = {0.0625f, 0.125f,  0.0625f, 0.125f,  0.25f,
                        0.125f,  0.0625f, 0.125f,  0.0625f, 0.5f};
        memcpy(q, kw, sizeof kw);
      }
      if (ch.steps[k].dev == Tone.dev) {
        ib_tone_f32 t = ib_tone_prepare_f32(3.0f, 0.2f, 0.1f, -0.2f, 0.05f, 0.1f);
        memcpy(q, &t, sizeof t);
      }
    }
    CK(cu->cuMemAlloc(&par, sizeof params));
    CK(cu->cuMemcpyHtoDAsync(par, params, sizeof params, s));
    ib_gdesc d = {a, a, b, par, 4096, 4096, 4096, 4096, 1, 0, 4096, 4096};
    CK(cu->cuMemAlloc(&tab, sizeof d));
    CK(cu->cuMemcpyHtoDAsync(tab, &d, sizeof d, s));
    CK(cu->cuStreamSynchronize(s));
    kctx kk = {f, tab, (unsigned)(per < capb ? per : capb)};
    chains[ci].ms = time_ms(do_kernel, &kk, s, 30);
  }

  /* GaussianBlur(8) on 4096² RGBA: rows then columns, 3 box passes each. */
  float blur_ms = 0;
  if (sec[1]) {
    ib_gchain ch = {0};
    const ib_gstep G = bench_step(&n_gb, IB_MODE_RGBA);
    ib_gchain_push(&ch, &G);
    CUmodule mod = chain_module(kc, "blur.cu", &ch, arch);
    CUfunction fr, fc, fk;
    CK(cu->cuModuleGetFunction(&fr, mod, "ib_blur_rows"));
    CK(cu->cuModuleGetFunction(&fc, mod, "ib_blur_pass"));
    CK(cu->cuModuleGetFunction(&fk, mod, "ib_blur_cols"));
    int optin = 48 * 1024;
    CK(cu->cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                dev));
    CK(cu->cuFuncSetAttribute(fk, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin));
    float r = ib_gaussian_box_radius(8.0f, 3);
    ib_box_pass bp = ib_box_pass_for(r);
    const ib_blur_params prm = {3, 3, bp, bp};
    CUdeviceptr bpar, scratch, btab2, bsrc;
    CK(cu->cuMemAlloc(&bpar, sizeof prm));
    CK(cu->cuMemcpyHtoDAsync(bpar, &prm, sizeof prm, s));
    CK(cu->cuMemAlloc(&scratch, 2 * N));
    /* random pixels, so the two column paths' outputs can be compared */
    uint8_t *hsrc = malloc(N), *hout[2] = {malloc(N), malloc(N)};
    if (!hsrc || !hout[0] || !hout[1]) {
      fprintf(stderr, "gpu_bench: out of host memory\n");
      return 1;
    }
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < N; i++) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      hsrc[i] = (uint8_t)(x >> 11);
    }
    CK(cu->cuMemAlloc(&bsrc, N));
    CK(cu->cuMemcpyHtoDAsync(bsrc, hsrc, N, s));
    ib_gdesc d = {bsrc, scratch, b, bpar, 4096, 4096, 4096, 4096, 0, 0, 4096, 4096};
    CK(cu->cuMemAlloc(&btab2, sizeof d));
    CK(cu->cuMemcpyHtoDAsync(btab2, &d, sizeof d, s));
    CK(cu->cuStreamSynchronize(s));
    /* as blur_plan in op_blur.c: rows in shared memory (2 rows of
     * 16 KiB), then the 3 column passes in one ib_blur_cols launch (tile height
     * IB_BLUR_TH; other heights and the 3 global passes for comparison) */
    blur_ctx bc = {fr, fc, fk, btab2, (unsigned)(sms * 32), 2u * 4096u * 4u, 0};
    const int ths[] = {IB_BLUR_TH, 0, 64, 256, 512, -1};
    for (int i = 0; i < 6; i++) {
      bc.th = ths[i];
      if (bc.th < 0) {
        printf("  gauss8 %-32s %9.3f ms\n", "rows only (ib_blur_rows)",
               time_ms(do_blur, &bc, s, 10));
        continue;
      }
      if (bc.th && blur_cols_smem(bc.th) > (unsigned)optin) continue;
      CK(cu->cuMemsetD8Async(b, 0, N, s));
      do_blur(&bc, s);
      CK(cu->cuMemcpyDtoHAsync(hout[i == 0 ? 0 : 1], b, N, s));
      CK(cu->cuStreamSynchronize(s));
      const bool same = i == 0 || memcmp(hout[0], hout[1], N) == 0;
      const float ms = time_ms(do_blur, &bc, s, 10);
      if (i == 0) blur_ms = ms;
      printf("  gauss8 rows + columns %-17s %9.3f ms %s\n",
             bc.th ? (i == 0 ? "ib_blur_cols (prod.)" : "ib_blur_cols") : "3 x ib_blur_pass", ms,
             i == 0 ? ""
             : same ? "bytes equal"
                    : "BYTES DIFFER");
      if (bc.th) printf("    tile height %d, %u B shared\n", bc.th, blur_cols_smem(bc.th));
    }
    free(hsrc);
    free(hout[0]);
    free(hout[1]);
    cu->cuMemFree(bsrc);
    cu->cuMemFree(scratch);
  }

  /* ---- 2. PCIe */
  void *hbuf;
  CK(cu->cuMemHostAlloc(&hbuf, N, 0));
  memset(hbuf, 1, N);
  copyctx h2d = {a, 0, N, hbuf, 1}, d2h = {0, a, N, hbuf, 2};
  float h2d_ms = time_ms(do_copy, &h2d, s, 10), d2h_ms = time_ms(do_copy, &d2h, s, 10);
  double h2d_bw = N / (h2d_ms * 1e-3) / 1e9, d2h_bw = N / (d2h_ms * 1e-3) / 1e9;
  void *hbuf2;
  CK(cu->cuMemHostAlloc(&hbuf2, N, 0));
  bidir bd = {{a, 0, N, hbuf, 1}, {0, b, N, hbuf2, 2}, NULL, NULL, NULL};
  CK(cu->cuStreamCreate(&bd.s2, CU_STREAM_NON_BLOCKING));
  CK(cu->cuEventCreate(&bd.fork, CU_EVENT_DISABLE_TIMING));
  CK(cu->cuEventCreate(&bd.join, CU_EVENT_DISABLE_TIMING));
  double bidir_bw = N / (time_ms(do_bidir, &bd, s, 10) * 1e-3) / 1e9;
  CK(cu->cuStreamSynchronize(bd.s2));
  cu->cuEventDestroy(bd.fork);
  cu->cuEventDestroy(bd.join);
  cu->cuStreamDestroy(bd.s2);
  cu->cuMemFreeHost(hbuf2);

  /* ---- 5. the device pipeline alone: pixels already in pinned staging
   * (as when the decoder writes there) and read back into pinned staging;
   * H2D -> LUT kernel over a descriptor table -> D2H, two streams. */
  double pipe_small_ips = 0, pipe_big_ms = 0;
  if (sec[5]) {
    ib_gchain ch = {0};
    const ib_gstep P3 = bench_step(&n_inv, IB_MODE_RGB);
    ib_gchain_push(&ch, &P3);
    CUfunction f3, f4;
    CK(cu->cuModuleGetFunction(&f3, chain_module(kc, "pipe.cu", &ch, arch), "ib_chain"));
    ib_gchain ch4 = {0};
    ib_gchain_push(&ch4, &P);
    CK(cu->cuModuleGetFunction(&f4, chain_module(kc, "pipe4.cu", &ch4, arch), "ib_chain"));
    uint8_t table[1024];
    for (int i = 0; i < 1024; i++) table[i] = (uint8_t)(255 - (i & 255));
    CUdeviceptr dpar;
    CK(cu->cuMemAlloc(&dpar, sizeof table));
    CK(cu->cuMemcpyHtoDAsync(dpar, table, sizeof table, s));
    CUstream ps[2];
    CK(cu->cuStreamCreate(&ps[0], CU_STREAM_NON_BLOCKING));
    CK(cu->cuStreamCreate(&ps[1], CU_STREAM_NON_BLOCKING));
    /* small: B images of 256^2 RGB per submission */
    const size_t im = 256u * 256u * 3u;
    int B = batch;
    uint8_t *hin, *hout;
    CUdeviceptr din, dout, dtab;
    CK(cu->cuMemHostAlloc((void **)&hin, 2 * B * im, 0));
    CK(cu->cuMemHostAlloc((void **)&hout, 2 * B * im, 0));
    memset(hin, 7, 2 * B * im);
    CK(cu->cuMemAlloc(&din, 2 * B * im));
    CK(cu->cuMemAlloc(&dout, 2 * B * im));
    CK(cu->cuMemAlloc(&dtab, 2 * B * sizeof(ib_gdesc)));
    ib_gdesc *ht;
    CK(cu->cuMemHostAlloc((void **)&ht, 2 * B * sizeof(ib_gdesc), 0));
    for (int k = 0; k < 2 * B; k++)
      ht[k] = (ib_gdesc){din + k * im, din + k * im, dout + k * im, dpar, 256,
                         256,          256,          256,           1,    (uint32_t)k,
                         256,          256};
    CK(cu->cuMemcpyHtoDAsync(dtab, ht, 2 * B * sizeof(ib_gdesc), s));
    CK(cu->cuStreamSynchronize(s));
    unsigned gx = (unsigned)((256u * 256u / 4 + 255) / 256);
    int rounds = images / B;
    pipe_ctx small_pipe = {.f = f3,
                           .gx = gx,
                           .gy = (unsigned)B,
                           .hin = hin,
                           .hout = hout,
                           .din = din,
                           .dout = dout,
                           .tab = dtab,
                           .bytes = B * im,
                           .tab_bytes = B * sizeof(ib_gdesc)};
    pipe_small_ips = rounds * B / pipe_s(&small_pipe, ps, rounds);
    if (hout[0] != 255 - 7 || hout[2 * B * im - 1] != 255 - 7) {
      printf("MISMATCH pipeline only 256^2: output is not the inverted input\n");
      return 1;
    }
    /* big: 4096^2 RGBA, one image per submission */
    uint8_t *bin, *bout;
    CUdeviceptr bdin, bdout, btab;
    CK(cu->cuMemHostAlloc((void **)&bin, 2 * N, 0));
    CK(cu->cuMemHostAlloc((void **)&bout, 2 * N, 0));
    memset(bin, 9, 2 * N);
    CK(cu->cuMemAlloc(&bdin, 2 * N));
    CK(cu->cuMemAlloc(&bdout, 2 * N));
    CK(cu->cuMemAlloc(&btab, 2 * sizeof(ib_gdesc)));
    ib_gdesc bt[2];
    for (int k = 0; k < 2; k++)
      bt[k] =
          (ib_gdesc){bdin + k * N, bdin + k * N, bdout + k * N, dpar, 4096, 4096, 4096, 4096, 1, 0,
                     4096,         4096};
    CK(cu->cuMemcpyHtoDAsync(btab, bt, sizeof bt, s));
    CK(cu->cuStreamSynchronize(s));
    unsigned bgx = (unsigned)(per < capb ? per : capb);
    int nb2 = 16;
    pipe_ctx big_pipe = {.f = f4,
                         .gx = bgx,
                         .gy = 1,
                         .hin = bin,
                         .hout = bout,
                         .din = bdin,
                         .dout = bdout,
                         .tab = btab,
                         .bytes = N,
                         .tab_bytes = sizeof(ib_gdesc)};
    pipe_big_ms = pipe_s(&big_pipe, ps, nb2) * 1e3 / nb2;
    if (bout[0] != 255 - 9 || bout[2 * N - 1] != 255 - 9) {
      printf("MISMATCH pipeline only 4096^2: output is not the inverted input\n");
      return 1;
    }
    /* pinned memory back before the executor sections pin their own */
    CK(cu->cuMemFreeHost(hin));
    CK(cu->cuMemFreeHost(hout));
    CK(cu->cuMemFreeHost(ht));
    CK(cu->cuMemFreeHost(bin));
    CK(cu->cuMemFreeHost(bout));
    CUdeviceptr dfree[] = {din, dout, dtab, bdin, bdout, btab, dpar};
    for (size_t k = 0; k < sizeof dfree / sizeof dfree[0]; k++) CK(cu->cuMemFree(dfree[k]));
    CK(cu->cuStreamDestroy(ps[0]));
    CK(cu->cuStreamDestroy(ps[1]));
  }
  CK(cu->cuMemFreeHost(hbuf));
  CK(cu->cuMemFree(a));
  CK(cu->cuMemFree(b));
  floors fl = {h2d_bw, d2h_bw, bidir_bw};

  ab_case *cs = calloc((size_t)(mx.n_sides * mx.n_modes * mx.n_fams), sizeof *cs);
  if (!cs) return 1;
  int ncs = sec[3] ? run_api_families(cs, big, producers, inflight, api_jobs, reps, &mx) : 0;
  ab_case small = {0};
  if (sec[4]) small = run_api_small(images, batch, producers, parsers);
  enum { n_chains = sizeof chains / sizeof chains[0] };
  float chains_ms[n_chains];
  for (int ci = 0; ci < n_chains; ci++) chains_ms[ci] = chains[ci].ms;
  csv_rows(&fl, copy_ms, copy_bw, sec, chain_ids, chains_ms, n_chains, blur_ms, cs, ncs, &small,
           pipe_big_ms, pipe_small_ips, producers, batch, parsers);

  printf("\n%-44s %12s %12s\n", "measure", "value", "target");
  printf("%-44s %9.3f ms %12s\n", "D2D copy 64 MiB", copy_ms, "");
  printf("%-44s %7.0f GB/s %12s\n", "  copy bandwidth (read+write)", copy_bw, "");
  for (size_t ci = 0; sec[1] && ci < sizeof chains / sizeof chains[0]; ci++) {
    printf("chain 4096^2 RGBA %-46s %7.3f ms %6.1f %% of copy bw %s\n", chains[ci].name,
           chains[ci].ms, 100.0 * copy_ms / chains[ci].ms, ci == 0 ? "(target >= 85 %)" : "");
  }
  if (sec[1])
    printf("%-44s %9.3f ms %12s\n", "GaussianBlur(8) 4096^2 RGBA (rows + columns)", blur_ms, "");
  printf("%-44s %7.1f GB/s %12s\n", "pinned H2D", h2d_bw, "");
  printf("%-44s %7.1f GB/s %12s\n", "pinned D2H", d2h_bw, "");
  printf("%-44s %7.1f GB/s %12s\n", "pinned H2D + D2H at once, each way", bidir_bw, "");
  double floor_ms = floor_serial_ms(&fl, N, N), floor_ov_ms = floor_overlap_ms(&fl, N, N);
  printf("%-44s %9.3f ms %12s\n", "PCIe floor 4096^2 RGBA (H2D + D2H serial)", floor_ms, "");
  printf("%-44s %9.3f ms %12s\n", "  (both directions overlapped)", floor_ov_ms, "");
  printf("%-44s %9.3f ms %12s\n", "  (overlapped, at the measured H2D+D2H rate)",
         floor_bidir_ms(&fl, N, N), "");
  if (sec[4]) {
    printf("%-44s %10.0f/s %12s\n", "256^2 RGB invert API zero copy, images/s", 1e3 / small.zc.ms,
           ">= 150000");
    printf("%-44s %9.4f ms %12s\n", "  parse_buffer per image", small.zc.parse_ms, "");
    if (parsers > 0) {
      char lp[64];
      snprintf(lp, sizeof lp, "  ... zero copy, %d parser threads", parsers);
      printf("%-44s %10.0f/s %12s\n", lp, 1e3 / small.zc_parsers.ms, ">= 200000");
    }
    printf("%-44s %9.4f ms %12s\n", "  ingest copy per image (off the clock)", small.zc.copy_ms,
           "");
    char lab[64];
    snprintf(lab, sizeof lab, "  ... zero copy, %d producers", producers);
    printf("%-44s %10.0f/s %12s\n", lab, 1e3 / small.zc_threaded.ms, ">= 150000");
    printf("%-44s %10.0f/s %12s\n", "  ... copy-parse, 1 thread", 1e3 / small.copy_one.ms, "");
    snprintf(lab, sizeof lab, "  ... copy-parse, %d threads", producers);
    printf("%-44s %10.0f/s %12s\n", lab, 1e3 / small.copy_threaded.ms, "");
    snprintf(lab, sizeof lab, "  ... copy-parse, %d threads", 2 * producers);
    printf("%-44s %10.0f/s %12s\n", lab, 1e3 / small.copy_threaded2.ms, "");
    printf("%-44s %9.4f ms %12s\n", "  copy-parse per image (1 thread)", small.copy_one.parse_ms,
           "");
    printf("%-44s %10.0f/s %12s\n", "  PCIe floor, images/s (overlapped)",
           1e3 / floor_overlap_ms(&fl, small.in_bytes, small.out_bytes), "");
  }
  if (sec[5]) {
    printf("%-44s %9.3f ms %12s\n", "pipeline only (pinned->pinned) 4096^2 RGBA", pipe_big_ms, "");
    printf("%-44s %11.2fx %12s\n", "  pipeline per image / serial floor", pipe_big_ms / floor_ms,
           "");
    printf("%-44s %11.2fx %12s\n", "  pipeline per image / overlapped floor",
           pipe_big_ms / floor_ov_ms, "<= 1.25x");
    printf("%-44s %10.0f/s %12s\n", "pipeline only 256^2 RGB invert, images/s", pipe_small_ips,
           ">= 150000");
  }
  print_api_table(cs, ncs, &fl, producers);
  free(cs);
  ib_backend_cuda.close(state);
  return 0;
}
