/*
 * storm_check - the compile tier's latency targets on the GPU, through the public
 * executor API (ib_executor_run with a timed input callback, as a worker
 * consumes a topic):
 *
 *  A. Compile storm. Jobs arrive open-loop at --rate per second (0: one at
 *     a time), 256^2 RGB pointwise chains. Warm phase: --warm jobs of ~10
 *     known signatures (compiled before it). Storm phase: --storm jobs of
 *     the same stream, but 1 in --every has a signature never seen before
 *     (a random pointwise chain whose every stage signature is new, in a
 *     fresh cache directory). Latency = result delivered - scheduled
 *     arrival, so a job queued behind a compile counts the wait. Reported:
 *     p50/p99 of the known jobs in each phase, their p99 ratio (target
 *     <= 1.5), p50/max of the new-signature jobs, and the executor's
 *     counters (jobs_waited_compile: target 0 with the tier). Run twice:
 *     compile_threads 0 (compile inline) and --threads (tier on).
 *     --storm-heads 1: the new-signature jobs are heads the interpreter
 *     cannot run (gathers, blurs): with the tier they are parked until
 *     their kernel is compiled (jobs_waited_compile counts them), and the
 *     known jobs around them must not wait for those compiles.
 *  B. First result of a new pointwise signature from an empty cache:
 *     executor created on a fresh cache directory (its start-up, which
 *     builds the interpreter module, timed apart), then --first brand-new
 *     signatures one at a time, submit -> result (target <= 20 ms with the
 *     tier; the inline compile's figure beside it).
 *
 *  C. Compile queue backpressure: --heads jobs whose heads the interpreter
 *     cannot run (gathers, blurs), each a new signature, arriving at the
 *     rate into a tier whose compile queue holds --head-queue: admission
 *     answers QueueFull past it (rejected_queue_full), the run stream
 *     waits for a compile and admits again, and every job completes.
 *
 * Bytes: every new-signature result and every --verify'th known one is
 * compared with the CPU reference (ib_cpu_execute) after its phase.
 *
 *   storm_check [--warm N] [--storm N] [--every K] [--rate R] [--threads T]
 *               [--first K] [--heads N] [--head-queue Q] [--side S]
 *               [--verify K] [--seed S] [--cache-root DIR] [--log FILE]
 *               [--cpu-only 1] [--storm-heads 1] [--inline 0]
 *
 * Prints per-run lines, then a table with MET/MISSED per target. Exit 0
 * unless a result failed or differed from the CPU (1); 2 when no CUDA
 * driver or device is there. --cpu-only 1 runs the same on the CPU
 * backend (checks the tool itself; no compile, targets not meaningful).
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cpu/cpu_backend.h"
#include "gpu/cuda_probe.h"
#include "gpu/gplan.h"
#include "gpu/interp.h"
#include "tools/jobgen.h"

static FILE *logf_;

typedef struct cfg {
  int warm, storm, every, threads, first, side, verify, cpu_only, heads, head_queue, storm_heads,
      inline_run;
  double rate;
  uint64_t seed;
  const char *cache_root;
} cfg;

/* ------------------------------------------------------------ jobs */

/* A packed Job (as a producer sends it) and, once computed, its CPU bytes. */
typedef struct pjob {
  uint8_t *buf;
  size_t len;
  char label[120];
  int ref_done;
  ib_status ref_st;
  ib_image ref;
} pjob;

typedef struct sigset {
  char **s;
  size_t n, cap;
} sigset;

static int sig_has(const sigset *ss, const char *sig) {
  for (size_t i = 0; i < ss->n; i++)
    if (!strcmp(ss->s[i], sig)) return 1;
  return 0;
}
static void sig_add(sigset *ss, const char *sig) {
  if (sig_has(ss, sig)) return;
  if (ss->n == ss->cap) {
    ss->cap = ss->cap ? 2 * ss->cap : 64;
    ss->s = realloc(ss->s, ss->cap * sizeof *ss->s);
  }
  ss->s[ss->n++] = strdup(sig);
}

/* The stage signatures of a job (the kernels it needs); 0 when it does not
 * plan. */
static int job_sigs_heads(const ib_graph *g, sigset *out, int *heads) {
  ib_gplan plan;
  ib_error err = {0};
  if (ib_gplan_build(g, &plan, &err) != IB_OK) {
    fprintf(logf_, "unplanned: %s\n", err.message);
    return 0;
  }
  for (int s = 0; s < plan.n_stages; s++) {
    char sig[512];
    ib_gchain_signature(&plan.stages[s].chain, sig, sizeof sig);
    sig_add(out, sig);
    if (heads) *heads += !ib_interp_can_run(&plan.stages[s].chain);
  }
  ib_gplan_free(&plan);
  return 1;
}

static int job_sigs(const ib_graph *g, sigset *out) { return job_sigs_heads(g, out, NULL); }

