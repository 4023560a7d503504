/*
 * The CUDA backend's staging of encoded sources, without a GPU: a
 * submission that decodes is posted to the host pool
 * (ib_cuda_sub_stage_begin) and ended later (ib_cuda_sub_stage_end), as
 * ib_cuda_submit does while the driving thread plans the next one. Pins:
 * every job's decoded pixels land in its own staging range, byte-equal to
 * what was encoded, whether posted or run on the caller; a job whose source
 * does not decode fails alone, at stage decode; submissions posted one
 * after another end in any order.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/png_encode.h"
#include "core/hostpar.h"
#include "gpu/cuda_internal.h"
#include "tools/jobgen.h"
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
  *s = (ib_backend_submission){.c = c, .jobs = x->jobs, .n = JOBS, .prof_i = -1};
  s->js = calloc(JOBS, sizeof *s->js);
  ib_cuda_sub_plan(s);
  ib_cuda_sub_layout(s);
  x->host = calloc(1, s->lay.upload + 16);
  s->hblk.addr = (uint64_t)(uintptr_t)x->host;
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
