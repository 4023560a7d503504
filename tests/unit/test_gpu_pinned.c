/*
 * The CUDA backend's pinned memory (worker/gpu/pinned.c) over a heap
 * allocator standing in for cuMemHostAlloc: which parse allocations land
 * in pinned blocks, the parse cap, ib_pinned_holds, and many threads at
 * once (Jobs are parsed on any thread, arenas released on any thread).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "exec_jobs.h"
#include "gpu/pinned.h"
#include "parse/parse.h"

static atomic_int host_allocs, host_frees;

static uint64_t heap_alloc(void *ctx, size_t n) {
  (void)ctx;
  atomic_fetch_add(&host_allocs, 1);
  return (uint64_t)(uintptr_t)malloc(n);
}
static void heap_free(void *ctx, uint64_t a, size_t n) {
  (void)ctx;
  (void)n;
  atomic_fetch_add(&host_frees, 1);
  free((void *)(uintptr_t)a);
}

Test(pinned, large_parse_allocations_are_pinned_small_ones_are_not) {
  ib_pinned *p = ib_pinned_new(heap_alloc, heap_free, NULL, 64u << 20, 32u << 20);
  ProtobufCAllocator *a = ib_pinned_allocator(p);
  uint8_t *big = a->alloc(a->allocator_data, IB_PINNED_PARSE_MIN);
  uint8_t *small = a->alloc(a->allocator_data, IB_PINNED_PARSE_MIN - 1);
  cr_assert(ib_pinned_holds(p, big, big, IB_PINNED_PARSE_MIN));
  cr_assert(ib_pinned_holds(p, big, big + 100, IB_PINNED_PARSE_MIN - 100), "an interior range");
  cr_assert_not(ib_pinned_holds(p, big, big + 100, IB_PINNED_PARSE_MIN), "runs past the block");
  cr_assert_not(ib_pinned_holds(p, small, small, 1), "small requests stay on the heap");
  cr_assert_eq(ib_pinned_parse_bytes(p), IB_PINNED_PARSE_MIN);
  a->free(a->allocator_data, big);
  a->free(a->allocator_data, small);
  cr_assert_eq(ib_pinned_live_blocks(p), 0);
  cr_assert_eq(ib_pinned_parse_bytes(p), 0);
  cr_assert_not(ib_pinned_holds(p, big, big, 1), "a freed block is no longer pinned memory");
  ib_pinned_free(p);
  cr_assert_eq(atomic_load(&host_allocs), atomic_load(&host_frees));
}

Test(pinned, past_the_parse_cap_jobs_land_on_the_heap) {
  ib_pinned *p = ib_pinned_new(heap_alloc, heap_free, NULL, 64u << 20, 1u << 20);
  ProtobufCAllocator *a = ib_pinned_allocator(p);
  void *x = a->alloc(a->allocator_data, 1u << 20);
  void *y = a->alloc(a->allocator_data, 1u << 20);
  cr_assert(ib_pinned_holds(p, x, x, 1u << 20));
  cr_assert_not(ib_pinned_holds(p, y, y, 1), "over the parse cap: heap");
  /* Staging and arenas are not limited by the parse cap. */
  ib_pool_block b;
  cr_assert(ib_pinned_get(p, 8u << 20, &b));
  cr_assert(ib_pinned_holds(p, (void *)(uintptr_t)b.addr, (void *)(uintptr_t)(b.addr + 5), 1000));
  cr_assert_not(
      ib_pinned_holds(p, (void *)(uintptr_t)(b.addr + 5), (void *)(uintptr_t)(b.addr + 5), 1),
      "an interior address is not a block");
  ib_pinned_put(p, &b);
  a->free(a->allocator_data, y);
  a->free(a->allocator_data, x);
  x = a->alloc(a->allocator_data, 1u << 20);
  cr_assert(ib_pinned_holds(p, x, x, 1u << 20), "freeing made room again");
  a->free(a->allocator_data, x);
  ib_pinned_free(p);
}