static void sigset_free(sigset *ss) {
  for (size_t i = 0; i < ss->n; i++) free(ss->s[i]);
  free(ss->s);
  *ss = (sigset){0};
}

static int pack_into(jg_job *j, pjob *p) {
  p->buf = jg_pack(j, &p->len);
  return p->buf != NULL;
}

/* The known signatures: ten recipes of RGB pointwise chains (parameters
 * and pixels differ from job to job, the kernels do not). */
static const int recipes[10][3] = {{JG_INVERT, -1, -1},         {JG_BRIGHTNESS, -1, -1},
                                   {JG_CONTRAST, -1, -1},       {JG_COLOR, JG_BRIGHTNESS, -1},
                                   {JG_CONVERT, -1, -1},        {JG_TONE, -1, -1},
                                   {JG_POINT, JG_CONTRAST, -1}, {JG_BLEND, -1, -1},
                                   {JG_CHOPS, -1, -1},          {JG_GETCHANNEL, JG_BRIGHTNESS, -1}};

static void make_known(jg_job *j, jg_arena *a, jg_rng *r, int recipe, uint32_t side, uint64_t key,
                       pjob *p) {
  jg_begin(j, a, r, IB_MODE_RGB, side, side, key);
  int prev = 0;
  ib_mode m = IB_MODE_RGB;
  int lw = snprintf(p->label, sizeof p->label, "known #%d:", recipe);
  for (int k = 0; k < 3 && recipes[recipe][k] >= 0; k++) {
    const int op = recipes[recipe][k];
    /* convert: to L; chops: subtract (sub 0 picks the first function) */
    prev = jg_op(j, r, op, prev, m, side, side, 0);
    if (op == JG_BLEND) j->nodes[prev]->blend->alpha = 0.25 + jg_unit(r) * 0.5;
    if (op == JG_CHOPS) { /* the same size, so the kernel shape stays */
      Imgbatch__V1__Source *s2 = j->extra[j->job.n_extra_sources - 1];
      s2->raw->width = s2->raw->height = side;
      s2->raw->data.len = (size_t)side * side * 3;
      s2->raw->data.data = jg_alloc(a, s2->raw->data.len);
      for (size_t i = 0; i < s2->raw->data.len; i++) s2->raw->data.data[i] = (uint8_t)jg_u32(r);
    }
    if (op == JG_CONVERT || op == JG_GETCHANNEL) m = IB_MODE_L;
    lw += snprintf(p->label + lw, sizeof p->label - (size_t)lw, " %s", jg_names[op]);
  }
}

/* A random pointwise chain on an RGB side^2 source whose every stage
 * signature is outside `seen` (added to it); 0 when none was found. */
static int make_new(jg_job *j, jg_arena *a, jg_rng *r, uint32_t side, uint64_t key, sigset *seen,
                    int head, pjob *p) {
  /* Heads with a kernel of their own (gathers, passes); jobgen.h lists
   * them after the pointwise ops. */
  static const int head_ops[] = {JG_TRANSPOSE, JG_EXPAND,  JG_RESIZE, JG_RANK,
                                 JG_KERNEL,    JG_BOXBLUR, JG_GAUSS};
  for (int attempt = 0; attempt < 500; attempt++) {
    jg_begin(j, a, r, IB_MODE_RGB, side, side, key);
    ib_mode m = IB_MODE_RGB;
    uint32_t w = side, h = side;
    int prev = 0, len = head ? 2 + (int)jg_below(r, 4) : 2 + (int)jg_below(r, 7);
    int lw = snprintf(p->label, sizeof p->label, head ? "new head:" : "new:");
    for (int s = 0; s < len; s++) {
      int op;
      if (head && s == 0)
        op = head_ops[jg_below(r, sizeof head_ops / sizeof head_ops[0])];
      else
        do op = (int)jg_below(r, JG_BLEND + 1);
        while (!jg_admitted(op, m));
      prev = jg_chain_op(j, r, op, prev, &m, &w, &h);
      if (lw < (int)sizeof p->label)
        lw += snprintf(p->label + lw, sizeof p->label - (size_t)lw, " %s", jg_names[op]);
    }
    ib_error err = {0};
    ib_graph *g = jg_finish(j, &err);
    if (!g) continue;
    sigset mine = {0};
    int heads = 0;
    int ok = job_sigs_heads(g, &mine, &heads) && mine.n > 0 && (!head || heads > 0);
    for (size_t i = 0; ok && i < mine.n; i++) ok = !sig_has(seen, mine.s[i]);
    ib_graph_free(g);
    if (ok) {
      for (size_t i = 0; i < mine.n; i++) sig_add(seen, mine.s[i]);
      sigset_free(&mine);
      return pack_into(j, p);
    }
    sigset_free(&mine);
  }
  return 0;
}

