/*
 * The CUDA backend's pipeline of a submission of large jobs (cuda_internal.h
 * ib_cuda_pipelined, ib_cuda_pipe_next, ib_cuda_piece_staging), without a
 * GPU: submissions planned and laid out (cuda_layout.c), each piece's
 * upload copies listed (ib_cuda_sub_copies_in) and carried out with memcpy
 * into a heap "device block" in piece order. Pins: pieces are cut by bytes
 * and cover every job once, in order; a piece's copies write only its own
 * jobs' ranges (another piece's kernels may be reading the others), the
 * descriptor tables go up with the first piece; once a piece's copies ran,
 * everything its jobs read is on the device (staged sources and parameter
 * blocks, raw sources from pinned memory); every byte of the staging block
 * is copied exactly once.
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

enum { N = 9, SIDE = 512 };

/* An invert Job of side x side L pixels (key k: its own pixels): parsed on
 * the heap (its source is staged) or in a pinned buffer (uploaded from
 * there). */
static ib_graph *job(ib_cuda *c, uint32_t side, uint64_t k, bool pinned) {
  const size_t cap = (size_t)side * side + (1u << 16);
  jg_arena a = {malloc(cap), 0, cap};
  jg_rng r = {0x5151 + k};
  jg_job j;
  jg_begin(&j, &a, &r, IB_MODE_L, side, side, k);
  jg_op(&j, &r, JG_INVERT, 0, IB_MODE_L, side, side, -1);
  ib_graph *g = NULL;
  ib_error err = {0};
  if (!pinned) {
    g = jg_finish(&j, &err);
  } else {
    size_t len = 0;
    uint8_t *b = jg_pack(&j, &len);
    ProtobufCAllocator *al = ib_pinned_allocator(c->pin);
    uint8_t *buf = al->alloc(al->allocator_data, len);
    memcpy(buf, b, len);
    free(b);
    ib_graph_memory mem = {al, NULL, NULL};
    ib_key key = {0};
    cr_assert_eq(ib_graph_parse_buffer(buf, len, &(ib_graph_limits){0}, &mem, &g, &key, &err),
                 IB_OK, "%s", err.message);
    ib_key_clear(&key);
  }
  cr_assert_not_null(g, "%s", err.message);
  free(a.p);
  return g;
}

typedef struct sub {
  ib_backend_submission s;
  ib_backend_job jobs[N];
  ib_graph *gs[N];
} sub;

static void sub_make(ib_cuda *c, sub *x, uint32_t side, bool pinned) {
  memset(x, 0, sizeof *x);
  for (int i = 0; i < N; i++) {
    x->gs[i] = job(c, side, (uint64_t)i, pinned);
    x->jobs[i] = (ib_backend_job){.graph = x->gs[i], .job_id = (uint64_t)i + 1};
  }
  x->s = (ib_backend_submission){.c = c, .jobs = x->jobs, .n = N, .js = calloc(N, sizeof *x->s.js)};
  ib_cuda_sub_plan(&x->s);
  ib_cuda_sub_layout(&x->s);
}

static void sub_free(sub *x) {
  for (int i = 0; i < N; i++) {
    ib_gplan_free(&x->s.js[i].plan);
    free(x->s.js[i].buf_off);
    ib_graph_free(x->gs[i]);
  }
  free(x->s.dsrc);
  free(x->s.js);
}

/* Gives back what ib_cuda_sub_blocks took for x (every device block back
 * in the pool), then frees x and c. */
static void blocks_free(ib_cuda *c, sub *x) {
  ib_backend_submission *s = &x->s;
  ib_pinned_put(c->pin, &s->hblk);
  ib_pinned_put(c->pin, &s->rblk);
  if (s->arena) {
    ib_pinned_put(c->pin, &s->arena->blk);
    free(s->arena);
  }
  ib_pool_put(&c->dpool, &s->dblk);
  for (size_t i = 0; i < N; i++) ib_pool_put(&c->dpool, &s->js[i].blk);
  cr_assert_eq(c->dpool.live, 0);
  /* Given back, the blocks stay in the pools for reuse, and the gauges say
   * so (ib_executor_pools_get). */
  ib_executor_pools p;
  ib_backend_cuda.pools(c, &p);
  cr_assert(p.device_bytes == c->dpool.held && p.device_bytes <= p.device_cap);
  cr_assert_eq(p.device_cap, c->dpool.cap);
  cr_assert(p.host_bytes == ib_pinned_stats_get(c->pin).held && p.host_cap == 1ull << 30);
  ib_pool_destroy(&c->dpool);
  sub_free(x);
  cuda_free(c);
}

