/*
 * The CUDA backend's staging of encoded sources, without a GPU: a
 * submission that decodes is posted to the host pool
 * (ib_cuda_sub_stage_begin) and ended later (ib_cuda_sub_stage_end), as
 * ib_cuda_submit does while the driving thread plans the next one. Pins:
 * every job's decoded pixels land in its own staging range, byte-equal to
 * what was encoded, whether posted or run on the caller; a job whose source
 * does not decode fails alone, at stage decode; submissions posted one
 * after another end in any order. Then ib_cuda_submit / ready / wait over a
 * stand-in driver (kernels compiled by NVRTC, "loaded", launches and copies
 * recorded): a submission behind one still decoding is held back and
 * enqueued after it, in submission order, whichever is waited for first;
 * an enqueue that fails after submit returned is answered by that
 * submission's wait alone.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "codec/png_encode.h"
#include "core/hostpar.h"
#include "gpu/cuda_internal.h"
#include "tools/jobgen.h"
#include "tools/page_heap.h"
#include "cuda_host.h"

enum { JOBS = 12 };

typedef struct encoded_job {
  ib_graph *g;
  uint8_t *pixels; /* what the PNG holds */
  size_t bytes;
} encoded_job;

/* An invert Job on a w x h RGB PNG of random pixels (cut short: a PNG
 * whose header parses and whose pixels do not decode). */
static encoded_job encoded(uint32_t w, uint32_t h, uint64_t k, bool cut) {
  size_t cap = (size_t)w * h * 3 + (1u << 16);
  jg_arena a = {malloc(cap), 0, cap};
  jg_rng r = {0x5eed + k};
  jg_job j;
  jg_begin(&j, &a, &r, IB_MODE_RGB, w, h, k);
  jg_op(&j, &r, JG_INVERT, 0, IB_MODE_RGB, w, h, -1);
  encoded_job e = {.bytes = (size_t)w * h * 3};
  e.pixels = malloc(e.bytes);
  memcpy(e.pixels, j.job.source->raw->data.data, e.bytes);
  uint8_t *png = NULL;
  size_t len = 0;
  ib_error err = {0};
  cr_assert_eq(ib_png_encode(e.pixels, w, h, 3, (size_t)w * 3, 1, NULL, &png, &len, &err), IB_OK,
               "%s", err.message);
  Imgbatch__V1__Source *src = j.job.source;
  imgbatch__v1__source__init(src);
  src->kind_case = IMGBATCH__V1__SOURCE__KIND_ENCODED;
  src->encoded.data = png;
  src->encoded.len = cut ? len / 2 : len;
  e.g = jg_finish(&j, &err);
  cr_assert_not_null(e.g, "%s", err.message);
  ib_codec_free(png);
  free(a.p);
  return e;
}

typedef struct sub {
  ib_backend_submission s;
  ib_backend_job jobs[JOBS];
  encoded_job e[JOBS];
  uint8_t *host;
} sub;

/* Plans and lays out JOBS jobs (job `cut` cut short) and begins their
 * staging into a heap block. */
static void begin(ib_cuda *c, sub *x, uint64_t seed, size_t cut) {
  memset(x, 0, sizeof *x);
  for (size_t i = 0; i < JOBS; i++) {
    x->e[i] = encoded(17 + 13 * (uint32_t)((seed + i) % 7), 5 + 11 * (uint32_t)(i % 5),
                      seed * 100 + i, i == cut);
    x->jobs[i] = (ib_backend_job){.graph = x->e[i].g, .job_id = i + 1};
  }
  ib_backend_submission *s = &x->s;
  x->host = sub_on_heap(c, s, x->jobs, JOBS);
  ib_error err = {0};
  cr_assert_eq(ib_cuda_sub_stage_begin(s, &err), IB_OK, "%s", err.message);
}

