/* The CUDA backend's kernel tiers (docs/design.md; cuda_internal.h). With
 * compile_threads > 0 a stage whose module is not loaded does not wait for
 * NVRTC inside its submission: the compile pool (compile_pool.h) compiles
 * the signature on its own threads and, meanwhile, a pointwise stage runs
 * on the interpreter (interp.h), which calls the same step functions and so
 * gives the same bytes. Later submissions take the module once it is done,
 * as a JIT tiers up.
 *
 * The pool's table is bounded (compile_queue). Pointwise signatures never
 * wait: at 3/4 of the bound their compiles are simply not requested (the
 * interpreter runs them; a later stage asks again), so a storm of new
 * pointwise signatures costs no latency. A head the interpreter cannot run
 * (gathers, passes) needs its kernel: admission (ib_cuda_tier_admit)
 * requests its compile, and answers QueueFull when the table is full, so a
 * storm of those becomes backpressure. Until the kernel is loaded the job
 * is not ready (ib_cuda_tier_ready, backend.h job_ready): the executor
 * parks it out of submissions, so no other job waits for that compile.
 * Only a job submitted regardless (queue mode off, or nothing left
 * compiling) waits inside its submission, for that compile moved to the
 * front of the queue, not for an inline one.
 *
 * A compile has a time bound (compile_timeout_ms): one still running past
 * it is LATE (compile_pool.h), and so is every queued one once each pool
 * thread is stuck in such a compile. A job needing a LATE kernel is ready
 * (no parked job waits for good, deadline or not) and its submission
 * fails it with IB_INTERNAL: a stuck compiler is a fault of the worker,
 * not of the job (README, "The Kafka worker"), so the worker retries it rather than answer it;
 * its credits come back as for any failed job. NVRTC cannot be
 * interrupted: the pool thread goes on, and a late result is kept as any
 * other should it come. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/config.h"
#include "gpu/cuda_internal.h"

static const char *const nvrtc_opts[] = {"--fmad=false"};

ib_status ib_cuda_tier_open(ib_cuda *c, const ib_executor_options *o, ib_error *err) {
  if (o->compile_threads <= 0) return IB_OK;
  /* The interpreter module: one compile per process (then on disk). */
  char *src = ib_interp_source();
  if (!src) {
    err->status = IB_INTERNAL;
    snprintf(err->message, sizeof err->message, "backend cuda: no interpreter source");
    return IB_INTERNAL;
  }
  void *img = NULL;
  size_t len = 0;
  ib_status st =
      ib_kcache_get(c->kc, "interp.cu", src, c->arch, nvrtc_opts, 1, &img, &len, NULL, NULL, err);
  free(src);
  if (st != IB_OK) return st;
  CUresult rc = c->cu->cuModuleLoadData(&c->imod, img);
  free(img);
  if (rc == CUDA_SUCCESS) rc = c->cu->cuModuleGetFunction(&c->ifn, c->imod, IB_INTERP_KERNEL);
  if (rc == CUDA_SUCCESS)
    rc = c->cu->cuModuleGetFunction(&c->ilsum, c->imod, IB_INTERP_LSUM_KERNEL);
  if (rc != CUDA_SUCCESS)
    return ib_cu_fail(c->cu, rc, err, IB_STAGE_ADMIT, "loading the interpreter module");
  ib_cpool_options po = {
      .threads = o->compile_threads,
      .max_pending = ib_config_of(o)->compile_queue,
      .arch = c->arch,
      .opts = nvrtc_opts,
      .n_opts = 1,
      .timeout_ms = o->compile_timeout_ms ? o->compile_timeout_ms : IB_COMPILE_TIMEOUT_MS_DEFAULT};
  c->cpool = ib_cpool_new(c->kc, &po, err);
  return c->cpool ? IB_OK : (err->status ? err->status : IB_INTERNAL);
}

void ib_cuda_tier_close(ib_cuda *c) {
  /* Before the cache goes: waits for running compiles up to the pool's close
   * bound; a stuck one is left running, holding its own cache reference. */
  ib_cpool_free(c->cpool);
  c->cpool = NULL;
  for (int i = 0; i < IB_TIER_MEMO_GRAPHS; i++) {
    ib_tier_graph *t = &c->tmemo.g[i];
    ib_cuda_like_free(&t->like);
    ib_gplan_free(&t->plan);
    free(t->heads);
  }
  c->tmemo = (ib_tier_memo){0};
  if (c->imod) c->cu->cuModuleUnload(c->imod);
  c->imod = NULL;
}