Test(gpu_pipe, pieces_are_cut_by_bytes_and_cover_every_job_once) {
  ib_cuda *c = cuda_new();
  sub x;
  sub_make(c, &x, SIDE, false);
  const size_t io = 2 * (size_t)SIDE * SIDE; /* in + out of one job */
  /* Two jobs a piece, the last one alone. */
  cr_assert(ib_cuda_pipelined(&x.s, 2 * io));
  size_t a = 0, pieces = 0;
  while (a < N) {
    const size_t b = ib_cuda_pipe_next(&x.s, a, 2 * io);
    cr_assert_gt(b, a, "a piece holds a job at least");
    cr_assert_eq(b - a, a + 2 <= N ? 2u : 1u, "piece %zu: jobs [%zu, %zu)", pieces, a, b);
    a = b;
    pieces++;
  }
  cr_assert_eq(pieces, (N + 1) / 2);
  /* One job a piece when a piece's bytes are below a job's. */
  cr_assert_eq(ib_cuda_pipe_next(&x.s, 3, 1), 4);
  /* Everything in one piece: nothing to pipeline. */
  cr_assert_not(ib_cuda_pipelined(&x.s, N * io));
  /* Jobs far smaller than a piece keep the slot's stream. */
  cr_assert_not(ib_cuda_pipelined(&x.s, 9 * io));
  cr_assert_not(ib_cuda_pipelined(&x.s, 0));
  sub_free(&x);
  cuda_free(c);
}

/* What the pipeline counts a job's PCIe bytes as (from its graph) is what
 * its plan moves: every upload buffer, and the terminal image unless it
 * stays resident. Pinned by piece cuts: a piece of exactly job 0's bytes
 * ends after job 0, one byte more takes job 1. Two raw sources of 301 x 203
 * RGB, chops add, then a half-size resize (terminal 150 x 101). */
static ib_graph *two_source_job(uint64_t k) {
  const size_t cap = 3u * 301 * 203 * 2 + (1u << 16);
  jg_arena a = {malloc(cap), 0, cap};
  jg_rng r = {0x7a7a + k};
  jg_job j;
  jg_begin(&j, &a, &r, IB_MODE_RGB, 301, 203, k);
  int src2 = jg_extra(&j, &r, IB_MODE_RGB, 301, 203);
  Imgbatch__V1__Node *n = jg_node(&j, IMGBATCH__V1__NODE__OP_CHOPS, 0, src2);
  n->chops = jg_alloc(j.a, sizeof *n->chops);
  imgbatch__v1__chops_op__init(n->chops);
  n->chops->function = IMGBATCH__V1__CHOPS_FUNCTION__ADD;
  n->chops->scale = 1.0;
  n = j.nodes[jg_op(&j, &r, JG_RESIZE, (int)j.job.n_nodes - 1, IB_MODE_RGB, 301, 203, -1)];
  n->resize->width = 150;
  n->resize->height = 101;
  n->resize->resample = IMGBATCH__V1__RESAMPLE__NEAREST;
  n->resize->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT__NOT_SET;
  ib_error err = {0};
  ib_graph *g = jg_finish(&j, &err);
  cr_assert_not_null(g, "%s", err.message);
  free(a.p);
  return g;
}