/* ------------------------------------------------------------ timing */

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_until(uint64_t t) {
  uint64_t n = now_us();
  if (t <= n) return;
  struct timespec ts = {(time_t)((t - n) / 1000000u), (long)((t - n) % 1000000u) * 1000};
  nanosleep(&ts, NULL);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct dist {
  size_t n;
  double p50, p99, max; /* ms */
} dist;

static dist dist_of(const uint64_t *v, size_t n) {
  dist d = {.n = n};
  if (!n) return d;
  uint64_t *s = malloc(n * sizeof *s);
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_u64);
  d.p50 = (double)s[(n - 1) / 2] / 1e3;
  d.p99 = (double)s[(size_t)((double)(n - 1) * 0.99)] / 1e3;
  d.max = (double)s[n - 1] / 1e3;
  free(s);
  return d;
}

/* ------------------------------------------------------------ a phase */

/* One job of a stream: which packed job, whether its signature is new. */
typedef struct slot {
  pjob *pj;
  int is_new, sample;
  uint64_t arrival, latency;
  int done, failed;
  ib_image got; /* sampled: a copy of the result's bytes */
} slot;

typedef struct feed {
  ib_executor *ex;
  slot *sl;
  size_t n, next, outstanding;
  uint64_t t0, interval_us; /* interval 0: one job at a time */
} feed;

static ib_status feed_next(void *user, ib_input *in, ib_error *err) {
  feed *f = user;
  if (f->next == f->n) return IB_END;
  slot *s = &f->sl[f->next];
  const uint64_t now = now_us();
  if (f->interval_us) {
    s->arrival = f->t0 + f->next * f->interval_us;
    if (now < s->arrival) return IB_AGAIN;
  } else {
    if (f->outstanding) return IB_AGAIN;
    s->arrival = now;
  }
  ib_status st = ib_executor_parse(f->ex, s->pj->buf, s->pj->len, NULL, &in->graph, NULL, err);
  in->tag = (void *)(uintptr_t)(f->next + 1);
  f->next++;
  f->outstanding++;
  return st;
}

typedef struct phase_out {
  int failed; /* results that were errors */
  double wall_s;
} phase_out;

/* Runs `sl` through `ex` at the rate; fills each slot's latency. */
static phase_out run_phase(ib_executor *ex, slot *sl, size_t n, double rate, const char *what) {
  phase_out po = {0};
  feed f = {.ex = ex, .sl = sl, .n = n, .interval_us = rate > 0 ? (uint64_t)(1e6 / rate) : 0};
  f.t0 = now_us() + 1000;
  ib_results *rs = NULL;
  if (ib_executor_run(ex, feed_next, &f, &rs) != IB_OK) {
    fprintf(logf_, "FAIL %s: ib_executor_run\n", what);
    po.failed = (int)n;
    return po;
  }
  for (;;) {
    ib_result res;
    ib_status st = ib_results_next(rs, &res);
    if (st == IB_AGAIN) {
      if (f.interval_us && f.next < n) sleep_until(f.t0 + f.next * f.interval_us);
      continue;
    }
    if (st == IB_END) break;
    if (st != IB_OK) {
      fprintf(logf_, "FAIL %s: ib_results_next: %s\n", what, ib_status_name(st));
      po.failed++;
      break;
    }
    const uint64_t t = now_us();
    const size_t idx = (size_t)(uintptr_t)res.tag;
    if (idx == 0 || idx > n) {
      fprintf(logf_, "FAIL %s: result without its input (%s)\n", what,
              res.ok ? "ok" : res.error.message);
      po.failed++;
      ib_result_free(&res);
      continue;
    }
    slot *s = &sl[idx - 1];
    f.outstanding--;
    s->latency = t - s->arrival;
    s->done = 1;
    if (!res.ok || res.kind != IB_RESULT_IMAGE) {
      s->failed = 1;
      po.failed++;
      fprintf(logf_, "FAIL %s job %zu (%s): %s\n", what, idx, s->pj->label,
              res.ok ? "not an image" : res.error.message);
    } else if (s->sample) {
      const size_t b = ib_image_bytes(&res.image);
      if (ib_image_alloc(&s->got, res.image.mode, res.image.width, res.image.height) == IB_OK)
        memcpy(s->got.data, res.image.data, b);
    }
    ib_result_free(&res);
  }
  ib_results_close(rs);
  po.wall_s = (double)(now_us() - f.t0) / 1e6;
  return po;
}

