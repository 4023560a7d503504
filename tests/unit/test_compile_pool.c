/* The compile pool (worker/gpu/compile_pool.h), with NVRTC and no GPU:
 * requests for one signature coalesce; the table's bound answers FULL;
 * results (images and compile errors) come back by signature or in order;
 * freeing the pool with compiles queued and running leaks nothing (the
 * ASan build runs these); and the cache test: 600 distinct chain
 * signatures through the pool into a 5 MiB memory / 12 MiB disk cache,
 * both bounds holding, evicted entries recompiling on demand; a compile
 * past the time bound goes LATE. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu/compile_pool.h"
#include "gpu/nvrtc_cache.h"
#include "gpu_nodes.h"

static const char *const fmad_opt[] = {"--fmad=false"};

/* Every test has the same .timeout: with mixed ones (a 900 s test beside
 * 120 s ones), Criterion 2.4's runner at --jobs 2 leaked 48 bytes of its
 * own, which LeakSanitizer turns into a failure of the ASan build. */

static ib_cpool *pool(ib_kcache *kc, int threads, uint32_t max, void (*on_done)(void *),
                      void *ctx) {
  const ib_cpool_options o = {.threads = threads,
                              .max_pending = max,
                              .arch = "sm_90",
                              .opts = fmad_opt,
                              .n_opts = 1,
                              .on_done = on_done,
                              .ctx = ctx};
  ib_error err = {0};
  ib_cpool *p = ib_cpool_new(kc, &o, &err);
  cr_assert_not_null(p, "%s", err.message);
  return p;
}

static void src_of(unsigned i, char *sig, char *src, size_t n) {
  snprintf(sig, 64, "k%u", i);
  snprintf(src, n, "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = %u; }\n", i);
}

static ib_cpool_state request(ib_cpool *p, unsigned i) {
  char sig[64], src[200];
  src_of(i, sig, src, sizeof src);
  return ib_cpool_request_source(p, sig, "k.cu", src);
}

static void expect_image(const ib_cpool_result *r) {
  cr_assert_eq(r->status, IB_OK, "%s: %s", r->sig, r->err.message);
  cr_assert_geq(r->len, 4);
  cr_assert_eq(memcmp(r->image, "\177ELF", 4), 0);
}

typedef struct hammer_arg {
  ib_cpool *p;
  atomic_int queued, coalesced;
} hammer_arg;

static void *hammer(void *v) {
  hammer_arg *a = v;
  for (int i = 0; i < 25; i++) {
    ib_cpool_state s = request(a->p, 7);
    if (s == IB_CP_QUEUED) atomic_fetch_add(&a->queued, 1);
    if (s == IB_CP_COALESCED) atomic_fetch_add(&a->coalesced, 1);
  }
  return NULL;
}

