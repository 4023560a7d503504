/* Kernel compiles on a pool of threads (see compile_pool.h). */
#include "gpu/compile_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct centry {
  struct centry *hnext; /* hash chain */
  struct centry *qnext; /* FIFO of queued entries, then of done ones */
  ib_cpool_state state; /* QUEUED, RUNNING or DONE */
  bool late;            /* QUEUED or RUNNING past the time bound */
  uint64_t due_us;      /* RUNNING: when it goes late */
  char *src;            /* NULL: generate from chain */
  char name[64];
  ib_gchain chain;
  ib_cpool_result res; /* res.sig is the key */
} centry;

/* What a compile thread starts from. */
typedef struct targ {
  struct ib_cpool *p;
  int i;
} targ;

struct ib_cpool {
  ib_kcache *kc; /* a reference of the pool's own (the last thread may outlive the owner) */
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
  targ *targs;
  /* Per thread: the entry it compiles (NULL: none), whether it left its
   * loop, and whether free left it running (see ib_cpool_free). */
  centry **cur;
  bool *gone, *left;
  int n_threads;
  int refs;             /* the owner's and each started thread's: the last one frees the pool */
  bool stop;            /* free was called: threads leave their loop */
  bool closed;          /* free stopped waiting: a compile that returns now is discarded */
  uint64_t next_due_us; /* no RUNNING entry goes late before this */
  int late_running;     /* threads still inside a late compile */
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

/* Threads ib_cpool_free left inside a compile, still running. */
static atomic_uint_fast64_t orphans;

uint64_t ib_cpool_orphans(void) { return atomic_load(&orphans); }

/* Under the lock. A thread that waits on a compile that never returns is
 * lost to the pool (NVRTC cannot be interrupted); once every thread is,
 * nothing queued can start either, so queued entries go late too. */
static void mark_queue(ib_cpool *p, bool late) {
  for (centry *e = p->q_head; e; e = e->qnext) {
    if (late && !e->late) p->st.timed_out++;
    e->late = late;
  }
}

/* Under the lock: marks LATE what passed the time bound. Scans the table
 * only once the earliest due time passed (entries start later, so the
 * earliest due time only moves on). */
static void expire(ib_cpool *p) {
  if (!p->o.timeout_ms) return;
  const uint64_t now = now_us();
  if (now < p->next_due_us) return;
  p->next_due_us = UINT64_MAX;
  for (size_t b = 0; b < p->n_buckets; b++)
    for (centry *e = p->buckets[b]; e; e = e->hnext) {
      if (e->state != IB_CP_RUNNING || e->late) continue;
      if (e->due_us <= now) {
        e->late = true;
        p->late_running++;
        p->st.timed_out++;
      } else if (e->due_us < p->next_due_us) {
        p->next_due_us = e->due_us;
      }
    }
  if (p->late_running >= p->n_threads) mark_queue(p, true);
}

/* What callers see of an entry. */
static ib_cpool_state state_of(const centry *e) {
  if (!e) return IB_CP_NONE;
  return e->late && e->state != IB_CP_DONE ? IB_CP_LATE : e->state;
}

/* The absolute CLOCK_MONOTONIC time to wake at: `until` (us, the caller's
 * own limit), brought forward to just past the next due time, so a waiter
 * sees a compile go late, and to just past one bound from now, the
 * earliest due time of a compile that starts while it sleeps. */
static struct timespec wake_at(const ib_cpool *p, uint64_t until) {
  uint64_t t = until;
  if (p->o.timeout_ms) {
    uint64_t due = now_us() + (uint64_t)p->o.timeout_ms * 1000u;
    if (p->next_due_us < due) due = p->next_due_us;
    due += 1000u; /* just past it: expire() then sees it due */
    if (due < t) t = due;
  }
  if (t > (uint64_t)INT32_MAX * 1000000u) t = (uint64_t)INT32_MAX * 1000000u;
  return (struct timespec){.tv_sec = (time_t)(t / 1000000u),
                           .tv_nsec = (long)(t % 1000000u) * 1000};
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

/* Frees the pool once its last reference is gone: the owner's (free) or,
 * when free left a compile running, that thread's. Nothing else holds it. */
static void destroy(ib_cpool *p) {
  for (size_t b = 0; p->buckets && b < p->n_buckets; b++)
    for (centry *e = p->buckets[b], *n; e; e = n) {
      n = e->hnext;
      entry_free(e);
    }
  for (int i = 0; p->opts && i < p->o.n_opts; i++) free(p->opts[i]);
  free(p->opts);
  free(p->buckets);
  free(p->threads);
  free(p->targs);
  free(p->cur);
  free(p->gone);
  free(p->left);
  ib_kcache_free(p->kc);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->work);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* Under the lock; unlocks. Drops one reference and frees the pool with the
 * last one. */
static void unref(ib_cpool *p) {
  const bool last = --p->refs == 0;
  pthread_mutex_unlock(&p->mu);
  if (last) destroy(p);
}

static void *worker(void *arg) {
  const targ *a = arg;
  pthread_setname_np(pthread_self(), "ib-compile"); /* for per-thread profiles */
  ib_cpool *p = a->p;
  const int me = a->i;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && !p->q_head) pthread_cond_wait(&p->work, &p->mu);
    if (p->stop) break;
    centry *e = p->q_head;
    p->q_head = e->qnext;
    if (!p->q_head) p->q_tail = NULL;
    e->qnext = NULL;
    e->state = IB_CP_RUNNING;
    e->late = false; /* queued late behind stuck threads: its own bound now */
    if (p->o.timeout_ms) {
      e->due_us = now_us() + (uint64_t)p->o.timeout_ms * 1000u;
      if (e->due_us < p->next_due_us) p->next_due_us = e->due_us;
    }
    p->cur[me] = e;
    /* The entry stays in the table (RUNNING): only this thread touches
     * its result until it is DONE; free leaves it to this thread. */
    pthread_mutex_unlock(&p->mu);
    if (p->o.on_start) p->o.on_start(p->o.ctx, e->res.sig);
    compile(p, e);
    pthread_mutex_lock(&p->mu);
    p->cur[me] = NULL;
    if (p->closed) {
      /* free gave up on this compile: nobody takes its result (its jobs
       * failed when it went late), and no hook runs any more. */
      entry_free(e);
      break;
    }
    if (e->late) {
      /* It finished after all: its jobs failed, its result is kept as any
       * other, and this thread can take queued work again. */
      e->late = false;
      p->late_running--;
      mark_queue(p, false);
    }
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
  p->gone[me] = true;
  const bool left = p->left[me];
  pthread_cond_broadcast(&p->done); /* free waits for threads to leave */
  unref(p);
  if (left) atomic_fetch_sub(&orphans, 1); /* after unref: nothing of it is running */
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
  p->kc = ib_kcache_retain(kc);
  p->o = *o;
  if (!p->o.close_ms) p->o.close_ms = IB_CPOOL_CLOSE_MS_DEFAULT;
  p->refs = 1;
  snprintf(p->arch, sizeof p->arch, "%s", o->arch);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* wake_at's clock */
  pthread_cond_init(&p->done, &ca);
  pthread_condattr_destroy(&ca);
  p->next_due_us = UINT64_MAX;
  p->n_buckets = 16;
  while (p->n_buckets < 2u * o->max_pending) p->n_buckets *= 2;
  p->buckets = calloc(p->n_buckets, sizeof *p->buckets);
  p->opts = calloc((size_t)o->n_opts + 1, sizeof *p->opts);
  const size_t t = (size_t)o->threads;
  p->threads = calloc(t, sizeof *p->threads);
  p->targs = calloc(t, sizeof *p->targs);
  p->cur = calloc(t, sizeof *p->cur);
  p->gone = calloc(t, sizeof *p->gone);
  p->left = calloc(t, sizeof *p->left);
  if (!p->buckets || !p->opts || !p->threads || !p->targs || !p->cur || !p->gone || !p->left)
    return fail(p, err, "out of memory");
  for (int i = 0; i < o->n_opts; i++)
    if (!(p->opts[i] = strdup(o->opts[i]))) return fail(p, err, "out of memory");
  for (int i = 0; i < o->threads; i++) {
    p->targs[i] = (targ){p, i};
    pthread_mutex_lock(&p->mu);
    p->refs++; /* before the thread can drop it */
    pthread_mutex_unlock(&p->mu);
    if (pthread_create(&p->threads[i], NULL, worker, &p->targs[i]) != 0) {
      pthread_mutex_lock(&p->mu);
      p->refs--;
      pthread_mutex_unlock(&p->mu);
      return fail(p, err, "cannot start a compile thread");
    }
    p->n_threads++;
  }
  return p;
}

/* Under the lock: whether free should wait on: a thread has yet to leave
 * and is not stuck in a compile past its time bound (LATE: its jobs have
 * failed; NVRTC cannot be interrupted, so waiting for it could be for
 * ever). */
static bool worth_waiting(ib_cpool *p) {
  expire(p);
  for (int i = 0; i < p->n_threads; i++)
    if (!p->gone[i] && !(p->cur[i] && p->cur[i]->late)) return true;
  return false;
}

void ib_cpool_free(ib_cpool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work);
  const uint64_t until = now_us() + (uint64_t)p->o.close_ms * 1000u;
  while (worth_waiting(p) && now_us() < until) {
    const struct timespec at = wake_at(p, until);
    pthread_cond_timedwait(&p->done, &p->mu, &at);
  }
  /* Closed: a thread still inside a compile owns its entry (and holds the
   * pool and the cache through its reference) and discards the result when
   * it returns; every other entry is freed now. */
  p->closed = true;
  for (size_t b = 0; p->buckets && b < p->n_buckets; b++) {
    for (centry *e = p->buckets[b], *n; e; e = n) {
      n = e->hnext;
      if (e->state != IB_CP_RUNNING) entry_free(e);
    }
    p->buckets[b] = NULL;
  }
  p->q_head = p->q_tail = p->d_head = p->d_tail = NULL;
  for (int i = 0; i < p->n_threads; i++)
    if ((p->left[i] = !p->gone[i])) atomic_fetch_add(&orphans, 1);
  pthread_mutex_unlock(&p->mu);
  /* A thread that left is joined (it ends at once); one still compiling
   * is detached and frees the pool if it is the last to let go of it. */
  for (int i = 0; i < p->n_threads; i++) {
    if (p->left[i])
      pthread_detach(p->threads[i]);
    else
      pthread_join(p->threads[i], NULL);
  }
  pthread_mutex_lock(&p->mu);
  unref(p);
}

