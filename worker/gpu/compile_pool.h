/*
 * compile_pool.h - kernel compiles off the submitting thread. N threads
 * compile requested signatures through the module cache (nvrtc_cache.h:
 * memory, disk, then NVRTC) while submissions of already compiled work go
 * on; the submitting thread polls for the result and loads the module
 * itself (the CUDA context stays on its thread).
 *
 * One request per signature: a request for a signature that is queued,
 * compiling or done but not yet taken coalesces onto it. The table is
 * bounded (`max_pending` entries, whatever their state): past the bound a
 * request answers IB_CP_FULL, which admission turns into QueueFull for a
 * job that cannot run without its kernel (cuda_tier.c), so a compile storm
 * becomes backpressure. An entry leaves the table when its
 * result is taken (ib_cpool_take, ib_cpool_next_done).
 *
 * A time bound (timeout_ms) keeps a compile that never returns from
 * holding its jobs for good: a compile running longer than the bound, and
 * every queued one while each thread runs such a compile, is LATE. Jobs
 * waiting for a LATE signature fail (cuda_tier.c: a fault of the worker,
 * not of the job); a request for it coalesces onto it and is LATE too.
 * NVRTC cannot be interrupted, so the thread goes on: should the compile
 * finish after all, the entry becomes DONE and its result is taken as
 * any other (the module cache keeps it); a queued LATE entry is compiled
 * once a thread is free again. The bound is checked by the calls below
 * (poll, take, wait, wait_any, stats), not by a timer of its own.
 *
 * Thread-safe; nothing blocks on a compile but ib_cpool_wait (up to the
 * time bound when there is one) and ib_cpool_free. Free drops queued
 * compiles, frees every result nobody took and lets running compiles
 * finish, but within a bound of its own (close_ms), so that a worker's
 * drain never hangs on one NVRTC call: it stops waiting at that bound, or
 * sooner once every compile still running is LATE (its jobs have failed
 * already). A thread still compiling then is left running, detached: it
 * owns its entry and holds references to the pool's state and to the
 * module cache (ib_kcache_retain), so nothing it touches is freed under
 * it; when its compile returns, the cache keeps the image as usual, the
 * result is discarded, no hook is called, and the last thread out frees
 * what is left. ib_cpool_orphans counts such threads.
 */
#ifndef IB_GPU_COMPILE_POOL_H
#define IB_GPU_COMPILE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/codegen.h"
#include "gpu/nvrtc_cache.h"
#include "imgbatch.h"

#define IB_CPOOL_SIG_MAX 512

typedef struct ib_cpool ib_cpool;

typedef struct ib_cpool_options {
  int threads;             /* compile threads, >= 1 */
  uint32_t max_pending;    /* table bound (queued + compiling + done untaken), >= 1 */
  const char *arch;        /* "sm_90": copied */
  const char *const *opts; /* NVRTC options beyond the cache's standard ones: copied */
  int n_opts;
  /* Called (pool thread, no lock held) after each compile finishes, so the
   * submitting thread can be woken to take it. NULL: none. */
  void (*on_done)(void *ctx);
  void *ctx;
  /* Called (pool thread, no lock held) before each compile of `sig`; tests
   * hold a compile there to stand for an NVRTC call that does not return.
   * NULL: none. */
  void (*on_start)(void *ctx, const char *sig);
  /* The time bound of a compile (see above), from the moment a thread
   * starts it; 0: none. */
  uint32_t timeout_ms;
  /* How long ib_cpool_free waits for running compiles at most (see above);
   * 0: IB_CPOOL_CLOSE_MS_DEFAULT. */
  uint32_t close_ms;
} ib_cpool_options;

#define IB_CPOOL_CLOSE_MS_DEFAULT 1000u

/* The pool takes a reference to kc (the caller may free its own at any
 * time after ib_cpool_free). NULL and err filled when a thread cannot
 * start or memory runs out. */
ib_cpool *ib_cpool_new(ib_kcache *kc, const ib_cpool_options *o, ib_error *err);
/* Returns within close_ms (plus the time a finishing compile takes to
 * publish); see above. The hooks' ctx must outlive a hook call that is
 * under way when it returns. */
void ib_cpool_free(ib_cpool *p);
/* Compile threads that ib_cpool_free left running and that are still
 * inside their compile, in this process (tests; a stuck NVRTC shows here). */
uint64_t ib_cpool_orphans(void);

