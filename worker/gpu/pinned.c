/* Pinned host memory shared across threads (see pinned.h). */
#include "gpu/pinned.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* A slab: one pool block that parse allocations up to IB_PINNED_SLAB_MAX
 * are carved from, in order, at IB_PINNED_SLAB_ALIGN offsets (see pinned.h:
 * one upload copy for the sources of many Jobs). It goes back to the pool
 * once it is no longer the current slab and its last buffer was freed; the
 * current one starts over from its beginning when it empties. */
typedef struct slab {
  ib_pool_block blk;
  size_t top;  /* next free offset */
  size_t live; /* buffers carved from it and not freed */
} slab;

/* A live block: address, size, whether the parse allocator owns it, and
 * the slab it was carved from (NULL: a pool block of its own). */
typedef struct live_ent {
  uint64_t addr;
  size_t size;
  int cls;
  size_t spare; /* ib_pool_block's */
  bool parse;
  slab *sl;
} live_ent;

struct ib_pinned {
  pthread_mutex_t lock;
  ib_pool pool;
  uint64_t parse_cap, parse_live;
  /* Open addressing over the block address (linear probing, removal by
   * backward shift); addr 0 marks a free slot. */
  live_ent *tab;
  size_t tab_cap, n_live;
  slab *cur; /* the slab parse allocations are carved from now */
  _Atomic uint64_t slab_misses;
  ProtobufCAllocator pa;
  ib_pinned_stats st;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t slot_of(const ib_pinned *p, uint64_t addr) {
  uint64_t h = (addr >> 16) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (p->tab_cap - 1);
}

static bool tab_grow(ib_pinned *p) {
  size_t ncap = p->tab_cap ? p->tab_cap * 2 : 64;
  live_ent *old = p->tab;
  size_t ocap = p->tab_cap;
  live_ent *nt = calloc(ncap, sizeof *nt);
  if (!nt) return false;
  p->tab = nt;
  p->tab_cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].addr) {
      size_t s = slot_of(p, old[i].addr);
      while (nt[s].addr) s = (s + 1) & (ncap - 1);
      nt[s] = old[i];
    }
  free(old);
  return true;
}

static bool tab_add(ib_pinned *p, live_ent e) {
  if ((p->n_live + 1) * 2 > p->tab_cap && !tab_grow(p)) return false;
  size_t s = slot_of(p, e.addr);
  while (p->tab[s].addr) s = (s + 1) & (p->tab_cap - 1);
  p->tab[s] = e;
  p->n_live++;
  return true;
}

/* Removes the entry of addr into *out; false when absent. */
static bool tab_take(ib_pinned *p, uint64_t addr, live_ent *out) {
  if (!p->tab_cap) return false;
  size_t m = p->tab_cap - 1, s = slot_of(p, addr);
  while (p->tab[s].addr && p->tab[s].addr != addr) s = (s + 1) & m;
  if (!p->tab[s].addr) return false;
  *out = p->tab[s];
  p->tab[s].addr = 0;
  p->n_live--;
  /* Backward shift: re-seat every following entry of the run. */
  for (size_t i = (s + 1) & m; p->tab[i].addr; i = (i + 1) & m) {
    live_ent e = p->tab[i];
    p->tab[i].addr = 0;
    size_t t = slot_of(p, e.addr);
    while (p->tab[t].addr) t = (t + 1) & m;
    p->tab[t] = e;
  }
  return true;
}

/* A pool block of `bytes` (a parse one within parse_cap), the lock held on
 * entry and on return. The lock is not held across the allocator: a pool
 * that grows calls cuMemHostAlloc, milliseconds for a large image, and the
 * other threads (the driver asking ib_pinned_holds, the writer giving a
 * lent image back) would wait for it. */
static void slab_drop(ib_pinned *p, slab *s);