/* Compares the sampled results with the CPU; returns the differing count. */
static int verify(slot *sl, size_t n, int *checked) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    slot *s = &sl[i];
    if (!s->sample || s->failed || !s->got.data) continue;
    pjob *p = s->pj;
    if (!p->ref_done) {
      ib_error err = {0};
      ib_graph *g = NULL;
      ib_key k = {0};
      p->ref_st = ib_graph_parse(p->buf, p->len, &(ib_graph_limits){0}, &g, &k, &err);
      ib_key_clear(&k);
      if (p->ref_st == IB_OK) p->ref_st = ib_cpu_execute(g, &p->ref, &err);
      if (p->ref_st != IB_OK) fprintf(logf_, "FAIL cpu %s: %s\n", p->label, err.message);
      ib_graph_free(g);
      p->ref_done = 1;
    }
    (*checked)++;
    const ib_image *a = &p->ref, *b = &s->got;
    if (p->ref_st != IB_OK || a->mode != b->mode || a->width != b->width ||
        a->height != b->height || memcmp(a->data, b->data, ib_image_bytes(a)) != 0) {
      bad++;
      fprintf(logf_, "DIFF %s (stream job %zu)\n", p->label, i + 1);
    }
    ib_image_release(&s->got);
  }
  return bad;
}

/* ------------------------------------------------------------ executors */

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* A fresh, empty cache directory under the root (removed by rm_dir). */
static char *fresh_dir(const cfg *c) {
  char *d = malloc(strlen(c->cache_root) + 32);
  sprintf(d, "%s/storm-XXXXXX", c->cache_root);
  if (!mkdtemp(d)) {
    perror("storm_check: mkdtemp");
    free(d);
    return NULL;
  }
  return d;
}
static void rm_dir(char *d) {
  if (d) nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(d);
}

static ib_executor *make_executor(const cfg *c, int threads, uint32_t queue, const char *dir,
                                  double *create_ms) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.backend = c->cpu_only ? IB_BACKEND_CPU : IB_BACKEND_CUDA;
  ib_config *cfg = ib_cli_tool_options(&o);
  if (!cfg) return NULL;
  o.cache_dir = dir;
  o.compile_threads = threads;
  ib_error err = {0};
  char n[16];
  snprintf(n, sizeof n, "%u", queue);
  if (queue && ib_config_set(cfg, "compile_queue", n, &err) != IB_OK) {
    printf("storm_check: %s\n", err.message);
    ib_config_destroy(cfg);
    return NULL;
  }
  ib_executor *ex = NULL;
  const uint64_t t0 = now_us();
  const ib_status st = ib_executor_create(&o, &ex, &err);
  ib_config_destroy(cfg); /* the executor keeps its own copy */
  if (st != IB_OK) {
    printf("storm_check: executor (compile_threads %d): %s\n", threads, err.message);
    return NULL;
  }
  if (create_ms) *create_ms = (double)(now_us() - t0) / 1e3;
  return ex;
}

/* Waits (up to 60 s) until the compile pool has nothing queued or running. */
static void pool_idle(ib_executor *ex) {
  for (int i = 0; i < 6000; i++) {
    ib_executor_counters k;
    ib_executor_counters_get(ex, &k);
    if (!k.compile_queue_depth) return;
    sleep_until(now_us() + 10000);
  }
}

/* ------------------------------------------------------------ the runs */

typedef struct storm_res {
  int ok;
  int threads;
  dist warm, storm_known, storm_new;
  ib_executor_counters before, after; /* storm phase */
  int failed, checked, differ;
  double warm_wall, storm_wall;
} storm_res;

static slot *stream(const cfg *c, pjob *known, int n_known, pjob *fresh, int n_fresh, int storm,
                    size_t n, uint64_t seed) {
  slot *sl = calloc(n, sizeof *sl);
  jg_rng r = {seed};
  int nf = 0;
  for (size_t i = 0; i < n; i++) {
    sl[i].is_new =
        storm && c->every > 0 && (int)(i % (size_t)c->every) == c->every / 2 && nf < n_fresh;
    sl[i].pj = sl[i].is_new ? &fresh[nf++] : &known[jg_below(&r, (uint32_t)n_known)];
    sl[i].sample = sl[i].is_new || (c->verify > 0 && i % (size_t)c->verify == 0);
  }
  return sl;
}

static uint64_t *lat_of(const slot *sl, size_t n, int want_new, size_t *m) {
  uint64_t *v = malloc((n ? n : 1) * sizeof *v);
  *m = 0;
  for (size_t i = 0; i < n; i++)
    if (sl[i].done && !sl[i].failed && sl[i].is_new == want_new) v[(*m)++] = sl[i].latency;
  return v;
}

