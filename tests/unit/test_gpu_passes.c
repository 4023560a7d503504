/*
 * Multi-pass heads (ops/op_dev.h IB_DEV_PASSES) through the CUDA backend's
 * launcher without a GPU: submissions planned, staged and grouped as
 * ib_cuda_submit does, their kernels compiled by NVRTC and "loaded" by a
 * stand-in driver table that records every launch. Pins what the blur's
 * launch recipe promises (docs/device-steps.md): rows in shared memory while
 * two rows fit, the column passes in tiles while a tile fits, else one
 * global-memory launch per pass (counted); and that a head the backend has
 * never seen - two passes, its own kernels, a scratch of its own size - runs
 * from its op row alone.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "tools/jobgen.h"
#include "cuda_host.h"

/* ------------------------------------------------------------ stand-in driver */

#define MAX_FN 64
#define MAX_LAUNCH 256
static char fn_names[MAX_FN][64];
static int n_fn;

typedef struct launch {
  char name[64];
  unsigned gx, gy, bx, smem;
  int nargs;
  int32_t args[4];
  uint64_t table;
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
/* Int arguments after the descriptor table, by kernel name. */
static int arity(const char *name) {
  static const struct {
    const char *name;
    int n;
  } known[] = {
      {"ib_blur_pass", 2}, {"ib_blur_cols", 2}, {"ib_test_hpass", 1}, {"ib_test_vpass", 2}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(known[i].name, name)) return known[i].n;
  return 0;
}
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned smem, CUstream st, void **args,
                         void **extra) {
  (void)gz, (void)by, (void)bz, (void)st, (void)extra;
  cr_assert_lt(n_launch, MAX_LAUNCH);
  launch *l = &launches[n_launch++];
  const int k = (int)(uintptr_t)f - 1;
  cr_assert(k >= 0 && k < n_fn, "a function the module gave");
  *l = (launch){.gx = gx, .gy = gy, .bx = bx, .smem = smem, .nargs = arity(fn_names[k])};
  snprintf(l->name, sizeof l->name, "%s", fn_names[k]);
  memcpy(&l->table, args[0], sizeof l->table);
  for (int i = 0; i < l->nargs; i++) memcpy(&l->args[i], args[1 + i], sizeof l->args[i]);
  return CUDA_SUCCESS;
}

static ib_cu cu;
static jg_arena arena;

static void setup(void) {
  arena = (jg_arena){malloc(1u << 24), 0, 1u << 24};
  cu = (ib_cu){.cuCtxSetCurrent = standin_ctx,
               .cuModuleLoadData = standin_load,
               .cuModuleGetFunction = f_getfn,
               .cuModuleUnload = standin_unload,
               .cuFuncSetAttribute = standin_setattr,
               .cuLaunchKernel = f_launch};
  n_fn = n_launch = 0;
}
static void teardown(void) { free(arena.p); }

TestSuite(gpu_passes, .init = setup, .fini = teardown, .timeout = 600);

/* An H100's numbers (cuda_host.h). */
static ib_cuda *backend(bool global_only) {
  ib_cuda *c = cuda_new_launching(&cu);
  c->pass_global = global_only;
  return c;
}

static void backend_free(ib_cuda *c) { cuda_free_launching(c); }

/* ------------------------------------------------------------ submissions */

typedef struct blur_job {
  int op; /* JG_BOXBLUR, JG_GAUSS */
  ib_mode mode;
  uint32_t w, h;
  double rx, ry;
} blur_job;

