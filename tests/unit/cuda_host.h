/* cuda_host.h - an ib_cuda with only its pinned pool, over the page-aligned
 * heap (tools/page_heap.h): the host passes of a submission (plan, layout,
 * staging, copies) tested without a driver (test_gpu_slab, test_gpu_pipe),
 * and the stand-in driver entries the tests that launch share. */
#ifndef IB_TEST_CUDA_HOST_H
#define IB_TEST_CUDA_HOST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu/cuda_internal.h"
#include "tools/page_heap.h"

/* Stand-in driver entries that only succeed, for the tests' ib_cu tables
 * (kernels "load" as module 1; no context to make current). */
static inline CUresult standin_ctx(CUcontext ctx) {
  (void)ctx;
  return CUDA_SUCCESS;
}
static inline CUresult standin_load(CUmodule *m, const void *img) {
  (void)img;
  *m = (CUmodule)(uintptr_t)1;
  return CUDA_SUCCESS;
}
static inline CUresult standin_unload(CUmodule m) {
  (void)m;
  return CUDA_SUCCESS;
}
static inline CUresult standin_setattr(CUfunction f, CUfunction_attribute a, int v) {
  (void)f, (void)a, (void)v;
  return CUDA_SUCCESS;
}

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

/* ... that also compiles and "loads" kernels: over the stand-in driver
 * `cu`, a kernel cache (NVRTC for sm_90) and the module LRU, with an
 * H100's numbers (132 SMs, 227 KiB of opt-in shared memory). */
static inline ib_cuda *cuda_new_launching(ib_cu *cu) {
  ib_cuda *c = cuda_new();
  c->cu = cu;
  c->sm_count = 132;
  c->smem_optin = 227 * 1024;
  snprintf(c->arch, sizeof c->arch, "sm_90");
  c->kc = ib_kcache_new(NULL, 256ull << 20, 0);
  cr_assert_not_null(c->kc);
  cr_assert_eq(ib_lru_init(&c->mods, 256u << 20, ib_cuda_unload_module, c), 0);
  return c;
}

static inline void cuda_free_launching(ib_cuda *c) {
  ib_lru_destroy(&c->mods);
  ib_kcache_free(c->kc);
  cuda_free(c);
}

#endif
