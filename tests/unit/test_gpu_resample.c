/*
 * Image.resize with a convolution filter through the CUDA backend's
 * planner, staging and launcher without a GPU (the stand-in driver of
 * test_gpu_passes.c records every launch): the resize row's multi-pass head
 * (op_resize.c, kernels/resample.cuh) compiles with NVRTC for every mode, with the kernels
 * its row lists; its parameters, its host-built weight tables after the
 * parameter block, its scratch (out_w x the rows the vertical pass reads)
 * and its launches are what the CPU path computes (a wide window's
 * horizontal pass tiled in shared memory, or counted slow without it);
 * skipped passes and the
 * crop plan no launch or scratch of their own; reducing_gap's reduce step
 * and a tall image's two calls are laid out in the scratch buffer and
 * launched in Image.resize's order; the staged sequence, replayed on the
 * host as the kernels read it, gives the CPU backend's bytes; and a
 * pointwise step after it is a stage of its own (nothing fuses after a
 * multi-pass head). The device's own bytes are gpu_check's (section 3e).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "cpu/cpu_backend.h"
#include "kernels/reduce.h"
#include "kernels/resample.h"
#include "tools/jobgen.h"
#include "cuda_host.h"

/* ------------------------------------------------------------ stand-in driver */

#define MAX_FN 64
#define MAX_LAUNCH 64
static char fn_names[MAX_FN][64];
static int n_fn;

typedef struct launch {
  char name[64];
  unsigned gx, gy, bx, smem;
  int ci;   /* the call index argument; -1: none (the reduce step) */
  int take; /* ib_resample_h's take_tiled argument; -1: another kernel */
} launch;
static launch launches[MAX_LAUNCH];
static int n_launch;

static CUresult f_getfn(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  cr_assert_lt(n_fn, MAX_FN);
  snprintf(fn_names[n_fn], sizeof fn_names[n_fn], "%s", name);
  *f = (CUfunction)(uintptr_t)(n_fn + 1);
  n_fn++;
  return CUDA_SUCCESS;
}
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned smem, CUstream st, void **args,
                         void **extra) {
  (void)gz, (void)by, (void)bz, (void)st, (void)extra;
  cr_assert_lt(n_launch, MAX_LAUNCH);
  launch *l = &launches[n_launch++];
  const int k = (int)(uintptr_t)f - 1;
  cr_assert(k >= 0 && k < n_fn, "a function the module gave");
  *l = (launch){.gx = gx, .gy = gy, .bx = bx, .smem = smem, .ci = -1, .take = -1};
  snprintf(l->name, sizeof l->name, "%s", fn_names[k]);
  if (strcmp(l->name, "ib_resample_reduce") != 0) l->ci = *(const int32_t *)args[1];
  if (strcmp(l->name, "ib_resample_h") == 0) l->take = *(const int32_t *)args[2];
  return CUDA_SUCCESS;
}

static ib_cu cu;
static jg_arena arena;

static void setup(void) {
  arena = (jg_arena){malloc(1u << 25), 0, 1u << 25};
  cu = (ib_cu){.cuCtxSetCurrent = standin_ctx,
               .cuModuleLoadData = standin_load,
               .cuModuleGetFunction = f_getfn,
               .cuModuleUnload = standin_unload,
               .cuFuncSetAttribute = standin_setattr,
               .cuLaunchKernel = f_launch};
  n_fn = n_launch = 0;
}
static void teardown(void) { free(arena.p); }

TestSuite(gpu_resample, .init = setup, .fini = teardown, .timeout = 600);

static ib_cuda *backend(void) { return cuda_new_launching(&cu); }

static void backend_free(ib_cuda *c) { cuda_free_launching(c); }

/* ------------------------------------------------------------ jobs */

typedef struct rjob {
  ib_mode mode;
  uint32_t w, h, ow, oh;
  int filter;
  int box; /* 1: the box below */
  double b[4];
  double gap; /* > 0: reducing_gap */
} rjob;

static ib_graph *graph_of(const rjob *q, uint64_t k) {
  jg_rng r = {0x51 + k};
  jg_job j;
  jg_begin(&j, &arena, &r, q->mode, q->w, q->h, k);
  Imgbatch__V1__Node *n = jg_node(&j, IMGBATCH__V1__NODE__OP_RESIZE, 0, -1);
  n->resize = jg_alloc(j.a, sizeof *n->resize);
  imgbatch__v1__resize_op__init(n->resize);
  n->resize->width = q->ow;
  n->resize->height = q->oh;
  n->resize->resample = (Imgbatch__V1__Resample)q->filter;
  if (q->box) {
    n->resize->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX;
    n->resize->box = jg_alloc(j.a, sizeof *n->resize->box);
    imgbatch__v1__box__init(n->resize->box);
    n->resize->box->left = q->b[0];
    n->resize->box->top = q->b[1];
    n->resize->box->right = q->b[2];
    n->resize->box->bottom = q->b[3];
  }
  if (q->gap > 0) {
    n->resize->reducing_gap_present_case =
        IMGBATCH__V1__RESIZE_OP__REDUCING_GAP_PRESENT_REDUCING_GAP;
    n->resize->reducing_gap = q->gap;
  }
  ib_error err = {0};
  ib_graph *g = jg_finish(&j, &err);
  cr_assert_not_null(g, "%s", err.message);
  return g;
}

/* One axis's tables as op_resample.c builds them for the CPU path. */
typedef struct axis {
  int ksize;
  int32_t *bounds, *coeffs;
} axis;

static axis axis_of(int filter, int n_in, double e0, double e1, int n_out) {
  axis a;
  a.ksize = ib_resample_ksize(filter, (float)e0, (float)e1, n_out);
  a.bounds = calloc((size_t)2 * n_out, sizeof(int32_t));
  a.coeffs = calloc((size_t)n_out * a.ksize, sizeof(int32_t));
  double *w = calloc((size_t)a.ksize, sizeof *w);
  cr_assert(a.bounds && a.coeffs && w);
  ib_resample_coeffs(filter, n_in, (float)e0, (float)e1, n_out, a.ksize, a.bounds, a.coeffs, w);
  free(w);
  return a;
}

static void axis_free(axis *a) {
  free(a->bounds);
  free(a->coeffs);
}

typedef struct sub {
  ib_backend_submission s;
  ib_backend_job jobs[8];
  ib_graph *gs[8];
  uint8_t *host;
} sub;

/* Compiles the first job's head with NVRTC (every kernel the row lists is
 * in the module), hands the backend the module, then plans, stages, groups
 * and launches the jobs as ib_cuda_submit does. Returns the chain's
 * IB_PBYTES. */