/* Under the lock: coalesces, refuses once the table holds `limit`
 * entries, or inserts e. */
static ib_cpool_state enqueue(ib_cpool *p, centry *e, uint32_t limit) {
  pthread_mutex_lock(&p->mu);
  expire(p);
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
    if (p->o.timeout_ms && p->late_running >= p->n_threads) {
      e->late = true; /* no thread can start it */
      p->st.timed_out++;
    }
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
  expire(p);
  ib_cpool_state s = state_of(*slot(p, sig));
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
  expire(p);
  centry *e = *slot(p, sig);
  ib_cpool_state s = state_of(e);
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
  const uint64_t until = timeout_ms < 0 ? UINT64_MAX : now_us() + (uint64_t)timeout_ms * 1000u;
  pthread_mutex_lock(&p->mu);
  ib_cpool_state s;
  for (;;) {
    expire(p);
    s = state_of(*slot(p, sig));
    if (s == IB_CP_DONE || s == IB_CP_NONE || s == IB_CP_LATE || now_us() >= until) break;
    if (timeout_ms < 0 && !p->o.timeout_ms) {
      pthread_cond_wait(&p->done, &p->mu);
    } else {
      const struct timespec at = wake_at(p, until);
      pthread_cond_timedwait(&p->done, &p->mu, &at);
    }
  }
  pthread_mutex_unlock(&p->mu);
  return s;
}

