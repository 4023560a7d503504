/* Parallel for over a fixed set of worker threads (see hostpar.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/hostpar.h"

struct ib_hostpar {
  pthread_t *tid;
  int n;
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  unsigned long gen;
  int busy, quit;
  ib_pfor_fn fn;
  void *ctx;
  size_t total;
  atomic_size_t next;
};

static void drain(ib_hostpar *p) {
  for (;;) {
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->total) return;
    p->fn(p->ctx, i);
  }
}

static void *worker(void *arg) {
  ib_hostpar *p = arg;
  unsigned long seen = 0;
  pthread_setname_np(pthread_self(), "ib-host"); /* for per-thread profiles */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
    if (p->quit) break;
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    drain(p);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

ib_hostpar *ib_hostpar_new(int threads) {
  if (threads < 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    threads = (int)(cpus > 1 ? cpus - 1 : 0);
  }
  if (threads > IB_HOSTPAR_MAX) threads = IB_HOSTPAR_MAX;
  ib_hostpar *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  p->tid = calloc((size_t)(threads ? threads : 1), sizeof *p->tid);
  for (int i = 0; p->tid && i < threads; i++) {
    if (pthread_create(&p->tid[i], NULL, worker, p) != 0) break;
    p->n++;
  }
  return p;
}

void ib_hostpar_free(ib_hostpar *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n; i++) pthread_join(p->tid[i], NULL);
  free(p->tid);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
  free(p);
}

int ib_hostpar_threads(const ib_hostpar *p) { return p ? p->n : 0; }

void ib_hostpar_for(ib_hostpar *p, size_t n, ib_pfor_fn fn, void *ctx) {
  if (!p || p->n == 0 || n < 2) {
    for (size_t i = 0; i < n; i++) fn(ctx, i);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->total = n;
  atomic_store(&p->next, 0);
  p->busy = p->n;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  drain(p);
  pthread_mutex_lock(&p->mu);
  while (p->busy) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
