/* Kernel compiles on a pool of threads (see compile_pool.h). */
#include "gpu/compile_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct centry {
  struct centry *hnext; /* hash chain */
  struct centry *qnext; /* FIFO of queued entries, then of done ones */
  ib_cpool_state state; /* QUEUED, RUNNING or DONE */
  char *src;            /* NULL: generate from chain */
  char name[64];
  ib_gchain chain;
  ib_cpool_result res; /* res.sig is the key */
} centry;

struct ib_cpool {
  ib_kcache *kc;
  ib_cpool_options o;
  char arch[32];
  char **opts;
  pthread_mutex_t mu;
  pthread_cond_t work; /* queued entries or stop */
  pthread_cond_t done; /* an entry finished */
  centry **buckets;
  size_t n_buckets; /* power of two */
  centry *q_head, *q_tail, *d_head, *d_tail;
  pthread_t *threads;
  int n_threads;
  bool stop;
  ib_cpool_stats st;
};

static uint64_t hash_sig(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

static centry **slot(ib_cpool *p, const char *sig) {
  centry **e = &p->buckets[hash_sig(sig) & (p->n_buckets - 1)];
  while (*e && strcmp((*e)->res.sig, sig) != 0) e = &(*e)->hnext;
  return e;
}

static void entry_free(centry *e) {
  if (!e) return;
  free(e->src);
  free(e->res.image);
  free(e);
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void compile(ib_cpool *p, centry *e) {
  ib_cpool_result *r = &e->res;
  const uint64_t t0 = now_us();
  char *gen = e->src ? NULL : ib_gchain_source(&e->chain);
  const char *src = e->src ? e->src : gen;
  r->origin = IB_KC_COMPILED;
  if (!src) {
    r->status = r->err.status = IB_INTERNAL;
    r->err.stage = IB_STAGE_EXECUTE;
    snprintf(r->err.message, sizeof r->err.message, "backend cuda: out of memory generating %.200s",
             r->sig);
  } else {
    r->status = ib_kcache_get(p->kc, e->name, src, p->arch, (const char *const *)p->opts,
                              p->o.n_opts, &r->image, &r->len, &r->origin, NULL, &r->err);
  }
  free(gen);
  r->compile_us = now_us() - t0;
}

static void *worker(void *arg) {
  ib_cpool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && !p->q_head) pthread_cond_wait(&p->work, &p->mu);
    if (p->stop) break;
    centry *e = p->q_head;
    p->q_head = e->qnext;
    if (!p->q_head) p->q_tail = NULL;
    e->qnext = NULL;
    e->state = IB_CP_RUNNING;
    /* The entry stays in the table (RUNNING): only this thread touches
     * its result until it is DONE, and free joins us before freeing it. */
    pthread_mutex_unlock(&p->mu);
    compile(p, e);
    pthread_mutex_lock(&p->mu);
    e->state = IB_CP_DONE;
    if (p->d_tail)
      p->d_tail->qnext = e;
    else
      p->d_head = e;
    p->d_tail = e;
    p->st.depth--;
    if (e->res.origin == IB_KC_COMPILED)
      p->st.compiles++, p->st.compile_us += e->res.compile_us;
    else
      p->st.cache_hits++;
    if (e->res.status != IB_OK) p->st.failed++;
    pthread_cond_broadcast(&p->done);
    if (p->o.on_done) {
      pthread_mutex_unlock(&p->mu);
      p->o.on_done(p->o.ctx);
      pthread_mutex_lock(&p->mu);
    }
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static ib_cpool *fail(ib_cpool *p, ib_error *err, const char *what) {
  err->status = IB_INTERNAL;
  err->stage = IB_STAGE_ADMIT;
  snprintf(err->message, sizeof err->message, "backend cuda: compile pool: %s", what);
  ib_cpool_free(p);
  return NULL;
}

ib_cpool *ib_cpool_new(ib_kcache *kc, const ib_cpool_options *o, ib_error *err) {
  if (!kc || !o || o->threads < 1 || o->max_pending < 1 || !o->arch || o->n_opts < 0) {
    err->status = IB_INVALID;
    err->stage = IB_STAGE_ADMIT;
    snprintf(err->message, sizeof err->message,
             "backend cuda: compile pool: needs a cache, >= 1 thread, a bound >= 1, an arch");
    return NULL;
  }
  ib_cpool *p = calloc(1, sizeof *p);
  if (!p) return fail(NULL, err, "out of memory");
  p->kc = kc;
  p->o = *o;
  snprintf(p->arch, sizeof p->arch, "%s", o->arch);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_cond_init(&p->done, NULL);
  p->n_buckets = 16;
  while (p->n_buckets < 2u * o->max_pending) p->n_buckets *= 2;
  p->buckets = calloc(p->n_buckets, sizeof *p->buckets);
  p->opts = calloc((size_t)o->n_opts + 1, sizeof *p->opts);
  p->threads = calloc((size_t)o->threads, sizeof *p->threads);
  if (!p->buckets || !p->opts || !p->threads) return fail(p, err, "out of memory");
  for (int i = 0; i < o->n_opts; i++)
    if (!(p->opts[i] = strdup(o->opts[i]))) return fail(p, err, "out of memory");
  for (int i = 0; i < o->threads; i++) {
    if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
      return fail(p, err, "cannot start a compile thread");
    p->n_threads++;
  }
  return p;
}

void ib_cpool_free(ib_cpool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
  /* Every thread is gone: queued, finished and untaken entries alike are
   * only in the table now. */
  for (size_t b = 0; p->buckets && b < p->n_buckets; b++)
    for (centry *e = p->buckets[b], *n; e; e = n) {
      n = e->hnext;
      entry_free(e);
    }
  for (int i = 0; p->opts && i < p->o.n_opts; i++) free(p->opts[i]);
  free(p->opts);
  free(p->buckets);
  free(p->threads);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->work);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* Under the lock: coalesces, refuses once the table holds `limit`
 * entries, or inserts e. */
static ib_cpool_state enqueue(ib_cpool *p, centry *e, uint32_t limit) {
  pthread_mutex_lock(&p->mu);
  p->st.requests++;
  centry **s = slot(p, e->res.sig);
  ib_cpool_state r;
  if (*s) {
    p->st.coalesced++;
    r = IB_CP_COALESCED;
  } else if (p->st.pending >= limit || p->st.pending >= p->o.max_pending || p->stop) {
    p->st.rejected_full++;
    r = IB_CP_FULL;
  } else {
    *s = e;
    e->state = IB_CP_QUEUED;
    if (p->q_tail)
      p->q_tail->qnext = e;
    else
      p->q_head = e;
    p->q_tail = e;
    p->st.pending++;
    p->st.depth++;
    pthread_cond_signal(&p->work);
    e = NULL;
    r = IB_CP_QUEUED;
  }
  pthread_mutex_unlock(&p->mu);
  entry_free(e);
  return r;
}

ib_cpool_state ib_cpool_request_chain(ib_cpool *p, const ib_gchain *c) {
  return ib_cpool_request_chain_below(p, c, p->o.max_pending);
}

ib_cpool_state ib_cpool_request_chain_below(ib_cpool *p, const ib_gchain *c, uint32_t limit) {
  centry *e = calloc(1, sizeof *e);
  if (!e) return IB_CP_NONE;
  if (ib_gchain_signature(c, e->res.sig, sizeof e->res.sig) >= IB_CPOOL_SIG_MAX) {
    free(e); /* never: 16 steps fit; a cut signature could alias another */
    return IB_CP_NONE;
  }
  e->chain = *c;
  snprintf(e->name, sizeof e->name, "chain.cu");
  return enqueue(p, e, limit);
}

ib_cpool_state ib_cpool_request_source(ib_cpool *p, const char *sig, const char *name,
                                       const char *src) {
  if (strlen(sig) >= IB_CPOOL_SIG_MAX) return IB_CP_NONE;
  centry *e = calloc(1, sizeof *e);
  if (!e) return IB_CP_NONE;
  if (!(e->src = strdup(src))) {
    free(e);
    return IB_CP_NONE;
  }
  snprintf(e->res.sig, sizeof e->res.sig, "%s", sig);
  snprintf(e->name, sizeof e->name, "%s", name ? name : "kernel.cu");
  return enqueue(p, e, p->o.max_pending);
}

ib_cpool_state ib_cpool_poll(ib_cpool *p, const char *sig) {
  pthread_mutex_lock(&p->mu);
  centry *e = *slot(p, sig);
  ib_cpool_state s = e ? e->state : IB_CP_NONE;
  pthread_mutex_unlock(&p->mu);
  return s;
}

/* Under the lock: unlinks a DONE entry from the table and the done list
 * and moves its result out. */
static void hand_over(ib_cpool *p, centry *e, ib_cpool_result *out) {
  *slot(p, e->res.sig) = e->hnext;
  centry **d = &p->d_head, *prev = NULL;
  while (*d != e) prev = *d, d = &(*d)->qnext;
  *d = e->qnext;
  if (p->d_tail == e) p->d_tail = prev;
  p->st.pending--;
  *out = e->res;
  out->has_chain = !e->src;
  out->chain = e->chain;
  e->res.image = NULL;
  entry_free(e);
}

ib_cpool_state ib_cpool_take(ib_cpool *p, const char *sig, ib_cpool_result *out) {
  pthread_mutex_lock(&p->mu);
  centry *e = *slot(p, sig);
  ib_cpool_state s = e ? e->state : IB_CP_NONE;
  if (s == IB_CP_DONE) hand_over(p, e, out);
  pthread_mutex_unlock(&p->mu);
  return s;
}

ib_cpool_state ib_cpool_next_done(ib_cpool *p, ib_cpool_result *out) {
  pthread_mutex_lock(&p->mu);
  centry *e = p->d_head;
  if (e) hand_over(p, e, out);
  pthread_mutex_unlock(&p->mu);
  return e ? IB_CP_DONE : IB_CP_NONE;
}

ib_cpool_state ib_cpool_wait(ib_cpool *p, const char *sig, int timeout_ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  if (timeout_ms >= 0) {
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&p->mu);
  ib_cpool_state s;
  for (;;) {
    centry *e = *slot(p, sig);
    s = e ? e->state : IB_CP_NONE;
    if (s == IB_CP_DONE || s == IB_CP_NONE) break;
    if (timeout_ms < 0)
      pthread_cond_wait(&p->done, &p->mu);
    else if (pthread_cond_timedwait(&p->done, &p->mu, &until) == ETIMEDOUT)
      break;
  }
  pthread_mutex_unlock(&p->mu);
  return s;
}

ib_cpool_state ib_cpool_urgent(ib_cpool *p, const char *sig) {
  pthread_mutex_lock(&p->mu);
  centry *e = *slot(p, sig);
  ib_cpool_state s = e ? e->state : IB_CP_NONE;
  if (s == IB_CP_QUEUED && p->q_head != e) {
    centry *prev = p->q_head;
    while (prev->qnext != e) prev = prev->qnext;
    prev->qnext = e->qnext;
    if (p->q_tail == e) p->q_tail = prev;
    e->qnext = p->q_head;
    p->q_head = e;
  }
  pthread_mutex_unlock(&p->mu);
  return s;
}

bool ib_cpool_wait_any(ib_cpool *p, int timeout_ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&p->mu);
  const bool busy = p->st.depth > 0;
  const uint64_t finished = p->st.compiles + p->st.cache_hits;
  while (busy && p->st.compiles + p->st.cache_hits == finished)
    if (pthread_cond_timedwait(&p->done, &p->mu, &until) == ETIMEDOUT) break;
  pthread_mutex_unlock(&p->mu);
  return busy;
}

uint32_t ib_cpool_bound(const ib_cpool *p) { return p->o.max_pending; }

ib_cpool_stats ib_cpool_stats_get(ib_cpool *p) {
  pthread_mutex_lock(&p->mu);
  ib_cpool_stats s = p->st;
  pthread_mutex_unlock(&p->mu);
  return s;
}

void ib_cpool_note(ib_cpool *p, ib_cpool_note_kind k, uint64_t n) {
  pthread_mutex_lock(&p->mu);
  if (k == IB_CP_NOTE_WAITED)
    p->st.jobs_waited += n;
  else
    p->st.interp_runs += n;
  pthread_mutex_unlock(&p->mu);
}