static ib_graph *blur_graph(const blur_job *b, uint64_t k) {
  jg_rng r = {0x77 + k};
  jg_job j;
  arena.used = 0;
  jg_begin(&j, &arena, &r, b->mode, b->w, b->h, k);
  Imgbatch__V1__Node *n;
  if (b->op == JG_BOXBLUR) {
    n = jg_node(&j, IMGBATCH__V1__NODE__OP_BOX_BLUR, 0, -1);
    n->box_blur = jg_alloc(j.a, sizeof *n->box_blur);
    imgbatch__v1__box_blur_op__init(n->box_blur);
    n->box_blur->radius_x = b->rx;
    n->box_blur->radius_y = b->ry;
  } else {
    n = jg_node(&j, IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR, 0, -1);
    n->gaussian_blur = jg_alloc(j.a, sizeof *n->gaussian_blur);
    imgbatch__v1__gaussian_blur_op__init(n->gaussian_blur);
    n->gaussian_blur->radius_x = b->rx;
    n->gaussian_blur->radius_y = b->ry;
  }
  ib_error err = {0};
  ib_graph *g = jg_finish(&j, &err);
  cr_assert_not_null(g, "%s", err.message);
  return g;
}

typedef struct sub {
  ib_backend_submission s;
  ib_backend_job jobs[16];
  ib_graph *gs[16];
  uint8_t *host;
} sub;

/* Plans, lays out, stages and groups the jobs as ib_cuda_submit does (the
 * device block a fake address: only descriptors hold it). */
static void prepare(ib_cuda *c, sub *x, ib_graph *const *gs, size_t n) {
  memset(x, 0, sizeof *x);
  cr_assert_leq(n, 16);
  for (size_t i = 0; i < n; i++) {
    x->gs[i] = gs[i];
    x->jobs[i] = (ib_backend_job){.graph = gs[i], .job_id = i + 1};
  }
  ib_backend_submission *s = &x->s;
  x->host = sub_on_heap(c, s, x->jobs, n);
  s->dblk.addr = 0x7f0000000000ull;
  ib_error err = {0};
  cr_assert_eq(ib_cuda_sub_stage(s, &err), IB_OK, "%s", err.message);
  cr_assert_eq(ib_cuda_sub_groups(s, &err), IB_OK, "%s", err.message);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(x->jobs[i].status, IB_OK, "%s", x->jobs[i].err.message);
  n_launch = 0;
}