/* A finished compile becomes a loaded, unpinned module. A failed one is
 * dropped: the next stage of that signature compiles inline and reports
 * the compile error to its job. */
static void adopt(ib_cuda *c, const ib_gchain *ch, ib_cpool_result *r, ib_kfunc **out,
                  ib_lru_entry **pin, ib_error *err) {
  if (r->status == IB_OK) {
    ib_status st = ib_cuda_module_add(c, ch, r->sig, r->image, r->len, out, pin, err);
    if (st != IB_OK && out) *out = NULL;
  }
  free(r->image);
  r->image = NULL;
}

/* Finished compiles nobody took yet hold places in the pool's bound: at the
 * bound they are let go. A head's was requested by admission for a job
 * that will need it: it is loaded now (unpinned). A pointwise one may
 * never be asked for again (a storm of one-off signatures): its image
 * stays in the disk cache, which a later stage of that signature reads
 * instead of compiling. */
static void let_go_done(ib_cuda *c) {
  ib_cpool_result r;
  while (ib_cpool_next_done(c->cpool, &r) == IB_CP_DONE) {
    if (r.status == IB_OK && r.has_chain && !ib_interp_can_run(&r.chain)) {
      ib_error err = {0}; /* not loaded: its stage reads the disk cache */
      if (c->cu->cuCtxSetCurrent(c->ctx) == CUDA_SUCCESS)
        ib_cuda_module_add(c, &r.chain, r.sig, r.image, r.len, NULL, NULL, &err);
    }
    free(r.image);
  }
}

/* How much of the table pointwise requests may fill. */
static uint32_t interp_room(const ib_cuda *c) {
  const uint32_t b = ib_cpool_bound(c->cpool);
  return b - b / 4;
}

static ib_cpool_state request(ib_cuda *c, const ib_gchain *ch, uint32_t limit) {
  ib_cpool_state q = ib_cpool_request_chain_below(c->cpool, ch, limit);
  if (q == IB_CP_FULL) {
    let_go_done(c);
    q = ib_cpool_request_chain_below(c->cpool, ch, limit);
  }
  return q;
}

/* The memo's graph whose nodes equal g's; NULL when none does. The last
 * one used first: a stream of one graph compares once. */
static ib_tier_graph *memo_find(ib_tier_memo *m, const ib_graph *g) {
  if (m->last && m->last->valid && ib_cuda_same_nodes(g, &m->last->like)) return m->last;
  for (int i = 0; i < IB_TIER_MEMO_GRAPHS; i++)
    if (m->g[i].valid && ib_cuda_same_nodes(g, &m->g[i].like)) return &m->g[i];
  return NULL;
}

/* The heads of `g` (*out, also c->tmemo.last): from the memo when g's
 * nodes equal a kept graph's, else planned now in place of the least
 * recently used one. */
static ib_status tier_heads(ib_cuda *c, const ib_graph *g, ib_tier_graph **out, ib_error *err) {
  ib_tier_memo *m = &c->tmemo;
  ib_tier_graph *t = memo_find(m, g);
  const bool hit = t;
  if (!hit) {
    t = &m->g[0];
    for (int i = 0; i < IB_TIER_MEMO_GRAPHS && t->valid; i++)
      if (!m->g[i].valid || m->g[i].used < t->used) t = &m->g[i];
  }
  t->used = ++m->clock;
  m->last = *out = t;
  if (hit) return IB_OK;
  t->valid = false;
  t->n_heads = 0;
  m->plans++;
  ib_gplan_free(&t->plan);
  ib_gplan *p = &t->plan;
  ib_status st = ib_gplan_build(g, p, err); /* frees what it built on failure */
  if (st != IB_OK) return st;
  for (int k = 0; st == IB_OK && k < p->n_stages; k++) {
    const ib_gchain *ch = &p->stages[k].chain;
    if (ib_interp_can_run(ch)) continue;
    if (t->n_heads == t->cap) {
      const int cap = t->cap ? 2 * t->cap : 4;
      ib_tier_head *h = realloc(t->heads, (size_t)cap * sizeof *h);
      if (!h) {
        st = ib_cuda_oom(err);
        break;
      }
      t->heads = h;
      t->cap = cap;
    }
    ib_tier_head *h = &t->heads[t->n_heads++];
    h->chain = *ch;
    h->stage = k;
    ib_cuda_sigkey(ch, &h->sk);
  }
  /* Only a graph with its wire bytes can equal a later one. */
  if (st == IB_OK) t->valid = ib_cuda_like_keep(&t->like, g);
  return st;
}

