/* cuda_host.h - an ib_cuda with only its pinned pool, over the page-aligned
 * heap (tools/page_heap.h): the host passes of a submission (plan, layout,
 * staging, copies) tested without a driver (test_gpu_slab, test_gpu_pipe),
 * and the stand-in driver entries the tests that launch share. */
#ifndef IB_TEST_CUDA_HOST_H
#define IB_TEST_CUDA_HOST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "gpu/cuda_internal.h"
#include "parse/parse.h"
#include "tools/jobgen.h"
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

/* *s: jobs[0, n) planned and laid out as ib_cuda_submit does, its pinned
 * staging a heap block (returned: the caller frees it, and s->js). */
static inline uint8_t *sub_on_heap(ib_cuda *c, ib_backend_submission *s, ib_backend_job *jobs,
                                   size_t n) {
  *s = (ib_backend_submission){.c = c, .jobs = jobs, .n = n, .prof_i = -1};
  s->js = calloc(n, sizeof *s->js);
  ib_cuda_sub_plan(s);
  ib_cuda_sub_layout(s);
  uint8_t *host = calloc(1, s->lay.upload + 16);
  s->hblk.addr = (uint64_t)(uintptr_t)host;
  return host;
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

/* A side x side L Job: invert -> point; with `rend`, contract 3 naming
 * renditions {1, 0, 1, 2} (the invert twice, the source, the terminal);
 * parsed from pinned memory (`pinned`) or the heap. */
static inline ib_graph *rendition_graph(ib_cuda *c, uint32_t side, uint64_t k, bool pinned,
                                        bool rend) {
  const size_t cap = (size_t)side * side + (1u << 16);
  jg_arena a = {malloc(cap), 0, cap};
  jg_rng r = {0x6161 + k};
  jg_job j;
  jg_begin(&j, &a, &r, IB_MODE_L, side, side, k);
  int p = jg_op(&j, &r, JG_INVERT, 0, IB_MODE_L, side, side, -1);
  jg_op(&j, &r, JG_POINT, p, IB_MODE_L, side, side, -1);
  static const uint32_t nodes[] = {1, 0, 1, 2};
  Imgbatch__V1__Rendition rd[4], *rl[4];
  Imgbatch__V1__CpuOutput out[4];
  if (rend) {
    j.job.contract_version = 3;
    for (int i = 0; i < 4; i++) {
      imgbatch__v1__rendition__init(&rd[i]);
      imgbatch__v1__cpu_output__init(&out[i]);
      out[i].compression = (uint32_t)i;
      rd[i].node = nodes[i];
      rd[i].output = &out[i];
      rl[i] = &rd[i];
    }
    j.job.renditions = rl;
    j.job.n_renditions = 4;
  }
  size_t len = 0;
  uint8_t *b = jg_pack(&j, &len);
  ib_graph *g = NULL;
  ib_error err = {0};
  ib_key key = {0};
  if (pinned) {
    ProtobufCAllocator *al = ib_pinned_allocator(c->pin);
    uint8_t *buf = al->alloc(al->allocator_data, len);
    memcpy(buf, b, len);
    ib_graph_memory mem = {al, NULL, NULL};
    cr_assert_eq(ib_graph_parse_buffer(buf, len, &(ib_graph_limits){0}, &mem, &g, &key, &err),
                 IB_OK, "%s", err.message);
  } else {
    cr_assert_eq(ib_graph_parse(b, len, &(ib_graph_limits){0}, &g, &key, &err), IB_OK, "%s",
                 err.message);
  }
  ib_key_clear(&key);
  free(b);
  free(a.p);
  return g;
}

#endif
