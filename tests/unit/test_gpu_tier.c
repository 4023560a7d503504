/* The CUDA backend's kernel tier without a GPU (cuda_tier.c): the compile
 * pool compiles through NVRTC, and a stand-in driver table "loads" the
 * images it produces. Pins what admission and job_ready promise the
 * executor's parking (exec/dispatch.c): a head whose kernel compiles is not
 * ready, and is once the compile finished (a memo never keeps "needs a
 * compile"); a repeated graph is planned once for both; a pointwise graph
 * never waits; a compile that never returns fails its jobs (Internal) at
 * the time bound instead of holding them. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu/cuda_internal.h"
#include "tools/jobgen.h"

static int loads, unloads;
static CUresult f_ctx(CUcontext ctx) {
  (void)ctx;
  return CUDA_SUCCESS;
}
static CUresult f_load(CUmodule *m, const void *img) {
  cr_assert_eq(memcmp(img, "\177ELF", 4), 0, "a cubin from the pool");
  *m = (CUmodule)(uintptr_t)++loads;
  return CUDA_SUCCESS;
}
static CUresult f_getfn(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  (void)name;
  *f = (CUfunction)(uintptr_t)1;
  return CUDA_SUCCESS;
}
static CUresult f_unload(CUmodule m) {
  (void)m;
  unloads++;
  return CUDA_SUCCESS;
}

static const char *const fmad_opt[] = {"--fmad=false"};
static char dir[64];
static jg_arena arena;
static ib_cu cu;

static void setup(void) {
  arena = (jg_arena){malloc(1u << 22), 0, 1u << 22};
  snprintf(dir, sizeof dir, "/tmp/ib_tier_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  cu = (ib_cu){.cuCtxSetCurrent = f_ctx,
               .cuModuleLoadData = f_load,
               .cuModuleGetFunction = f_getfn,
               .cuModuleUnload = f_unload};
}
static void teardown(void) {
  free(arena.p);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(gpu_tier, .init = setup, .fini = teardown, .timeout = 300);

/* on_start: holds every compile while set, standing for an NVRTC call
 * that does not return. */
static atomic_int stuck;
static void hold(void *ctx, const char *sig) {
  (void)ctx;
  (void)sig;
  while (atomic_load(&stuck)) usleep(1000);
}

static ib_cuda *tier_new_opts(uint32_t bound, uint32_t timeout_ms) {
  ib_cuda *c = calloc(1, sizeof *c);
  c->cu = &cu;
  snprintf(c->arch, sizeof c->arch, "sm_90");
  c->kc = ib_kcache_new(dir, 0, 64u << 20);
  cr_assert_not_null(c->kc);
  cr_assert_eq(ib_lru_init(&c->mods, 64u << 20, ib_cuda_unload_module, c), 0);
  ib_cpool_options po = {.threads = 1,
                         .max_pending = bound,
                         .arch = "sm_90",
                         .opts = fmad_opt,
                         .n_opts = 1,
                         .on_start = hold,
                         .timeout_ms = timeout_ms};
  ib_error err = {0};
  c->cpool = ib_cpool_new(c->kc, &po, &err);
  cr_assert_not_null(c->cpool, "%s", err.message);
  return c;
}

static ib_cuda *tier_new(uint32_t bound) { return tier_new_opts(bound, 0); }

static void tier_free(ib_cuda *c) {
  ib_cuda_tier_close(c);
  ib_lru_destroy(&c->mods);
  ib_kcache_free(c->kc);
  free(c);
}

/* source -> op (seeded: equal seeds give equal nodes). */
static ib_graph *graph(int op, uint32_t seed) {
  jg_rng r = {seed};
  jg_job j;
  jg_begin(&j, &arena, &r, IB_MODE_RGB, 16, 8, 1);
  jg_op(&j, &r, op, 0, IB_MODE_RGB, 16, 8, -1);
  ib_error err = {0};
  ib_graph *g = jg_finish(&j, &err);
  cr_assert_not_null(g, "%s", err.message);
  return g;
}

static void admit_ok(ib_cuda *c, const ib_graph *g) {
  ib_error err = {0};
  cr_assert_eq(ib_cuda_tier_admit(c, g, &err), IB_OK, "%s", err.message);
}