const ib_gplan *ib_cuda_tier_plan(ib_cuda *c, const ib_graph *g) {
  if (!c->cpool) return NULL;
  const ib_tier_graph *t = memo_find(&c->tmemo, g);
  return t ? &t->plan : NULL;
}

ib_status ib_cuda_tier_admit(ib_cuda *c, const ib_graph *g, ib_error *err) {
  if (!c->cpool) return IB_OK;
  ib_tier_graph *t;
  ib_status st = tier_heads(c, g, &t, err);
  for (int k = 0; st == IB_OK && k < t->n_heads; k++) {
    const ib_tier_head *h = &t->heads[k];
    if (ib_lru_has(&c->mods, h->sk.key) ||
        request(c, &h->chain, ib_cpool_bound(c->cpool)) != IB_CP_FULL)
      continue; /* NONE (out of memory): its stage compiles inline */
    ib_cpool_stats ps = ib_cpool_stats_get(c->cpool);
    err->status = st = IB_QUEUE_FULL;
    snprintf(err->message, sizeof err->message,
             "admit: the kernel compile queue is full (%llu signatures queued or compiling, bound "
             "%u): stage %d (%.160s) needs a kernel; retry when a compile finished",
             (unsigned long long)ps.depth, ib_cpool_bound(c->cpool), h->stage, h->sk.sig);
  }
  return st;
}

bool ib_cuda_tier_ready(ib_cuda *c, const ib_graph *g) {
  if (!c->cpool) return true;
  ib_error err = {0};
  ib_tier_graph *t;
  if (tier_heads(c, g, &t, &err) != IB_OK) return true; /* its submission reports the error */
  bool ready = true;
  for (int k = 0; k < t->n_heads; k++) {
    const ib_tier_head *h = &t->heads[k];
    if (ib_lru_has(&c->mods, h->sk.key)) continue;
    ib_cpool_result r;
    const ib_cpool_state q = ib_cpool_take(c->cpool, h->sk.sig, &r);
    if (q == IB_CP_DONE) { /* loaded unpinned; a failed compile is dropped */
      if (c->cu->cuCtxSetCurrent(c->ctx) == CUDA_SUCCESS) adopt(c, &h->chain, &r, NULL, NULL, &err);
      free(r.image);
    } else if (q == IB_CP_LATE) {
      continue; /* its submission fails it (ib_cuda_stage_func) */
    } else if (q != IB_CP_NONE) {
      ib_cpool_urgent(c->cpool, h->sk.sig); /* a job waits for it */
      ready = false;
    }
  }
  return ready;
}

uint64_t ib_cuda_tier_epoch(ib_cuda *c) {
  if (!c->cpool) return 0;
  const ib_cpool_stats s = ib_cpool_stats_get(c->cpool);
  return s.compiles + s.cache_hits + s.timed_out; /* finished or gone late */
}

bool ib_cuda_tier_admit_wait(ib_cuda *c, int timeout_ms) {
  return c->cpool && ib_cpool_wait_any(c->cpool, timeout_ms);
}

/* This submission's interpreter kernel of `sig` (one per signature, since
 * the step table is a launch argument). */
static ib_kfunc *interp_func(ib_backend_submission *s, const ib_gchain *ch, const char *sig,
                             ib_error *err) {
  ib_launch_plan *lp = &s->lp;
  for (size_t i = 0; i < lp->n_ikf; i++)
    if (strcmp(lp->ikf[i]->sig, sig) == 0) return lp->ikf[i];
  ib_kfunc **grown = realloc(lp->ikf, (lp->n_ikf + 1) * sizeof *grown);
  ib_kfunc *f = calloc(1, sizeof *f);
  if (grown) lp->ikf = grown;
  if (!grown || !f) {
    free(f);
    ib_cuda_oom(err);
    return NULL;
  }
  if (ib_interp_prog(ch, &f->prog, err) != IB_OK) {
    free(f);
    return NULL;
  }
  snprintf(f->sig, sizeof f->sig, "%s", sig);
  f->interp = true;
  lp->ikf[lp->n_ikf++] = f;
  return f;
}

