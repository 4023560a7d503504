/* The host pool: parallel for and posted batches run every index once, in
 * any mix, and a waited batch is the caller's again. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/hostpar.h"

typedef struct hits {
  atomic_uint *count; /* calls per index */
  unsigned sleep_us;  /* each call, so the batches overlap */
} hits;

static void hit(void *ctx, size_t i) {
  hits *h = ctx;
  if (h->sleep_us) nanosleep(&(struct timespec){0, (long)h->sleep_us * 1000}, NULL);
  atomic_fetch_add(&h->count[i], 1);
}

static hits hits_new(size_t n, unsigned sleep_us) {
  hits h = {calloc(n, sizeof *h.count), sleep_us};
  cr_assert(h.count);
  return h;
}

static void each_once(const hits *h, size_t n) {
  for (size_t i = 0; i < n; i++) cr_assert_eq(atomic_load(&h->count[i]), 1u, "index %zu", i);
}

Test(hostpar, parallel_for_runs_every_index_once) {
  const int threads[] = {-1, 0, 1, 3};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    ib_hostpar *p = ib_hostpar_new(threads[t]);
    cr_assert(p);
    for (size_t n = 0; n < 200; n += 37) {
      hits h = hits_new(n + 1, 0);
      ib_hostpar_for(p, n, hit, &h);
      each_once(&h, n);
      free(h.count);
    }
    ib_hostpar_free(p);
  }
}

Test(hostpar, posted_batches_run_while_the_caller_goes_on) {
  ib_hostpar *p = ib_hostpar_new(3);
  enum { K = 6, N = 40 };
  ib_hostpar_batch b[K];
  hits h[K];
  for (int k = 0; k < K; k++) {
    h[k] = hits_new(N, 200);
    ib_hostpar_post(p, &b[k], N, hit, &h[k]);
  }
  /* A parallel for behind them still completes (its caller runs it). */
  hits f = hits_new(N, 0);
  ib_hostpar_for(p, N, hit, &f);
  each_once(&f, N);
  /* Polled to the end without helping, then waited in reverse order. */
  for (int spins = 0; !ib_hostpar_done(&b[0]); spins++) {
    cr_assert_lt(spins, 100000, "the workers never finished the first batch");
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
  each_once(&h[0], N);
  for (int k = K - 1; k >= 0; k--) {
    ib_hostpar_wait(p, &b[k]);
    cr_assert(ib_hostpar_done(&b[k]));
    each_once(&h[k], N);
  }
  /* The batches' memory is the caller's again: reused at once. */
  for (int k = 0; k < K; k++) {
    h[k].sleep_us = 0;
    for (int i = 0; i < N; i++) atomic_store(&h[k].count[i], 0);
    ib_hostpar_post(p, &b[k], N, hit, &h[k]);
  }
  for (int k = 0; k < K; k++) {
    ib_hostpar_wait(p, &b[k]);
    each_once(&h[k], N);
    free(h[k].count);
  }
  free(f.count);
  ib_hostpar_free(p);
}

Test(hostpar, without_workers_a_post_runs_at_once) {
  ib_hostpar *p = ib_hostpar_new(0);
  ib_hostpar_batch b;
  hits h = hits_new(9, 0);
  ib_hostpar_post(p, &b, 9, hit, &h);
  cr_assert(ib_hostpar_done(&b));
  each_once(&h, 9);
  ib_hostpar_wait(p, &b);
  ib_hostpar_post(NULL, &b, 0, hit, &h);
  cr_assert(ib_hostpar_done(&b));
  free(h.count);
  ib_hostpar_free(p);
}
