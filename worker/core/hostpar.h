/*
 * hostpar.h - a small host thread pool with one primitive, a parallel for.
 * The CUDA backend moves every pixel through host memory twice (source ->
 * pinned staging, pinned staging -> result image); one thread copies at a
 * few GB/s, far below what PCIe moves each way, so those
 * copies (and decodes) are spread over the host's cores.
 * Threads: the executor option host_threads (the caller counts as one).
 */
#ifndef IB_CORE_HOSTPAR_H
#define IB_CORE_HOSTPAR_H

#include <stddef.h>

typedef struct ib_hostpar ib_hostpar;
typedef void (*ib_pfor_fn)(void *ctx, size_t i);

#define IB_HOSTPAR_MAX 255

/* threads < 0: online CPUs - 1 workers (plus the caller); 0: everything
 * runs on the caller. */
ib_hostpar *ib_hostpar_new(int threads);
void ib_hostpar_free(ib_hostpar *p);
/* Runs fn(ctx, i) for every i in [0, n) on the workers and the caller;
 * returns when all are done. Not reentrant. */
void ib_hostpar_for(ib_hostpar *p, size_t n, ib_pfor_fn fn, void *ctx);
int ib_hostpar_threads(const ib_hostpar *p);

#endif
