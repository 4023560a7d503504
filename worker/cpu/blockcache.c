/* Large host blocks kept for reuse (see blockcache.h). Every block carries
 * a header with its capacity, so a block is given back by its address
 * alone (as protobuf-c frees). */
#include "cpu/blockcache.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The header keeps the user pointer as aligned as malloc's own. */
typedef struct block_hdr {
  alignas(max_align_t) size_t cap;
} block_hdr;

struct ib_blockcache {
  pthread_mutex_t lock;
  atomic_size_t refs; /* the creator's + one per block handed out */
  size_t max_bytes, bytes, hits;
  size_t out;            /* bytes of large blocks handed out (blockcache.h: the bound) */
  atomic_size_t cleared; /* bytes of cached blocks zeroed for get_zeroed */
  size_t n;
  block_hdr *blocks[IB_BLOCKCACHE_KEEP];
  ProtobufCAllocator pa;
};

static void cache_free(ib_blockcache *c) {
  for (size_t i = 0; i < c->n; i++) free(c->blocks[i]);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

static void unref(ib_blockcache *c) {
  if (atomic_fetch_sub(&c->refs, 1) == 1) cache_free(c);
}

/* The smallest cached block that holds n bytes and wastes under a quarter
 * of them; removed from the cache. NULL when none. */
static block_hdr *take_fit(ib_blockcache *c, size_t n) {
  size_t best = c->n;
  for (size_t i = 0; i < c->n; i++) {
    size_t cap = c->blocks[i]->cap;
    if (cap >= n && cap - n <= n / 4 && (best == c->n || cap < c->blocks[best]->cap)) best = i;
  }
  if (best == c->n) return NULL;
  block_hdr *h = c->blocks[best];
  c->blocks[best] = c->blocks[--c->n];
  c->bytes -= h->cap;
  c->hits++;
  return h;
}

/* Under the lock: whether n more bytes fit beside the blocks out and the
 * cached ones within max_bytes. */
static bool fits(const ib_blockcache *c, size_t n) {
  const size_t m = c->max_bytes;
  return n <= m && c->out <= m - n && c->bytes <= m - n - c->out;
}

/* Under the lock: moves cached blocks, the largest first, to `drop` until
 * a fresh block of n bytes fits (or nothing is cached); returns how many. */
static size_t make_room(ib_blockcache *c, size_t n, block_hdr **drop) {
  size_t k = 0;
  while (c->n && !fits(c, n)) {
    size_t big = 0;
    for (size_t i = 1; i < c->n; i++)
      if (c->blocks[i]->cap > c->blocks[big]->cap) big = i;
    drop[k++] = c->blocks[big];
    c->bytes -= c->blocks[big]->cap;
    c->blocks[big] = c->blocks[--c->n];
  }
  return k;
}

static void *get(ib_blockcache *c, size_t n, bool zero) {
  block_hdr *h = NULL, *drop[IB_BLOCKCACHE_KEEP];
  size_t n_drop = 0;
  if (n > SIZE_MAX - sizeof *h) return NULL;
  const bool large = n >= IB_BLOCKCACHE_MIN;
  if (large) {
    pthread_mutex_lock(&c->lock);
    h = take_fit(c, n);
    if (!h) n_drop = make_room(c, n, drop);
    c->out += h ? h->cap : n; /* counted before the malloc: a racing get sees it */
    pthread_mutex_unlock(&c->lock);
  }
  for (size_t i = 0; i < n_drop; i++) free(drop[i]); /* outside the lock: munmap */
  if (h && zero) {
    memset(h + 1, 0, n);
    atomic_fetch_add(&c->cleared, n);
  }
  if (!h) {
    h = zero ? calloc(1, sizeof *h + (n ? n : 1)) : malloc(sizeof *h + (n ? n : 1));
    if (!h) {
      if (large) {
        pthread_mutex_lock(&c->lock);
        c->out -= n;
        pthread_mutex_unlock(&c->lock);
      }
      return NULL;
    }
    h->cap = n;
  }
  atomic_fetch_add(&c->refs, 1);
  return h + 1;
}

void *ib_blockcache_get(ib_blockcache *c, size_t n) { return get(c, n, false); }
void *ib_blockcache_get_zeroed(ib_blockcache *c, size_t n) { return get(c, n, true); }

void ib_blockcache_put(ib_blockcache *c, void *p) {
  if (!p) return;
  block_hdr *h = (block_hdr *)p - 1;
  bool kept = false;
  if (h->cap >= IB_BLOCKCACHE_MIN) {
    pthread_mutex_lock(&c->lock);
    c->out -= h->cap;
    /* Kept only while the blocks out and the cached ones fit together. */
    kept = c->n < IB_BLOCKCACHE_KEEP && fits(c, h->cap);
    if (kept) {
      c->blocks[c->n++] = h;
      c->bytes += h->cap;
    }
    pthread_mutex_unlock(&c->lock);
  }
  if (!kept) free(h);
  unref(c);
}

static void *pa_alloc(void *data, size_t size) { return ib_blockcache_get(data, size); }
static void pa_free(void *data, void *ptr) { ib_blockcache_put(data, ptr); }

ib_blockcache *ib_blockcache_new(size_t max_bytes) {
  ib_blockcache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  pthread_mutex_init(&c->lock, NULL);
  atomic_init(&c->refs, 1);
  c->max_bytes = max_bytes;
  c->pa = (ProtobufCAllocator){.alloc = pa_alloc, .free = pa_free, .allocator_data = c};
  return c;
}

void ib_blockcache_unref(ib_blockcache *c) {
  if (c) unref(c);
}

ProtobufCAllocator *ib_blockcache_allocator(ib_blockcache *c) { return &c->pa; }

size_t ib_blockcache_cached(ib_blockcache *c) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->n;
  pthread_mutex_unlock(&c->lock);
  return n;
}

size_t ib_blockcache_hits(ib_blockcache *c) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->hits;
  pthread_mutex_unlock(&c->lock);
  return n;
}

size_t ib_blockcache_held_bytes(ib_blockcache *c) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->bytes + c->out;
  pthread_mutex_unlock(&c->lock);
  return n;
}

size_t ib_blockcache_cached_bytes(ib_blockcache *c) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->bytes;
  pthread_mutex_unlock(&c->lock);
  return n;
}

size_t ib_blockcache_cleared_bytes(ib_blockcache *c) { return atomic_load(&c->cleared); }

size_t ib_blockcache_out_bytes(ib_blockcache *c) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->out;
  pthread_mutex_unlock(&c->lock);
  return n;
}