Test(gpu_tier, a_head_waits_for_its_compile_and_is_ready_once_it_finished) {
  ib_cuda *c = tier_new(8);
  ib_graph *g = graph(JG_TRANSPOSE, 7);
  const uint64_t e0 = ib_cuda_tier_epoch(c);
  admit_ok(c, g);
  cr_assert_eq(c->tmemo.last->n_heads, 1, "transpose is a gather head");
  cr_assert_not(ib_cuda_tier_ready(c, g), "its kernel is compiling");
  /* The compile finishes on the pool's thread: the epoch moves. */
  for (int i = 0; i < 3000 && ib_cuda_tier_epoch(c) == e0; i++) usleep(10000);
  cr_assert_neq(ib_cuda_tier_epoch(c), e0);
  cr_assert(ib_cuda_tier_ready(c, g), "ready once compiled (the memo kept no readiness)");
  cr_assert_eq(loads, 1, "job_ready loaded the finished module");
  cr_assert(ib_lru_has(&c->mods, c->tmemo.last->heads[0].sk.key));
  cr_assert(ib_cuda_tier_ready(c, g));
  ib_error err = {0};
  cr_assert_eq(ib_cuda_tier_admit(c, g, &err), IB_OK);
  cr_assert_eq(ib_cpool_stats_get(c->cpool).requests, 1, "a loaded head is not requested again");
  cr_assert_eq(c->tmemo.plans, 1, "one graph, planned once for all of it");
  ib_graph_free(g);
  tier_free(c);
  cr_assert_eq(unloads, loads);
}

Test(gpu_tier, a_repeated_graph_is_planned_once_a_different_one_too) {
  ib_cuda *c = tier_new(8);
  ib_graph *a = graph(JG_TRANSPOSE, 7), *a2 = graph(JG_TRANSPOSE, 7), *p = graph(JG_INVERT, 3);
  admit_ok(c, a);
  ib_cuda_tier_ready(c, a);
  admit_ok(c, a2); /* another job, equal nodes */
  ib_cuda_tier_ready(c, a2);
  cr_assert_eq(c->tmemo.plans, 1);
  admit_ok(c, p);
  cr_assert_eq(c->tmemo.plans, 2);
  cr_assert_eq(c->tmemo.last->n_heads, 0, "a pointwise chain has no head to wait for");
  cr_assert(ib_cuda_tier_ready(c, p), "the interpreter runs it at once");
  admit_ok(c, a);
  cr_assert_eq(c->tmemo.plans, 2, "a is still in the memo");
  cr_assert_eq(c->tmemo.last->n_heads, 1);
  ib_graph_free(a);
  ib_graph_free(a2);
  ib_graph_free(p);
  tier_free(c);
}

/* Jobs of n graphs, interleaved round robin (a mixed stream): up to the
 * memo's 8 graphs each is planned once, for admission, job_ready and its
 * charge alike; past 8 the least recently used makes room (bounded). */
Test(gpu_tier, interleaved_graphs_are_planned_once_each_up_to_eight) {
  const int ops[9] = {JG_TRANSPOSE, JG_INVERT, JG_RESIZE,  JG_CROP, JG_POINT,
                      JG_RANK,      JG_KERNEL, JG_BOXBLUR, JG_GAUSS};
  for (int n = 2; n <= 9; n++) {
    ib_cuda *c = tier_new(16);
    for (int round = 0; round < 3; round++)
      for (int i = 0; i < n; i++) {
        ib_graph *job = graph(ops[i], 20u + (uint32_t)i); /* another job, equal nodes */
        admit_ok(c, job);
        ib_cuda_tier_ready(c, job);
        cr_assert_not_null(ib_cuda_tier_plan(c, job), "the charge takes admission's plan");
        ib_graph_free(job);
        if (round == 0) cr_assert_eq(c->tmemo.plans, (uint64_t)i + 1, "n %d: distinct graphs", n);
      }
    const uint64_t want = n <= 8 ? (uint64_t)n : 3u * (uint64_t)n;
    cr_assert_eq(c->tmemo.plans, want, "n %d: %llu plans", n, (unsigned long long)c->tmemo.plans);
    tier_free(c);
  }
}

/* A head neither loaded nor in the pool (never requested: admitted before
 * the pool knew it, or let go at the bound) is ready: its stage compiles
 * inline, so no job can be parked for a compile that never comes. */
