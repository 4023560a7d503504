/*
 * The CPU backend's block cache (cpu/blockcache.h): large blocks come back
 * to requests they fit within a quarter, small ones and those past the
 * bounds are freed, the protobuf-c allocator frees by address alone, and a
 * block given back after the creator's reference was dropped still finds
 * its cache (ASan would see a use after free otherwise), and the blocks
 * out plus the cached ones stay within max_bytes (the CPU backend's
 * host_bytes).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cpu/blockcache.h"

#define MIB ((size_t)1 << 20)

Test(blockcache, reuses_a_fitting_block) {
  ib_blockcache *c = ib_blockcache_new(64 * MIB);
  cr_assert_not_null(c);
  uint8_t *a = ib_blockcache_get(c, 4 * MIB);
  cr_assert_not_null(a);
  memset(a, 7, 4 * MIB);
  ib_blockcache_put(c, a);
  cr_assert_eq(ib_blockcache_cached(c), 1);
  /* 4 MiB - 100 fits; 2 MiB would waste half of it: a fresh block. */
  uint8_t *b = ib_blockcache_get(c, 4 * MIB - 100);
  cr_assert_eq(b, a);
  cr_assert_eq(ib_blockcache_hits(c), 1);
  uint8_t *d = ib_blockcache_get(c, 2 * MIB);
  cr_assert_neq(d, a);
  cr_assert_eq(ib_blockcache_hits(c), 1);
  /* Larger than the block: not served from it. */
  ib_blockcache_put(c, b);
  uint8_t *e = ib_blockcache_get(c, 4 * MIB + 1);
  cr_assert_eq(ib_blockcache_hits(c), 1);
  cr_assert_eq(ib_blockcache_cached(c), 1);
  ib_blockcache_put(c, d);
  ib_blockcache_put(c, e);
  ib_blockcache_unref(c);
}

Test(blockcache, small_blocks_and_bounds) {
  ib_blockcache *c = ib_blockcache_new(10 * MIB);
  void *s = ib_blockcache_get(c, 100);
  ib_blockcache_put(c, s);
  cr_assert_eq(ib_blockcache_cached(c), 0, "small blocks are freed");
  void *big[4];
  for (int i = 0; i < 4; i++) big[i] = ib_blockcache_get(c, 4 * MIB);
  for (int i = 0; i < 4; i++) ib_blockcache_put(c, big[i]);
  cr_assert_eq(ib_blockcache_cached(c), 2, "10 MiB holds two 4 MiB blocks");
  void *many[IB_BLOCKCACHE_KEEP + 2];
  ib_blockcache *k = ib_blockcache_new(1024 * MIB);
  for (size_t i = 0; i < IB_BLOCKCACHE_KEEP + 2; i++) many[i] = ib_blockcache_get(k, MIB);
  for (size_t i = 0; i < IB_BLOCKCACHE_KEEP + 2; i++) ib_blockcache_put(k, many[i]);
  cr_assert_eq(ib_blockcache_cached(k), IB_BLOCKCACHE_KEEP);
  ib_blockcache_unref(k);
  ib_blockcache_unref(c);
}

Test(blockcache, allocator_and_late_put) {
  ib_blockcache *c = ib_blockcache_new(64 * MIB);
  ProtobufCAllocator *a = ib_blockcache_allocator(c);
  void *p = a->alloc(a->allocator_data, 3);
  void *q = a->alloc(a->allocator_data, 2 * MIB);
  cr_assert(p && q);
  cr_assert_eq((uintptr_t)q % _Alignof(max_align_t), 0);
  a->free(a->allocator_data, p);
  ib_blockcache_unref(c); /* the executor goes; q is still out */
  memset(q, 1, 2 * MIB);
  a->free(a->allocator_data, q); /* the last reference: the cache goes with it */
}