static bool pool_take(ib_pinned *p, size_t bytes, bool parse, ib_pool_block *out) {
  int r =
      parse && p->parse_live + bytes > p->parse_cap ? -1 : ib_pool_get_begin(&p->pool, bytes, out);
  /* Past the cap, the current slab with nothing carved from it live is
   * only held for later carvings: it goes back, and the request has its
   * room (a slab for it is taken again when a small buffer needs one). */
  if (r < 0 && !(parse && p->parse_live + bytes > p->parse_cap) && p->cur && !p->cur->live) {
    slab_drop(p, p->cur);
    p->cur = NULL;
    r = ib_pool_get_begin(&p->pool, bytes, out);
  }
  if (r == 0) {
    if (parse) p->parse_live += out->size; /* reserved with the pool's bytes */
    pthread_mutex_unlock(&p->lock);
    double t0 = now_s();
    uint64_t addr = p->pool.alloc(p->pool.ctx, out->size);
    double t1 = now_s();
    pthread_mutex_lock(&p->lock);
    p->st.allocs++;
    p->st.alloc_bytes += out->size;
    p->st.alloc_s += t1 - t0;
    if (parse) p->parse_live -= out->size;
    if (addr)
      ib_pool_get_commit(&p->pool, out, addr);
    else
      ib_pool_get_abort(&p->pool, out);
    /* A failed allocation (fragmentation across classes): once more with
     * the free blocks given back first, under the lock (rare). */
    r = addr || ib_pool_get(&p->pool, bytes, out) ? 1 : -1;
  }
  return r == 1;
}

/* A block of `bytes` of its own (a parse one counted against parse_cap). */
static bool get_block(ib_pinned *p, size_t bytes, bool parse, ib_pool_block *out) {
  pthread_mutex_lock(&p->lock);
  const bool got = pool_take(p, bytes, parse, out);
  bool ok = got && tab_add(p, (live_ent){out->addr, out->size, out->cls, out->spare, parse, NULL});
  if (!ok && got) ib_pool_put(&p->pool, out);
  if (ok && parse) p->parse_live += out->size;
  if (p->pool.held > p->st.held_max) p->st.held_max = p->pool.held;
  if (!ok && parse) p->st.parse_heap++, p->st.parse_heap_bytes += bytes;
  pthread_mutex_unlock(&p->lock);
  return ok;
}

/* Lock held: an empty slab that is not the current one goes back. */
static void slab_drop(ib_pinned *p, slab *s) {
  ib_pool_put(&p->pool, &s->blk);
  free(s);
}

/* Lock held: the address of `need` bytes carved from the current slab (a
 * fresh one when it is full); 0 when no slab can be had. */
static uint64_t slab_carve(ib_pinned *p, size_t need) {
  slab *s = p->cur;
  if (!s || s->blk.size - s->top < need) {
    slab *n = calloc(1, sizeof *n);
    if (!n) return 0;
    if (!pool_take(p, IB_PINNED_SLAB, false, &n->blk)) {
      free(n);
      return 0;
    }
    /* The full one (or one another thread installed while the lock was
     * dropped) is retired: it goes back when its last buffer does. */
    if (p->cur && !p->cur->live) slab_drop(p, p->cur);
    p->cur = s = n;
  }
  const uint64_t a = s->blk.addr + s->top;
  s->top += need;
  s->live++;
  return a;
}

/* A parse allocation carved from a slab; NULL when it cannot be (over the
 * parse cap, no slab, no table room): the caller falls back and counts it. */
static void *slab_alloc(ib_pinned *p, size_t size) {
  const size_t need = (size + IB_PINNED_SLAB_ALIGN - 1) & ~(size_t)(IB_PINNED_SLAB_ALIGN - 1);
  uint64_t a = 0;
  pthread_mutex_lock(&p->lock);
  if (p->parse_live + need <= p->parse_cap && (a = slab_carve(p, need))) {
    slab *s = p->cur;
    if (tab_add(p, (live_ent){a, need, -1, 0, true, s})) {
      p->parse_live += need;
    } else { /* undo the carve: the last one, so its space comes back */
      s->top -= need;
      s->live--;
      a = 0;
    }
  }
  pthread_mutex_unlock(&p->lock);
  return (void *)(uintptr_t)a;
}

bool ib_pinned_get(ib_pinned *p, size_t bytes, ib_pool_block *out) {
  return get_block(p, bytes, false, out);
}

void ib_pinned_put(ib_pinned *p, const ib_pool_block *b) {
  if (!b->addr) return;
  pthread_mutex_lock(&p->lock);
  live_ent e;
  if (tab_take(p, b->addr, &e)) ib_pool_put(&p->pool, b);
  pthread_mutex_unlock(&p->lock);
}