/* ... then records the launches of every job. */
static void run(ib_cuda *c, sub *x, ib_graph *const *gs, size_t n) {
  prepare(c, x, gs, n);
  ib_error err = {0};
  cr_assert_eq(ib_cuda_sub_launch(&x->s, 0, n, &err), IB_OK, "%s", err.message);
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

static const launch *at(int i) {
  cr_assert_lt(i, n_launch, "launch %d of %d", i, n_launch);
  return &launches[i];
}

/* Launch i is `name` over (gx, gy) blocks of 256 threads with `smem`
 * dynamic shared bytes and int arguments a0, a1 (when it takes them). */
static void expect(int i, const char *name, unsigned gx, unsigned gy, unsigned smem, int a0,
                   int a1) {
  const launch *l = at(i);
  cr_assert_str_eq(l->name, name, "launch %d", i);
  cr_assert_eq(l->gx, gx, "launch %d (%s): grid x %u, want %u", i, name, l->gx, gx);
  cr_assert_eq(l->gy, gy, "launch %d (%s): one job a blockIdx.y", i, name);
  cr_assert_eq(l->bx, 256);
  cr_assert_eq(l->smem, smem, "launch %d (%s): shared %u, want %u", i, name, l->smem, smem);
  if (l->nargs > 0) cr_assert_eq(l->args[0], a0, "launch %d (%s) arg 0", i, name);
  if (l->nargs > 1) cr_assert_eq(l->args[1], a1, "launch %d (%s) arg 1", i, name);
}

/* One blur job alone: its launches, and how many groups were slow. */
static uint64_t blur_alone(ib_cuda *c, const blur_job *b) {
  const uint64_t slow0 = c->pass_slow;
  sub x;
  ib_graph *g = blur_graph(b, 1);
  run(c, &x, &g, 1);
  sub_free(c, &x);
  return c->pass_slow - slow0;
}

/* Rows: 2 buffers of the row rounded up to 16 bytes, one block a row.
 * Columns: tiles of 128 bytes x 128 rows; the buffer holds the tile's rows
 * and 2 * passes * (radius + 1) more, clamped to the image. */
Test(gpu_passes, blur_rows_and_column_tiles_in_shared_memory) {
  ib_cuda *c = backend(false);
  /* L 37 x 29, box radii 2.5, 1: row 37 -> 48 bytes; 29 rows (clamped) */
  cr_assert_eq(blur_alone(c, &(blur_job){JG_BOXBLUR, IB_MODE_L, 37, 29, 2.5, 1.0}), 0);
  cr_assert_eq(n_launch, 2);
  expect(0, "ib_blur_rows", 29, 1, 96, 0, 0);
  expect(1, "ib_blur_cols", 1, 1, 2 * 29 * 128, 128, 29);
  /* RGB 301 x 203, gaussian 4: 903 -> 912 bytes; 128 + 2*3*(3+1) = 152
   * rows; 8 strips x 2 tiles */
  cr_assert_eq(blur_alone(c, &(blur_job){JG_GAUSS, IB_MODE_RGB, 301, 203, 4.0, 4.0}), 0);
  cr_assert_eq(n_launch, 2);
  expect(0, "ib_blur_rows", 203, 1, 2 * 912, 0, 0);
  expect(1, "ib_blur_cols", 16, 1, 2 * 152 * 128, 128, 152);
  /* 3000^2 L, gaussian 100: box passes of radius 99.x, 128 + 2*3*100 = 728
   * rows; 24 strips x 24 tiles; 3000 rows under the cap of 32 a SM */
  cr_assert_eq(blur_alone(c, &(blur_job){JG_GAUSS, IB_MODE_L, 3000, 3000, 100.0, 100.0}), 0);
  cr_assert_eq(n_launch, 2);
  expect(0, "ib_blur_rows", 3000, 1, 2 * 3008, 0, 0);
  expect(1, "ib_blur_cols", 24 * 24, 1, 2 * 728 * 128, 128, 728);
  backend_free(c);
}

Test(gpu_passes, blur_columns_fall_back_to_global_passes_and_are_counted) {
  ib_cuda *c = backend(false);
  /* L 5 x 2000, box radius 500 down: 2 x (128 + 2*501) rows x 128 bytes =
   * 283 KiB, over the 227 */
  cr_assert_eq(blur_alone(c, &(blur_job){JG_BOXBLUR, IB_MODE_L, 5, 2000, 1.0, 500.0}), 1);
  cr_assert_eq(n_launch, 2);
  expect(0, "ib_blur_rows", 2000, 1, 32, 0, 0);
  /* 5 columns x 63 spans of 32 rows = 315 items: 2 blocks */
  expect(1, "ib_blur_pass", 2, 1, 0, 1, 0);
  /* gaussian 200 down a 17 x 4096 L: 3 global column passes */
  cr_assert_eq(blur_alone(c, &(blur_job){JG_GAUSS, IB_MODE_L, 17, 4096, 0.5, 200.0}), 1);
  cr_assert_eq(n_launch, 4);
  expect(0, "ib_blur_rows", 4096, 1, 64, 0, 0);
  for (int k = 0; k < 3; k++) expect(1 + k, "ib_blur_pass", 9, 1, 0, 1, k);
  backend_free(c);
}

Test(gpu_passes, blur_forced_global_runs_every_pass_in_global_memory_once_counted) {
  ib_cuda *c = backend(true);
  /* RGB 301 x 203, 3 passes a direction: rows 203*3 lines x 10 spans =
   * 6090 items (24 blocks), columns 903 x 7 = 6321 (25 blocks) */
  cr_assert_eq(blur_alone(c, &(blur_job){JG_GAUSS, IB_MODE_RGB, 301, 203, 4.0, 4.0}), 1);
  cr_assert_eq(n_launch, 6);
  for (int k = 0; k < 3; k++) expect(k, "ib_blur_pass", 24, 1, 0, 0, k);
  for (int k = 0; k < 3; k++) expect(3 + k, "ib_blur_pass", 25, 1, 0, 1, k);
  backend_free(c);
}

/* A group sizes its launches for its largest job; one blockIdx.y a job. */
Test(gpu_passes, blur_group_takes_the_most_of_its_jobs) {
  ib_cuda *c = backend(false);
  const blur_job small = {JG_GAUSS, IB_MODE_RGB, 301, 203, 4.0, 4.0},
                 tall = {JG_GAUSS, IB_MODE_RGB, 90, 4000, 1, 40};
  ib_graph *gs[3] = {blur_graph(&small, 1), blur_graph(&small, 2), blur_graph(&tall, 3)};
  sub x;
  run(c, &x, gs, 3);
  cr_assert_eq(n_launch, 2);
  /* rows: the widest (903 -> 912 bytes), the most rows (4000, capped);
   * columns: the tall job's 128 + 2*3*(39+1) = 368 rows, small's 16 tiles
   * against tall's 3 x 32 = 96 */
  expect(0, "ib_blur_rows", 4000, 3, 2 * 912, 0, 0);
  expect(1, "ib_blur_cols", 96, 3, 2 * 368 * 128, 128, 368);
  sub_free(c, &x);
  backend_free(c);
}

/* ------------------------------------------------------------ a head the backend never saw
 *
 * A separable resample's shape: a horizontal pass from the source into an
 * intermediate image of out_w x in_h (the scratch), then a vertical pass
 * into the output, over tables the host builds (extra bytes). Declared here,
 * in the test, only through ops/op_dev.h: nothing in worker/gpu knows it. */

typedef struct two_params {
  int32_t out_w, out_h, in_h, magic;
} two_params;

static void two_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  const two_params q = {(int32_t)node->shape.width, (int32_t)node->shape.height, 0, 0x7e57};
  memcpy(p, &q, sizeof q);
}
static size_t two_extra_bytes(const ib_node *node) {
  return ((size_t)node->shape.width + node->shape.height) * sizeof(int32_t);
}
static void two_fill_extra(const ib_node *node, const ib_shape *in, uint8_t *extra) {
  const size_t n = (size_t)node->shape.width + node->shape.height;
  for (size_t i = 0; i < n; i++) {
    const int32_t v = (int32_t)(i * 3 + in->height);
    memcpy(extra + i * sizeof v, &v, sizeof v);
  }
}
static size_t two_scratch(const ib_node *node, const ib_shape *in) {
  return (size_t)node->shape.width * in->height * ib_mode_bands(in->mode);
}