Test(blockcache, zeroed_blocks) {
  ib_blockcache *c = ib_blockcache_new(64 * MIB);
  uint8_t *a = ib_blockcache_get_zeroed(c, 2 * MIB);
  cr_assert(a[0] == 0 && a[2 * MIB - 1] == 0);
  memset(a, 9, 2 * MIB);
  ib_blockcache_put(c, a);
  uint8_t *b = ib_blockcache_get_zeroed(c, 2 * MIB - 7); /* the same block, cleared */
  cr_assert_eq(b, a);
  for (size_t i = 0; i < 2 * MIB - 7; i += 4093) cr_assert_eq(b[i], 0);
  cr_assert_eq(b[2 * MIB - 8], 0);
  ib_blockcache_put(c, b);
  ib_blockcache_unref(c);
}

/* What the cache holds beyond the blocks out must never take the sum past
 * max_bytes: a fresh block first frees cached ones, a freed block is kept
 * only while it fits. (Before, 14 of 10 MiB here; the CPU backend could
 * hold twice --host-bytes.) */
static void assert_within(ib_blockcache *c, size_t max, const char *when) {
  const size_t out = ib_blockcache_out_bytes(c), cached = ib_blockcache_cached_bytes(c);
  cr_assert(cached == 0 || out + cached <= max, "%s: %zu out + %zu cached > %zu", when, out, cached,
            max);
}

Test(blockcache, blocks_out_and_cached_stay_within_max_bytes) {
  ib_blockcache *c = ib_blockcache_new(10 * MIB);
  void *a = ib_blockcache_get(c, 4 * MIB), *b = ib_blockcache_get(c, 4 * MIB);
  cr_assert_eq(ib_blockcache_out_bytes(c), 8 * MIB);
  ib_blockcache_put(c, a);
  ib_blockcache_put(c, b);
  cr_assert_eq(ib_blockcache_cached_bytes(c), 8 * MIB);
  void *d = ib_blockcache_get(c, 6 * MIB); /* fits neither: a fresh block */
  cr_assert_eq(ib_blockcache_out_bytes(c), 6 * MIB);
  cr_assert_eq(ib_blockcache_cached_bytes(c), 4 * MIB, "one 4 MiB block freed to make room");
  void *e = ib_blockcache_get(c, 4 * MIB); /* the cached one */
  cr_assert_eq(ib_blockcache_hits(c), 1);
  void *f = ib_blockcache_get(c, 2 * MIB); /* beyond the bound: allowed, nothing cached */
  cr_assert_eq(ib_blockcache_out_bytes(c), 12 * MIB);
  cr_assert_eq(ib_blockcache_held_bytes(c), 12 * MIB + ib_blockcache_cached_bytes(c),
               "held = handed out + cached");
  ib_blockcache_put(c, e);
  cr_assert_eq(ib_blockcache_cached(c), 0, "8 MiB out and 4 more would pass 10");
  ib_blockcache_put(c, f);
  cr_assert_eq(ib_blockcache_cached_bytes(c), 2 * MIB);
  ib_blockcache_put(c, d);
  cr_assert_eq(ib_blockcache_out_bytes(c), 0);
  assert_within(c, 10 * MIB, "all back");

  /* Random patterns: sizes 1-7 MiB, up to 6 blocks out, a 24 MiB bound. */
  ib_blockcache *r = ib_blockcache_new(24 * MIB);
  void *out[6] = {0};
  uint32_t x = 12345;
  for (int step = 0; step < 4000; step++) {
    x = x * 1103515245u + 12345u;
    const int slot = (int)((x >> 8) % 6);
    if (out[slot]) {
      ib_blockcache_put(r, out[slot]);
      out[slot] = NULL;
    } else {
      const size_t n = MIB + (size_t)((x >> 12) % (6 * MIB));
      out[slot] = ib_blockcache_get(r, n);
      cr_assert_not_null(out[slot]);
      memset(out[slot], 1, 64);
    }
    assert_within(r, 24 * MIB, "random");
  }
  for (int i = 0; i < 6; i++) ib_blockcache_put(r, out[i]);
  cr_assert_gt(ib_blockcache_hits(r), 0, "the cache still serves");
  ib_blockcache_unref(r);
  ib_blockcache_unref(c);
}