static void counts_what_the_plan_moves(bool resident) {
  ib_cuda *c = cuda_new();
  ib_graph *gs[2] = {two_source_job(1), two_source_job(2)};
  ib_backend_job jobs[2];
  for (int i = 0; i < 2; i++)
    jobs[i] = (ib_backend_job){.graph = gs[i], .job_id = (uint64_t)i + 1, .resident = resident};
  ib_backend_submission s = {.c = c, .jobs = jobs, .n = 2, .js = calloc(2, sizeof *s.js)};
  ib_cuda_sub_plan(&s);
  ib_cuda_sub_layout(&s);
  const ib_gplan *p = &s.js[0].plan;
  cr_assert(s.js[0].planned);
  size_t moved = 0;
  int ups = 0;
  for (int k = 0; k < p->n_bufs; k++)
    if (p->bufs[k].source_node >= 0) moved += p->bufs[k].bytes, ups++;
  cr_assert_eq(ups, 2, "two upload buffers");
  if (!resident) moved += p->bufs[p->out_buf].bytes;
  cr_assert_eq(moved, 2u * 301 * 203 * 3 + (resident ? 0u : 150u * 101 * 3));
  cr_assert_eq(ib_cuda_pipe_next(&s, 0, moved), 1, "a piece of job 0's bytes ends after it");
  cr_assert_eq(ib_cuda_pipe_next(&s, 0, moved + 1), 2, "one byte more takes job 1");
  for (int i = 0; i < 2; i++) {
    ib_gplan_free(&s.js[i].plan);
    free(s.js[i].buf_off);
    ib_graph_free(gs[i]);
  }
  free(s.dsrc);
  free(s.js);
  cuda_free(c);
}

Test(gpu_pipe, the_graph_counts_what_the_plan_moves) { counts_what_the_plan_moves(false); }
Test(gpu_pipe, the_graph_counts_what_the_plan_moves_resident) { counts_what_the_plan_moves(true); }

/* One notion of a large job (backend.h large_job): what admission tells
 * the executor (graph alone) is what the pipeline decides on its plan, at
 * the default piece (1 MiB in + out a job; L: a side of 724.1), above and
 * below the line; a resident output moves nothing down. */
Test(gpu_pipe, a_large_job_is_what_the_pipeline_takes) {
  ib_cuda *c = cuda_new();
  const uint32_t sides[] = {256, 720, 726, 1024};
  const bool want[] = {false, false, true, true};
  for (int k = 0; k < 4; k++) {
    sub x;
    sub_make(c, &x, sides[k], false);
    const bool large = ib_cuda_large_job(c, x.gs[0], false);
    cr_assert_eq(large, want[k], "side %u: large %d", sides[k], large);
    cr_assert_eq(ib_cuda_pipelined(&x.s, IB_DEFAULT_PIPE_BYTES), large, "side %u", sides[k]);
    cr_assert_eq(ib_cuda_large_job(c, x.gs[0], true), sides[k] >= 1024, "side %u resident",
                 sides[k]);
    sub_free(&x);
  }
  /* The pipeline's own piece when it is set. */
  c->pipe_bytes = 32u << 20;
  sub x;
  sub_make(c, &x, 1024, false);
  cr_assert_not(ib_cuda_large_job(c, x.gs[0], false), "2 MiB of a 32 MiB piece: under 1/8");
  cr_assert_not(ib_cuda_pipelined(&x.s, c->pipe_bytes));
  sub_free(&x);
  cuda_free(c);
}

/* Carries out the submission's copies piece by piece (pieces of `piece`
 * bytes) into a heap device block, checking after each piece that its jobs'
 * inputs are on the device and that it wrote nothing of another piece's
 * jobs; then that every staging byte was written once. */