/* A stage whose kernel compile passed the pool's time bound. */
static ib_status late(const ib_cuda *c, const char *sig, ib_error *err) {
  err->status = IB_INTERNAL;
  err->stage = IB_STAGE_EXECUTE;
  snprintf(err->message, sizeof err->message,
           "execute: the kernel compile of %.160s did not finish within %u ms (a fault of the "
           "worker's compiler, not of the job)",
           sig, ib_cpool_timeout_ms(c->cpool));
  return IB_INTERNAL;
}

/* A module pinned for the submission: one pin slot per stage at most. */
static ib_status pinned(ib_backend_submission *s, ib_status st) {
  if (st == IB_OK) s->n_pins++;
  return st;
}

ib_status ib_cuda_stage_func(ib_backend_submission *s, const ib_gchain *ch, ib_kfunc **out,
                             ib_error *err) {
  ib_cuda *c = s->c;
  ib_lru_entry **pin = &s->pins[s->n_pins];
  if (!c->cpool) return pinned(s, ib_cuda_chain_func(c, ch, out, pin, err));
  ib_sigkey sk;
  ib_cuda_sigkey(ch, &sk);
  const char *sig = sk.sig;
  err->status = IB_OK;
  if ((*out = ib_cuda_module_find(c, &sk, pin, err))) return pinned(s, IB_OK);
  if (err->status != IB_OK) return err->status;
  ib_cpool_result r;
  ib_cpool_state q = ib_cpool_take(c->cpool, sig, &r);
  if (q != IB_CP_DONE && ib_interp_can_run(ch)) {
    /* Queued, compiling, or (past interp_room) not requested this time: the
     * interpreter runs it now either way. */
    if (q == IB_CP_NONE) request(c, ch, interp_room(c));
    if (!(*out = interp_func(s, ch, sig, err))) return err->status ? err->status : IB_INTERNAL;
    ib_cpool_note(c->cpool, IB_CP_NOTE_INTERP, 1);
    return IB_OK;
  }
  const bool waits = q != IB_CP_DONE;
  if (waits) ib_cpool_note(c->cpool, IB_CP_NOTE_WAITED, 1);
  if (waits && q != IB_CP_NONE && q != IB_CP_LATE) {
    /* A head whose compile admission requested: this job waits for it,
     * first in line, up to the pool's time bound. */
    ib_cpool_urgent(c->cpool, sig);
    q = ib_cpool_wait(c->cpool, sig, -1);
    if (q == IB_CP_DONE) q = ib_cpool_take(c->cpool, sig, &r);
  }
  if (q == IB_CP_LATE) return late(c, sig, err);
  if (q == IB_CP_DONE) {
    adopt(c, ch, &r, out, pin, err);
    if (*out) return pinned(s, IB_OK);
    if (!waits) ib_cpool_note(c->cpool, IB_CP_NOTE_WAITED, 1);
  }
  /* Not requested (admitted before the pool had it, or let go at the
   * bound: then it reads from the disk cache), or a failed compile, which
   * this reports to the job: inline, as without the pool. */
  return pinned(s, ib_cuda_chain_compile(c, ch, sig, out, pin, err));
}

ib_status ib_cuda_interp_launch(ib_backend_submission *s, const ib_kfunc *f, CUdeviceptr table,
                                unsigned gy, uint64_t most_px, size_t job, ib_error *err) {
  const ib_cuda *c = s->c;
  const unsigned T = IB_CUDA_THREADS;
  uint64_t blocks = (most_px + T - 1) / T, cap = (uint64_t)c->sm_count * 8;
  const unsigned gx = (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
  ib_iprog prog = f->prog;
  void *args[] = {&table, &prog};
  CUresult rc;
  if (prog.luma && (rc = c->cu->cuLaunchKernel(c->ilsum, gx, gy, 1, T, 1, 1, 0, s->stream, args,
                                               NULL)) != CUDA_SUCCESS)
    return ib_cuda_device_fail(s, rc, "launch ib_interp_lsum", job, err);
  if ((rc = c->cu->cuLaunchKernel(c->ifn, gx, gy, 1, T, 1, 1, 0, s->stream, args, NULL)) !=
      CUDA_SUCCESS)
    return ib_cuda_device_fail(s, rc, "launch ib_interp", job, err);
  return IB_OK;
}
