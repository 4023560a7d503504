/*
 * hostpar.h - a small host thread pool with one primitive, a parallel for.
 * The CUDA backend moves every pixel through host memory twice (source ->
 * pinned staging, pinned staging -> result image); one thread copies at a
 * few GB/s, far below PCIe (~55 GB/s each way on an H200 host), so those
 * copies (and decodes) are spread over the host's cores.
 * Threads: $IB_HOST_THREADS, else online CPUs - 1, at most 15.
 */
#ifndef IB_GPU_HOSTPAR_H
#define IB_GPU_HOSTPAR_H

#include <stddef.h>

typedef struct ib_hostpar ib_hostpar;
typedef void (*ib_pfor_fn)(void *ctx, size_t i);

/* threads < 0: the default above; 0: everything runs on the caller. */
ib_hostpar *ib_hostpar_new(int threads);
void ib_hostpar_free(ib_hostpar *p);
/* Runs fn(ctx, i) for every i in [0, n) on the workers and the caller;
 * returns when all are done. Not reentrant. */
void ib_hostpar_for(ib_hostpar *p, size_t n, ib_pfor_fn fn, void *ctx);
int ib_hostpar_threads(const ib_hostpar *p);

#endif