Test(cpool, requests_for_one_signature_coalesce, .timeout = 900) {
  ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
  ib_cpool *p = pool(kc, 2, 16, NULL, NULL);
  hammer_arg a = {.p = p};
  pthread_t t[4];
  for (int i = 0; i < 4; i++) cr_assert_eq(pthread_create(&t[i], NULL, hammer, &a), 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  cr_assert_eq(atomic_load(&a.queued), 1);
  cr_assert_eq(atomic_load(&a.coalesced), 99);
  cr_assert_eq(ib_cpool_wait(p, "k7", -1), IB_CP_DONE);
  /* Done but not taken: still coalesces (no second compile). */
  cr_assert_eq(request(p, 7), IB_CP_COALESCED);
  ib_cpool_result r;
  cr_assert_eq(ib_cpool_take(p, "k7", &r), IB_CP_DONE);
  expect_image(&r);
  cr_assert_not(r.has_chain, "a source request has no chain");
  cr_assert_eq(r.origin, IB_KC_COMPILED);
  cr_assert_gt(r.compile_us, 0);
  free(r.image);
  cr_assert_eq(ib_cpool_poll(p, "k7"), IB_CP_NONE);
  cr_assert_eq(ib_cpool_take(p, "k7", &r), IB_CP_NONE);
  ib_cpool_stats s = ib_cpool_stats_get(p);
  cr_assert_eq(s.requests, 101);
  cr_assert_eq(s.coalesced, 100);
  cr_assert_eq(s.compiles, 1);
  cr_assert_eq(ib_kcache_stats_get(kc).compiles, 1);
  cr_assert_eq(s.pending, 0);
  cr_assert_eq(s.depth, 0);
  /* Taken: a new request is a new entry, which the memory cache answers. */
  cr_assert_eq(request(p, 7), IB_CP_QUEUED);
  cr_assert_eq(ib_cpool_wait(p, "k7", 60000), IB_CP_DONE);
  cr_assert_eq(ib_cpool_take(p, "k7", &r), IB_CP_DONE);
  expect_image(&r);
  cr_assert_eq(r.origin, IB_KC_MEMORY);
  free(r.image);
  s = ib_cpool_stats_get(p);
  cr_assert_eq(s.compiles, 1);
  cr_assert_eq(s.cache_hits, 1);
  ib_cpool_free(p);
  ib_kcache_free(kc);
}

static void count_done(void *ctx) { atomic_fetch_add((atomic_int *)ctx, 1); }

Test(cpool, the_bound_answers_full_until_results_are_taken, .timeout = 900) {
  ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
  atomic_int done = 0;
  ib_cpool *p = pool(kc, 1, 3, count_done, &done);
  /* Finished but untaken entries count: the answers do not depend on how
   * fast the thread compiles. */
  cr_assert_eq(request(p, 1), IB_CP_QUEUED);
  cr_assert_eq(request(p, 2), IB_CP_QUEUED);
  cr_assert_eq(request(p, 3), IB_CP_QUEUED);
  cr_assert_eq(request(p, 4), IB_CP_FULL);
  cr_assert_eq(request(p, 5), IB_CP_FULL);
  cr_assert_eq(request(p, 2), IB_CP_COALESCED); /* a known signature is never refused */
  ib_cpool_stats s = ib_cpool_stats_get(p);
  cr_assert_eq(s.rejected_full, 2);
  cr_assert_eq(s.pending, 3);
  cr_assert_leq(s.depth, 3);
  cr_assert_eq(ib_cpool_wait(p, "k3", 60000), IB_CP_DONE);
  cr_assert_eq(ib_cpool_stats_get(p).depth, 0);
  cr_assert_eq(request(p, 4), IB_CP_FULL);
  /* One thread, FIFO: results come back in request order. */
  for (unsigned i = 1; i <= 3; i++) {
    ib_cpool_result r;
    cr_assert_eq(ib_cpool_next_done(p, &r), IB_CP_DONE);
    char want[16];
    snprintf(want, sizeof want, "k%u", i);
    cr_assert_str_eq(r.sig, want);
    expect_image(&r);
    free(r.image);
  }
  ib_cpool_result r;
  cr_assert_eq(ib_cpool_next_done(p, &r), IB_CP_NONE);
  /* on_done runs just after a result is published. */
  for (int spin = 0; spin < 10000 && atomic_load(&done) < 3; spin++) usleep(100);
  cr_assert_eq(atomic_load(&done), 3);
  cr_assert_eq(ib_cpool_stats_get(p).pending, 0);
  cr_assert_eq(request(p, 4), IB_CP_QUEUED);
  cr_assert_eq(ib_cpool_wait(p, "k4", 60000), IB_CP_DONE);
  ib_cpool_free(p); /* with an untaken result: freed with the pool */
  ib_kcache_free(kc);
}

Test(cpool, a_compile_error_is_a_result, .timeout = 900) {
  ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
  ib_cpool *p = pool(kc, 1, 4, NULL, NULL);
  cr_assert_eq(ib_cpool_request_source(p, "bad", "bad.cu", "__global__ void k() { nope(); }"),
               IB_CP_QUEUED);
  cr_assert_eq(ib_cpool_wait(p, "bad", 60000), IB_CP_DONE);
  ib_cpool_result r;
  cr_assert_eq(ib_cpool_take(p, "bad", &r), IB_CP_DONE);
  cr_assert_eq(r.status, IB_DEVICE);
  cr_assert_null(r.image);
  cr_assert_not_null(strstr(r.err.message, "nope"), "%s", r.err.message);
  ib_cpool_stats s = ib_cpool_stats_get(p);
  cr_assert_eq(s.failed, 1);
  cr_assert_eq(s.compiles, 1);
  ib_cpool_note(p, IB_CP_NOTE_WAITED, 3);
  ib_cpool_note(p, IB_CP_NOTE_INTERP, 5);
  s = ib_cpool_stats_get(p);
  cr_assert_eq(s.jobs_waited, 3);
  cr_assert_eq(s.interp_runs, 5);
  ib_cpool_free(p);
  ib_kcache_free(kc);
}

/* Freed while threads compile and more wait: running compiles finish,
 * queued ones are dropped, nothing leaks (LeakSanitizer in the ASan build)
 * and nothing runs after free returns. */
Test(cpool, shutdown_with_compiles_in_flight, .timeout = 900) {
  ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
  atomic_int done = 0;
  ib_cpool *p = pool(kc, 2, 64, count_done, &done);
  for (unsigned i = 100; i < 116; i++) cr_assert_eq(request(p, i), IB_CP_QUEUED);
  /* Wait until a compile is under way. */
  for (int spin = 0; spin < 100000; spin++) {
    if (ib_cpool_poll(p, "k100") != IB_CP_QUEUED) break;
    usleep(100);
  }
  cr_assert_neq(ib_cpool_poll(p, "k100"), IB_CP_QUEUED);
  ib_cpool_free(p);
  const int finished = atomic_load(&done);
  cr_assert_lt(finished, 16, "the queue was drained, not dropped");
  usleep(50000);
  cr_assert_eq(atomic_load(&done), finished);
  ib_kcache_free(kc);
  /* A pool freed at once, and one never used. */
  kc = ib_kcache_new(NULL, 0, 0);
  p = pool(kc, 3, 8, NULL, NULL);
  for (unsigned i = 200; i < 208; i++) request(p, i);
  ib_cpool_free(p);
  ib_cpool_free(pool(kc, 1, 1, NULL, NULL));
  ib_kcache_free(kc);
}

/* A compile that does not return (on_start holds it, standing for NVRTC)
 * is LATE once it ran past the time bound, and so is what is queued while
 * the only thread is stuck; waiters return then. Should it finish after
 * all, its result is taken as any other and the queue moves again. */
static atomic_int gate; /* 1: on_start holds k1 */
static void hold_k1(void *ctx, const char *sig) {
  (void)ctx;
  while (strcmp(sig, "k1") == 0 && atomic_load(&gate)) usleep(1000);
}

/* DONE, through LATE too: a compile slower than the 500 ms bound (the ASan
 * build's are) goes late and is kept when it finishes. */
static ib_cpool_state wait_done(ib_cpool *p, const char *sig) {
  for (int i = 0; i < 120000 && ib_cpool_poll(p, sig) != IB_CP_DONE; i++) usleep(1000);
  return ib_cpool_poll(p, sig);
}

static uint64_t ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

Test(cpool, a_compile_past_the_time_bound_is_late_and_kept_if_it_finishes, .timeout = 900) {
  ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
  atomic_store(&gate, 1);
  const ib_cpool_options o = {.threads = 1,
                              .max_pending = 8,
                              .arch = "sm_90",
                              .opts = fmad_opt,
                              .n_opts = 1,
                              .on_start = hold_k1,
                              .timeout_ms = 500};
  ib_error err = {0};
  ib_cpool *p = ib_cpool_new(kc, &o, &err);
  cr_assert_not_null(p, "%s", err.message);
  cr_assert_eq(ib_cpool_timeout_ms(p), 500);
  const uint64_t t0 = ms_now();
  cr_assert_eq(request(p, 1), IB_CP_QUEUED);
  for (int i = 0; i < 5000 && ib_cpool_poll(p, "k1") == IB_CP_QUEUED; i++) usleep(1000);
  cr_assert_eq(ib_cpool_poll(p, "k1"), IB_CP_RUNNING);
  cr_assert_eq(request(p, 2), IB_CP_QUEUED);
  cr_assert_eq(ib_cpool_poll(p, "k2"), IB_CP_QUEUED, "behind a compile not yet late");
  cr_assert_eq(ib_cpool_wait(p, "k1", -1), IB_CP_LATE, "a waiter returns at the bound");
  const uint64_t took = ms_now() - t0;
  cr_assert(took >= 500 && took < 3000, "late after %llu ms", (unsigned long long)took);
  cr_assert_eq(ib_cpool_poll(p, "k2"), IB_CP_LATE, "no thread can start it");
  ib_cpool_result r;
  cr_assert_eq(ib_cpool_take(p, "k2", &r), IB_CP_LATE, "nothing to take");
  cr_assert_eq(request(p, 3), IB_CP_QUEUED);
  cr_assert_eq(ib_cpool_poll(p, "k3"), IB_CP_LATE, "queued while every thread is stuck");
  cr_assert_eq(request(p, 1), IB_CP_COALESCED);
  ib_cpool_stats s = ib_cpool_stats_get(p);
  cr_assert_eq(s.timed_out, 3);
  cr_assert_eq(s.depth, 3);
  /* The compile returns after all: kept, and the queue runs again. */
  atomic_store(&gate, 0);
  cr_assert_eq(wait_done(p, "k1"), IB_CP_DONE);
  cr_assert_eq(ib_cpool_take(p, "k1", &r), IB_CP_DONE);
  expect_image(&r);
  free(r.image);
  for (unsigned i = 2; i <= 3; i++) {
    char sig[8];
    snprintf(sig, sizeof sig, "k%u", i);
    cr_assert_eq(wait_done(p, sig), IB_CP_DONE, "%s", sig);
    cr_assert_eq(ib_cpool_take(p, sig, &r), IB_CP_DONE);
    expect_image(&r);
    free(r.image);
  }
  cr_assert_geq(ib_cpool_stats_get(p).timed_out, 3);
  ib_cpool_free(p);
  ib_kcache_free(kc);
}

/* A compile that never returns (on_start holds it, standing for NVRTC)
 * does not hold ib_cpool_free, which a worker's drain runs: free returns
 * at its own bound (close_ms), or at once when the compile is LATE already
 * (its jobs failed at the time bound). The thread is left running and owns
 * what it touches: the caller frees its cache right after free; when the
 * call returns after all, the thread compiles into that cache (kept by its
 * reference; the ASan build checks there is no use after free), discards
 * the result, calls no hook and frees what is left of the pool. */
static atomic_int stuck_gate, in_stuck;
static void hold_stuck(void *ctx, const char *sig) {
  (void)ctx;
  if (strcmp(sig, "k1") != 0) return;
  atomic_store(&in_stuck, 1);
  while (atomic_load(&stuck_gate)) usleep(1000);
}

typedef struct free_arg {
  ib_cpool *p;
  atomic_int done;
} free_arg;

static void *free_async(void *v) {
  free_arg *a = v;
  ib_cpool_free(a->p);
  atomic_store(&a->done, 1);
  return NULL;
}

/* ib_cpool_free on a thread of its own: how long it took; the test fails
 * when it has not returned after limit_ms (the old free never did). */
static uint64_t timed_free(ib_cpool *p, uint64_t limit_ms) {
  static free_arg a; /* outlives a free that never returns */
  a.p = p;
  atomic_store(&a.done, 0);
  pthread_t t;
  const uint64_t t0 = ms_now();
  cr_assert_eq(pthread_create(&t, NULL, free_async, &a), 0);
  while (!atomic_load(&a.done) && ms_now() - t0 < limit_ms) usleep(1000);
  cr_assert(atomic_load(&a.done), "ib_cpool_free still waits for a stuck compile after %llu ms",
            (unsigned long long)limit_ms);
  const uint64_t took = ms_now() - t0;
  pthread_join(t, NULL);
  return took;
}

Test(cpool, free_is_bounded_when_a_compile_never_returns, .timeout = 900) {
  for (int late = 0; late < 2; late++) {
    ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
    /* late 0: the test keeps a reference to read the cache afterwards;
     * late 1: the stuck thread's is the only one left. */
    ib_kcache *mine = late ? NULL : ib_kcache_retain(kc);
    atomic_store(&stuck_gate, 1);
    atomic_store(&in_stuck, 0);
    atomic_int done = 0;
    const ib_cpool_options o = {.threads = 1,
                                .max_pending = 8,
                                .arch = "sm_90",
                                .opts = fmad_opt,
                                .n_opts = 1,
                                .on_done = count_done,
                                .ctx = &done,
                                .on_start = hold_stuck,
                                .timeout_ms = late ? 300 : 0,
                                .close_ms = late ? 20000 : 400};
    ib_error err = {0};
    ib_cpool *p = ib_cpool_new(kc, &o, &err);
    cr_assert_not_null(p, "%s", err.message);
    cr_assert_eq(request(p, 1), IB_CP_QUEUED);
    cr_assert_eq(request(p, 2), IB_CP_QUEUED);
    for (int i = 0; i < 5000 && !atomic_load(&in_stuck); i++) usleep(1000);
    cr_assert(atomic_load(&in_stuck), "k1 never started");
    if (late) cr_assert_eq(ib_cpool_wait(p, "k1", -1), IB_CP_LATE);
    const uint64_t took = timed_free(p, 10000);
    if (late)
      cr_assert_lt(took, 1000, "waited %llu ms for a LATE compile", (unsigned long long)took);
    else
      cr_assert(took >= 390 && took < 3000, "free took %llu ms, bound 400",
                (unsigned long long)took);
    cr_assert_eq(ib_cpool_orphans(), 1, "the stuck thread is left running");
    ib_kcache_free(kc); /* the owner's reference, as ib_cuda_close drops it */
    /* The call returns after all. */
    atomic_store(&stuck_gate, 0);
    for (int i = 0; i < 120000 && ib_cpool_orphans(); i++) usleep(1000);
    cr_assert_eq(ib_cpool_orphans(), 0, "the left thread never ended");
    cr_assert_eq(atomic_load(&done), 0, "a hook ran after free returned");
    if (mine) {
      /* k1 went into the cache after free; queued k2 was dropped. */
      cr_assert_eq(ib_kcache_stats_get(mine).compiles, 1);
      ib_kcache_free(mine);
    }
  }
}

Test(cpool, bad_options_are_refused) {
  ib_kcache *kc = ib_kcache_new(NULL, 0, 0);
  ib_error err = {0};
  ib_cpool_options o = {.threads = 0, .max_pending = 4, .arch = "sm_90"};
  cr_assert_null(ib_cpool_new(kc, &o, &err));
  cr_assert_eq(err.status, IB_INVALID);
  o.threads = 1;
  o.max_pending = 0;
  cr_assert_null(ib_cpool_new(kc, &o, &err));
  ib_kcache_free(kc);
}

/* ------------------------------------------------------------ chains */

/* Chain `i`: three convert steps through modes (the i-th of the 6^4
 * sequences): a distinct signature each, cheap to compile. */
static void convert_chain(unsigned i, ib_gchain *c) {
  memset(c, 0, sizeof *c);
  int m = 1 + (int)(i % 6);
  i /= 6;
  for (int k = 0; k < 3; k++, i /= 6) {
    tnode t;
    tnode_init(&t);
    const int out = 1 + (int)(i % 6);
    cr_assert(sample_node(&t, IMGBATCH__V1__NODE__OP_CONVERT, out - 1, m));
    t.node.pb = &t.pb;
    t.node.op = ib_op_for_case(IMGBATCH__V1__NODE__OP_CONVERT);
    t.node.shape = (ib_shape){(ib_mode)out, 8, 8};
    const int in_modes[2] = {m, m};
    ib_gstep s;
    ib_error err = {0};
    cr_assert_eq(ib_gstep_for_node(&t.node, in_modes, &s, &err), IB_OK, "%s", err.message);
    cr_assert(ib_gchain_push(c, &s));
    m = out;
  }
}

static void tmpdir(char *dir, size_t n) {
  snprintf(dir, n, "/tmp/ib_cpool_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static uint64_t dir_bytes(const char *dir) {
  uint64_t t = 0;
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  for (struct dirent *de; (de = readdir(d));) {
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (de->d_name[0] != '.' && stat(path, &st) == 0) t += (uint64_t)st.st_size;
  }
  closedir(d);
  return t;
}

static void rmdir_all(const char *dir) {
  DIR *d = opendir(dir);
  for (struct dirent *de; d && (de = readdir(d));) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (de->d_name[0] != '.') unlink(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

Test(cpool, chains_compile_by_signature, .timeout = 900) {
  ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
  ib_cpool *p = pool(kc, 2, 8, NULL, NULL);
  ib_gchain c;
  convert_chain(3 + 6 * 2, &c);
  char sig[512];
  ib_gchain_signature(&c, sig, sizeof sig);
  cr_assert_eq(ib_cpool_request_chain(p, &c), IB_CP_QUEUED);
  cr_assert_eq(ib_cpool_request_chain(p, &c), IB_CP_COALESCED);
  cr_assert_eq(ib_cpool_wait(p, sig, 60000), IB_CP_DONE);
  ib_cpool_result r;
  cr_assert_eq(ib_cpool_take(p, sig, &r), IB_CP_DONE);
  expect_image(&r);
  cr_assert_not_null(memmem(r.image, r.len, "ib_chain", 8));
  free(r.image);
  ib_cpool_free(p);
  ib_kcache_free(kc);
}

/* What admission and the tier rely on (worker/gpu/cuda_tier.c): a request
 * below a limit leaves the rest of the table to others; a signature a job
 * now waits for moves to the front of the queue; wait_any returns when a
 * compile finished, at once when none runs. */
Test(cpool, limits_urgency_and_waiting_for_any_compile, .timeout = 900) {
  ib_kcache *kc = ib_kcache_new(NULL, 64 << 20, 0);
  ib_cpool *p = pool(kc, 1, 8, NULL, NULL);
  cr_assert_eq(ib_cpool_bound(p), 8);
  cr_assert_not(ib_cpool_wait_any(p, 5000), "nothing queued: no wait");
  ib_gchain c[6];
  char sig[6][512];
  for (unsigned i = 0; i < 6; i++) {
    convert_chain(100 + i, &c[i]);
    ib_gchain_signature(&c[i], sig[i], sizeof sig[i]);
  }
  for (unsigned i = 0; i < 4; i++) cr_assert_eq(ib_cpool_request_chain(p, &c[i]), IB_CP_QUEUED);
  /* A limit of 4 entries: full for the interpreter's kind of request
   * (counted), not for a plain one; a known signature still coalesces. */
  cr_assert_eq(ib_cpool_request_chain_below(p, &c[4], 4), IB_CP_FULL);
  cr_assert_eq(ib_cpool_request_chain_below(p, &c[0], 4), IB_CP_COALESCED);
  cr_assert_eq(ib_cpool_stats_get(p).rejected_full, 1);
  cr_assert_eq(ib_cpool_request_chain(p, &c[4]), IB_CP_QUEUED);
  /* One thread, busy with the first request or about to be: the last one
   * jumps the three before it. */
  cr_assert_eq(ib_cpool_urgent(p, sig[4]), IB_CP_QUEUED);
  cr_assert_eq(ib_cpool_urgent(p, sig[5]), IB_CP_NONE);
  cr_assert(ib_cpool_wait_any(p, 60000), "compiles were queued");
  cr_assert_eq(ib_cpool_wait(p, sig[4], 60000), IB_CP_DONE);
  cr_assert_neq(ib_cpool_poll(p, sig[3]), IB_CP_DONE, "k3 was behind k4");
  cr_assert_neq(ib_cpool_poll(p, sig[2]), IB_CP_DONE, "so was k2");
  for (unsigned i = 0; i < 4; i++) cr_assert_eq(ib_cpool_wait(p, sig[i], 60000), IB_CP_DONE);
  ib_cpool_result r;
  for (int n = 0; n < 5; n++) {
    cr_assert_eq(ib_cpool_next_done(p, &r), IB_CP_DONE);
    expect_image(&r);
    /* The chain comes back with it, so a result nobody took can still be
     * loaded as its module (ib_lsum, ib_post depend on it). */
    cr_assert(r.has_chain);
    unsigned i = 0;
    while (i < 5 && strcmp(sig[i], r.sig)) i++;
    cr_assert_lt(i, 5u);
    cr_assert_eq(memcmp(&r.chain, &c[i], sizeof c[i]), 0);
    free(r.image);
  }
  cr_assert_not(ib_cpool_wait_any(p, 5000), "all done: no wait");
  ib_cpool_free(p);
  ib_kcache_free(kc);
}

/* Kernel `i` of the 600: a distinct source whose image is about 24 KiB (a
 * 20000-byte constant), so 600 of them outgrow both bounds; about 0.17 s
 * of NVRTC each. */
static char *blob_src(unsigned i, char *sig) {
  enum { BLOB = 20000 };
  char *src = malloc(BLOB + 300);
  cr_assert_not_null(src);
  int k = sprintf(src, "__device__ const char ib_blob[] = \"");
  for (int b = 0; b < BLOB; b++) src[k++] = (char)('a' + (b * 7 + 3) % 26);
  sprintf(src + k,
          "\";\nextern \"C\" __global__ void k(char *p) { p[threadIdx.x] = "
          "ib_blob[threadIdx.x * 7 + 1] + %u; }\n",
          i);
  sprintf(sig, "blob%u", i);
  return src;
}

/* The CI test: 600 distinct signatures through the pool (2
 * threads, a bound of 8 that the submitter meets and waits out, as
 * admission would) into a cache bounded at 5 MiB in memory and 12 MiB on
 * disk: both bounds hold all along, and evicted entries recompile on
 * demand. (IB_POOL_SIGS=n runs fewer.) */
Test(cpool, six_hundred_signatures_through_bounded_caches, .timeout = 900) {
  const int n = getenv("IB_POOL_SIGS") ? atoi(getenv("IB_POOL_SIGS")) : 600;
  const uint64_t mem_cap = 5ull << 20, disk_cap = 12ull << 20;
  char dir[64];
  tmpdir(dir, sizeof dir);
  ib_kcache *kc = ib_kcache_new(dir, mem_cap, disk_cap);
  ib_cpool *p = pool(kc, 2, 8, NULL, NULL);
  static char sigs[1000][64];
  cr_assert_leq(n, 1000);
  int taken = 0, full = 0;
  uint64_t bytes = 0;
  for (int i = 0; i <= n; i++) {
    char *src = i < n ? blob_src((unsigned)i, sigs[i]) : NULL;
    for (;;) {
      if (i < n) {
        const ib_cpool_state s = ib_cpool_request_source(p, sigs[i], "blob.cu", src);
        if (s == IB_CP_QUEUED) break;
        cr_assert_eq(s, IB_CP_FULL);
        full++;
      } else if (taken == n) {
        break;
      }
      /* Past the bound (or at the end): take the oldest result. */
      cr_assert_eq(ib_cpool_wait(p, sigs[taken], 120000), IB_CP_DONE, "%s", sigs[taken]);
      ib_cpool_result r;
      cr_assert_eq(ib_cpool_take(p, sigs[taken], &r), IB_CP_DONE);
      expect_image(&r);
      cr_assert_eq(r.origin, IB_KC_COMPILED);
      bytes += r.len;
      free(r.image);
      taken++;
      ib_kcache_stats ks = ib_kcache_stats_get(kc);
      cr_assert_leq(ks.memory_bytes, mem_cap);
      cr_assert_leq(ks.disk_bytes, disk_cap);
      if (taken % 25 == 0) cr_assert_leq(dir_bytes(dir), disk_cap, "after %d", taken);
    }
    free(src);
  }
  cr_assert_eq(taken, n);
  cr_assert_gt(full, 0, "the submitter never met the bound");
  ib_kcache_stats ks = ib_kcache_stats_get(kc);
  ib_cpool_stats ps = ib_cpool_stats_get(p);
  cr_assert_eq(ks.compiles, (uint64_t)n);
  cr_assert_eq(ps.compiles, (uint64_t)n);
  cr_assert_gt(ps.compile_us, 0);
  cr_assert_leq(dir_bytes(dir), disk_cap);
  /* The first kernel was evicted from memory (the images outgrew it) and,
   * when they outgrew the disk too, from the disk: asked again, it
   * compiles (or loads from disk), never comes from memory. */
  if (n == 600) cr_assert_gt(bytes, disk_cap, "the images no longer outgrow the bounds");
  if (bytes > mem_cap) {
    cr_assert_gt(ks.memory_evictions, 0);
    char *src = blob_src(0, sigs[0]);
    cr_assert_eq(ib_cpool_request_source(p, sigs[0], "blob.cu", src), IB_CP_QUEUED);
    free(src);
    cr_assert_eq(ib_cpool_wait(p, sigs[0], 120000), IB_CP_DONE);
    ib_cpool_result r;
    cr_assert_eq(ib_cpool_take(p, sigs[0], &r), IB_CP_DONE);
    expect_image(&r);
    cr_assert_neq(r.origin, IB_KC_MEMORY);
    if (bytes > disk_cap) {
      cr_assert_gt(ib_kcache_stats_get(kc).disk_evictions, 0);
      cr_assert_eq(r.origin, IB_KC_COMPILED);
    }
    free(r.image);
  }
  cr_log_info("%d signatures, %.1f MiB of images, %.1f s compiling", n, (double)bytes / (1 << 20),
              (double)ps.compile_us * 1e-6);
  ib_cpool_free(p);
  ib_kcache_free(kc);
  rmdir_all(dir);
}