static storm_res storm_run(const cfg *c, int threads, pjob *known, int n_known, pjob *fresh,
                           int n_fresh) {
  storm_res sr = {.threads = threads};
  char *dir = fresh_dir(c);
  ib_executor *ex = dir ? make_executor(c, threads, 0, dir, NULL) : NULL;
  if (!ex) {
    rm_dir(dir);
    return sr;
  }
  /* Prime: every known job twice, the pool idle between, so the warm phase
   * runs the specialised kernels (with the tier, the second pass takes the
   * modules the pool compiled). */
  slot *pr = calloc((size_t)n_known, sizeof *pr);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < n_known; i++) pr[i] = (slot){.pj = &known[i]};
    sr.failed += run_phase(ex, pr, (size_t)n_known, 0, "prime").failed;
    pool_idle(ex);
  }
  free(pr);
  slot *w = stream(c, known, n_known, fresh, n_fresh, 0, (size_t)c->warm, c->seed + 1);
  phase_out po = run_phase(ex, w, (size_t)c->warm, c->rate, "warm");
  sr.failed += po.failed;
  sr.warm_wall = po.wall_s;
  ib_executor_counters_get(ex, &sr.before);
  slot *s = stream(c, known, n_known, fresh, n_fresh, 1, (size_t)c->storm, c->seed + 2);
  po = run_phase(ex, s, (size_t)c->storm, c->rate, "storm");
  sr.failed += po.failed;
  sr.storm_wall = po.wall_s;
  ib_executor_counters_get(ex, &sr.after);
  size_t m;
  uint64_t *v = lat_of(w, (size_t)c->warm, 0, &m);
  sr.warm = dist_of(v, m);
  free(v);
  v = lat_of(s, (size_t)c->storm, 0, &m);
  sr.storm_known = dist_of(v, m);
  free(v);
  v = lat_of(s, (size_t)c->storm, 1, &m);
  sr.storm_new = dist_of(v, m);
  free(v);
  sr.differ = verify(w, (size_t)c->warm, &sr.checked) + verify(s, (size_t)c->storm, &sr.checked);
  free(w);
  free(s);
  ib_executor_destroy(ex);
  rm_dir(dir);
  sr.ok = 1;
  const ib_executor_counters *a = &sr.after, *b = &sr.before;
  printf(
      "storm compile_threads=%d: warm %zu known p50 %.3f p99 %.3f ms (%.1f s); storm %zu known "
      "p50 %.3f p99 %.3f ms, %zu new p50 %.3f max %.3f ms (%.1f s); storm counters: %llu nvrtc "
      "compiles (%.1f s), %llu from disk, %llu waited for a compile, %llu interpreter stages, "
      "%llu at the pool's bound; %d failed, %d/%d sampled results differ\n",
      threads, sr.warm.n, sr.warm.p50, sr.warm.p99, sr.warm_wall, sr.storm_known.n,
      sr.storm_known.p50, sr.storm_known.p99, sr.storm_new.n, sr.storm_new.p50, sr.storm_new.max,
      sr.storm_wall, (unsigned long long)(a->nvrtc_compiles - b->nvrtc_compiles),
      (double)(a->nvrtc_compile_us - b->nvrtc_compile_us) / 1e6,
      (unsigned long long)(a->module_cache_hits_disk - b->module_cache_hits_disk),
      (unsigned long long)(a->jobs_waited_compile - b->jobs_waited_compile),
      (unsigned long long)(a->interp_executions - b->interp_executions),
      (unsigned long long)(a->compile_queue_full - b->compile_queue_full), sr.failed, sr.differ,
      sr.checked);
  fflush(stdout);
  return sr;
}

typedef struct first_res {
  int ok;
  double create_ms, first_job_ms;
  dist lat;
  int failed, checked, differ;
  uint64_t waited, interp, compiles;
} first_res;

/* B: a fresh cache, then each of `n` new signatures alone, submit ->
 * result. One known job runs first (its latency reported apart): the
 * executor's first job also pays its memory pools' first allocations and
 * the first kernel load, which a running worker has behind it. */
static first_res first_run(const cfg *c, int threads, pjob *warmup, pjob *fresh, int n) {
  first_res fr = {0};
  char *dir = fresh_dir(c);
  ib_executor *ex = dir ? make_executor(c, threads, 0, dir, &fr.create_ms) : NULL;
  if (!ex) {
    rm_dir(dir);
    return fr;
  }
  slot w = {.pj = warmup, .sample = 1};
  fr.failed = run_phase(ex, &w, 1, 0, "first job").failed;
  fr.first_job_ms = (double)w.latency / 1e3;
  fr.differ = verify(&w, 1, &fr.checked);
  pool_idle(ex);
  ib_executor_counters k0;
  ib_executor_counters_get(ex, &k0);
  slot *sl = calloc((size_t)n, sizeof *sl);
  for (int i = 0; i < n; i++) sl[i] = (slot){.pj = &fresh[i], .is_new = 1, .sample = 1};
  fr.failed += run_phase(ex, sl, (size_t)n, 0, "first").failed;
  size_t m;
  uint64_t *v = lat_of(sl, (size_t)n, 1, &m);
  fr.lat = dist_of(v, m);
  free(v);
  ib_executor_counters k;
  ib_executor_counters_get(ex, &k);
  fr.waited = k.jobs_waited_compile - k0.jobs_waited_compile;
  fr.interp = k.interp_executions - k0.interp_executions;
  fr.compiles = k.nvrtc_compiles - k0.nvrtc_compiles;
  fr.differ += verify(sl, (size_t)n, &fr.checked);
  free(sl);
  ib_executor_destroy(ex);
  rm_dir(dir);
  fr.ok = 1;
  printf(
      "first result compile_threads=%d: executor start %.0f ms (empty cache), its first job "
      "%.3f ms; then %zu new signatures one at a time: p50 %.3f max %.3f ms (%llu nvrtc "
      "compiles meanwhile, %llu waited for a compile, %llu interpreter stages); %d failed, %d/%d "
      "differ\n",
      threads, fr.create_ms, fr.first_job_ms, fr.lat.n, fr.lat.p50, fr.lat.max,
      (unsigned long long)fr.compiles, (unsigned long long)fr.waited, (unsigned long long)fr.interp,
      fr.failed, fr.differ, fr.checked);
  fflush(stdout);
  return fr;
}