bool ib_pinned_region(ib_pinned *p, const void *base, const void *ptr, size_t n, uint64_t *region) {
  uint64_t b = (uint64_t)(uintptr_t)base, a = (uint64_t)(uintptr_t)ptr;
  bool in = false;
  pthread_mutex_lock(&p->lock);
  if (p->tab_cap && b) {
    size_t m = p->tab_cap - 1, s = slot_of(p, b);
    while (p->tab[s].addr && p->tab[s].addr != b) s = (s + 1) & m;
    const live_ent *e = &p->tab[s];
    in = e->addr == b && a >= b && a - b <= e->size && n <= e->size - (a - b);
    if (in && region) *region = e->sl ? e->sl->blk.addr : e->addr;
  }
  pthread_mutex_unlock(&p->lock);
  return in;
}

bool ib_pinned_holds(ib_pinned *p, const void *base, const void *ptr, size_t n) {
  return ib_pinned_region(p, base, ptr, n, NULL);
}

static void *pa_alloc(void *data, size_t size) {
  ib_pinned *p = data;
  if (size >= IB_PINNED_PARSE_MIN) {
    void *s = size <= IB_PINNED_SLAB_MAX ? slab_alloc(p, size) : NULL;
    if (s) return s;
    /* Its raw source, if any, uploads in a copy of its own: counted. */
    atomic_fetch_add_explicit(&p->slab_misses, 1, memory_order_relaxed);
    ib_pool_block b;
    if (get_block(p, size, true, &b)) return (void *)(uintptr_t)b.addr;
  }
  return malloc(size ? size : 1);
}

static void pa_free(void *data, void *ptr) {
  ib_pinned *p = data;
  if (!ptr) return;
  live_ent e;
  pthread_mutex_lock(&p->lock);
  bool pinned = tab_take(p, (uint64_t)(uintptr_t)ptr, &e);
  if (pinned) {
    p->parse_live -= e.size;
    if (!e.sl) {
      ib_pool_put(&p->pool, &(ib_pool_block){e.addr, e.size, e.cls, e.spare});
    } else if (!--e.sl->live) {
      if (e.sl == p->cur)
        e.sl->top = 0; /* empty: start over, in address order again */
      else
        slab_drop(p, e.sl);
    }
  }
  pthread_mutex_unlock(&p->lock);
  if (!pinned) free(ptr);
}

ib_pinned *ib_pinned_new(ib_pool_alloc_fn a, ib_pool_free_fn f, void *ctx, uint64_t cap,
                         uint64_t parse_cap) {
  ib_pinned *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->lock, NULL);
  ib_pool_init(&p->pool, a, f, ctx, cap);
  p->parse_cap = parse_cap;
  p->pa = (ProtobufCAllocator){.alloc = pa_alloc, .free = pa_free, .allocator_data = p};
  return p;
}

void ib_pinned_free(ib_pinned *p) {
  if (!p) return;
  if (p->cur) slab_drop(p, p->cur); /* every buffer was given back */
  ib_pool_destroy(&p->pool);
  free(p->tab);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

ProtobufCAllocator *ib_pinned_allocator(ib_pinned *p) { return &p->pa; }

size_t ib_pinned_live_blocks(ib_pinned *p) {
  pthread_mutex_lock(&p->lock);
  size_t n = p->n_live;
  pthread_mutex_unlock(&p->lock);
  return n;
}

ib_pinned_stats ib_pinned_stats_get(ib_pinned *p) {
  pthread_mutex_lock(&p->lock);
  ib_pinned_stats st = p->st;
  st.trims = p->pool.trims;
  st.held = p->pool.held;
  st.cap = p->pool.cap;
  pthread_mutex_unlock(&p->lock);
  return st;
}

uint64_t ib_pinned_parse_bytes(ib_pinned *p) {
  pthread_mutex_lock(&p->lock);
  uint64_t n = p->parse_live;
  pthread_mutex_unlock(&p->lock);
  return n;
}

uint64_t ib_pinned_slab_misses(ib_pinned *p) {
  return atomic_load_explicit(&p->slab_misses, memory_order_relaxed);
}