/* Ends the staging and checks every job's staged source. */
static void end_and_check(sub *x, size_t cut) {
  ib_backend_submission *s = &x->s;
  ib_cuda_sub_stage_end(s);
  cr_assert_null(s->staging);
  for (size_t i = 0; i < JOBS; i++) {
    const ib_jstate *js = &s->js[i];
    if (i == cut) {
      cr_assert_neq(x->jobs[i].status, IB_OK, "job %zu's cut PNG decoded", i);
      cr_assert_eq(x->jobs[i].err.stage, IB_STAGE_DECODE, "job %zu: %s", i, x->jobs[i].err.message);
      continue;
    }
    cr_assert_eq(x->jobs[i].status, IB_OK, "job %zu: %s", i, x->jobs[i].err.message);
    int staged = 0;
    for (int b = 0; b < js->plan.n_bufs; b++) {
      if (js->plan.bufs[b].source_node < 0 || js->direct[b]) continue;
      cr_assert_eq(js->plan.bufs[b].bytes, x->e[i].bytes);
      cr_assert(memcmp(x->host + js->buf_off[b], x->e[i].pixels, x->e[i].bytes) == 0,
                "job %zu: staged pixels differ from the encoded ones", i);
      staged++;
    }
    cr_assert_eq(staged, 1, "job %zu", i);
  }
}

static void sub_free(sub *x) {
  ib_backend_submission *s = &x->s;
  for (size_t i = 0; i < s->n; i++) {
    ib_gplan_free(&s->js[i].plan);
    free(s->js[i].buf_off);
    ib_graph_free(x->e[i].g);
    free(x->e[i].pixels);
  }
  free(s->dsrc);
  free(s->js);
  free(x->host);
}

Test(gpu_stage, posted_decodes_land_in_their_own_ranges) {
  const int threads[] = {0, 1, 3};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    ib_cuda *c = cuda_new();
    c->hp = ib_hostpar_new(threads[t]);
    sub *x = calloc(1, sizeof *x);
    begin(c, x, t, 4);
    /* Without workers the caller decoded it all already. */
    if (threads[t] == 0) cr_assert(ib_cuda_sub_staged(&x->s));
    end_and_check(x, 4);
    sub_free(x);
    free(x);
    ib_hostpar_free(c->hp);
    cuda_free(c);
  }
}

Test(gpu_stage, submissions_posted_together_end_in_any_order) {
  ib_cuda *c = cuda_new();
  c->hp = ib_hostpar_new(3);
  enum { SUBS = 4 };
  sub *x = calloc(SUBS, sizeof *x);
  for (size_t k = 0; k < SUBS; k++) begin(c, &x[k], 10 + k, k == 2 ? 7 : SIZE_MAX);
  for (size_t k = SUBS; k-- > 0;) {
    end_and_check(&x[k], k == 2 ? 7 : SIZE_MAX);
    cr_assert(ib_cuda_sub_staged(&x[k].s));
  }
  for (size_t k = 0; k < SUBS; k++) sub_free(&x[k]);
  free(x);
  ib_hostpar_free(c->hp);
  cuda_free(c);
}

/* ------------------------------------------------------------ submit, ready, wait */

/* The stand-in driver: every call succeeds but a launch whose descriptor
 * table lies in [fail_lo, fail_hi); copies to the host are recorded in
 * order (their destinations say which submission enqueued them). */
static uint64_t fail_lo, fail_hi;
static uint64_t dtoh[256];
static int n_dtoh, n_events;

static CUresult d_getfn(CUfunction *f, CUmodule m, const char *name) {
  (void)m, (void)name;
  *f = (CUfunction)(uintptr_t)1;
  return CUDA_SUCCESS;
}
static CUresult d_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned smem, CUstream st, void **args,
                         void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)st;
  (void)extra;
  uint64_t table;
  memcpy(&table, args[0], sizeof table);
  return table >= fail_lo && table < fail_hi ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}
