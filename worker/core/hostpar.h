/*
 * hostpar.h - a small host thread pool: batches of fn(ctx, i) run in
 * posting order on a fixed set of worker threads.
 * The CUDA backend moves every pixel through host memory twice (source ->
 * pinned staging, pinned staging -> result image) and decodes encoded
 * sources there; one thread copies at a few GB/s, far below what PCIe
 * moves each way, and decodes at tens of milliseconds an image, so those
 * copies and decodes are spread over the host's cores. A batch is either
 * run to its end by the caller with the workers' help (ib_hostpar_for) or
 * posted and left to the workers while the caller goes on
 * (ib_hostpar_post; decodes of one submission while the next is planned).
 * Threads: the executor option host_threads (the caller counts as one).
 */
#ifndef IB_CORE_HOSTPAR_H
#define IB_CORE_HOSTPAR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct ib_hostpar ib_hostpar;
typedef void (*ib_pfor_fn)(void *ctx, size_t i);

#define IB_HOSTPAR_MAX 255

/* A posted batch: the caller's memory from ib_hostpar_post until
 * ib_hostpar_wait returned. Its fields are the pool's. */
typedef struct ib_hostpar_batch {
  ib_pfor_fn fn;
  void *ctx;
  size_t n;
  atomic_size_t next; /* the next index to hand out */
  atomic_size_t left; /* calls not yet returned */
  int users;          /* workers inside it (under the pool's lock) */
  bool queued;        /* on the pool's queue */
  bool front;         /* a parallel for's: ahead of posted batches */
  struct ib_hostpar_batch *link;
} ib_hostpar_batch;

/* threads < 0: online CPUs - 1 workers (plus the caller); 0: everything
 * runs on the caller. */
ib_hostpar *ib_hostpar_new(int threads);
/* Every posted batch was waited for. */
void ib_hostpar_free(ib_hostpar *p);
/* Runs fn(ctx, i) for every i in [0, n) on the workers and the caller;
 * returns when all are done. It goes ahead of posted batches: a worker
 * that finishes a call of theirs takes its indices next. */
void ib_hostpar_for(ib_hostpar *p, size_t n, ib_pfor_fn fn, void *ctx);
/* Queues fn(ctx, i) for every i in [0, n) and returns; without workers,
 * runs them all first. Any thread, one at a time per batch. */
void ib_hostpar_post(ib_hostpar *p, ib_hostpar_batch *b, size_t n, ib_pfor_fn fn, void *ctx);
/* Every call of a posted batch returned (its writes are visible). */
bool ib_hostpar_done(ib_hostpar_batch *b);
/* Runs what is left of a posted batch on the caller too, then waits until
 * no worker is inside it; b is the caller's again after. */
void ib_hostpar_wait(ib_hostpar *p, ib_hostpar_batch *b);
int ib_hostpar_threads(const ib_hostpar *p);

#endif
