/*
 * The CUDA backend's upload of raw sources from pinned slabs, without a
 * GPU: Jobs written into pinned buffers (ib_executor_buffer's allocator,
 * pinned.c, over the heap) and parsed in place, one submission planned and
 * laid out (cuda_layout.c), its host-to-device copies listed
 * (ib_cuda_sub_copies) and carried out with memcpy into a heap "device
 * block". Pins: every source's bytes land at its own device offset (no
 * overlap, nothing lost), Jobs lying one after the other in a slab take one
 * copy, Jobs parsed out of submission order still do, and what cannot use
 * a slab (a Job above IB_PINNED_SLAB_MAX) is counted.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "parse/parse.h"
#include "tools/jobgen.h"
#include "cuda_host.h"
#include "tools/page_heap.h"

/* A packed invert Job of side x side `m` pixels (key k: its own pixels). */
static uint8_t *packed(ib_mode m, uint32_t side, uint64_t k, size_t *len) {
  jg_arena a = {malloc(((size_t)side * side * 4) + (1u << 16)), 0,
                ((size_t)side * side * 4) + (1u << 16)};
  jg_rng r = {0x1234 + k};
  jg_job j;
  jg_begin(&j, &a, &r, m, side, side, k);
  jg_op(&j, &r, JG_INVERT, 0, m, side, side, -1);
  uint8_t *b = jg_pack(&j, len);
  free(a.p);
  return b;
}

/* The Job written into a pinned buffer and parsed there, as a producer
 * does through ib_executor_buffer + ib_executor_parse_buffer. */
static ib_graph *parse_pinned(ib_cuda *c, const uint8_t *bytes, size_t len) {
  ProtobufCAllocator *al = ib_pinned_allocator(c->pin);
  uint8_t *buf = al->alloc(al->allocator_data, len);
  memcpy(buf, bytes, len);
  ib_graph_memory mem = {al, NULL, NULL};
  ib_graph *g = NULL;
  ib_error err = {0};
  ib_key key = {0};
  cr_assert_eq(ib_graph_parse_buffer(buf, len, &(ib_graph_limits){0}, &mem, &g, &key, &err), IB_OK,
               "%s", err.message);
  ib_key_clear(&key);
  return g;
}

/* Plans and lays out a submission of `n` graphs (job `fail` failing after
 * the layout, as a decode or a missing kernel does; SIZE_MAX: none),
 * carries out its upload copies into a heap device block and checks every
 * other source's bytes at its device offset. Returns the copies of raw
 * sources. */
static size_t upload_failing(ib_cuda *c, ib_graph **gs, size_t n, size_t fail) {
  ib_backend_job *jobs = calloc(n, sizeof *jobs);
  for (size_t i = 0; i < n; i++) jobs[i] = (ib_backend_job){.graph = gs[i], .job_id = i + 1};
  ib_backend_submission s = {.c = c, .jobs = jobs, .n = n, .js = calloc(n, sizeof *s.js)};
  ib_cuda_sub_plan(&s);
  ib_cuda_sub_layout(&s);
  if (fail < n) jobs[fail].status = IB_DEVICE;
  const size_t dev_bytes = s.lay.out_base + s.lay.download;
  uint8_t *dev = malloc(dev_bytes), *host = calloc(1, s.lay.upload + 1);
  s.dblk.addr = (uint64_t)(uintptr_t)dev;
  s.hblk.addr = (uint64_t)(uintptr_t)host;
  ib_up_copies cp = {0};
  ib_error err = {0};
  const uint64_t copies0 = c->direct_copies;
  cr_assert_eq(ib_cuda_sub_copies(&s, 0, n, true, &cp, &err), IB_OK, "%s", err.message);
  for (size_t k = 0; k < cp.n; k++) {
    cr_assert(cp.dst[k] >= (CUdeviceptr)(uintptr_t)dev &&
                  cp.dst[k] + cp.len[k] <= (CUdeviceptr)(uintptr_t)(dev + dev_bytes),
              "copy %zu inside the device block", k);
    memcpy((void *)(uintptr_t)cp.dst[k], (const void *)(uintptr_t)cp.src[k], cp.len[k]);
  }
  size_t sources = 0;
  for (size_t i = 0; i < n; i++) {
    const ib_jstate *js = &s.js[i];
    cr_assert(js->planned && (i == fail || jobs[i].status == IB_OK), "job %zu", i);
    for (int b = 0; i != fail && b < js->plan.n_bufs; b++) {
      if (js->plan.bufs[b].source_node < 0) continue;
      cr_assert(js->direct[b], "job %zu: its source lies in pinned memory", i);
      cr_assert_eq(js->buf_off[b] % IB_CUDA_ALIGN, 0, "job %zu: aligned on the device", i);
      const ib_node *nd = &gs[i]->nodes[js->plan.bufs[b].source_node];
      const ib_source *src = &gs[i]->sources[nd->pb->source->index];
      cr_assert_eq(memcmp(dev + js->buf_off[b], src->bytes, js->plan.bufs[b].bytes), 0,
                   "job %zu: its source's bytes at its device offset", i);
      sources++;
    }
    ib_gplan_free(&s.js[i].plan);
    free(s.js[i].buf_off);
  }
  cr_assert_eq(c->direct_sources, sources);
  const size_t copies = (size_t)(c->direct_copies - copies0);
  cr_assert_eq(cp.n, copies + (s.lay.upload ? 1 : 0), "the staging block, then the sources");
  c->direct_sources = 0;
  ib_cuda_copies_free(&cp);
  free(s.dsrc);
  free(s.js);
  free(jobs);
  free(dev);
  free(host);
  return copies;
}