static unsigned run(ib_cuda *c, sub *x, ib_graph *const *gs, size_t n) {
  ib_gplan pl;
  ib_error err = {0};
  cr_assert_eq(ib_gplan_build(gs[0], &pl, &err), IB_OK, "%s", err.message);
  const ib_gchain *ch = &pl.stages[0].chain;
  const ib_dev_passes *ps = ch->steps[0].dev->passes;
  cr_assert_not_null(ps);
  char *src = ib_gchain_source(ch);
  cr_assert_not_null(src);
  cr_assert_not_null(strstr(src, "#include \"resample.cuh\""), "%s", src);
  unsigned pbytes = 0;
  const char *pb = strstr(src, "#define IB_PBYTES ");
  cr_assert_not_null(pb);
  cr_assert_eq(sscanf(pb, "#define IB_PBYTES %u", &pbytes), 1);
  static const char *const opt[] = {"--fmad=false"};
  void *img = NULL;
  size_t len = 0;
  char *log = NULL;
  ib_sigkey sk;
  ib_cuda_sigkey(ch, &sk);
  cr_assert_eq(ib_kcache_get(c->kc, sk.sig, src, "sm_90", opt, 1, &img, &len, NULL, &log, &err),
               IB_OK, "%s\n%s", err.message, log ? log : "");
  for (int k = 0; k < ps->n_kernels; k++) {
    const size_t nl = strlen(ps->kernels[k].name) + 1;
    bool found = false;
    for (size_t i = 0; !found && i + nl <= len; i++)
      found = memcmp((char *)img + i, ps->kernels[k].name, nl) == 0;
    cr_assert(found, "kernel %s is not in the module", ps->kernels[k].name);
  }
  free(img);
  free(log);
  free(src);
  cr_assert_eq(ib_cuda_module_add(c, ch, sk.sig, "img", 4, NULL, NULL, &err), IB_OK, "%s",
               err.message);
  ib_gplan_free(&pl);

  memset(x, 0, sizeof *x);
  cr_assert_leq(n, 8);
  for (size_t i = 0; i < n; i++) {
    x->gs[i] = gs[i];
    x->jobs[i] = (ib_backend_job){.graph = gs[i], .job_id = i + 1};
  }
  ib_backend_submission *s = &x->s;
  x->host = sub_on_heap(c, s, x->jobs, n);
  s->dblk.addr = 0x7f0000000000ull;
  cr_assert_eq(ib_cuda_sub_stage(s, &err), IB_OK, "%s", err.message);
  cr_assert_eq(ib_cuda_sub_groups(s, &err), IB_OK, "%s", err.message);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(x->jobs[i].status, IB_OK, "%s", x->jobs[i].err.message);
  n_launch = 0;
  cr_assert_eq(ib_cuda_sub_launch(s, 0, n, &err), IB_OK, "%s", err.message);
  return pbytes;
}

static void sub_free(ib_cuda *c, sub *x) {
  ib_backend_submission *s = &x->s;
  for (size_t i = 0; i < s->n_pins; i++) ib_lru_unpin(&c->mods, s->pins[i]);
  free(s->pins);
  free(s->lp.ents);
  free(s->lp.gfunc);
  free(s->lp.glevel);
  for (size_t i = 0; i < s->lp.n_ikf; i++) free(s->lp.ikf[i]);
  free(s->lp.ikf);
  for (size_t i = 0; i < s->n; i++) {
    ib_gplan_free(&s->js[i].plan);
    free(s->js[i].buf_off);
    ib_graph_free(x->gs[i]);
  }
  free(s->dsrc);
  free(s->js);
  free(x->host);
}

static ib_resample_params params_of(const sub *x, size_t i, const uint8_t **tables,
                                    unsigned pbytes) {
  const uint8_t *par = x->host + x->s.js[i].par_off[0];
  ib_resample_params q;
  memcpy(&q, par, sizeof q);
  *tables = par + pbytes;
  return q;
}

static void expect_launch(int i, const char *name, int ci, uint64_t items) {
  cr_assert_lt(i, n_launch, "launch %d of %d", i, n_launch);
  const launch *l = &launches[i];
  cr_assert_str_eq(l->name, name, "launch %d", i);
  cr_assert_eq(l->ci, ci, "launch %d (%s): call %d, want %d", i, name, l->ci, ci);
  cr_assert_eq(l->bx, 256);
  cr_assert_eq(l->smem, 0);
  cr_assert_eq(l->gx, (unsigned)((items + 255) / 256), "launch %d (%s): grid x %u for %llu items",
               i, name, l->gx, (unsigned long long)items);
  if (strcmp(name, "ib_resample_h") == 0) cr_assert_eq(l->take, 0, "launch %d: tiled calls", i);
}

/* The tiled horizontal pass: a block a tile, `smem` shared bytes. */
static void expect_tiled(int i, int ci, unsigned tiles, unsigned smem) {
  cr_assert_lt(i, n_launch, "launch %d of %d", i, n_launch);
  const launch *l = &launches[i];
  cr_assert_str_eq(l->name, "ib_resample_ht", "launch %d", i);
  cr_assert_eq(l->ci, ci, "launch %d: call %d, want %d", i, l->ci, ci);
  cr_assert(l->bx == 256 && l->gx == tiles && l->smem == smem,
            "launch %d: %u blocks of %u, %u shared bytes; want %u tiles, %u bytes", i, l->gx, l->bx,
            l->smem, tiles, smem);
}

static void expect_words(const uint8_t *t, int32_t off, const int32_t *want, size_t n,
                         const char *what) {
  for (size_t i = 0; i < n; i++) {
    int32_t v;
    memcpy(&v, t + ((size_t)off + i) * 4, 4);
    cr_assert_eq(v, want[i], "%s[%zu]: %d, want %d", what, i, v, want[i]);
  }
}

/* RGBA 300 x 200 -> 120 x 50, BICUBIC, a float box: premultiplied head
 * (a = 1), both passes, the horizontal one over only the rows the vertical
 * one reads, the tables the CPU path builds. */
