/*
 * page_heap.h - a stand-in for cuMemHostAlloc in GPU-less tools and tests:
 * page-aligned heap blocks, with the pinned pool's allocator signature.
 */
#ifndef IB_TOOLS_PAGE_HEAP_H
#define IB_TOOLS_PAGE_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline uint64_t page_heap_alloc(void *ctx, size_t n) {
  (void)ctx;
  return (uint64_t)(uintptr_t)aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
}

static inline void page_heap_free(void *ctx, uint64_t a, size_t n) {
  (void)ctx;
  (void)n;
  free((void *)(uintptr_t)a);
}

#endif