typedef struct head_res {
  int ok;
  dist lat;
  int failed, checked, differ;
  ib_executor_counters k;
} head_res;

/* C: new signatures of heads the interpreter cannot run, arriving at the
 * rate into a tier with a small compile queue: admission answers
 * QueueFull past its bound (counted in rejected_queue_full and
 * compile_queue_full), the run stream waits for compiles and admits
 * again; every job still completes with the CPU's bytes. */
static head_res head_run(const cfg *c, pjob *heads, int n) {
  head_res hr = {0};
  char *dir = fresh_dir(c);
  ib_executor *ex = dir ? make_executor(c, c->threads, (uint32_t)c->head_queue, dir, NULL) : NULL;
  if (!ex) {
    rm_dir(dir);
    return hr;
  }
  slot *sl = calloc((size_t)n, sizeof *sl);
  for (int i = 0; i < n; i++) sl[i] = (slot){.pj = &heads[i], .is_new = 1, .sample = 1};
  hr.failed = run_phase(ex, sl, (size_t)n, c->rate, "heads").failed;
  size_t m;
  uint64_t *v = lat_of(sl, (size_t)n, 1, &m);
  hr.lat = dist_of(v, m);
  free(v);
  ib_executor_counters_get(ex, &hr.k);
  hr.differ = verify(sl, (size_t)n, &hr.checked);
  free(sl);
  ib_executor_destroy(ex);
  rm_dir(dir);
  hr.ok = 1;
  printf(
      "head storm compile_threads=%d compile_queue=%d: %zu jobs p50 %.3f max %.3f ms; %llu "
      "QueueFull at admission (%llu at the pool's bound), %llu waited for a compile, %llu "
      "nvrtc compiles; %d failed, %d/%d differ\n",
      c->threads, c->head_queue, hr.lat.n, hr.lat.p50, hr.lat.max,
      (unsigned long long)hr.k.rejected_queue_full, (unsigned long long)hr.k.compile_queue_full,
      (unsigned long long)hr.k.jobs_waited_compile, (unsigned long long)hr.k.nvrtc_compiles,
      hr.failed, hr.differ, hr.checked);
  fflush(stdout);
  return hr;
}

static const char *met(int ok) { return ok ? "MET" : "MISSED"; }