/* Horizontal: one thread an intermediate pixel; vertical: one an output
 * pixel, with 64 KiB of shared memory when allowed (else slow). */
static int two_plan(const ib_dev_group *g, ib_dev_launch *out) {
  uint64_t h_items = 0, v_items = 0;
  for (size_t i = 0; i < g->n_jobs; i++) {
    ib_dev_job j;
    g->job(g, i, &j);
    two_params q;
    memcpy(&q, j.params, sizeof q);
    cr_assert_eq(q.magic, 0x7e57, "the staged parameter block");
    cr_assert_eq((uint32_t)q.out_w, j.width);
    const uint64_t h = (uint64_t)j.width * j.in_height, v = (uint64_t)j.width * j.height;
    if (h > h_items) h_items = h;
    if (v > v_items) v_items = v;
  }
  const bool shared = g->smem_max >= 65536;
  out[0] = (ib_dev_launch){
      .kernel = 0, .blocks = (h_items + g->threads - 1) / g->threads, .n_args = 1, .args = {7}};
  out[1] = (ib_dev_launch){.kernel = 1,
                           .blocks = (v_items + g->threads - 1) / g->threads,
                           .smem = shared ? 65536 : 0,
                           .n_args = 2,
                           .args = {8, 9},
                           .slow = !shared};
  return 2;
}