static void pipe_copies(sub *x, size_t piece, bool expect_split) {
  ib_backend_submission *s = &x->s;
  const size_t dev_bytes = s->lay.out_base + s->lay.download;
  uint8_t *dev = calloc(1, dev_bytes), *host = malloc(s->lay.upload + 1);
  uint8_t *writes = calloc(1, s->lay.upload + 1);
  for (size_t k = 0; k < s->lay.upload; k++) host[k] = (uint8_t)(k * 131 + 7);
  s->dblk.addr = (uint64_t)(uintptr_t)dev;
  s->hblk.addr = (uint64_t)(uintptr_t)host;
  cr_assert(ib_cuda_pipelined(s, piece));
  size_t pieces = 0;
  for (size_t a = 0; a < s->n; pieces++) {
    const size_t b = ib_cuda_pipe_next(s, a, piece);
    ib_stage_ranges st;
    ib_cuda_piece_staging(s, a, b, &st);
    cr_assert_eq(st.n > 1 || a > 0 || !expect_split, true,
                 "a split staging block: the first piece's part and the descriptors");
    if (!expect_split) cr_assert_eq(st.n, a == 0 ? 1 : 0, "a small staging block goes up whole");
    for (int r = 0; r < st.n; r++)
      for (size_t k = st.lo[r]; k < st.hi[r]; k++) writes[k]++;
    ib_up_copies cp = {0};
    ib_error err = {0};
    cr_assert_eq(ib_cuda_sub_copies_in(s, a, b, &st, &cp, &err), IB_OK, "%s", err.message);
    for (size_t k = 0; k < cp.n; k++) {
      const uintptr_t lo = (uintptr_t)cp.dst[k], hi = lo + cp.len[k];
      cr_assert(lo >= (uintptr_t)dev && hi <= (uintptr_t)(dev + dev_bytes), "inside the block");
      /* Nothing of a job outside [a, b): its sources and parameter blocks. */
      for (size_t i = 0; i < s->n; i++) {
        if (i >= a && i < b) continue;
        const ib_jstate *js = &s->js[i];
        for (int q = 0; q < js->plan.n_bufs; q++) {
          if (js->plan.bufs[q].source_node < 0) continue;
          const uintptr_t blo = (uintptr_t)dev + js->buf_off[q], bhi = blo + js->plan.bufs[q].bytes;
          cr_assert(hi <= blo || bhi <= lo, "piece %zu writes job %zu's source", pieces, i);
        }
        /* A small staging block goes up whole ahead of every piece: later
         * jobs' parameters early, an earlier one's never again. */
        const uintptr_t plo = (uintptr_t)dev + js->up_lo, phi = (uintptr_t)dev + js->up_hi;
        if (expect_split || i < a)
          cr_assert(hi <= plo || phi <= lo, "piece %zu writes job %zu's staging", pieces, i);
      }
      memcpy((void *)lo, (const void *)(uintptr_t)cp.src[k], cp.len[k]);
    }
    ib_cuda_copies_free(&cp);
    /* What jobs [a, b) read is there now. */
    for (size_t k = s->lay.desc_off; k < s->lay.upload; k++)
      cr_assert_eq(dev[k], host[k], "descriptor byte %zu up with the first piece", k);
    for (size_t i = a; i < b; i++) {
      const ib_jstate *js = &s->js[i];
      for (int q = 0; q < js->plan.n_bufs; q++) {
        if (js->plan.bufs[q].source_node < 0) continue;
        const uint8_t *want = js->direct[q] ? x->gs[i]->sources[0].bytes : host + js->buf_off[q];
        cr_assert_eq(memcmp(dev + js->buf_off[q], want, js->plan.bufs[q].bytes), 0,
                     "job %zu: source on the device after its piece", i);
      }
      for (int q = 0; q < js->plan.n_stages; q++) {
        const size_t n = js->plan.stages[q].chain.param_bytes + js->plan.stages[q].extra_bytes;
        cr_assert_eq(memcmp(dev + js->par_off[q], host + js->par_off[q], n), 0,
                     "job %zu: parameters", i);
      }
    }
    a = b;
  }
  for (size_t k = 0; k < s->lay.upload; k++)
    cr_assert_eq(writes[k], 1, "staging byte %zu copied once (%d)", k, writes[k]);
  free(dev);
  free(host);
  free(writes);
}

Test(gpu_pipe, staged_sources_go_up_with_their_piece) {
  ib_cuda *c = cuda_new();
  sub x;
  sub_make(c, &x, SIDE, false);
  cr_assert_gt(x.s.lay.upload, (size_t)1 << 20, "the sources are staged");
  pipe_copies(&x, 2 * 2 * (size_t)SIDE * SIDE, true);
  pipe_copies(&x, 1, true); /* a piece per job */
  sub_free(&x);
  cuda_free(c);
}

Test(gpu_pipe, pinned_sources_go_up_from_where_they_lie) {
  ib_cuda *c = cuda_new();
  sub x;
  sub_make(c, &x, SIDE, true);
  cr_assert_lt(x.s.lay.upload, (size_t)1 << 20, "parameters and descriptors only");
  cr_assert_eq(x.s.n_dsrc, (size_t)N);
  const uint64_t sources0 = c->direct_sources;
  pipe_copies(&x, 3 * 2 * (size_t)SIDE * SIDE, false);
  cr_assert_eq(c->direct_sources - sources0, (uint64_t)N, "every source counted once");
  sub_free(&x);
  cuda_free(c);
}

/* A pipelined submission's jobs lie in device blocks of their own (one size
 * whatever the submission's job count): every buffer of a job but its
 * staged sources inside its block, addressed from the submission's block;
 * the pieces' copies bring each raw source there. */