Test(gpu_resample, both_passes_stage_the_cpu_tables_and_a_row_limited_scratch) {
  ib_cuda *c = backend();
  const rjob q = {
      IB_MODE_RGBA, 300, 200, 120, 50, IB_RESAMPLE_BICUBIC, 1, {10.5, 20.25, 290, 150}, 0};
  ib_graph *g = graph_of(&q, 1);
  sub x;
  const unsigned pbytes = run(c, &x, &g, 1);
  cr_assert_eq(n_fn, 4);
  const ib_jstate *js = &x.s.js[0];
  cr_assert_eq(js->plan.n_stages, 1);
  const ib_gstage *st = &js->plan.stages[0];
  cr_assert_eq(st->chain.steps[0].a, 1, "RGBA premultiplies");
  char *src = ib_gchain_source(&st->chain);
  cr_assert_not_null(strstr(src, "#define IB_B0 4\n#define IB_A 1\n"), "%s", src);
  free(src);

  axis v = axis_of(q.filter, 200, 20.25, 150, 50), h = axis_of(q.filter, 300, 10.5, 290, 120);
  const int first = v.bounds[0], last = v.bounds[2 * 49] + v.bounds[2 * 49 + 1];
  const uint8_t *t;
  const ib_resample_params par = params_of(&x, 0, &t, pbytes);
  cr_assert(par.n_calls == 1 && !par.reduce);
  const ib_rsp_call p = par.call[0];
  cr_assert_eq(p.passes, IB_RSP_H | IB_RSP_V);
  cr_assert(p.src == IB_RSI_SRC && p.dst == IB_RSI_OUT && p.tmp_off == 0);
  cr_assert(p.first == first && p.rows == last - first, "rows %d + %d, want %d + %d", p.first,
            p.rows, first, last - first);
  cr_assert(last - first < 200, "the horizontal pass skips rows the box leaves out");
  cr_assert(p.ksize_x == h.ksize && p.ksize_y == v.ksize);
  for (int i = 0; i < 50; i++) v.bounds[2 * i] -= first;
  expect_words(t, p.yb, v.bounds, 100, "y bounds (shifted by first)");
  expect_words(t, p.yk, v.coeffs, (size_t)50 * v.ksize, "y coeffs");
  expect_words(t, p.xb, h.bounds, 240, "x bounds");
  expect_words(t, p.xk, h.coeffs, (size_t)120 * h.ksize, "x coeffs");

  cr_assert_geq(st->scratch_buf, 0);
  cr_assert_eq(js->plan.bufs[st->scratch_buf].bytes,
               120u * (uint64_t)ib_resample_tmp_rows(last - first) * 4u);
  const ib_gdesc *d = &x.s.lp.descs[0];
  cr_assert_eq(d->in1, ib_sub_dev(&x.s) + js->buf_off[st->scratch_buf]);
  cr_assert(d->width == 120 && d->height == 50 && d->stride0 == 300 && d->height0 == 200);

  cr_assert_eq(n_launch, 2);
  /* 11 taps: wide enough for 2 lanes a pixel, so tiled; 64 outputs read at
   * most 160 source pixels from the word of their first (a byte a plane, to
   * an odd count of words: 164), 4 planes; the output tile 64 x 4 bytes */
  cr_assert_eq(ib_resample_h_lanes(h.ksize), 2);
  cr_assert(p.tile_x == 64 && p.tile_pitch == 164, "tile %d, pitch %d", p.tile_x, p.tile_pitch);
  expect_tiled(0, 0, 2 * (unsigned)((last - first + 31) / 32), 32 * (4 * 164 + 260));
  expect_launch(1, "ib_resample_v", 0, 120u * 50u);
  axis_free(&v);
  axis_free(&h);
  sub_free(c, &x);
  backend_free(c);
}

/* One launch group (RGB, one signature) of a vertical-only, a crop (an
 * integral box of the output's size) and a horizontal-only job: no scratch
 * for any, the horizontal launch sized for the one job that runs it, the
 * vertical launch for the largest output. */