static size_t upload(ib_cuda *c, ib_graph **gs, size_t n) {
  return upload_failing(c, gs, n, SIZE_MAX);
}

#define N 48

Test(gpu_slab, jobs_written_one_after_the_other_upload_in_one_copy_per_slab) {
  ib_cuda *c = cuda_new();
  enum { M = 100 }; /* more than one slab's worth */
  ib_graph *gs[M];
  size_t len = 0, per_slab = 0;
  for (int i = 0; i < M; i++) {
    uint8_t *b = packed(IB_MODE_RGB, 256, (uint64_t)i, &len);
    gs[i] = parse_pinned(c, b, len);
    free(b);
  }
  per_slab = IB_PINNED_SLAB / ((len + 255) & ~(size_t)255);
  /* A job that fails inside a run: the run is copied around it (its range
   * is its own), the others' bytes still land. */
  cr_assert_eq(upload_failing(c, gs, 5, 2), 1);
  cr_assert_eq(upload_failing(c, gs, 5, 0), 1, "the run starts at the next one");
  cr_assert_lt(per_slab, M);
  const size_t copies = upload(c, gs, M);
  cr_assert_eq(copies, (M + per_slab - 1) / per_slab, "%zu copies for %d sources", copies, M);
  cr_assert_eq(ib_pinned_slab_misses(c->pin), 0);
  for (int i = 0; i < M; i++) ib_graph_free(gs[i]);
  cr_assert_eq(ib_pinned_live_blocks(c->pin), 0);
  cuda_free(c);
}

Test(gpu_slab, jobs_parsed_out_of_submission_order_still_share_copies) {
  ib_cuda *c = cuda_new();
  ib_graph *gs[N];
  size_t len = 0;
  for (int i = 0; i < N; i++) {
    uint8_t *b = packed(IB_MODE_RGB, 160, (uint64_t)i, &len); /* 75 KiB: pinned */
    gs[i] = parse_pinned(c, b, len);
    free(b);
  }
  /* Producer threads hand Jobs over out of the order they were carved. */
  for (int i = N - 1; i > 0; i--) {
    int k = (i * 7 + 3) % (i + 1);
    ib_graph *t = gs[i];
    gs[i] = gs[k];
    gs[k] = t;
  }
  const size_t copies = upload(c, gs, N);
  cr_assert_eq(copies, 1, "%zu copies for %d sources", copies, N);
  /* Every other one, by address: the runs break where the others lie (a
   * gap of a whole Job is not copied along). */
  ib_graph *odd[N / 2];
  for (int i = 0, k = 0; i < N; i++) {
    int below = 0; /* gs[i]'s rank by address */
    for (int j = 0; j < N; j++) below += gs[j]->buffer < gs[i]->buffer;
    if (below % 2 == 0) odd[k++] = gs[i];
  }
  cr_assert_eq(upload(c, odd, N / 2), N / 2);
  for (int i = 0; i < N; i++) ib_graph_free(gs[i]);
  cuda_free(c);
}

Test(gpu_slab, a_job_above_the_slab_limit_is_counted_and_copied_alone) {
  ib_cuda *c = cuda_new();
  ib_graph *gs[4];
  size_t len = 0;
  for (int i = 0; i < 4; i++) {
    /* 1024^2 RGB: 3 MiB, above IB_PINNED_SLAB_MAX, between small ones. */
    uint8_t *b = packed(IB_MODE_RGB, i == 2 ? 1024 : 256, (uint64_t)i, &len);
    gs[i] = parse_pinned(c, b, len);
    free(b);
  }
  cr_assert_eq(ib_pinned_slab_misses(c->pin), 1, "the large Job is counted");
  cr_assert_eq(upload(c, gs, 4), 2, "the 3 small ones in one copy, the large one alone");
  for (int i = 0; i < 4; i++) ib_graph_free(gs[i]);
  cuda_free(c);
}