static const ib_dev_passes two_passes = {
    .kernels = {{"ib_test_hpass", 0}, {"ib_test_vpass", 1}},
    .n_kernels = 2,
    .plan = two_plan,
    .scratch_bytes = two_scratch,
};
static const ib_dev_op two_dev_op = {.tag = '~',
                                     .role = IB_DEV_PASSES,
                                     .header = "test_two_pass.cuh",
                                     .fill = two_fill,
                                     .extra_bytes = two_extra_bytes,
                                     .fill_extra = two_fill_extra,
                                     .passes = &two_passes};
static ib_status two_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &two_dev_op;
  s->a = 7;
  s->param_len = sizeof(two_params);
  return IB_OK;
}

/* source (in_w x in_h RGB) -> resize to out_w x out_h, its row replaced by
 * the two-pass op's (the resize row's checks and shapes, another device
 * step). */
static ib_op_desc two_op;
static ib_graph *two_graph_of(uint32_t in_w, uint32_t in_h, uint32_t out_w, uint32_t out_h,
                              uint64_t k,
                              ib_status (*dev)(const ib_node *, const int *, ib_gstep *,
                                               ib_error *)) {
  jg_rng r = {0x99 + k};
  jg_job j;
  arena.used = 0;
  jg_begin(&j, &arena, &r, IB_MODE_RGB, in_w, in_h, k);
  Imgbatch__V1__Node *n = jg_node(&j, IMGBATCH__V1__NODE__OP_RESIZE, 0, -1);
  n->resize = jg_alloc(j.a, sizeof *n->resize);
  imgbatch__v1__resize_op__init(n->resize);
  n->resize->width = out_w;
  n->resize->height = out_h;
  ib_error err = {0};
  ib_graph *g = jg_finish(&j, &err);
  cr_assert_not_null(g, "%s", err.message);
  two_op = *ib_op_for_case(IMGBATCH__V1__NODE__OP_RESIZE);
  two_op.dev = dev;
  two_op.dev_ops = NULL;
  g->nodes[1].op = &two_op;
  return g;
}

static ib_graph *two_graph(uint32_t in_w, uint32_t in_h, uint32_t out_w, uint32_t out_h,
                           uint64_t k) {
  return two_graph_of(in_w, in_h, out_w, out_h, k, two_dev);
}

/* Its module, as if compiled from the header it names: the backend loads
 * it (stand-in driver) and looks up the kernels the row lists. */
static void two_module(ib_cuda *c, const ib_graph *g) {
  ib_gplan pl;
  ib_error err = {0};
  cr_assert_eq(ib_gplan_build(g, &pl, &err), IB_OK, "%s", err.message);
  ib_sigkey sk;
  ib_cuda_sigkey(&pl.stages[0].chain, &sk);
  cr_assert_eq(ib_cuda_module_add(c, &pl.stages[0].chain, sk.sig, "img", 4, NULL, NULL, &err),
               IB_OK, "%s", err.message);
  ib_gplan_free(&pl);
}

