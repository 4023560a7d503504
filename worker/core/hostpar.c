/* Batches over a fixed set of worker threads (see hostpar.h). Workers
 * take indices from the oldest queued batch with an atomic counter; the
 * lock guards only the queue and who is inside which batch, so a batch
 * of many small calls costs one atomic each. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/hostpar.h"

struct ib_hostpar {
  pthread_t *tid;
  int n;
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  int quit;
  ib_hostpar_batch *head, *tail; /* batches with indices left to hand out */
  atomic_int fronts;             /* parallel fors among them */
};

/* Takes indices of b until none are left; a worker in a posted batch
 * (p set) leaves it early once a parallel for is queued, for that. */
static void drain(ib_hostpar *p, ib_hostpar_batch *b) {
  for (;;) {
    size_t i = atomic_fetch_add(&b->next, 1);
    if (i >= b->n) return;
    b->fn(b->ctx, i);
    atomic_fetch_sub(&b->left, 1);
    if (p && atomic_load_explicit(&p->fronts, memory_order_relaxed) > 0) return;
  }
}

static bool exhausted(ib_hostpar_batch *b) { return atomic_load(&b->next) >= b->n; }

/* Lock held: b off the queue, wherever it is. */
static void unqueue(ib_hostpar *p, ib_hostpar_batch *b) {
  if (!b->queued) return;
  if (b->front) atomic_fetch_sub(&p->fronts, 1);
  ib_hostpar_batch **at = &p->head, *prev = NULL;
  while (*at != b) prev = *at, at = &(*at)->link;
  *at = b->link;
  if (p->tail == b) p->tail = prev;
  b->link = NULL;
  b->queued = false;
}

static void *worker(void *arg) {
  ib_hostpar *p = arg;
  pthread_setname_np(pthread_self(), "ib-host"); /* for per-thread profiles */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && !p->head) pthread_cond_wait(&p->go, &p->mu);
    if (!p->head) break; /* quit, and nothing queued */
    ib_hostpar_batch *b = p->head;
    b->users++;
    pthread_mutex_unlock(&p->mu);
    drain(b->front ? NULL : p, b);
    pthread_mutex_lock(&p->mu);
    if (exhausted(b)) unqueue(p, b); /* every index is handed out: the next batch's turn */
    /* The last one out wakes the batch's waiter (the calls it ran itself
     * need no wakeup). */
    if (--b->users == 0 && atomic_load(&b->left) == 0) pthread_cond_broadcast(&p->done);
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
  atomic_init(&p->fronts, 0);
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

/* A batch somebody waits for goes first (front): the caller of a
 * parallel for is blocked on it, a posted batch's owner is not. */
static void queue(ib_hostpar *p, ib_hostpar_batch *b, size_t n, ib_pfor_fn fn, void *ctx,
                  bool front) {
  *b = (ib_hostpar_batch){.fn = fn, .ctx = ctx, .n = n, .front = front};
  atomic_init(&b->next, 0);
  atomic_init(&b->left, n);
  if (!p || p->n == 0 || n == 0) {
    drain(NULL, b);
    return;
  }
  pthread_mutex_lock(&p->mu);
  b->queued = true;
  if (front) {
    atomic_fetch_add(&p->fronts, 1);
    b->link = p->head;
    p->head = b;
    if (!p->tail) p->tail = b;
  } else {
    if (p->tail)
      p->tail->link = b;
    else
      p->head = b;
    p->tail = b;
  }
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
}

void ib_hostpar_post(ib_hostpar *p, ib_hostpar_batch *b, size_t n, ib_pfor_fn fn, void *ctx) {
  queue(p, b, n, fn, ctx, false);
}

bool ib_hostpar_done(ib_hostpar_batch *b) { return atomic_load(&b->left) == 0; }

void ib_hostpar_wait(ib_hostpar *p, ib_hostpar_batch *b) {
  drain(NULL, b);
  if (!p || p->n == 0) return;
  pthread_mutex_lock(&p->mu);
  while (atomic_load(&b->left) != 0 || b->users) pthread_cond_wait(&p->done, &p->mu);
  unqueue(p, b); /* drained by the caller before a worker reached it */
  pthread_mutex_unlock(&p->mu);
}

void ib_hostpar_for(ib_hostpar *p, size_t n, ib_pfor_fn fn, void *ctx) {
  if (!p || p->n == 0 || n < 2) {
    for (size_t i = 0; i < n; i++) fn(ctx, i);
    return;
  }
  ib_hostpar_batch b;
  queue(p, &b, n, fn, ctx, true);
  ib_hostpar_wait(p, &b);
}
