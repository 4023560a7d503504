/*
 * blockcache.h - the CPU backend's large host blocks, kept for reuse: Job
 * buffers (ib_executor_buffer, through the backend's parse allocator) and
 * terminal result images of IB_BLOCKCACHE_MIN bytes or more. A fresh
 * malloc of that size is a fresh mmap: every page faults in zeroed on its
 * first touch and is unmapped again on free, which at 2048^2 and up costs
 * as much as the copy of the pixels itself (`imgbatch run`). A freed block
 * goes to the cache (at most IB_BLOCKCACHE_KEEP blocks; past that it is
 * freed) and is handed out again to a request it fits within a quarter of
 * its size.
 *
 * max_bytes (the executor's host_bytes) bounds the cached blocks and the
 * large blocks handed out together: a block is kept only while both fit,
 * and cached blocks are freed before a fresh block would take the sum past
 * it. So the cache never adds to what the credits let the jobs hold: the
 * large blocks held in all stay within max_bytes, unless the blocks out
 * alone exceed it (the cache is empty then).
 *
 * Thread-safe. Reference counted: the backend holds one reference and
 * every block handed out another, so a result image freed after its
 * executor was destroyed still finds its cache.
 */
#ifndef IB_CPU_BLOCKCACHE_H
#define IB_CPU_BLOCKCACHE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#define IB_BLOCKCACHE_MIN ((size_t)1 << 20)
#define IB_BLOCKCACHE_KEEP 8u

typedef struct ib_blockcache ib_blockcache;

/* NULL when out of memory. */
ib_blockcache *ib_blockcache_new(size_t max_bytes);
/* Drops the creator's reference; the cache goes when its blocks are back. */
void ib_blockcache_unref(ib_blockcache *c);

/* A block of at least n bytes (contents undefined); NULL when out of
 * memory. Every size works; only those of IB_BLOCKCACHE_MIN or more are
 * cached. */
void *ib_blockcache_get(ib_blockcache *c, size_t n);
/* The same, its first n bytes zero: a cached block is cleared, a fresh one
 * comes from calloc (pages the kernel zeroed already). */
void *ib_blockcache_get_zeroed(ib_blockcache *c, size_t n);
/* Gives back a block of ib_blockcache_get (NULL: nothing). */
void ib_blockcache_put(ib_blockcache *c, void *p);

/* A protobuf-c allocator over get/put (lives as long as the cache). */
ProtobufCAllocator *ib_blockcache_allocator(ib_blockcache *c);

/* Bytes of the cached blocks and of the large blocks handed out, together
 * (ib_executor_pools_get's host pool). Any thread. */
size_t ib_blockcache_held_bytes(ib_blockcache *c);

/* For tests: blocks cached now, and gets served from the cache so far. */
size_t ib_blockcache_cached(ib_blockcache *c);
size_t ib_blockcache_hits(ib_blockcache *c);
/* For tests: bytes of the cached blocks, and of the blocks of
 * IB_BLOCKCACHE_MIN or more handed out and not yet given back. */
size_t ib_blockcache_cached_bytes(ib_blockcache *c);
size_t ib_blockcache_out_bytes(ib_blockcache *c);
/* For tests: bytes of cached blocks cleared by ib_blockcache_get_zeroed so
 * far (a fresh block's zero pages cost no clearing). */
size_t ib_blockcache_cleared_bytes(ib_blockcache *c);

#endif