static CUresult d_htod(CUdeviceptr dst, const void *src, size_t n, CUstream st) {
  (void)st;
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
static CUresult d_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream st) {
  (void)src, (void)n, (void)st;
  cr_assert_lt(n_dtoh, 256);
  dtoh[n_dtoh++] = (uint64_t)(uintptr_t)dst;
  return CUDA_SUCCESS;
}
static CUresult d_ev_create(CUevent *e, unsigned flags) {
  (void)flags;
  *e = (CUevent)(uintptr_t)++n_events;
  return CUDA_SUCCESS;
}
static CUresult d_ev(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
static CUresult d_ev_record(CUevent e, CUstream st) {
  (void)e, (void)st;
  return CUDA_SUCCESS;
}
static CUresult d_stream(CUstream st) {
  (void)st;
  return CUDA_SUCCESS;
}
static CUresult d_stream_wait(CUstream st, CUevent e, unsigned flags) {
  (void)st, (void)e, (void)flags;
  return CUDA_SUCCESS;
}
static CUresult d_err_name(CUresult rc, const char **s) {
  *s = rc == CUDA_ERROR_LAUNCH_FAILED ? "CUDA_ERROR_LAUNCH_FAILED" : "CUDA_ERROR";
  return CUDA_SUCCESS;
}
static CUresult d_err_text(CUresult rc, const char **s) {
  (void)rc;
  *s = "stand-in driver";
  return CUDA_SUCCESS;
}

static ib_cu driver = {.cuCtxSetCurrent = standin_ctx,
                       .cuModuleLoadData = standin_load,
                       .cuModuleUnload = standin_unload,
                       .cuModuleGetFunction = d_getfn,
                       .cuFuncSetAttribute = standin_setattr,
                       .cuLaunchKernel = d_launch,
                       .cuMemcpyHtoDAsync = d_htod,
                       .cuMemcpyDtoHAsync = d_dtoh,
                       .cuEventCreate = d_ev_create,
                       .cuEventDestroy = d_ev,
                       .cuEventQuery = d_ev,
                       .cuEventSynchronize = d_ev,
                       .cuEventRecord = d_ev_record,
                       .cuStreamSynchronize = d_stream,
                       .cuStreamWaitEvent = d_stream_wait,
                       .cuGetErrorName = d_err_name,
                       .cuGetErrorString = d_err_text};

/* A backend over the stand-in driver and heap "device" memory: one stream,
 * no pieces, no pipeline, a host pool of `threads`. */
static ib_cuda *driven(int threads) {
  ib_cuda *c = cuda_new_launching(&driver);
  ib_pool_init(&c->dpool, page_heap_alloc, page_heap_free, NULL, 1ull << 30);
  c->hp = ib_hostpar_new(threads);
  c->streams[0] = (CUstream)(uintptr_t)0x51;
  c->n_streams = 1;
  c->pieces = 1;
  c->batch_min = 1u << 30;
  return c;
}

static void driven_free(ib_cuda *c) {
  ib_pool_destroy(&c->dpool);
  ib_hostpar_free(c->hp);
  cuda_free_launching(c);
}

/* The pool's one worker held until `go`: batches posted meanwhile wait. */
static atomic_bool go;
static void hold(void *ctx, size_t i) {
  (void)ctx, (void)i;
  while (!atomic_load(&go)) nanosleep(&(struct timespec){0, 100000}, NULL);
}

typedef struct driven_sub {
  ib_backend_job jobs[4];
  encoded_job e[4];
  size_t n;
  ib_backend_submission *s;
  uint64_t arena_lo, arena_hi; /* its download arena */
} driven_sub;

static void submit(ib_cuda *c, driven_sub *d, bool encode, uint64_t seed) {
  for (size_t i = 0; i < d->n; i++) {
    if (encode) {
      d->e[i] = encoded(40 + 8 * (uint32_t)i, 24, seed + i, false);
    } else {
      jg_arena a = {malloc(1u << 20), 0, 1u << 20};
      jg_rng r = {seed + i};
      jg_job j;
      jg_begin(&j, &a, &r, IB_MODE_RGB, 33, 17, seed + i);
      jg_op(&j, &r, JG_INVERT, 0, IB_MODE_RGB, 33, 17, -1);
      ib_error err = {0};
      d->e[i] = (encoded_job){.g = jg_finish(&j, &err)};
      cr_assert_not_null(d->e[i].g, "%s", err.message);
      free(a.p);
    }
    d->jobs[i] = (ib_backend_job){.graph = d->e[i].g, .job_id = seed + i};
  }
  ib_error err = {0};
  cr_assert_eq(ib_cuda_submit(c, d->jobs, d->n, &d->s, &err), IB_OK, "%s", err.message);
  cr_assert_not_null(d->s->arena);
  d->arena_lo = d->s->arena->blk.addr;
  d->arena_hi = d->arena_lo + d->s->arena->blk.size;
}

/* Waits, gives the lent arena back (as the core does), frees the graphs;
 * returns the wait's status. */
static ib_status finish(ib_cuda *c, driven_sub *d, ib_error *err) {
  ib_status st = ib_cuda_wait(c, d->s, err);
  void *lent = NULL;
  for (size_t i = 0; i < d->n; i++) {
    if (st == IB_OK) cr_assert_eq(d->jobs[i].status, IB_OK, "%s", d->jobs[i].err.message);
    if (d->jobs[i].lent && d->jobs[i].lent != lent) ib_cuda_lent_release(c, lent = d->jobs[i].lent);
    ib_graph_free(d->e[i].g);
    free(d->e[i].pixels);
  }
  return st;
}

/* Which submission's arena a recorded download went to (-1: none). */
static int owner(const driven_sub *d, int n, uint64_t a) {
  for (int k = 0; k < n; k++)
    if (a >= d[k].arena_lo && a < d[k].arena_hi) return k;
  return -1;
}

Test(gpu_stage, a_submission_behind_one_decoding_is_enqueued_after_it, .timeout = 300) {
  ib_cuda *c = driven(1);
  n_dtoh = 0;
  fail_lo = fail_hi = 0;
  atomic_store(&go, false);
  ib_hostpar_batch blocker;
  ib_hostpar_post(c->hp, &blocker, 1, hold, NULL);
  driven_sub d[3] = {{.n = 3}, {.n = 2}, {.n = 3}};
  submit(c, &d[0], true, 100); /* decodes, queued behind the blocker */
  cr_assert(d[0].s->staged_listed, "a submission still decoding is not enqueued");
  submit(c, &d[1], false, 200); /* raw: staged at once, but behind d[0] */
  cr_assert(d[1].s->staged_listed, "a staged submission went ahead of one still decoding");
  submit(c, &d[2], true, 300);
  cr_assert_eq(n_dtoh, 0, "nothing may be enqueued before the first staging ends");
  cr_assert_not(ib_cuda_ready(c, d[0].s));
  cr_assert_not(ib_cuda_ready(c, d[1].s));
  atomic_store(&go, true);
  ib_hostpar_wait(c->hp, &blocker);
  /* The last one waited for first: the two before it go out first. */
  ib_error err = {0};
  cr_assert_eq(finish(c, &d[2], &err), IB_OK, "%s", err.message);
  cr_assert(ib_cuda_ready(c, d[0].s) && ib_cuda_ready(c, d[1].s));
  cr_assert_eq(finish(c, &d[0], &err), IB_OK, "%s", err.message);
  cr_assert_eq(finish(c, &d[1], &err), IB_OK, "%s", err.message);
  cr_assert_gt(n_dtoh, 0);
  int last = 0;
  for (int i = 0; i < n_dtoh; i++) {
    const int k = owner(d, 3, dtoh[i]);
    cr_assert_geq(k, last, "download %d (submission %d) after submission %d's", i, k, last);
    last = k;
  }
  cr_assert_eq(last, 2);
  driven_free(c);
}

Test(gpu_stage, a_late_enqueue_failure_is_answered_by_its_own_wait, .timeout = 300) {
  ib_cuda *c = driven(2);
  n_dtoh = 0;
  atomic_store(&go, false);
  ib_hostpar_batch blocker[2];
  ib_hostpar_post(c->hp, &blocker[0], 2, hold, NULL);
  driven_sub d[3] = {{.n = 2}, {.n = 2}, {.n = 2}};
  submit(c, &d[0], true, 400);
  submit(c, &d[1], true, 500);
  submit(c, &d[2], false, 600);
  /* d[1]'s launches fail (its descriptor tables lie in its device block). */
  fail_lo = d[1].s->dblk.addr;
  fail_hi = fail_lo + d[1].s->dblk.size;
  atomic_store(&go, true);
  ib_hostpar_wait(c->hp, &blocker[0]);
  ib_error err = {0};
  for (int spins = 0; !ib_cuda_ready(c, d[2].s); spins++) {
    cr_assert_lt(spins, 200000, "the submissions never became ready");
    nanosleep(&(struct timespec){0, 50000}, NULL);
  }
  cr_assert(ib_cuda_ready(c, d[1].s), "a failed enqueue is ready to be answered");
  cr_assert_eq(finish(c, &d[0], &err), IB_OK, "%s", err.message);
  err = (ib_error){0};
  cr_assert_eq(finish(c, &d[1], &err), IB_DEVICE);
  cr_assert(strstr(err.message, "CUDA_ERROR_LAUNCH_FAILED"), "%s", err.message);
  err = (ib_error){0};
  cr_assert_eq(finish(c, &d[2], &err), IB_OK, "%s", err.message);
  fail_lo = fail_hi = 0;
  driven_free(c);
}

/* ib_cuda_wait lends each rendition job its ranges of the rendition block
 * (no copies): every image points at its own range (the stand-in driver
 * downloads nothing, so the block holds a pattern), all of them under one
 * token of the block's, not the arena's that the plain jobs beside them
 * share; the block stays out of the pinned pool until that token comes
 * back. */
Test(gpu_stage, renditions_are_their_ranges_of_the_block_lent, .timeout = 300) {
  ib_cuda *c = driven(3);
  enum { N = 6, SIDE = 37 };
  ib_backend_job jobs[N];
  ib_graph *gs[N];
  for (size_t i = 0; i < N; i++) {
    gs[i] = rendition_graph(c, SIDE, i, false, i % 2 == 0);
    jobs[i] = (ib_backend_job){.graph = gs[i], .job_id = i + 1};
  }
  ib_backend_submission *s = NULL;
  ib_error err = {0};
  cr_assert_eq(ib_cuda_submit(c, jobs, N, &s, &err), IB_OK, "%s", err.message);
  cr_assert_not(s->staged_listed, "nothing decodes: enqueued at once");
  cr_assert_gt(s->rblk.size, 0);
  uint8_t *blk = (uint8_t *)(uintptr_t)s->rblk.addr;
  const size_t blk_size = s->rblk.size;
  for (size_t k = 0; k < blk_size; k++) blk[k] = (uint8_t)(k * 7 + 3);
  size_t off[N][4] = {{0}};
  for (size_t i = 0; i < N; i++)
    for (size_t r = 0; r < s->js[i].n_rend; r++) off[i][r] = s->js[i].rend_off[r];
  cr_assert_eq(ib_cuda_wait(c, s, &err), IB_OK, "%s", err.message);
  void *arena = NULL, *rend = NULL;
  for (size_t i = 0; i < N; i++) {
    ib_backend_job *j = &jobs[i];
    cr_assert_eq(j->status, IB_OK, "%s", j->err.message);
    cr_assert_not_null(j->lent);
    if (i % 2) {
      cr_assert_eq(j->n_renditions, 0);
      cr_assert(!arena || j->lent == arena, "the plain jobs share the arena's token");
      arena = j->lent;
      continue;
    }
    cr_assert(!rend || j->lent == rend, "the rendition jobs share the block's token");
    rend = j->lent;
    cr_assert_eq(j->n_renditions, 4, "job %zu", i);
    for (size_t r = 0; r < 4; r++) {
      const ib_image *im = &j->renditions[r];
      cr_assert_eq(ib_image_bytes(im), (size_t)SIDE * SIDE);
      cr_assert_eq(im->data, blk + off[i][r], "job %zu rendition %zu is its range", i, r);
      cr_assert_null(im->free_fn, "the core adopts lent images");
      for (size_t k = 0; k < ib_image_bytes(im); k++)
        cr_assert_eq(im->data[k], (uint8_t)((off[i][r] + k) * 7 + 3),
                     "job %zu rendition %zu byte %zu", i, r, k);
    }
    free(j->renditions); /* the images are the block's */
  }
  cr_assert_neq(arena, rend);
  /* Until the token comes back, no request gets the block. */
  ib_pool_block b = {0};
  cr_assert(ib_pinned_get(c->pin, blk_size, &b));
  cr_assert_neq(b.addr, (uint64_t)(uintptr_t)blk, "a lent block is not free");
  ib_pinned_put(c->pin, &b);
  ib_cuda_lent_release(c, rend);
  ib_cuda_lent_release(c, arena);
  for (size_t i = 0; i < N; i++) ib_graph_free(gs[i]);
  driven_free(c);
}
