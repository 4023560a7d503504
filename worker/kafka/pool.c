/*
 * pool.c - the worker's encode pool: codec-bound work (PNG/JPEG/WebP/TIFF
 * encodes, output files) runs on --decode-threads threads while the
 * driving thread keeps feeding the executor and polling Kafka.
 */
#include "kafka/pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "kafka/clock.h"
#include "kafka/hist.h"
#include "kafka/publish.h"
#include "kafka/wake.h"
#include "kafka/wstate.h"
#include "result/result_msg.h"

struct ib_wpool {
  const ib_worker *w;
  pthread_mutex_t mu;
  pthread_cond_t work;
  ib_wout *todo_head, *todo_tail, *done;
  size_t outstanding;
  bool quit;
  ib_hist encode; /* ib_wout_prepare times, under mu */
  int n;
  pthread_t tid[];
};

static void *run(void *arg) {
  ib_wpool *p = arg;
  pthread_setname_np(pthread_self(), "ib-encode"); /* for per-thread profiles */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->todo_head && !p->quit) pthread_cond_wait(&p->work, &p->mu);
    if (!p->todo_head) break;
    ib_wout *o = p->todo_head;
    p->todo_head = o->next;
    if (!p->todo_head) p->todo_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    uint64_t t0 = ib_wnow_us();
    ib_wout_prepare(p->w, o);
    uint64_t took = ib_wnow_us() - t0;
    ib_result_free(&o->res); /* lent pixels go back from any thread */
    pthread_mutex_lock(&p->mu);
    ib_hist_observe(&p->encode, took);
    o->next = p->done;
    p->done = o;
    pthread_mutex_unlock(&p->mu);
    ib_wwake(p->w); /* the driving thread sends it */
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

ib_wpool *ib_wpool_new(const ib_worker *w, int threads) {
  if (threads < 1) threads = 1;
  ib_wpool *p = calloc(1, sizeof *p + (size_t)threads * sizeof(pthread_t));
  if (!p) return NULL;
  p->w = w;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  for (int i = 0; i < threads; i++) {
    if (pthread_create(&p->tid[i], NULL, run, p) != 0) break;
    p->n++;
  }
  if (!p->n) {
    free(p);
    return NULL;
  }
  return p;
}

void ib_wpool_push(ib_wpool *p, ib_wout *o) {
  o->next = NULL;
  pthread_mutex_lock(&p->mu);
  if (p->todo_tail)
    p->todo_tail->next = o;
  else
    p->todo_head = o;
  p->todo_tail = o;
  p->outstanding++;
  pthread_cond_signal(&p->work);
  pthread_mutex_unlock(&p->mu);
}

ib_wout *ib_wpool_take(ib_wpool *p) {
  pthread_mutex_lock(&p->mu);
  ib_wout *d = p->done;
  p->done = NULL;
  for (ib_wout *o = d; o; o = o->next) p->outstanding--;
  pthread_mutex_unlock(&p->mu);
  return d;
}

size_t ib_wpool_outstanding(ib_wpool *p) {
  pthread_mutex_lock(&p->mu);
  size_t n = p->outstanding;
  pthread_mutex_unlock(&p->mu);
  return n;
}

void ib_wpool_encode_hist(ib_wpool *p, ib_hist *out) {
  pthread_mutex_lock(&p->mu);
  *out = p->encode;
  pthread_mutex_unlock(&p->mu);
}

void ib_wpool_free(ib_wpool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->quit = true;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n; i++) pthread_join(p->tid[i], NULL);
  /* Whatever was never sent is dropped: its jobs stay uncommitted. */
  for (ib_wout *o = p->done, *n; o; o = n) {
    n = o->next;
    free(o->packed);
    free(o);
  }
  free(p);
}
