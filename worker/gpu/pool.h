/*
 * pool.h - a size-class pool over an allocator, used twice by the CUDA
 * backend: device buffers (cuMemAlloc) and pinned host staging
 * (cuMemHostAlloc). In steady state every request is served from a free
 * list, so no job allocates from the driver. Classes run from
 * 64 KiB in eight steps per power of two (ib_pool_class_size); a request
 * is served from its class's free list, else from the smallest free block
 * up to twice its class's size while such spare bytes lent stay under an
 * eighth of the cap (so requests that fit by their own classes still fit),
 * else from the allocator; a released block goes back to its own class's
 * free list. `cap` bounds the bytes the pool holds from
 * the allocator (live + free): past it, free blocks are returned to the
 * allocator first, and a request that still does not fit fails (the
 * executor's credits are meant to keep requests under the cap).
 * Not thread-safe: one executor thread drives a backend (pinned.c wraps
 * it in a lock).
 */
#ifndef IB_GPU_POOL_H
#define IB_GPU_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IB_POOL_MIN_SHIFT 16
/* Eight classes per power of two (x1, x1.125, ... x1.875), so a request
 * wastes under 12.5 %: a 4096^2 RGBA Job (64 MiB and its header) takes
 * 72 MiB, not 80 (four steps) or 128. Pinned blocks cost their size in
 * cuMemHostAlloc time (a few GB/s) and in the caps.
 * 64 KiB .. 960 GiB. */
#define IB_POOL_STEPS_SHIFT 3
#define IB_POOL_CLASSES 192

/* Allocator callbacks: alloc returns 0 on failure; addresses are opaque u64
 * (a CUdeviceptr or a host pointer). */
typedef uint64_t (*ib_pool_alloc_fn)(void *ctx, size_t bytes);
typedef void (*ib_pool_free_fn)(void *ctx, uint64_t addr, size_t bytes);

typedef struct ib_pool_block {
  uint64_t addr;
  size_t size; /* the class size (>= requested) */
  int cls;
  size_t spare; /* size less the request's own class size (a larger free block lent) */
} ib_pool_block;

typedef struct ib_pool {
  ib_pool_alloc_fn alloc;
  ib_pool_free_fn free;
  void *ctx;
  uint64_t cap;
  /* bytes obtained from the allocator and not returned; atomic so that a
   * gauge (ib_executor_pools_get) may read it beside the thread using it */
  _Atomic uint64_t held;
  uint64_t live;       /* bytes handed out */
  uint64_t allocs;     /* allocator calls (steady state: stops growing) */
  uint64_t trims;      /* free blocks given back to the allocator (over the cap) */
  uint64_t reuses_up;  /* requests served by a free block of a larger class */
  uint64_t spare_live; /* the spare bytes of the blocks handed out */
  struct {
    uint64_t *addr;
    size_t n, cap;
  } free_list[IB_POOL_CLASSES];
} ib_pool;

void ib_pool_init(ib_pool *p, ib_pool_alloc_fn a, ib_pool_free_fn f, void *ctx, uint64_t cap);
/* Returns every free block to the allocator and frees bookkeeping; live
 * blocks must have been released. */
void ib_pool_destroy(ib_pool *p);
/* false when the request cannot be met within cap or the allocator fails. */
bool ib_pool_get(ib_pool *p, size_t bytes, ib_pool_block *out);
/* ib_pool_get in two steps, for a caller that guards the pool with a lock
 * and must not hold it across a slow allocator call (cuMemHostAlloc of
 * tens of MiB takes milliseconds). 1: a free block was taken (*out
 * complete). 0: the class needs a fresh block; its bytes are counted held
 * and live already (out->addr 0, out->size the bytes to allocate): call
 * p->alloc without the lock, then ib_pool_get_commit with its address or
 * ib_pool_get_abort. -1: over the cap. */
int ib_pool_get_begin(ib_pool *p, size_t bytes, ib_pool_block *out);
void ib_pool_get_commit(ib_pool *p, ib_pool_block *b, uint64_t addr);
void ib_pool_get_abort(ib_pool *p, const ib_pool_block *b);
void ib_pool_put(ib_pool *p, const ib_pool_block *b);
/* Class of a request (for tests); -1 when larger than the largest class. */
int ib_pool_class(size_t bytes);
/* Bytes of a block of class k. */
size_t ib_pool_class_size(int k);
/* Returns all free blocks to the allocator. */
void ib_pool_trim(ib_pool *p);

#endif