Test(gpu_passes, a_new_two_pass_head_runs_from_its_row_alone) {
  ib_cuda *c = backend(false);
  ib_graph *g = two_graph(300, 200, 120, 50, 1);
  two_module(c, g);
  cr_assert_eq(n_fn, 2, "the module's kernels are the row's");
  cr_assert_str_eq(fn_names[0], "ib_test_hpass");
  cr_assert_str_eq(fn_names[1], "ib_test_vpass");
  sub x;
  run(c, &x, &g, 1);
  const ib_jstate *js = &x.s.js[0];
  cr_assert_eq(js->plan.n_stages, 1);
  const ib_gstage *st = &js->plan.stages[0];
  /* the scratch is the row's size (120 x 200 RGB), not the output's */
  cr_assert_geq(st->scratch_buf, 0);
  cr_assert_eq(js->plan.bufs[st->scratch_buf].bytes, 120u * 200u * 3u);
  /* its source: the header it names, after the promised defines */
  char *src = ib_gchain_source(&st->chain);
  cr_assert_not_null(src);
  cr_assert_not_null(strstr(src,
                            "#define IB_B0 3\n#define IB_A 7\n#define IB_PBYTES 16\n"
                            "#include \"test_two_pass.cuh\"\n"),
                     "%s", src);
  free(src);
  /* the staged block: fill's bytes, then the tables at IB_PBYTES */
  const uint8_t *par = x.host + js->par_off[0];
  two_params q;
  memcpy(&q, par, sizeof q);
  cr_assert(q.out_w == 120 && q.out_h == 50 && q.magic == 0x7e57);
  int32_t t5;
  memcpy(&t5, par + 16 + 5 * 4, 4);
  cr_assert_eq(t5, 5 * 3 + 200);
  /* its launches: 120*200 = 24000 pixels (94 blocks), then 6000 (24) */
  cr_assert_eq(n_launch, 2);
  expect(0, "ib_test_hpass", 94, 1, 0, 7, 0);
  cr_assert_eq(at(0)->nargs, 1);
  expect(1, "ib_test_vpass", 24, 1, 65536, 8, 9);
  cr_assert_eq(c->pass_slow, 0);
  /* the descriptor the kernels get: the scratch as in1, both shapes */
  const ib_gdesc *d = &x.s.lp.descs[0];
  cr_assert_eq(at(0)->table, ib_sub_dev(&x.s) + x.s.lay.desc_off);
  cr_assert_eq(d->in1, ib_sub_dev(&x.s) + js->buf_off[st->scratch_buf]);
  cr_assert(d->width == 120 && d->height == 50 && d->stride0 == 300 && d->height0 == 200);
  sub_free(c, &x);
  backend_free(c);
}

Test(gpu_passes, a_new_head_without_shared_memory_plans_its_fallback) {
  ib_cuda *c = backend(true);
  ib_graph *g = two_graph(64, 64, 32, 128, 2);
  two_module(c, g);
  sub x;
  run(c, &x, &g, 1);
  cr_assert_eq(n_launch, 2);
  expect(0, "ib_test_hpass", 8, 1, 0, 7, 0);
  expect(1, "ib_test_vpass", 16, 1, 0, 8, 9);
  cr_assert_eq(c->pass_slow, 1, "the slow launch counted");
  sub_free(c, &x);
  backend_free(c);
}

/* A plan naming a kernel its row does not list is the row's bug: the
 * submission fails (Internal) naming the head, and nothing is launched. */
static int stray_plan(const ib_dev_group *g, ib_dev_launch *out) {
  (void)g;
  out[0] = (ib_dev_launch){.kernel = 2, .blocks = 1};
  return 1;
}
static const ib_dev_passes stray_passes = {
    .kernels = {{"ib_test_hpass", 0}, {"ib_test_vpass", 0}}, .n_kernels = 2, .plan = stray_plan};
static const ib_dev_op stray_dev_op = {
    .tag = '^', .role = IB_DEV_PASSES, .header = "test_stray.cuh", .passes = &stray_passes};
static ib_status stray_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  (void)node, (void)in_modes, (void)err;
  s->dev = &stray_dev_op;
  return IB_OK;
}

Test(gpu_passes, a_plan_outside_its_kernels_fails_naming_the_head) {
  ib_cuda *c = backend(false);
  ib_graph *g = two_graph_of(16, 16, 8, 8, 3, stray_dev);
  two_module(c, g);
  sub x;
  prepare(c, &x, &g, 1);
  ib_error err = {0};
  cr_assert_eq(ib_cuda_sub_launch(&x.s, 0, 1, &err), IB_INTERNAL);
  cr_assert_not_null(strstr(err.message, "head ^ (test_stray.cuh)"), "%s", err.message);
  cr_assert_eq(n_launch, 0);
  sub_free(c, &x);
  backend_free(c);
}