ib_cpool_state ib_cpool_urgent(ib_cpool *p, const char *sig) {
  pthread_mutex_lock(&p->mu);
  centry *e = *slot(p, sig);
  ib_cpool_state s = state_of(e);
  if (e && e->state == IB_CP_QUEUED && p->q_head != e) {
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

/* Under the lock: finished or late, the count the executor waits on to
 * move (cuda_tier.c ready_epoch). */
static uint64_t moved(const ib_cpool *p) {
  return p->st.compiles + p->st.cache_hits + p->st.timed_out;
}

bool ib_cpool_wait_any(ib_cpool *p, int timeout_ms) {
  const uint64_t until = now_us() + (uint64_t)timeout_ms * 1000u;
  pthread_mutex_lock(&p->mu);
  expire(p);
  const bool busy = p->st.depth > 0;
  const uint64_t before = moved(p);
  while (busy && moved(p) == before && now_us() < until) {
    const struct timespec at = wake_at(p, until);
    pthread_cond_timedwait(&p->done, &p->mu, &at);
    expire(p);
  }
  pthread_mutex_unlock(&p->mu);
  return busy;
}

uint32_t ib_cpool_bound(const ib_cpool *p) { return p->o.max_pending; }
uint32_t ib_cpool_timeout_ms(const ib_cpool *p) { return p->o.timeout_ms; }

ib_cpool_stats ib_cpool_stats_get(ib_cpool *p) {
  pthread_mutex_lock(&p->mu);
  expire(p);
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