typedef enum ib_cpool_state {
  IB_CP_NONE = 0,  /* not in the table: never requested, or taken */
  IB_CP_QUEUED,    /* request(): a new entry, waiting for a thread */
  IB_CP_RUNNING,   /* a thread is compiling it */
  IB_CP_DONE,      /* finished (image or error): take it */
  IB_CP_COALESCED, /* request(): an entry for this signature was there already */
  IB_CP_FULL,      /* request(): the table is at its bound; nothing queued */
  IB_CP_LATE,      /* queued or compiling past the time bound (see above) */
} ib_cpool_state;

/* Requests the chain's module (its source is generated on a pool thread).
 * Returns QUEUED, COALESCED or FULL; NONE only when out of memory. */
ib_cpool_state ib_cpool_request_chain(ib_cpool *p, const ib_gchain *c);
/* As ib_cpool_request_chain, but FULL (counted in rejected_full) once the
 * table holds `limit` entries: a caller that can do without the module
 * now (the interpreter tier) leaves the rest of the bound to those that
 * cannot. */
ib_cpool_state ib_cpool_request_chain_below(ib_cpool *p, const ib_gchain *c, uint32_t limit);
/* Requests a module from source text (copied) under signature `sig`
 * (equal signatures must mean equal sources; < IB_CPOOL_SIG_MAX bytes). */
ib_cpool_state ib_cpool_request_source(ib_cpool *p, const char *sig, const char *name,
                                       const char *src);

/* Non-blocking: NONE, QUEUED, RUNNING, LATE or DONE. */
ib_cpool_state ib_cpool_poll(ib_cpool *p, const char *sig);

typedef struct ib_cpool_result {
  char sig[IB_CPOOL_SIG_MAX];
  ib_status status; /* IB_OK: image holds the cubin (the taker frees it) */
  ib_error err;     /* the compile error otherwise */
  void *image;
  size_t len;
  ib_kcache_origin origin;
  uint64_t compile_us; /* wall time of the cache lookup and compile */
  bool has_chain;      /* requested by ib_cpool_request_chain: `chain` is it */
  ib_gchain chain;
} ib_cpool_result;

/* Hands over the result of `sig` when it is DONE (the entry leaves the
 * table; returns DONE), else returns its state (LATE included) and leaves
 * *out alone. */
ib_cpool_state ib_cpool_take(ib_cpool *p, const char *sig, ib_cpool_result *out);
/* Hands over the oldest finished result, whatever its signature: DONE, or
 * NONE when nothing has finished. */
ib_cpool_state ib_cpool_next_done(ib_cpool *p, ib_cpool_result *out);
/* Blocks until `sig` is DONE, NONE or LATE, or `timeout_ms` passed (< 0:
 * no limit but the pool's time bound); returns the state then. */
ib_cpool_state ib_cpool_wait(ib_cpool *p, const char *sig, int timeout_ms);

/* Moves a QUEUED signature to the front of the queue, because a job now
 * waits for it; returns its state (no-op unless QUEUED). */
ib_cpool_state ib_cpool_urgent(ib_cpool *p, const char *sig);
/* Blocks until some queued or running compile finishes or goes LATE, or
 * `timeout_ms` (>= 0) passed; false at once when nothing is queued or
 * compiling. */
bool ib_cpool_wait_any(ib_cpool *p, int timeout_ms);
/* max_pending. */
uint32_t ib_cpool_bound(const ib_cpool *p);
/* timeout_ms. */
uint32_t ib_cpool_timeout_ms(const ib_cpool *p);

/* Counts kept for the executor's counters: the pool's own, and two the
 * backend reports through it (ib_cpool_note). */
typedef struct ib_cpool_stats {
  uint64_t requests, coalesced, rejected_full;
  uint64_t compiles;   /* finished requests that ran NVRTC (failed ones too) */
  uint64_t cache_hits; /* finished requests the memory or disk cache answered */
  uint64_t failed;
  uint64_t timed_out;  /* requests that went LATE (each time it happened) */
  uint64_t compile_us; /* total wall time of the compiles */
  uint64_t depth;      /* queued + compiling now */
  uint64_t pending;    /* table entries now (depth + done untaken) */
  uint64_t jobs_waited, interp_runs;
} ib_cpool_stats;
ib_cpool_stats ib_cpool_stats_get(ib_cpool *p);

typedef enum ib_cpool_note_kind {
  IB_CP_NOTE_WAITED, /* a job waited for a compile (its kernel was not ready) */
  IB_CP_NOTE_INTERP, /* a job's stage ran on the interpreter tier */
} ib_cpool_note_kind;
void ib_cpool_note(ib_cpool *p, ib_cpool_note_kind k, uint64_t n);

#endif