Test(pinned, a_job_unpacked_with_it_has_its_raw_pixels_in_pinned_memory) {
  ib_pinned *p = ib_pinned_new(heap_alloc, heap_free, NULL, 64u << 20, 32u << 20);
  test_job t = {.mode = "RGB", .w = 200, .h = 150};
  size_t len;
  uint8_t *bytes = test_job_pack(&t, &len);
  ib_graph_memory mem = {ib_pinned_allocator(p), NULL, NULL};
  ib_graph *g = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_graph_parse_in(bytes, len, NULL, &mem, &g, NULL, &err), IB_OK, "%s", err.message);
  cr_assert_eq(g->sources[0].len, 200u * 150u * 3u);
  cr_assert(ib_pinned_holds(p, g->sources[0].bytes, g->sources[0].bytes, g->sources[0].len));
  ib_graph_free(g);
  cr_assert_eq(ib_pinned_live_blocks(p), 0);
  free(bytes);
  ib_pinned_free(p);
}

#define THREADS 8
#define ROUNDS 2000
static ib_pinned *shared;

static void *hammer(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  ProtobufCAllocator *a = ib_pinned_allocator(shared);
  void *held[4] = {0};
  size_t sizes[4] = {0};
  for (int r = 0; r < ROUNDS; r++) {
    int k = rand_r(&seed) % 4;
    if (held[k]) {
      cr_assert(ib_pinned_holds(shared, held[k], held[k], sizes[k]) ==
                (sizes[k] >= IB_PINNED_PARSE_MIN));
      ((uint8_t *)held[k])[sizes[k] - 1] = 1; /* ASan: the whole request is ours */
      a->free(a->allocator_data, held[k]);
      held[k] = NULL;
    } else {
      sizes[k] = 1 + (size_t)(rand_r(&seed) % (3 * IB_PINNED_PARSE_MIN));
      held[k] = a->alloc(a->allocator_data, sizes[k]);
      cr_assert_not_null(held[k]);
    }
  }
  for (int k = 0; k < 4; k++) a->free(a->allocator_data, held[k]);
  return NULL;
}

