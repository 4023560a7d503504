/*
 * pinned.h - the CUDA backend's pinned host memory, shared by every thread
 * that touches it: Jobs unpacked by ib_executor_parse (on any thread), the
 * submissions' upload staging (the driving thread) and the download arenas
 * lent to results (released on any thread). One size-class pool (pool.h)
 * under a lock (not held across cuMemHostAlloc, which takes milliseconds
 * for a large image), plus a table of the blocks handed out, so a pointer can be
 * asked whether it lies in pinned memory (a source the upload can DMA
 * from) and the protobuf-c allocator can tell its pinned blocks from heap
 * ones on free.
 */
#ifndef IB_GPU_PINNED_H
#define IB_GPU_PINNED_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>

#include "gpu/pool.h"

/* Requests of the parse allocator at least this large go to pinned memory
 * (raw pixels, encoded files); smaller ones (message structs, strings) to
 * the heap. */
#define IB_PINNED_PARSE_MIN ((size_t)64 << 10)
/* Slabs (above): their size, the largest request carved from one (larger
 * ones take a pool block of their own, whose copy is long anyway), and the
 * carving alignment (a multiple of the device layout's, IB_CUDA_ALIGN). */
#define IB_PINNED_SLAB ((size_t)16 << 20)
#define IB_PINNED_SLAB_MAX ((size_t)1 << 20)
#define IB_PINNED_SLAB_ALIGN ((size_t)256)

typedef struct ib_pinned ib_pinned;

/* `cap`: bytes the pool may hold from the allocator; `parse_cap`: of those,
 * what unpacked Jobs may hold at once (past it they land on the heap, and
 * their sources are staged as for any pageable memory). */
ib_pinned *ib_pinned_new(ib_pool_alloc_fn a, ib_pool_free_fn f, void *ctx, uint64_t cap,
                         uint64_t parse_cap);
/* Every block must have been put back. */
void ib_pinned_free(ib_pinned *p);

bool ib_pinned_get(ib_pinned *p, size_t bytes, ib_pool_block *out);
void ib_pinned_put(ib_pinned *p, const ib_pool_block *b);

/* True when `base` is the start of a block handed out and [ptr, ptr + n)
 * lies inside it. The caller names the block (an allocation's own start,
 * or the Job buffer a source was parsed in place from), so the answer is
 * one table probe however many blocks are live. */
bool ib_pinned_holds(ib_pinned *p, const void *base, const void *ptr, size_t n);
/* ib_pinned_holds, and the start of the one host allocation the range lies
 * in (its slab, or its block): two ranges of the same allocation can be
 * copied as one span. */
bool ib_pinned_region(ib_pinned *p, const void *base, const void *ptr, size_t n, uint64_t *region);

/* The protobuf-c allocator of ib_executor_parse (lives as long as p). */
ProtobufCAllocator *ib_pinned_allocator(ib_pinned *p);

/* What the pool cost so far (cuda_profile): fresh allocations (their
 * bytes and seconds, taken outside the lock), the most bytes held from the
 * allocator at once, free blocks given back to it over the cap, and parse requests of
 * IB_PINNED_PARSE_MIN or more that landed on the heap past parse_cap (their sources are then
 * staged: one more copy on the CPU). */
typedef struct ib_pinned_stats {
  uint64_t allocs, alloc_bytes, held, held_max, trims, parse_heap, parse_heap_bytes;
  uint64_t cap; /* the most the pool may hold (ib_pinned_new) */
  double alloc_s;
} ib_pinned_stats;
ib_pinned_stats ib_pinned_stats_get(ib_pinned *p);

/* For tests: blocks handed out and allocator calls so far. */
size_t ib_pinned_live_blocks(ib_pinned *p);
uint64_t ib_pinned_parse_bytes(ib_pinned *p);
/* Parse allocations of IB_PINNED_PARSE_MIN bytes or more that were not
 * carved from a slab (larger than IB_PINNED_SLAB_MAX, over the parse cap,
 * or no slab to be had): each uploads in a copy of its own, or is staged. */
uint64_t ib_pinned_slab_misses(ib_pinned *p);

#endif