Test(gpu_tier, a_head_nobody_compiles_is_not_waited_for) {
  ib_cuda *c = tier_new(8);
  ib_graph *g = graph(JG_TRANSPOSE, 9);
  cr_assert(ib_cuda_tier_ready(c, g));
  cr_assert_eq(ib_cpool_stats_get(c->cpool).requests, 0, "job_ready requests nothing");
  ib_graph_free(g);
  tier_free(c);
}

/* A new graph's charge (job_bytes, after admission) takes admission's plan
 * instead of planning again: the same charge as from a fresh plan. */
Test(gpu_tier, the_charge_of_a_new_graph_takes_admissions_plan) {
  ib_cuda *c = tier_new(8);
  ib_graph *a = graph(JG_RESIZE, 5), *b = graph(JG_INVERT, 6);
  admit_ok(c, a);
  const ib_gplan *p = ib_cuda_tier_plan(c, a);
  cr_assert_not_null(p);
  cr_assert_null(ib_cuda_tier_plan(c, b), "only the graph admission planned");
  uint64_t g1 = 0, h1 = 0, g2 = 0, h2 = 0;
  ib_cuda_charge_plan(a, p, NULL, NULL, &g1, &h1);
  ib_error err = {0};
  cr_assert_eq(ib_cuda_charge(a, NULL, NULL, &g2, &h2, &err), IB_OK, "%s", err.message);
  cr_assert(g1 == g2 && h1 == h2 && g1 > 0);
  cr_assert_eq(c->tmemo.plans, 1);
  ib_graph_free(a);
  ib_graph_free(b);
  tier_free(c);
}

/* The stage kernel a submission gets for the head of `g` (the memo's). */
static ib_status head_func(ib_cuda *c, ib_kfunc **f, ib_error *err) {
  ib_lru_entry *pins[1] = {NULL};
  ib_backend_submission s = {.c = c, .pins = pins};
  ib_status st = ib_cuda_stage_func(&s, &c->tmemo.last->heads[0].chain, f, err);
  if (s.n_pins) ib_lru_unpin(&c->mods, pins[0]);
  return st;
}

static uint64_t ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A head whose compile does not return: at the time bound the epoch moves
 * and job_ready says ready, so a parked job (deadline or not) leaves the
 * park, and its submission fails it with Internal - the worker's fault -
 * instead of compiling inline or waiting. A job submitted while it
 * compiles waits no longer than the bound. Should the compile finish
 * after all, its kernel is kept and the next job runs it. */
Test(gpu_tier, a_head_whose_compile_never_returns_fails_its_jobs_at_the_time_bound) {
  atomic_store(&stuck, 1);
  ib_cuda *c = tier_new_opts(8, 300);
  ib_graph *g = graph(JG_TRANSPOSE, 11), *h = graph(JG_RESIZE, 12);
  const uint64_t e0 = ib_cuda_tier_epoch(c);
  const uint64_t t0 = ms_now();
  admit_ok(c, g);
  cr_assert_not(ib_cuda_tier_ready(c, g), "its kernel is compiling");
  for (int i = 0; i < 300 && ib_cuda_tier_epoch(c) == e0; i++) usleep(10000);
  const uint64_t took = ms_now() - t0;
  cr_assert_neq(ib_cuda_tier_epoch(c), e0, "the time bound moved the ready epoch");
  cr_assert(took >= 300 && took < 2000, "after %llu ms", (unsigned long long)took);
  cr_assert(ib_cuda_tier_ready(c, g), "a parked job leaves the park at the bound");
  ib_kfunc *f = NULL;
  ib_error err = {0};
  cr_assert_eq(head_func(c, &f, &err), IB_INTERNAL, "%s", err.message);
  cr_assert_eq(err.stage, IB_STAGE_EXECUTE);
  cr_assert(strstr(err.message, "did not finish within 300 ms"), "%s", err.message);
  cr_assert_eq(loads, 0, "nothing compiled inline meanwhile");
  /* Queued behind the stuck thread: late at once, a submission of it
   * fails without waiting. */
  admit_ok(c, h);
  cr_assert(ib_cuda_tier_ready(c, h));
  const uint64_t t1 = ms_now();
  cr_assert_eq(head_func(c, &f, &err), IB_INTERNAL, "%s", err.message);
  cr_assert_lt(ms_now() - t1, 200);
  /* The compiler returns: its kernels are kept and run. */
  atomic_store(&stuck, 0);
  for (int i = 0; i < 3000 && !ib_lru_has(&c->mods, c->tmemo.last->heads[0].sk.key); i++) {
    ib_cuda_tier_ready(c, h);
    usleep(10000);
  }
  cr_assert_eq(head_func(c, &f, &err), IB_OK, "%s", err.message);
  cr_assert_not_null(f);
  admit_ok(c, g);
  for (int i = 0; i < 3000 && !ib_cuda_tier_ready(c, g); i++) usleep(10000);
  cr_assert_eq(head_func(c, &f, &err), IB_OK, "%s", err.message);
  cr_assert_eq(loads, 2);
  ib_graph_free(g);
  ib_graph_free(h);
  tier_free(c);
}