/* A submission in pieces (ib_cuda.pieces): each piece's copies write only
 * its own jobs' device ranges (another piece's stream reads the others),
 * and together they bring every source. */
Test(gpu_slab, pieces_copy_their_own_jobs_only) {
  ib_cuda *c = cuda_new();
  ib_graph *gs[N];
  size_t len = 0;
  for (int i = 0; i < N; i++) {
    uint8_t *b = packed(IB_MODE_RGB, 160, (uint64_t)i, &len);
    gs[i] = parse_pinned(c, b, len);
    free(b);
  }
  for (int i = N - 1; i > 0; i--) { /* handed over out of carve order */
    int k = (i * 5 + 1) % (i + 1);
    ib_graph *t = gs[i];
    gs[i] = gs[k];
    gs[k] = t;
  }
  ib_backend_job jobs[N];
  for (int i = 0; i < N; i++) jobs[i] = (ib_backend_job){.graph = gs[i], .job_id = (uint64_t)i};
  ib_backend_submission s = {.c = c, .jobs = jobs, .n = N, .js = calloc(N, sizeof *s.js)};
  ib_cuda_sub_plan(&s);
  ib_cuda_sub_layout(&s);
  const CUdeviceptr dev = 1u << 20; /* offsets only: nothing is copied */
  s.dblk.addr = dev;
  size_t covered = 0;
  for (int p = 0; p < 4; p++) {
    const size_t a = N * p / 4, b = N * (p + 1) / 4;
    ib_up_copies cp = {0};
    ib_error err = {0};
    cr_assert_eq(ib_cuda_sub_copies(&s, a, b, false, &cp, &err), IB_OK);
    for (size_t k = 0; k < cp.n; k++) {
      covered += cp.len[k];
      for (size_t i = 0; i < N; i++) {
        const ib_jstate *js = &s.js[i];
        cr_assert_geq(js->plan.bufs[0].source_node, 0, "buffer 0 is the source");
        const size_t lo = dev + js->buf_off[0], hi = lo + js->plan.bufs[0].bytes;
        const bool mine = i >= a && i < b;
        const bool meets = cp.dst[k] < hi && lo < cp.dst[k] + cp.len[k];
        cr_assert(mine || !meets, "piece %d's copy %zu writes job %zu's source", p, k, i);
      }
    }
    ib_cuda_copies_free(&cp);
  }
  size_t sources = 0;
  for (int i = 0; i < N; i++) {
    sources += s.js[i].plan.bufs[0].bytes;
    ib_gplan_free(&s.js[i].plan);
    free(s.js[i].buf_off);
  }
  cr_assert_geq(covered, sources, "every source copied");
  free(s.dsrc);
  free(s.js);
  for (int i = 0; i < N; i++) ib_graph_free(gs[i]);
  cuda_free(c);
}

Test(gpu_slab, a_slab_goes_back_when_its_last_buffer_does) {
  ib_pinned *p = ib_pinned_new(page_heap_alloc, page_heap_free, NULL, 256ull << 20, 128ull << 20);
  ProtobufCAllocator *a = ib_pinned_allocator(p);
  enum { M = 200 };
  void *b[M];
  uint64_t region[M];
  for (int i = 0; i < M; i++) {
    b[i] = a->alloc(a->allocator_data, 200000);
    cr_assert(ib_pinned_region(p, b[i], b[i], 200000, &region[i]));
    cr_assert_eq((uintptr_t)b[i] % IB_PINNED_SLAB_ALIGN, 0);
    if (i && region[i] == region[i - 1])
      cr_assert_eq((uint8_t *)b[i] - (uint8_t *)b[i - 1], 200192, "carved one after the other");
  }
  cr_assert_neq(region[0], region[M - 1], "several slabs");
  /* Freed out of order; the pool takes the slabs back (ib_pinned_free
   * would leak them otherwise: ASan). */
  for (int i = 0; i < M; i += 2) a->free(a->allocator_data, b[i]);
  for (int i = 1; i < M; i += 2) a->free(a->allocator_data, b[i]);
  cr_assert_eq(ib_pinned_live_blocks(p), 0);
  cr_assert_eq(ib_pinned_parse_bytes(p), 0);
  void *x = a->alloc(a->allocator_data, 200000);
  uint64_t rx;
  cr_assert(ib_pinned_region(p, x, x, 200000, &rx));
  a->free(a->allocator_data, x);
  cr_assert_eq(ib_pinned_slab_misses(p), 0);
  ib_pinned_free(p);
}