Test(gpu_resample, skipped_passes_and_the_crop_take_no_scratch) {
  ib_cuda *c = backend();
  const rjob jobs[3] = {
      {IB_MODE_RGB, 64, 80, 64, 31, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
      {IB_MODE_RGB, 64, 80, 20, 30, IB_RESAMPLE_BOX, 1, {5, 7, 25, 37}, 0},
      {IB_MODE_RGB, 10, 80, 33, 80, IB_RESAMPLE_HAMMING, 0, {0}, 0},
  };
  ib_graph *gs[3];
  for (int i = 0; i < 3; i++) gs[i] = graph_of(&jobs[i], (uint64_t)i + 1);
  sub x;
  const unsigned pbytes = run(c, &x, gs, 3);
  const int want[3] = {IB_RSP_V, IB_RSP_CROP, IB_RSP_H};
  for (size_t i = 0; i < 3; i++) {
    const uint8_t *t;
    const ib_rsp_call p = params_of(&x, i, &t, pbytes).call[0];
    cr_assert_eq(p.passes, want[i], "job %zu: passes %d, want %d", i, p.passes, want[i]);
    cr_assert_lt(x.s.js[i].plan.stages[0].scratch_buf, 0, "job %zu has no scratch", i);
    if (i == 1) cr_assert(p.crop_x == 5 && p.crop_y == 7);
    if (i == 2) cr_assert(p.first == 0 && p.rows == 80);
  }
  cr_assert_eq(n_launch, 2);
  expect_launch(0, "ib_resample_h", 0, 33u * 80u); /* enlarging: ksize 3, a thread a pixel */
  /* 80 -> 31 LANCZOS: 17 taps, two slices a pixel over whole warps of 32
   * pixels: 64 x 31 = 62 warps, twice */
  const uint8_t *t;
  const ib_rsp_call v0 = params_of(&x, 0, &t, pbytes).call[0];
  cr_assert(v0.ksize_y == 17 && ib_resample_v_slices(v0.ksize_y, false) == 2, "ksize %d",
            v0.ksize_y);
  expect_launch(1, "ib_resample_v", 0, 62u * 32u * 2u);
  cr_assert_eq(launches[1].gy, 3, "one job a blockIdx.y");
  sub_free(c, &x);
  backend_free(c);
}

/* RGB 8 x 4000 -> 1 x 1000, BILINEAR, reducing_gap 2.0: Image.resize
 * reduces by (4, 2) over the box (0, 0, 8, 4000) (support 1: the box
 * widened by 0.5 x the scale, clipped) to 2 x 2000, which is tall (2000 >
 * 100 x 2) and shrinks vertically: a vertical-only call to 2 x 1000 into
 * the scratch image after the reduced one, then a horizontal-only call
 * from there into the output. Launched in that order, each over its own
 * items, every table the CPU path's. */
Test(gpu_resample, reduce_step_then_tall_two_calls_in_pillows_order) {
  ib_cuda *c = backend();
  const rjob q = {IB_MODE_RGB, 8, 4000, 1, 1000, IB_RESAMPLE_BILINEAR, 0, {0}, 2.0};
  ib_graph *g = graph_of(&q, 3);
  sub x;
  const unsigned pbytes = run(c, &x, &g, 1);
  const uint8_t *t;
  const ib_resample_params p = params_of(&x, 0, &t, pbytes);
  cr_assert(p.reduce && p.fx == 4 && p.fy == 2, "reduce %d by %d x %d", p.reduce, p.fx, p.fy);
  cr_assert(p.rbox[0] == 0 && p.rbox[1] == 0 && p.rbox[2] == 8 && p.rbox[3] == 4000);
  cr_assert(p.rw == 2 && p.rh == 2000, "reduced to %d x %d", p.rw, p.rh);
  cr_assert_eq(p.n_calls, 2);
  const ib_rsp_call *c0 = &p.call[0], *c1 = &p.call[1];
  cr_assert_eq(c0->passes, IB_RSP_V);
  cr_assert(c0->src == IB_RSI_SCRATCH && c0->src_off == 0 && c0->in_w == 2 && c0->in_h == 2000);
  cr_assert(c0->dst == IB_RSI_SCRATCH && c0->dst_off == 2u * 2000u * 3u);
  cr_assert(c0->out_w == 2 && c0->out_h == 1000);
  cr_assert_eq(c1->passes, IB_RSP_H);
  cr_assert(c1->src == IB_RSI_SCRATCH && c1->src_off == c0->dst_off && c1->dst == IB_RSI_OUT);
  cr_assert(c1->first == 0 && c1->rows == 1000 && c1->out_w == 1 && c1->out_h == 1000);

  axis v = axis_of(q.filter, 2000, 0, 2000, 1000), h = axis_of(q.filter, 2, 0, 2, 1);
  cr_assert(c0->ksize_y == v.ksize && c1->ksize_x == h.ksize);
  expect_words(t, c0->yb, v.bounds, 2000, "call 0 y bounds (not shifted: no horizontal pass)");
  expect_words(t, c0->yk, v.coeffs, (size_t)1000 * v.ksize, "call 0 y coeffs");
  expect_words(t, c1->xb, h.bounds, 2, "call 1 x bounds");
  expect_words(t, c1->xk, h.coeffs, (size_t)h.ksize, "call 1 x coeffs");

  const ib_jstate *js = &x.s.js[0];
  const ib_gstage *st = &js->plan.stages[0];
  cr_assert_geq(st->scratch_buf, 0);
  cr_assert_eq(js->plan.bufs[st->scratch_buf].bytes, 2u * 2000u * 3u + 2u * 1000u * 3u,
               "the reduced and the middle image, no pass rows");
  cr_assert_eq(n_launch, 3);
  expect_launch(0, "ib_resample_reduce", -1, 2u * 2000u);
  expect_launch(1, "ib_resample_v", 0, 2u * 1000u);
  cr_assert_eq(ib_resample_h_lanes(h.ksize), 1, "ksize %d: a thread a pixel", h.ksize);
  expect_launch(2, "ib_resample_h", 1, 1u * 1000u);
  axis_free(&v);
  axis_free(&h);
  sub_free(c, &x);
  backend_free(c);
}

/* One group (RGBA, one signature) of a job with reducing_gap
 * (premultiplied: Image.resize drops the gap, no reduce step), a tall one
 * whose second call is a crop, and a plain upscale: the launches cover
 * every call any job runs, each sized for the largest job that runs it. */
Test(gpu_resample, a_group_mixes_sequences_and_rgba_drops_the_gap) {
  ib_cuda *c = backend();
  const rjob jobs[3] = {
      {IB_MODE_RGBA, 90, 90, 10, 10, IB_RESAMPLE_LANCZOS, 0, {0}, 2.0},
      {IB_MODE_RGBA, 2, 333, 2, 100, IB_RESAMPLE_BICUBIC, 0, {0}, 0},
      {IB_MODE_RGBA, 40, 30, 20, 60, IB_RESAMPLE_BOX, 0, {0}, 0},
  };
  ib_graph *gs[3];
  for (int i = 0; i < 3; i++) gs[i] = graph_of(&jobs[i], (uint64_t)i + 20);
  sub x;
  const unsigned pbytes = run(c, &x, gs, 3);
  const uint8_t *t;
  ib_resample_params p = params_of(&x, 0, &t, pbytes);
  cr_assert(!p.reduce && p.n_calls == 1 && p.call[0].passes == (IB_RSP_H | IB_RSP_V));
  cr_assert_eq(p.call[0].src, IB_RSI_SRC);
  cr_assert_eq(x.s.js[0].plan.stages[0].chain.steps[0].a, 1);
  p = params_of(&x, 1, &t, pbytes);
  cr_assert_eq(p.n_calls, 2);
  cr_assert(p.call[0].passes == IB_RSP_V && p.call[0].dst == IB_RSI_SCRATCH);
  cr_assert(p.call[1].passes == IB_RSP_CROP && p.call[1].crop_x == 0 && p.call[1].crop_y == 0,
            "(2, 100) -> (2, 100) over (0, 0, 2, 100) is _resize's crop");
  cr_assert(p.call[1].src == IB_RSI_SCRATCH && p.call[1].dst == IB_RSI_OUT);
  /* call 0: job 2's 20 x 30 pass pixels; job 0's wide window (LANCZOS 90
   * -> 10) tiled: its 10 outputs are one tile, its 90 rows three; job 2's
   * output the largest; call 1: job 1's crop */
  cr_assert_eq(n_launch, 4);
  const ib_rsp_call k0 = params_of(&x, 0, &t, pbytes).call[0];
  cr_assert_eq(ib_resample_h_lanes(k0.ksize_x), 8, "LANCZOS 90 -> 10: ksize %d", k0.ksize_x);
  /* the whole row, 90 bytes a plane, to an odd count of words; the output tile 64 x 4 */
  cr_assert(k0.tile_x == 64 && k0.tile_pitch == 92, "tile %d, pitch %d", k0.tile_x, k0.tile_pitch);
  cr_assert_eq(k0.tile_smem, 32 * (4 * 92 + 260));
  cr_assert_eq(params_of(&x, 2, &t, pbytes).call[0].tile_x, 0, "BOX 40 -> 20 is narrow");
  expect_launch(0, "ib_resample_h", 0, 20u * 30u);
  expect_tiled(1, 0, 3, 32 * (4 * 92 + 260));
  expect_launch(2, "ib_resample_v", 0, 20u * 60u);
  expect_launch(3, "ib_resample_v", 1, 2u * 100u);
  sub_free(c, &x);
  backend_free(c);
}

/* Wide windows are tiled as wide as 48 KiB of shared memory allows: RGB
 * 1200 -> 40 LANCZOS (181 taps) stages at most 396 source pixels for 8
 * outputs (a byte in each of 3 planes: a pitch of 99 words), 16 would take
 * 64 KiB; 4000 -> 30
 * LANCZOS (801 taps) fits no tile, not even one output's 32 rows, and
 * keeps the pixel-parallel pass. Without shared memory (pass_global) the
 * pixel-parallel kernel runs the tiled calls too, over every job's items,
 * and the group is counted slow. */
Test(gpu_resample, wide_windows_are_tiled_within_48k_and_fall_back_counted_without_it) {
  const rjob jobs[3] = {
      {IB_MODE_RGB, 1200, 100, 40, 25, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
      {IB_MODE_RGB, 4000, 40, 30, 10, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
      {IB_MODE_RGB, 60, 40, 50, 10, IB_RESAMPLE_BICUBIC, 0, {0}, 0},
  };
  for (int global = 0; global < 2; global++) {
    ib_cuda *c = backend();
    c->pass_global = global;
    ib_graph *gs[3];
    for (int i = 0; i < 3; i++) gs[i] = graph_of(&jobs[i], (uint64_t)i + 40);
    sub x;
    const unsigned pbytes = run(c, &x, gs, 3);
    const uint8_t *t;
    const ib_rsp_call k0 = params_of(&x, 0, &t, pbytes).call[0];
    const ib_rsp_call k1 = params_of(&x, 1, &t, pbytes).call[0];
    const ib_rsp_call k2 = params_of(&x, 2, &t, pbytes).call[0];
    cr_assert(k0.ksize_x == 181 && k1.ksize_x == 801, "ksize %d, %d", k0.ksize_x, k1.ksize_x);
    cr_assert(k0.tile_x == 8 && k0.tile_pitch == 396, "tile %d, pitch %d", k0.tile_x,
              k0.tile_pitch);
    cr_assert_eq(k0.tile_smem, 32 * (3 * 396 + 28));
    cr_assert_eq(k1.tile_x, 0, "801 taps: no tile fits 48 KiB");
    cr_assert_eq(k2.tile_x, 0, "60 -> 50: a narrow window");
    cr_assert(k0.rows == 100 && k1.rows == 40 && k2.rows == 40);
    /* 25, 25 and 17 taps down, read from the four-row words: one slice a
     * pixel (ib_resample_v_slices: a slice takes at least 8 quads; from
     * the source, 17 taps would take two), so the vertical launch is the
     * largest output's warps (40 x 25 pixels: 32 warps) */
    cr_assert(k0.ksize_y == 25 && k1.ksize_y == 25 && k2.ksize_y == 17, "ksize_y %d %d %d",
              k0.ksize_y, k1.ksize_y, k2.ksize_y);
    cr_assert_eq(ib_resample_v_slices(k2.ksize_y, false), 2);
    cr_assert_eq(ib_resample_v_slices(k0.ksize_y, true), 1);
    const uint64_t v0 = 32u * 32u;
    /* pixels x 32 lanes (181 and 801 taps) */
    const uint64_t px1 = 30u * 40u * 32u, px0 = 40u * 100u * 32u;
    if (!global) {
      cr_assert_eq(n_launch, 3);
      expect_launch(0, "ib_resample_h", 0, px1);
      expect_tiled(1, 0, 5 * 4, 32 * (3 * 396 + 28));
      expect_launch(2, "ib_resample_v", 0, v0);
      cr_assert_eq(atomic_load(&c->pass_slow), 0);
    } else {
      cr_assert_eq(n_launch, 2);
      const launch *l = &launches[0];
      cr_assert(!strcmp(l->name, "ib_resample_h") && l->take == 1 && l->smem == 0,
                "%s take %d smem %u", l->name, l->take, l->smem);
      cr_assert_eq(l->gx, (unsigned)((px0 + 255) / 256), "every job's items: grid %u", l->gx);
      expect_launch(1, "ib_resample_v", 0, v0);
      cr_assert_eq(atomic_load(&c->pass_slow), 1, "counted");
    }
    sub_free(c, &x);
    backend_free(c);
  }
}

/* The head compiles with NVRTC for every mode (bands 1 to 4, premultiplied
 * or not), and a pointwise step after it starts a stage of its own. */
Test(gpu_resample, every_mode_compiles_and_nothing_fuses_after_it) {
  ib_kcache *kc = ib_kcache_new(NULL, 256ull << 20, 0);
  cr_assert_not_null(kc);
  static const char *const opt[] = {"--fmad=false"};
  for (int m = 1; m <= 6; m++) {
    const rjob q = {(ib_mode)m, 37, 23, 11, 50, IB_RESAMPLE_HAMMING, 0, {0}, 0};
    jg_rng r = {0x33 + (uint64_t)m};
    jg_job j;
    jg_begin(&j, &arena, &r, q.mode, q.w, q.h, 40 + (uint64_t)m);
    int p = jg_op(&j, &r, JG_RESIZE, 0, q.mode, q.w, q.h, -1);
    Imgbatch__V1__ResizeOp *rz = j.nodes[p]->resize;
    rz->resample = (Imgbatch__V1__Resample)q.filter;
    rz->width = q.ow, rz->height = q.oh;
    rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT__NOT_SET;
    rz->box = NULL;
    jg_op(&j, &r, JG_POINT, p, q.mode, q.ow, q.oh, -1);
    ib_error err = {0};
    ib_graph *g = jg_finish(&j, &err);
    cr_assert_not_null(g, "%s", err.message);
    ib_gplan pl;
    cr_assert_eq(ib_gplan_build(g, &pl, &err), IB_OK, "%s", err.message);
    cr_assert_eq(pl.n_stages, 2, "mode %s: the point step is a stage of its own", ib_mode_name(m));
    const ib_gchain *ch = &pl.stages[0].chain;
    cr_assert_eq(ch->n_steps, 1, "mode %s: nothing fused after the head", ib_mode_name(m));
    cr_assert_eq(ch->steps[0].a, m == IB_MODE_LA || m == IB_MODE_RGBA);
    char *src = ib_gchain_source(ch);
    ib_sigkey sk;
    ib_cuda_sigkey(ch, &sk);
    void *img = NULL;
    size_t len = 0;
    char *log = NULL;
    cr_assert_eq(ib_kcache_get(kc, sk.sig, src, "sm_90", opt, 1, &img, &len, NULL, &log, &err),
                 IB_OK, "mode %s: %s\n%s", ib_mode_name(m), err.message, log ? log : "");
    cr_assert_gt(len, 0);
    free(img);
    free(log);
    free(src);
    ib_gplan_free(&pl);
    ib_graph_free(g);
  }
  ib_kcache_free(kc);
}

/* ------------------------------------------------------------ host replay */

/* One output pixel as resample.cuh's ib_resample_px computes it. */
static void replay_px(uint8_t *out, const uint8_t *in, int64_t step, const int32_t *k, int n,
                      int bands, bool pm, bool unpm) {
  int ss[4];
  for (int b = 0; b < bands; b++) ss[b] = 1 << (IB_RESAMPLE_PRECISION_BITS - 1);
  for (int j = 0; j < n; j++) {
    uint8_t v[4];
    memcpy(v, in + j * step, (size_t)bands);
    if (pm) ib_premultiply_px(v, bands);
    for (int b = 0; b < bands; b++) ss[b] += (int)v[b] * k[j];
  }
  for (int b = 0; b < bands; b++) out[b] = ib_resample_clip8(ss[b]);
  if (unpm) ib_unpremultiply_px(out, bands);
}

typedef struct replay_job {
  const ib_resample_params *q;
  const int32_t *tab;
  bool a;
  int bands;
  const uint8_t *src;
  uint32_t src_w;
  uint8_t *scratch, *out;
} replay_job;

static uint8_t *replay_img(const replay_job *r, int where, uint64_t off) {
  return where == IB_RSI_SRC ? (uint8_t *)r->src : where == IB_RSI_OUT ? r->out : r->scratch + off;
}

static int64_t replay_row(const replay_job *r, int where, int w) {
  return (int64_t)(where == IB_RSI_SRC ? (int)r->src_w : w) * r->bands;
}

/* ib_resample_ht's pass: each tile's rows staged (premultiplied when the
 * pass premultiplies) as band planes of IB_RESAMPLE_TILE_ROWS rows of the
 * call's pitch from the word holding the tile's first sample, zero past
 * its span and garbage past its words, and its outputs summed from there
 * over the quad table with the device's dp4a arithmetic (or tap by tap when
 * the table says so); every window must lie within the staged words, the
 * words within the pitch and the shared bytes within what every kernel may
 * take. */
static int tiled_calls; /* how many calls the replays ran tiled */
static int quad_calls;  /* passes summed by quads (tiled and four-row words) */
static int words_calls; /* vertical passes over four-row words */
static int tap_replays; /* jobs replayed again with their quad tables unusable */

/* A window's quads as the kernels sum them (ib_resample_quad_add): nq
 * words `stride` bytes apart from w against quads kq; the sum without its
 * rounding term. */
static unsigned replay_quads(const uint8_t *w, size_t stride, const uint32_t *kq, int nq) {
  unsigned s[3] = {0, 0, 0};
  for (int g = 0; g < nq; g++) {
    uint32_t d;
    memcpy(&d, w + (size_t)g * stride, 4);
    ib_resample_quad_add(s, d, kq[4 * g], kq[4 * g + 1], kq[4 * g + 2]);
  }
  return ib_resample_quad_sum(s);
}

/* Where an output of the horizontal pass goes: the image, or the
 * vertical pass's four-row words. */
static uint8_t *replay_h_at(uint8_t *dst, const ib_rsp_call *c, int B, bool rows4, int x, int y,
                            int b) {
  return rows4 ? dst + ib_resample_tmp_at(x, y, b, c->out_w, B)
               : dst + ((int64_t)y * c->out_w + x) * B + b;
}

static void replay_tiled_h(const replay_job *r, const ib_rsp_call *c, const uint8_t *src,
                           int64_t in_row, uint8_t *dst, bool pm, bool unpm, bool rows4) {
  tiled_calls++;
  const int B = r->bands, R = IB_RESAMPLE_TILE_ROWS, tx = c->tile_x, pitch = c->tile_pitch;
  cr_assert(pitch % 4 == 0 && (pitch / 4) % 2 == 1, "pitch %d: an odd count of words", pitch);
  cr_assert_eq(c->tile_smem, ib_resample_tile_bytes(pitch, tx, B));
  cr_assert_leq(c->tile_smem, IB_RESAMPLE_TILE_SMEM);
  cr_assert_eq(c->xq % 4, 0, "quads at word %d: 16-byte aligned", c->xq);
  uint8_t *planes = malloc((size_t)R * B * pitch);
  cr_assert_not_null(planes);
  const int32_t *tab = r->tab;
  const uint32_t *qt = (const uint32_t *)(tab + c->xq);
  const int qmax = ib_resample_quad_max(c->ksize_x);
  quad_calls += qt[0] != 0;
  for (int y0 = 0; y0 < c->rows; y0 += R)
    for (int x0 = 0; x0 < c->out_w; x0 += tx) {
      const int x1 = x0 + tx < c->out_w ? x0 + tx : c->out_w,
                nr = c->rows - y0 < R ? c->rows - y0 : R;
      const int p0 = tab[c->xb + 2 * x0] & ~3;
      const int end = tab[c->xb + 2 * (x1 - 1)] + tab[c->xb + 2 * (x1 - 1) + 1];
      const int words = (end - p0 + 3) / 4;
      cr_assert_leq(words * 4, pitch, "tile (%d, %d): span %d pixels", x0, y0, end - p0);
      memset(planes, 0xa5, (size_t)R * B * pitch);
      for (int y = 0; y < nr; y++)
        for (int p = p0; p < p0 + 4 * words; p++) {
          uint8_t v[4] = {0, 0, 0, 0};
          if (p < end) {
            memcpy(v, src + (y0 + y + c->first) * in_row + (int64_t)p * B, (size_t)B);
            if (pm) ib_premultiply_px(v, B);
          }
          for (int b = 0; b < B; b++) planes[(size_t)(b * R + y) * pitch + (p - p0)] = v[b];
        }
      for (int x = x0; x < x1; x++) {
        const int lo = tab[c->xb + 2 * x], n = tab[c->xb + 2 * x + 1];
        cr_assert(lo >= p0 && lo + n <= end, "output %d: window %d + %d of span %d..%d", x, lo, n,
                  p0, end);
        const int first = ((lo & ~3) - p0) / 4, nq = ib_resample_quads_of(lo, n);
        cr_assert_leq(nq, qmax, "output %d: %d quads", x, nq);
        const int32_t *k = tab + c->xk + (int64_t)x * c->ksize_x;
        for (int y = 0; y < nr; y++) {
          uint8_t o[4];
          for (int b = 0; b < B; b++) {
            const uint8_t *row = planes + (size_t)(b * R + y) * pitch;
            if (qt[0]) {
              o[b] = ib_resample_round(
                  replay_quads(row + 4 * first, 4, qt + 4 + (size_t)x * qmax * 4, nq));
            } else {
              o[b] = ib_resample_sample(row + (lo - p0), 1, k, n);
            }
          }
          if (unpm) ib_unpremultiply_px(o, B);
          for (int b = 0; b < B; b++) *replay_h_at(dst, c, B, rows4, x, y0 + y, b) = o[b];
        }
      }
    }
  free(planes);
}

static void replay_call(const replay_job *r, const ib_rsp_call *c) {
  const int B = r->bands;
  const uint8_t *src = replay_img(r, c->src, c->src_off);
  uint8_t *dst = replay_img(r, c->dst, c->dst_off), *tmp = r->scratch + c->tmp_off;
  const int64_t in_row = replay_row(r, c->src, c->in_w);
  const bool from_src = c->src == IB_RSI_SRC, to_out = c->dst == IB_RSI_OUT;
  if (c->passes & IB_RSP_CROP) {
    for (int y = 0; y < c->out_h; y++)
      for (int x = 0; x < c->out_w; x++) {
        uint8_t v[4];
        memcpy(v, src + (y + c->crop_y) * in_row + (int64_t)(x + c->crop_x) * B, (size_t)B);
        if (r->a && from_src) ib_premultiply_px(v, B);
        if (r->a && to_out) ib_unpremultiply_px(v, B);
        memcpy(dst + ((int64_t)y * c->out_w + x) * B, v, (size_t)B);
      }
    return;
  }
  const bool h = c->passes & IB_RSP_H, v = c->passes & IB_RSP_V;
  if (h && c->tile_x > 0)
    replay_tiled_h(r, c, src, in_row, v ? tmp : dst, r->a && from_src, r->a && !v && to_out, v);
  else if (h)
    for (int y = 0; y < c->rows; y++)
      for (int x = 0; x < c->out_w; x++) {
        const int lo = r->tab[c->xb + 2 * x], n = r->tab[c->xb + 2 * x + 1];
        uint8_t o[4];
        replay_px(o, src + (y + c->first) * in_row + (int64_t)lo * B, B,
                  r->tab + c->xk + (int64_t)x * c->ksize_x, n, B, r->a && from_src,
                  r->a && !v && to_out);
        for (int b = 0; b < B; b++) *replay_h_at(v ? tmp : dst, c, B, v, x, y, b) = o[b];
      }
  if (v && h) { /* the four-row words, by quads (or tap by tap: word 0) */
    cr_assert_eq(c->yq % 4, 0, "quads at word %d: 16-byte aligned", c->yq);
    cr_assert_eq(c->tmp_off % 16, 0, "four-row words at %llu", (unsigned long long)c->tmp_off);
    const uint32_t *qt = (const uint32_t *)(r->tab + c->yq);
    const int qmax = ib_resample_quad_max(c->ksize_y);
    quad_calls += qt[0] != 0;
    words_calls++;
    for (int y = 0; y < c->out_h; y++) {
      const int lo = r->tab[c->yb + 2 * y], n = r->tab[c->yb + 2 * y + 1];
      const int32_t *k = r->tab + c->yk + (int64_t)y * c->ksize_y;
      cr_assert(lo >= 0 && lo + n <= c->rows, "row %d: window %d + %d of %d rows", y, lo, n,
                c->rows);
      for (int x = 0; x < c->out_w; x++) {
        uint8_t o[4];
        for (int b = 0; b < B; b++) {
          unsigned ss = 0;
          if (qt[0]) { /* the kernel's walk: a row of words per quad */
            ss = replay_quads(tmp + ib_resample_tmp_at(x, lo & ~3, b, c->out_w, B),
                              4 * (size_t)c->out_w * B, qt + 4 + (size_t)y * qmax * 4,
                              ib_resample_quads_of(lo, n));
          } else {
            for (int j = 0; j < n; j++)
              ss += tmp[ib_resample_tmp_at(x, lo + j, b, c->out_w, B)] * (unsigned)k[j];
          }
          o[b] = ib_resample_round(ss);
        }
        if (r->a && to_out) ib_unpremultiply_px(o, B);
        memcpy(dst + ((int64_t)y * c->out_w + x) * B, o, (size_t)B);
      }
    }
  } else if (v) {
    for (int y = 0; y < c->out_h; y++)
      for (int x = 0; x < c->out_w; x++) {
        const int lo = r->tab[c->yb + 2 * y], n = r->tab[c->yb + 2 * y + 1];
        replay_px(dst + ((int64_t)y * c->out_w + x) * B, src + lo * in_row + (int64_t)x * B, in_row,
                  r->tab + c->yk + (int64_t)y * c->ksize_y, n, B, r->a && from_src, r->a && to_out);
      }
  }
}

/* What the head's kernels compute for a job, in launch order. */
static void replay(const replay_job *r) {
  const ib_resample_params *q = r->q;
  if (q->reduce)
    for (int y = 0; y < q->rh; y++)
      for (int x = 0; x < q->rw; x++)
        ib_reduce_pixel(r->scratch + ((int64_t)y * q->rw + x) * r->bands, r->src,
                        (int64_t)r->src_w * r->bands, r->bands, x, y, q->fx, q->fy, q->rbox);
  for (int i = 0; i < q->n_calls; i++) replay_call(r, &q->call[i]);
}

/* The staged parameters, tables and scratch, replayed on the host the way
 * the kernels read them, give the CPU backend's bytes for every kind of
 * sequence: reduce then tall, reduce then one call (with a float box),
 * tall with a box, tall whose second call is a crop, premultiplied modes
 * (the gap dropped), a crop box, the copy and plain up- and downscales. */
Test(gpu_resample, the_staged_sequence_replayed_on_the_host_is_the_cpu_result) {
  static const rjob jobs[][4] = {
      {{IB_MODE_RGB, 8, 4000, 1, 1000, IB_RESAMPLE_BILINEAR, 0, {0}, 2.0},
       {IB_MODE_RGB, 333, 101, 17, 9, IB_RESAMPLE_LANCZOS, 1, {10.25, 3.5, 320.75, 99}, 1.5},
       {IB_MODE_RGB, 3, 420, 5, 7, IB_RESAMPLE_HAMMING, 1, {0, 10.5, 3, 400}, 0},
       {IB_MODE_RGB, 333, 101, 40, 30, IB_RESAMPLE_BOX, 0, {0}, 3.0}},
      {{IB_MODE_RGBA, 2, 333, 2, 100, IB_RESAMPLE_BICUBIC, 0, {0}, 0},
       {IB_MODE_RGBA, 90, 90, 10, 10, IB_RESAMPLE_LANCZOS, 0, {0}, 2.0},
       {IB_MODE_RGBA, 40, 30, 20, 10, IB_RESAMPLE_BOX, 1, {5, 7, 25, 17}, 0},
       {IB_MODE_RGBA, 1, 101, 1, 50, IB_RESAMPLE_BILINEAR, 0, {0}, 0}},
      {{IB_MODE_L, 2, 301, 3, 2, IB_RESAMPLE_BICUBIC, 0, {0}, 0},
       {IB_MODE_L, 17, 13, 41, 5, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
       {IB_MODE_L, 64, 48, 64, 48, IB_RESAMPLE_HAMMING, 0, {0}, 2.0},
       {IB_MODE_L, 129, 31, 7, 3, IB_RESAMPLE_BICUBIC, 0, {0}, 2.5}},
      {{IB_MODE_RGB, 1200, 70, 40, 9, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
       {IB_MODE_RGB, 4000, 33, 30, 5, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
       {IB_MODE_RGB, 803, 45, 37, 45, IB_RESAMPLE_BICUBIC, 1, {3.5, 0, 790.25, 45}, 0},
       {IB_MODE_RGB, 997, 65, 61, 20, IB_RESAMPLE_HAMMING, 0, {0}, 0}},
      {{IB_MODE_RGBA, 803, 45, 37, 45, IB_RESAMPLE_BICUBIC, 1, {3.5, 0, 790.25, 45}, 0},
       {IB_MODE_RGBA, 500, 40, 20, 10, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
       {IB_MODE_RGBA, 300, 7, 9, 3, IB_RESAMPLE_BOX, 0, {0}, 0},
       {IB_MODE_RGBA, 64, 64, 16, 16, IB_RESAMPLE_BILINEAR, 0, {0}, 0}},
      {{IB_MODE_LA, 30, 3500, 4, 20, IB_RESAMPLE_BILINEAR, 0, {0}, 2.0},
       {IB_MODE_LA, 7, 9, 14, 27, IB_RESAMPLE_BOX, 0, {0}, 0},
       {IB_MODE_LA, 33, 20, 33, 7, IB_RESAMPLE_LANCZOS, 0, {0}, 0},
       {IB_MODE_LA, 20, 33, 7, 33, IB_RESAMPLE_HAMMING, 0, {0}, 0}},
  };
  for (size_t g = 0; g < sizeof jobs / sizeof jobs[0]; g++) {
    ib_cuda *c = backend();
    ib_graph *gs[4];
    ib_image ref[4];
    for (int i = 0; i < 4; i++) {
      gs[i] = graph_of(&jobs[g][i], 100 + 4 * g + (uint64_t)i);
      ib_error err = {0};
      cr_assert_eq(ib_cpu_execute(gs[i], &ref[i], &err), IB_OK, "%s", err.message);
    }
    sub x;
    const unsigned pbytes = run(c, &x, gs, 4);
    for (int i = 0; i < 4; i++) {
      const rjob *q = &jobs[g][i];
      const int B = (int)ib_mode_bands(q->mode);
      const ib_source *so = &gs[i]->sources[0];
      cr_assert_eq(so->len, (size_t)q->w * q->h * B, "a raw source");
      const uint8_t *t;
      const ib_resample_params p = params_of(&x, (size_t)i, &t, pbytes);
      const ib_gstage *st = &x.s.js[i].plan.stages[0];
      const size_t sb = st->scratch_buf >= 0 ? x.s.js[i].plan.bufs[st->scratch_buf].bytes : 0;
      uint8_t *scratch = calloc(sb + 1, 1), *out = calloc((size_t)q->ow * q->oh * B, 1);
      cr_assert(scratch && out);
      const replay_job r = {&p,
                            (const int32_t *)(const void *)t,
                            st->chain.steps[0].a == 1,
                            B,
                            so->bytes,
                            q->w,
                            scratch,
                            out};
      replay(&r);
      cr_assert(ref[i].width == q->ow && ref[i].height == q->oh);
      cr_assert(memcmp(out, ref[i].data, (size_t)q->ow * q->oh * B) == 0,
                "group %zu job %d (%ux%u -> %ux%u, gap %g): the replay differs from the CPU", g, i,
                q->w, q->h, q->ow, q->oh, q->gap);
      /* again with every quad table marked unusable (a weight past 24 bits):
       * the kernels' tap-by-tap sums give the same bytes */
      uint32_t *flag[4];
      int nf = 0;
      for (int k = 0; k < p.n_calls; k++) {
        const ib_rsp_call *ck = &p.call[k];
        if ((ck->passes & IB_RSP_H) && ck->tile_x > 0)
          flag[nf++] = (uint32_t *)(uintptr_t)(t + 4 * (size_t)ck->xq);
        if ((ck->passes & IB_RSP_H) && (ck->passes & IB_RSP_V))
          flag[nf++] = (uint32_t *)(uintptr_t)(t + 4 * (size_t)ck->yq);
      }
      if (nf) {
        for (int k = 0; k < nf; k++) *flag[k] = 0;
        memset(out, 0, (size_t)q->ow * q->oh * B);
        replay(&r);
        for (int k = 0; k < nf; k++) *flag[k] = 1;
        cr_assert(memcmp(out, ref[i].data, (size_t)q->ow * q->oh * B) == 0,
                  "group %zu job %d: tap by tap, the replay differs from the CPU", g, i);
        tap_replays++;
      }
      free(scratch);
      free(out);
      ib_image_release(&ref[i]);
    }
    sub_free(c, &x);
    backend_free(c);
  }
  cr_assert_geq(tiled_calls, 7, "wide windows ran tiled %d times", tiled_calls);
  cr_assert_eq(quad_calls, (tiled_calls + words_calls) / 2, "every quad table's weights fit");
  cr_assert_geq(tap_replays, 7, "replays tap by tap: %d", tap_replays);
  cr_assert_geq(words_calls, 7, "vertical passes over four-row words: %d", words_calls);
}

/* The quads' arithmetic on its own, against the tap-by-tap sum: weights
 * anywhere in the range three byte planes hold (negative ones, and the
 * extremes), windows at every alignment, sums that wrap in a plane but not
 * in total; a weight out of that range leaves the table unusable. */
Test(gpu_resample, quads_sum_as_the_taps_do_and_refuse_weights_past_24_bits) {
  enum { N = 7, K = 41 };
  int32_t bounds[2 * N], coeffs[N * K];
  uint32_t *q = malloc(ib_resample_quad_words(N, K) * sizeof *q);
  cr_assert_not_null(q);
  uint8_t in[64];
  srand(11);
  for (int round = 0; round < 400; round++) {
    for (int i = 0; i < 64; i++) in[i] = (uint8_t)(round % 5 == 0 ? 255 : rand() % 256);
    for (int i = 0; i < N; i++) {
      bounds[2 * i] = i + rand() % 4;
      bounds[2 * i + 1] = 1 + rand() % K;
      for (int j = 0; j < K; j++) {
        const int e = rand() % 4;
        coeffs[i * K + j] = e == 0   ? -(1 << 23)
                            : e == 1 ? (1 << 23) - 1 - rand() % 5
                                     : rand() % (1 << 24) - (1 << 23);
      }
    }
    cr_assert(ib_resample_quads(bounds, coeffs, N, K, q));
    cr_assert_eq(q[0], 1u);
    for (int i = 0; i < N; i++) {
      const int lo = bounds[2 * i], n = bounds[2 * i + 1];
      unsigned want = 0;
      for (int j = 0; j < n; j++) want += in[lo + j] * (unsigned)coeffs[i * K + j];
      const unsigned got =
          replay_quads(in + (lo & ~3), 4, q + 4 + (size_t)i * ib_resample_quad_max(K) * 4,
                       ib_resample_quads_of(lo, n));
      cr_assert_eq(got, want, "round %d output %d (lo %d, %d taps)", round, i, lo, n);
    }
  }
  coeffs[3 * K + 2] = 1 << 23;
  bounds[7] = 5;
  cr_assert_not(ib_resample_quads(bounds, coeffs, N, K, q));
  cr_assert_eq(q[0], 0u);
  free(q);
}