static void job_blocks(bool pinned) {
  ib_cuda *c = cuda_new();
  ib_pool_init(&c->dpool, page_heap_alloc, page_heap_free, NULL, 1ull << 30);
  c->pipe_bytes = 2 * 2 * (size_t)SIDE * SIDE;
  sub x;
  sub_make(c, &x, SIDE, pinned);
  ib_backend_submission *s = &x.s;
  cr_assert(s->pipe, "large jobs: pipelined");
  cr_assert_eq(s->lay.download, 0, "nothing downloads from the submission's block");
  ib_error err = {0};
  cr_assert_eq(ib_cuda_sub_blocks(s, &err), IB_OK, "%s", err.message);
  ib_executor_pools pools;
  ib_backend_cuda.pools(c, &pools);
  cr_assert_geq(pools.device_bytes, s->lay.out_base + s->lay.download, "the submission's block");
  cr_assert_geq(pools.host_bytes, s->lay.upload, "its staging");
  const CUdeviceptr dev = ib_sub_dev(s);
  uint8_t *host = ib_sub_host(s);
  for (size_t k = 0; k < s->lay.upload; k++) host[k] = (uint8_t)(k * 131 + 7);
  for (size_t i = 0; i < N; i++) {
    const ib_jstate *js = &s->js[i];
    cr_assert_neq(js->blk.addr, 0, "job %zu has its block", i);
    cr_assert_geq(js->blk.size, js->dev_bytes);
    for (int b = 0; b < js->plan.n_bufs; b++) {
      const uint64_t at = dev + js->buf_off[b], end = at + js->plan.bufs[b].bytes;
      if (js->plan.bufs[b].source_node >= 0 && !js->direct[b]) {
        cr_assert(at >= dev && end <= dev + s->lay.upload, "job %zu: staged in the upload region",
                  i);
        continue;
      }
      cr_assert(at >= js->blk.addr && end <= js->blk.addr + js->dev_bytes,
                "job %zu buffer %d inside its block", i, b);
      cr_assert_eq((at - js->blk.addr) % IB_CUDA_ALIGN, 0, "aligned");
    }
  }
  for (size_t a = 0; a < s->n;) {
    const size_t b = ib_cuda_pipe_next(s, a, c->pipe_bytes);
    ib_stage_ranges st;
    ib_cuda_piece_staging(s, a, b, &st);
    ib_up_copies cp = {0};
    cr_assert_eq(ib_cuda_sub_copies_in(s, a, b, &st, &cp, &err), IB_OK, "%s", err.message);
    for (size_t k = 0; k < cp.n; k++)
      memcpy((void *)(uintptr_t)cp.dst[k], (const void *)(uintptr_t)cp.src[k], cp.len[k]);
    ib_cuda_copies_free(&cp);
    for (size_t i = a; i < b; i++) {
      const ib_jstate *js = &s->js[i];
      for (int q = 0; q < js->plan.n_bufs; q++) {
        if (js->plan.bufs[q].source_node < 0) continue;
        const uint8_t *want = js->direct[q] ? x.gs[i]->sources[0].bytes : host + js->buf_off[q];
        cr_assert_eq(
            memcmp((const void *)(uintptr_t)(dev + js->buf_off[q]), want, js->plan.bufs[q].bytes),
            0, "job %zu: source in place after its piece", i);
      }
    }
    a = b;
  }
  blocks_free(c, &x);
}

Test(gpu_pipe, pipelined_jobs_lie_in_blocks_of_their_own_pinned) { job_blocks(true); }
Test(gpu_pipe, pipelined_jobs_lie_in_blocks_of_their_own_staged) { job_blocks(false); }

/* Renditions (gplan.h node_buf, cuda_layout.c place_renditions): a
 * submission of invert -> point jobs, every third naming renditions
 * {1, 0, 1, 2} (the invert twice, the source, the terminal). Each rendition
 * job gets one range of the rendition block per named node (the node
 * named twice shares it), none of the Job buffer or the arena; every
 * device buffer of every job, rendition buffers included, has a range of
 * its own; the plain jobs keep their arena ranges, in the arena. Jobs:
 * cuda_host.h rendition_graph. */