Test(pinned, threads_allocate_and_free_at_once) {
  shared = ib_pinned_new(heap_alloc, heap_free, NULL, 256u << 20, 128u << 20);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    pthread_create(&th[i], NULL, hammer, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  cr_assert_eq(ib_pinned_live_blocks(shared), 0);
  cr_assert_eq(ib_pinned_parse_bytes(shared), 0);
  ib_pinned_free(shared);
}

/* The allocator is called without the lock: another thread asks the pinned
 * memory a question while cuMemHostAlloc (here: a slow heap allocator) runs. */
static ib_pinned *slow_pin;
static atomic_int asked, answered_during_alloc;
static pthread_t askers[4]; /* joined by the test, after the lock is free */
static int n_askers;

static void *ask(void *arg) {
  (void)arg;
  (void)ib_pinned_live_blocks(slow_pin);
  atomic_store(&asked, 1);
  return NULL;
}

static uint64_t slow_alloc(void *ctx, size_t n) {
  atomic_store(&asked, 0);
  if (n_askers < 4 && pthread_create(&askers[n_askers], NULL, ask, ctx) == 0) n_askers++;
  for (int i = 0; i < 1000 && !atomic_load(&asked); i++) usleep(1000);
  if (atomic_load(&asked)) atomic_fetch_add(&answered_during_alloc, 1);
  return heap_alloc(ctx, n);
}

Test(pinned, the_allocator_runs_without_the_lock) {
  slow_pin = ib_pinned_new(slow_alloc, heap_free, NULL, 64u << 20, 32u << 20);
  ProtobufCAllocator *a = ib_pinned_allocator(slow_pin);
  void *x = a->alloc(a->allocator_data, 1u << 20);
  ib_pool_block b;
  bool got = ib_pinned_get(slow_pin, 2u << 20, &b);
  for (int i = 0; i < n_askers; i++) pthread_join(askers[i], NULL);
  cr_assert(got);
  cr_assert_eq(atomic_load(&answered_during_alloc), 2, "a question waited for the allocator");
  cr_assert(ib_pinned_holds(slow_pin, x, x, 1u << 20));
  cr_assert_eq(ib_pinned_parse_bytes(slow_pin), ib_pool_class_size(ib_pool_class(1u << 20)));
  cr_assert_eq(ib_pinned_live_blocks(slow_pin), 2);
  a->free(a->allocator_data, x);
  ib_pinned_put(slow_pin, &b);
  /* Freed blocks come back without the allocator. */
  x = a->alloc(a->allocator_data, 1u << 20);
  cr_assert_eq(atomic_load(&answered_during_alloc), 2);
  a->free(a->allocator_data, x);
  cr_assert_eq(ib_pinned_parse_bytes(slow_pin), 0);
  ib_pinned_free(slow_pin);
}

/* Jobs of one size reuse their blocks (a run of many 4096^2 frames pays
 * cuMemHostAlloc only for the blocks live at once), and whatever the mix
 * of sizes the pool never holds more than its cap: free blocks of other
 * classes go back first. */
Test(pinned, blocks_are_reused_across_jobs_and_held_within_the_cap) {
  const uint64_t cap = 64u << 20;
  ib_pinned *p = ib_pinned_new(heap_alloc, heap_free, NULL, cap, 32u << 20);
  ProtobufCAllocator *a = ib_pinned_allocator(p);
  for (int job = 0; job < 50; job++) {
    void *frame[2] = {a->alloc(a->allocator_data, (9u << 20) + 40),
                      a->alloc(a->allocator_data, (9u << 20) + 40)};
    ib_pool_block stage;
    cr_assert(ib_pinned_get(p, 4u << 20, &stage));
    cr_assert(ib_pinned_holds(p, frame[0], frame[0], 9u << 20));
    cr_assert(ib_pinned_holds(p, frame[1], frame[1], 9u << 20));
    ib_pinned_put(p, &stage);
    a->free(a->allocator_data, frame[1]);
    a->free(a->allocator_data, frame[0]);
  }
  ib_pinned_stats st = ib_pinned_stats_get(p);
  cr_assert_eq(st.allocs, 3, "two frames and one staging block, then reuse: %llu",
               (unsigned long long)st.allocs);
  cr_assert_eq(st.alloc_bytes, 2 * ib_pool_class_size(ib_pool_class((9u << 20) + 40)) + (4u << 20));
  cr_assert_eq(st.parse_heap, 0);
  /* Growing sizes: every request a new class, each fitting the cap alone. */
  for (size_t n = 1u << 20; n <= 30u << 20; n += 3u << 20) {
    void *f = a->alloc(a->allocator_data, n);
    ib_pool_block b;
    cr_assert(ib_pinned_get(p, n, &b));
    cr_assert(ib_pinned_holds(p, f, f, n), "%zu", n);
    ib_pinned_put(p, &b);
    a->free(a->allocator_data, f);
  }
  st = ib_pinned_stats_get(p);
  cr_assert_leq(st.held_max, cap, "held %llu", (unsigned long long)st.held_max);
  cr_assert_gt(st.trims, 0, "free blocks given back to stay within the cap");
  /* Past the parse cap: on the heap, and counted. */
  void *x = a->alloc(a->allocator_data, 20u << 20);
  void *y = a->alloc(a->allocator_data, 20u << 20);
  cr_assert_not(ib_pinned_holds(p, y, y, 1));
  st = ib_pinned_stats_get(p);
  cr_assert_eq(st.parse_heap, 1);
  cr_assert_eq(st.parse_heap_bytes, 20u << 20);
  a->free(a->allocator_data, y);
  a->free(a->allocator_data, x);
  ib_pinned_free(p);
  cr_assert_eq(atomic_load(&host_allocs), atomic_load(&host_frees));
}