/* Closing the backend (ib_cuda_close's order: the tier, then the module
 * cache) while a head compile never returns - a worker draining after
 * SIGTERM: the pool stops waiting for the compile once it is LATE (its
 * jobs failed), so close returns and the drain ends. The stuck thread is
 * left running with its own references: when the compiler returns after
 * all, it stores into the cache the backend let go of (the ASan build
 * checks that nothing was freed under it) and ends. */
typedef struct close_arg {
  ib_cuda *c;
  atomic_int done;
} close_arg;

static void *close_async(void *v) {
  close_arg *a = v;
  tier_free(a->c);
  atomic_store(&a->done, 1);
  return NULL;
}

Test(gpu_tier, closing_does_not_wait_for_a_compile_that_never_returns) {
  atomic_store(&stuck, 1);
  ib_cuda *c = tier_new_opts(8, 300);
  ib_graph *g = graph(JG_TRANSPOSE, 14);
  admit_ok(c, g);
  for (int i = 0; i < 300 && !ib_cuda_tier_ready(c, g); i++) usleep(10000);
  cr_assert(ib_cuda_tier_ready(c, g), "late at the time bound");
  ib_graph_free(g);
  static close_arg a; /* outlives a close that never returns */
  a.c = c;
  pthread_t t;
  const uint64_t t0 = ms_now();
  cr_assert_eq(pthread_create(&t, NULL, close_async, &a), 0);
  while (!atomic_load(&a.done) && ms_now() - t0 < 10000) usleep(1000);
  cr_assert(atomic_load(&a.done), "close still waits for the stuck compile after 10 s");
  pthread_join(t, NULL);
  cr_assert_lt(ms_now() - t0, 1000, "close waited %llu ms for a LATE compile",
               (unsigned long long)(ms_now() - t0));
  cr_assert_eq(ib_cpool_orphans(), 1);
  atomic_store(&stuck, 0);
  for (int i = 0; i < 60000 && ib_cpool_orphans(); i++) usleep(1000);
  cr_assert_eq(ib_cpool_orphans(), 0, "the left thread never ended");
}

/* The same head submitted while it compiles (queue mode off, or nothing
 * else compiling): its submission waits for the compile up to the bound. */
Test(gpu_tier, a_submission_waits_for_a_stuck_compile_no_longer_than_the_bound) {
  atomic_store(&stuck, 1);
  ib_cuda *c = tier_new_opts(8, 300);
  ib_graph *g = graph(JG_TRANSPOSE, 13);
  admit_ok(c, g);
  const uint64_t t0 = ms_now();
  ib_kfunc *f = NULL;
  ib_error err = {0};
  cr_assert_eq(head_func(c, &f, &err), IB_INTERNAL, "%s", err.message);
  const uint64_t took = ms_now() - t0;
  cr_assert(took >= 250 && took < 2000, "after %llu ms", (unsigned long long)took);
  atomic_store(&stuck, 0);
  ib_graph_free(g);
  tier_free(c);
  /* Released, the compile goes on into NVRTC and may outlive the close's
   * bound as an orphan: wait for it, or the teardown removes its cache
   * directory under it and the process exits inside NVRTC (a crash in
   * teardown, seen once in CI on 2 busy cores). */
  for (int i = 0; i < 60000 && ib_cpool_orphans(); i++) usleep(1000);
  cr_assert_eq(ib_cpool_orphans(), 0, "the left thread never ended");
}