static void renditions_layout(bool pipe, bool pinned) {
  ib_cuda *c = cuda_new();
  ib_pool_init(&c->dpool, page_heap_alloc, page_heap_free, NULL, 1ull << 30);
  if (pipe) c->pipe_bytes = 2 * 2 * (size_t)SIDE * SIDE;
  sub x;
  memset(&x, 0, sizeof x);
  for (int i = 0; i < N; i++) {
    x.gs[i] = rendition_graph(c, SIDE, (uint64_t)i, pinned, i % 3 == 0);
    x.jobs[i] = (ib_backend_job){.graph = x.gs[i], .job_id = (uint64_t)i + 1};
  }
  x.s = (ib_backend_submission){.c = c, .jobs = x.jobs, .n = N, .js = calloc(N, sizeof *x.s.js)};
  ib_backend_submission *s = &x.s;
  ib_cuda_sub_plan(s);
  ib_cuda_sub_layout(s);
  cr_assert_eq(s->pipe, pipe);
  ib_error err = {0};
  cr_assert_eq(ib_cuda_sub_blocks(s, &err), IB_OK, "%s", err.message);
  const size_t img = ib_cuda_up((size_t)SIDE * SIDE);
  cr_assert_eq(s->lay.rend_bytes, 3 * 3 * img, "three jobs, three named nodes each");
  cr_assert_geq(s->rblk.size, s->lay.rend_bytes);
  /* Every device buffer: [at, end), pairwise apart. */
  enum { MAXR = N * 8 };
  uint64_t lo[MAXR], hi[MAXR];
  int nr = 0;
  const CUdeviceptr dev = ib_sub_dev(s);
  for (size_t i = 0; i < N; i++) {
    const ib_jstate *js = &s->js[i];
    cr_assert(js->planned);
    const bool rend = i % 3 == 0;
    cr_assert_eq(js->n_rend, rend ? 4u : 0u);
    if (rend) {
      cr_assert_not(js->own, "job %zu: renditions never come down into the Job buffer", i);
      cr_assert_eq(js->plan.n_stages, 2, "invert | point: split at the rendition");
      cr_assert_eq(js->rend_off[0], js->rend_off[2], "a node named twice comes down once");
      cr_assert_neq(js->rend_off[0], js->rend_off[1]);
      cr_assert_neq(js->rend_off[1], js->rend_off[3]);
      cr_assert_neq(js->rend_off[0], js->rend_off[3]);
      for (int q = 0; q < 4; q++) {
        cr_assert_leq(js->rend_off[q] + (size_t)SIDE * SIDE, s->lay.rend_bytes);
        cr_assert_eq(js->rend_off[q] % IB_CUDA_ALIGN, 0);
      }
      cr_assert_eq(js->plan.bufs[ib_cuda_rend_buf(js, x.gs[i], 1)].source_node, 0);
    } else {
      cr_assert_eq(js->plan.n_stages, 1, "invert and point fuse as before");
      if (!js->own) cr_assert_leq(js->dl_off + (size_t)SIDE * SIDE, s->lay.arena_bytes);
    }
    for (int b = 0; b < js->plan.n_bufs; b++) {
      cr_assert_lt(nr, MAXR);
      lo[nr] = dev + js->buf_off[b];
      hi[nr] = lo[nr] + js->plan.bufs[b].bytes;
      if (pipe && !(js->plan.bufs[b].source_node >= 0 && !js->direct[b]))
        cr_assert(lo[nr] >= js->blk.addr && hi[nr] <= js->blk.addr + js->dev_bytes,
                  "job %zu buffer %d inside its block", i, b);
      else
        cr_assert(lo[nr] >= dev && hi[nr] <= dev + s->dblk.size, "job %zu buffer %d", i, b);
      nr++;
    }
  }
  for (int p = 0; p < nr; p++)
    for (int q = p + 1; q < nr; q++)
      cr_assert(hi[p] <= lo[q] || hi[q] <= lo[p], "device buffers %d and %d overlap", p, q);
  blocks_free(c, &x);
}

Test(gpu_pipe, renditions_lay_out_apart_staged) { renditions_layout(false, false); }
Test(gpu_pipe, renditions_lay_out_apart_pinned) { renditions_layout(false, true); }
Test(gpu_pipe, renditions_lay_out_apart_pipelined) { renditions_layout(true, false); }
Test(gpu_pipe, renditions_lay_out_apart_pipelined_pinned) { renditions_layout(true, true); }
