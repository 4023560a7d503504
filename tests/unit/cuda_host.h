/* cuda_host.h - an ib_cuda with only its pinned pool, over the page-aligned
 * heap (tools/page_heap.h): the host passes of a submission (plan, layout,
 * staging, copies) tested without a driver (test_gpu_slab, test_gpu_pipe). */
#ifndef IB_TEST_CUDA_HOST_H
#define IB_TEST_CUDA_HOST_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "gpu/cuda_internal.h"
#include "tools/page_heap.h"

static inline ib_cuda *cuda_new(void) {
  ib_cuda *c = calloc(1, sizeof *c);
  c->pin = ib_pinned_new(page_heap_alloc, page_heap_free, NULL, 1ull << 30, 512ull << 20);
  cr_assert_not_null(c->pin);
  return c;
}

static inline void cuda_free(ib_cuda *c) {
  ib_pinned_free(c->pin);
  free(c);
}

#endif