int main(int argc, char **argv) {
  cfg c = {.warm = 2000,
           .storm = 2000,
           .every = 10,
           .rate = 500,
           .threads = 2,
           .first = 5,
           .side = 256,
           .verify = 10,
           .seed = 14,
           .heads = 40,
           .head_queue = 4,
           .inline_run = 1,
           .cache_root = "/tmp"};
  const char *log_path = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--warm"))
      c.warm = atoi(v);
    else if (!strcmp(k, "--storm"))
      c.storm = atoi(v);
    else if (!strcmp(k, "--every"))
      c.every = atoi(v);
    else if (!strcmp(k, "--rate"))
      c.rate = atof(v);
    else if (!strcmp(k, "--threads"))
      c.threads = atoi(v);
    else if (!strcmp(k, "--first"))
      c.first = atoi(v);
    else if (!strcmp(k, "--side"))
      c.side = atoi(v);
    else if (!strcmp(k, "--verify"))
      c.verify = atoi(v);
    else if (!strcmp(k, "--seed"))
      c.seed = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--heads"))
      c.heads = atoi(v);
    else if (!strcmp(k, "--head-queue"))
      c.head_queue = atoi(v);
    else if (!strcmp(k, "--cache-root"))
      c.cache_root = v;
    else if (!strcmp(k, "--log"))
      log_path = v;
    else if (!strcmp(k, "--cpu-only"))
      c.cpu_only = atoi(v);
    else if (!strcmp(k, "--storm-heads"))
      c.storm_heads = atoi(v);
    else if (!strcmp(k, "--inline")) /* 0: skip the compile_threads 0 storm run */
      c.inline_run = atoi(v);
    else {
      fprintf(stderr, "storm_check: unknown option %s\n", k);
      return 2;
    }
  }
  if (c.warm < 1 || c.storm < 1 || c.threads < 1 || c.side < 8 || c.side > 4096 || c.first < 0 ||
      c.heads < 0 || c.head_queue < 1) {
    fprintf(stderr, "storm_check: --warm/--storm/--threads >= 1, --side 8..4096\n");
    return 2;
  }
  logf_ = log_path ? fopen(log_path, "w") : stderr;
  if (!logf_) logf_ = stderr;
  char dev[256] = "none (--cpu-only: the CPU backend; no compiles, targets not meaningful)";
  if (!c.cpu_only && ib_cuda_probe(0, dev, sizeof dev) != IB_OK) {
    printf("storm_check: no GPU (%s)\n", dev);
    return 2;
  }
  printf("device: %s\n", dev);

  /* The jobs: 64 known ones over the recipes, and enough new-signature
   * ones for the storm phase and both first-result runs (each run has its
   * own empty cache, so the first-result set serves both). */
  const uint32_t side = (uint32_t)c.side;
  const int n_known = 64, n_storm_new = c.every > 0 ? (c.storm + c.every - 1) / c.every : 0;
  const int n_new = n_storm_new + c.first + c.heads;
  jg_arena arena = {malloc(64u << 20), 0, 64u << 20};
  if ((size_t)side * side * 3 * 3 + (1u << 20) > arena.cap) {
    arena.cap = (size_t)side * side * 9 + (1u << 20);
    arena.p = realloc(arena.p, arena.cap);
  }
  jg_rng r = {c.seed};
  jg_job j;
  sigset seen = {0};
  pjob *known = calloc((size_t)n_known, sizeof *known),
       *fresh = calloc((size_t)n_new + 1, sizeof *fresh);
  uint64_t key = 1;
  for (int i = 0; i < n_known; i++) {
    make_known(&j, &arena, &r, i % 10, side, key++, &known[i]);
    ib_error err = {0};
    ib_graph *g = jg_finish(&j, &err);
    if (!g || !job_sigs(g, &seen) || !pack_into(&j, &known[i])) {
      printf("storm_check: known job %s: %s\n", known[i].label, g ? "no plan" : err.message);
      return 1;
    }
    ib_graph_free(g);
  }
  const size_t n_known_sigs = seen.n;
  int made = 0;
  for (; made < n_new; made++)
    if (!make_new(&j, &arena, &r, side, key++, &seen,
                  made >= n_new - c.heads || (c.storm_heads && made < n_storm_new), &fresh[made]))
      break;
  if (made < n_new) {
    printf("storm_check: only %d of %d new signatures could be generated\n", made, n_new);
    return 1;
  }
  printf(
      "jobs: %u^2 RGB, %d known jobs over %zu kernel signatures, %d new-signature jobs (%zu "
      "signatures in all); arrivals %s; storm: 1 in %d new%s\n",
      side, n_known, n_known_sigs, n_new, seen.n,
      c.rate > 0 ? "open-loop at a rate" : "one at a time", c.every,
      c.storm_heads ? " (heads the interpreter cannot run)" : " (pointwise)");
  if (c.rate > 0) printf("rate: %.0f jobs/s\n", c.rate);
  fflush(stdout);

  storm_res sr[2] = {{0}, {0}};
  if (c.inline_run) sr[0] = storm_run(&c, 0, known, n_known, fresh, n_storm_new);
  sr[1] = storm_run(&c, c.threads, known, n_known, fresh, n_storm_new);
  first_res fr[2] = {{0}, {0}};
  if (c.first > 0) {
    fr[0] = first_run(&c, 0, &known[0], fresh + n_storm_new, c.first);
    fr[1] = first_run(&c, c.threads, &known[0], fresh + n_storm_new, c.first);
  }

  head_res hr = {0};
  if (c.heads > 0) hr = head_run(&c, fresh + n_new - c.heads, c.heads);

  int failed = hr.failed + (c.heads > 0 && !hr.ok), differ = hr.differ, checked = hr.checked;
  for (int k = 0; k < 2; k++) {
    failed += sr[k].failed + fr[k].failed + (!sr[k].ok && (k || c.inline_run)) +
              (c.first > 0 && !fr[k].ok);
    differ += sr[k].differ + fr[k].differ;
    checked += sr[k].checked + fr[k].checked;
  }
  printf("\n%-34s %22s %22s\n", "", "compile inline (0)", "tier");
  printf("%-34s %22s %19s%3d\n", "", "", "compile_threads=", c.threads);
  char a[64], b[64];
