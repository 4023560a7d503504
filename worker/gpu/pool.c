/* Size-class pool (see pool.h). */
#include <stdlib.h>
#include <string.h>

#include "gpu/pool.h"

void ib_pool_init(ib_pool *p, ib_pool_alloc_fn a, ib_pool_free_fn f, void *ctx, uint64_t cap) {
  memset(p, 0, sizeof *p);
  p->alloc = a;
  p->free = f;
  p->ctx = ctx;
  p->cap = cap;
}

#define STEPS (1 << IB_POOL_STEPS_SHIFT)

size_t ib_pool_class_size(int k) {
  return (size_t)(STEPS + k % STEPS) << (IB_POOL_MIN_SHIFT - IB_POOL_STEPS_SHIFT + k / STEPS);
}

/* In closed form (a get per job must not scan the classes): the octave of
 * bytes - 1 and the step within it, rounded up. */
int ib_pool_class(size_t bytes) {
  if (bytes <= ((size_t)1 << IB_POOL_MIN_SHIFT)) return 0;
  const size_t n = bytes - 1;
  const int hb = 63 - __builtin_clzll((unsigned long long)n); /* >= IB_POOL_MIN_SHIFT */
  const size_t m = (n >> (hb - IB_POOL_STEPS_SHIFT)) + 1;     /* STEPS + 1 .. 2 * STEPS */
  const int k = (hb - IB_POOL_MIN_SHIFT) * STEPS + (int)m - STEPS;
  return k < IB_POOL_CLASSES ? k : -1;
}

static void trim_class(ib_pool *p, int k) {
  size_t sz = ib_pool_class_size(k);
  while (p->free_list[k].n) {
    p->free(p->ctx, p->free_list[k].addr[--p->free_list[k].n], sz);
    p->held -= sz;
    p->trims++;
  }
}

void ib_pool_trim(ib_pool *p) {
  for (int k = 0; k < IB_POOL_CLASSES; k++) trim_class(p, k);
}

void ib_pool_destroy(ib_pool *p) {
  ib_pool_trim(p);
  for (int k = 0; k < IB_POOL_CLASSES; k++) free(p->free_list[k].addr);
  memset(p->free_list, 0, sizeof p->free_list);
}

/* A free block of class k, else of the smallest class up to an octave
 * above it. A submission's staging is one block of the sum of its jobs, so
 * submissions of a few jobs more or fewer ask for neighbouring classes; a
 * fresh pinned block costs milliseconds on the driving thread and a free
 * one nothing. The octave bounds the waste of a loan and keeps a small
 * request from taking the block a large one needs next. */
static bool take_free(ib_pool *p, int k, ib_pool_block *out) {
  const size_t want = ib_pool_class_size(k);
  for (int j = k; j < IB_POOL_CLASSES && j <= k + STEPS; j++) {
    if (!p->free_list[j].n) continue;
    const size_t sz = ib_pool_class_size(j);
    /* The credits bound the requests, and the caps leave room for their
     * classes' rounding; spare bytes beyond an eighth of the cap could
     * crowd out a request that fits by its own class. */
    if (j != k && p->spare_live + (sz - want) > p->cap / 8) break;
    *out = (ib_pool_block){p->free_list[j].addr[--p->free_list[j].n], sz, j, sz - want};
    p->live += sz;
    p->spare_live += sz - want;
    p->reuses_up += j != k;
    return true;
  }
  return false;
}

bool ib_pool_get(ib_pool *p, size_t bytes, ib_pool_block *out) {
  int k = ib_pool_class(bytes ? bytes : 1);
  if (k < 0) return false;
  if (take_free(p, k, out)) return true;
  size_t sz = ib_pool_class_size(k);
  /* Over the cap: give back free blocks of other classes, largest first. */
  for (int j = IB_POOL_CLASSES - 1; j >= 0 && p->held + sz > p->cap; j--) trim_class(p, j);
  if (p->held + sz > p->cap) return false;
  uint64_t addr = p->alloc(p->ctx, sz);
  if (!addr) {
    ib_pool_trim(p); /* fragmentation across classes: retry once with nothing cached */
    addr = p->alloc(p->ctx, sz);
    if (!addr) return false;
  }
  p->allocs++;
  p->held += sz;
  p->live += sz;
  *out = (ib_pool_block){addr, sz, k, 0};
  return true;
}

int ib_pool_get_begin(ib_pool *p, size_t bytes, ib_pool_block *out) {
  int k = ib_pool_class(bytes ? bytes : 1);
  if (k < 0) return -1;
  if (take_free(p, k, out)) return 1;
  size_t sz = ib_pool_class_size(k);
  for (int j = IB_POOL_CLASSES - 1; j >= 0 && p->held + sz > p->cap; j--) trim_class(p, j);
  if (p->held + sz > p->cap) return -1;
  p->held += sz;
  p->live += sz;
  *out = (ib_pool_block){0, sz, k, 0};
  return 0;
}

void ib_pool_get_commit(ib_pool *p, ib_pool_block *b, uint64_t addr) {
  p->allocs++;
  b->addr = addr;
}

void ib_pool_get_abort(ib_pool *p, const ib_pool_block *b) {
  p->held -= b->size;
  p->live -= b->size;
}

void ib_pool_put(ib_pool *p, const ib_pool_block *b) {
  if (!b->addr) return;
  p->live -= b->size;
  p->spare_live -= b->spare;
  __typeof__(p->free_list[0]) *fl = &p->free_list[b->cls];
  if (fl->n == fl->cap) {
    size_t ncap = fl->cap ? fl->cap * 2 : 8;
    uint64_t *na = realloc(fl->addr, ncap * sizeof *na);
    if (!na) { /* cannot track it: hand it back */
      p->free(p->ctx, b->addr, b->size);
      p->held -= b->size;
      return;
    }
    fl->addr = na;
    fl->cap = ncap;
  }
  fl->addr[fl->n++] = b->addr;
}
