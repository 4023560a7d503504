/* thread_buf.c - what a codec thread keeps (see thread_buf.h). */
#include "codec/thread_buf.h"

#include "imgbatch.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct kept {
  uint8_t *buf[IB_TBUF_USES];
  size_t cap[IB_TBUF_USES];
  struct libdeflate_compressor *comp;
  int comp_level;
  struct libdeflate_decompressor *decomp;
} kept;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_failed;
/* The sum of every thread's cap[]: what the budget bounds. */
static _Atomic size_t kept_total;

void ib_codec_scratch_get(uint64_t *kept, uint64_t *cap) {
  if (kept) *kept = atomic_load(&kept_total);
  if (cap) *cap = IB_THREAD_BUF_BUDGET;
}

/* Swaps `from` kept bytes for `to` in the total; false (nothing changed)
 * when that would pass the budget. */
static bool rekeep(size_t from, size_t to) {
  size_t cur = atomic_load(&kept_total);
  do {
    if (to > from && cur - from + to > IB_THREAD_BUF_BUDGET) return false;
  } while (!atomic_compare_exchange_weak(&kept_total, &cur, cur - from + to));
  return true;
}

static void free_kept(void *p) {
  kept *k = p;
  if (!k) return;
  for (int u = 0; u < IB_TBUF_USES; u++) {
    free(k->buf[u]);
    rekeep(k->cap[u], 0);
  }
  libdeflate_free_compressor(k->comp);
  libdeflate_free_decompressor(k->decomp);
  free(k);
}

static void make_key(void) { key_failed = pthread_key_create(&key, free_kept) != 0; }

/* The calling thread's kept buffers; NULL when they cannot be had (the
 * caller then allocates afresh). */
static kept *thread_kept(void) {
  if (pthread_once(&key_once, make_key) != 0 || key_failed) return NULL;
  kept *k = pthread_getspecific(key);
  if (k) return k;
  if (!(k = calloc(1, sizeof *k))) return NULL;
  if (pthread_setspecific(key, k) != 0) {
    free(k);
    return NULL;
  }
  return k;
}

uint8_t *ib_tbuf_get(ib_tbuf_use use, size_t n) {
  if (!n) n = 1;
  kept *k = n <= IB_THREAD_BUF_KEEP ? thread_kept() : NULL;
  if (!k) return malloc(n);
  if (k->cap[use] < n) { /* no realloc: the old contents are not wanted */
    free(k->buf[use]);
    k->buf[use] = NULL;
    if (!rekeep(k->cap[use], n)) { /* over the budget: used once (put frees it) */
      rekeep(k->cap[use], 0);
      k->cap[use] = 0;
      return malloc(n);
    }
    k->cap[use] = n;
    if (!(k->buf[use] = malloc(n))) {
      rekeep(n, 0);
      k->cap[use] = 0;
      return NULL;
    }
  }
  return k->buf[use];
}

void ib_tbuf_put(ib_tbuf_use use, uint8_t *p) {
  if (!p) return;
  kept *k = pthread_once(&key_once, make_key) == 0 && !key_failed ? pthread_getspecific(key) : NULL;
  if (!k || k->buf[use] != p) free(p);
}

struct libdeflate_compressor *ib_tbuf_compressor(int level) {
  kept *k = thread_kept();
  if (!k) return NULL;
  if (k->comp && k->comp_level == level) return k->comp;
  libdeflate_free_compressor(k->comp);
  k->comp = libdeflate_alloc_compressor(level);
  k->comp_level = level;
  return k->comp;
}

struct libdeflate_decompressor *ib_tbuf_decompressor(void) {
  kept *k = thread_kept();
  if (k && !k->decomp) k->decomp = libdeflate_alloc_decompressor();
  return k ? k->decomp : NULL;
}