#define ROW(label, fa, fb)                    \
  do {                                        \
    fa;                                       \
    fb;                                       \
    printf("%-34s %22s %22s\n", label, a, b); \
  } while (0)
  ROW("warm: known p50 / p99 (ms)",
      snprintf(a, sizeof a, "%.3f / %.3f", sr[0].warm.p50, sr[0].warm.p99),
      snprintf(b, sizeof b, "%.3f / %.3f", sr[1].warm.p50, sr[1].warm.p99));
  ROW("storm: known p50 / p99 (ms)",
      snprintf(a, sizeof a, "%.3f / %.3f", sr[0].storm_known.p50, sr[0].storm_known.p99),
      snprintf(b, sizeof b, "%.3f / %.3f", sr[1].storm_known.p50, sr[1].storm_known.p99));
  double ratio[2];
  for (int k = 0; k < 2; k++)
    ratio[k] = sr[k].warm.p99 > 0 ? sr[k].storm_known.p99 / sr[k].warm.p99 : 0;
  ROW("storm/warm p99 (target <= 1.5)",
      snprintf(a, sizeof a, "%.2fx %s", ratio[0], met(sr[0].ok && ratio[0] <= 1.5)),
      snprintf(b, sizeof b, "%.2fx %s", ratio[1], met(sr[1].ok && ratio[1] <= 1.5)));
  ROW("storm: new-sig p50 / max (ms)",
      snprintf(a, sizeof a, "%.3f / %.3f", sr[0].storm_new.p50, sr[0].storm_new.max),
      snprintf(b, sizeof b, "%.3f / %.3f", sr[1].storm_new.p50, sr[1].storm_new.max));
  uint64_t comp[2], waited[2];
  for (int k = 0; k < 2; k++) {
    comp[k] = sr[k].after.nvrtc_compiles - sr[k].before.nvrtc_compiles;
    waited[k] = sr[k].after.jobs_waited_compile - sr[k].before.jobs_waited_compile;
  }
  ROW("storm: nvrtc compiles", snprintf(a, sizeof a, "%llu", (unsigned long long)comp[0]),
      snprintf(b, sizeof b, "%llu", (unsigned long long)comp[1]));
  if (c.storm_heads) /* each new head job is parked for its compile, none else */
    ROW("storm: jobs parked for a compile", snprintf(a, sizeof a, "%s", "inline: every new"),
        snprintf(b, sizeof b, "%llu of %zu new", (unsigned long long)waited[1], sr[1].storm_new.n));
  else
    ROW("storm: jobs waited compile (0)", snprintf(a, sizeof a, "%s", "inline: every new"),
        snprintf(b, sizeof b, "%llu %s", (unsigned long long)waited[1],
                 met(sr[1].ok && waited[1] == 0)));
  if (c.first > 0) {
    ROW("first result, empty cache (ms)",
        snprintf(a, sizeof a, "%.3f / %.3f", fr[0].lat.p50, fr[0].lat.max),
        snprintf(b, sizeof b, "%.3f / %.3f", fr[1].lat.p50, fr[1].lat.max));
    ROW("  p50 / max; tier target <= 20", snprintf(a, sizeof a, "(compile)"),
        snprintf(b, sizeof b, "%s", met(fr[1].ok && fr[1].lat.n && fr[1].lat.max <= 20.0)));
    ROW("executor start, empty cache (ms)", snprintf(a, sizeof a, "%.0f", fr[0].create_ms),
        snprintf(b, sizeof b, "%.0f", fr[1].create_ms));
    ROW("its first job (known sig, ms)", snprintf(a, sizeof a, "%.3f", fr[0].first_job_ms),
        snprintf(b, sizeof b, "%.3f", fr[1].first_job_ms));
  }
  if (c.heads > 0) {
    ROW("head storm: QueueFull at admission", snprintf(a, sizeof a, "-"),
        snprintf(b, sizeof b, "%llu (queue %d)", (unsigned long long)hr.k.rejected_queue_full,
                 c.head_queue));
    ROW("head storm: p50 / max (ms)", snprintf(a, sizeof a, "-"),
        snprintf(b, sizeof b, "%.3f / %.3f", hr.lat.p50, hr.lat.max));
    ROW("head storm: all completed, equal", snprintf(a, sizeof a, "-"),
        snprintf(b, sizeof b, "%zu/%d %s", hr.lat.n, c.heads,
                 met(hr.ok && !hr.failed && !hr.differ && hr.lat.n == (size_t)c.heads)));
  }
  printf("bytes: %d sampled results against the CPU, %d differ; %d jobs failed -> %s\n", checked,
         differ, failed, differ || failed ? "FAIL" : "ok");
  for (int i = 0; i < n_known; i++) free(known[i].buf), ib_image_release(&known[i].ref);
  for (int i = 0; i < made; i++) free(fresh[i].buf), ib_image_release(&fresh[i].ref);
  free(known);
  free(fresh);
  sigset_free(&seen);
  free(arena.p);
  if (logf_ != stderr) fclose(logf_);
  return differ || failed ? 1 : 0;
}
