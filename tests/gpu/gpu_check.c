/*
 * gpu_check - the CUDA backend against the CPU reference backend, byte for
 * byte: every device op x admitted mode (x variant), random fused chains,
 * batches of same-signature small images, 4096-side images. Jobs are built
 * and parsed here (jobgen.h); the CPU result is ib_cpu_execute, the device
 * result comes through an executor on the CUDA backend (ib_executor_submit
 * of a run of jobs, then ib_executor_join: the production submissions,
 * results lent from their download arena or own Job buffer). --cpu-only 1
 * runs the same executor on the CPU backend.
 *
 *   gpu_check [--random N] [--seed S] [--batch B] [--big 0|1] [--rank3 N] [--blur N]
 *             [--blur-only 0|1] [--large 0|1] [--resample N] [--log FILE]
 *
 * --rank3 N adds N 3x3 rank filter cases (section 1b).
 * --large 1 adds every op x L/RGB/RGBA on strips with a side of 4097, 8192
 * and 16384 (the default max side; section 4b, row "large"): long rows and
 * columns past the old 4096 bound through every kernel.
 * --blur N adds N blur cases (section 3c); --blur-only 1 keeps, of sections
 * 1-3c, the blur cases no larger than 2^20 pixels (for the sanitizers).
 * --resample N (default 1) runs N rounds of the filtered resize cases
 * (section 3d) and of the reduce, reducing_gap and tall-image cases
 * (section 3e).
 * --renditions N (default 60) adds N jobs with renditions (section 3f, row
 * "renditions"): every rendition's image equal to the CPU backend's.
 *
 * Prints one line per op (cases, byte-equal, max |diff|), then totals; exit
 * status 0 only when everything is byte-equal (tone: see below).
 * Tone (Oklab) is byte-equal too since kernels/tone.h computes its cube
 * roots and powers with IEEE basic operations only (ib_mathf.h); set
 * IB_TONE_TOLERANCE=2 to accept up to 2 LSB (the earlier powf/cbrtf
 * contract: each backend within 1 LSB of the float64 reference).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "codec/codec.h"
#include "codec/output_spec.h"
#include "cpu/cpu_backend.h"
#include "gpu/cuda_probe.h"
#include "tools/jobgen.h"

typedef struct ccase {
  ib_graph *g;
  int op; /* JG_* for single-op cases, -1 random chain, -2 batch, -3 big */
  int has_tone;
  char label[160];
  ib_status ref_st; /* the CPU reference (ib_cpu_execute) */
  ib_error ref_err;
  ib_image ref;
  ib_cpu_renditions ref_rend; /* a job with renditions: the CPU's images instead of ref */
  uint64_t id;                /* through the executor: its job id, result or refusal */
  ib_status st;
  ib_error err;
  ib_result res;
} ccase;

typedef struct tally {
  int cases, equal, failed, skipped;
  int maxdiff;
} tally;

static FILE *logf_;

/* ib_executor_submit, retrying the compile queue's QueueFull (tier on:
 * admission refuses a head whose kernel must compile while the pool is
 * full; the pool drains on its own threads, so a later retry is admitted).
 * Every other status, credits' QueueFull included, is returned as is. */
static ib_status submit_job(ib_executor *ex, ib_graph *g, uint64_t *id, ib_error *err) {
  ib_status st;
  for (int tries = 0;; tries++) {
    st = ib_executor_submit(ex, g, NULL, id, err);
    if (st != IB_QUEUE_FULL || !strstr(err->message, "compile queue") || tries == 60000) return st;
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
}

static const uint32_t sizes[][2] = {{1, 1},   {3, 5},   {7, 1},     {1, 9},    {17, 13},
                                    {255, 3}, {64, 64}, {333, 101}, {1000, 7}, {129, 257}};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static int compare(const ib_image *a, const ib_image *b, int *maxdiff) {
  *maxdiff = 0;
  if (a->mode != b->mode || a->width != b->width || a->height != b->height) {
    *maxdiff = 999;
    return 0;
  }
  size_t n = ib_image_bytes(a);
  int eq = 1;
  for (size_t i = 0; i < n; i++)
    if (a->data[i] != b->data[i]) {
      int d = abs((int)a->data[i] - (int)b->data[i]);
      if (d > *maxdiff) *maxdiff = d;
      eq = 0;
    }
  return eq;
}

/* 5b. Raw sources uploaded from pinned slabs (worker/gpu/pinned.h): Jobs of
 * one shape written one after the other into executor buffers lie one
 * after the other in a slab, and their submission uploads them in one
 * span per run. A run stream (full batches) takes them in carve order,
 * then out of it (pairs swapped: producers handing Jobs over out of
 * order); every result must equal the CPU's, and the copies must be far
 * fewer than the sources (else the slab path is not used: a failure). */
typedef struct slab_feed {
  ib_executor *ex;
  uint8_t **buf;
  size_t *len;
  int n, next;
} slab_feed;

static ib_status slab_next(void *user, ib_input *in, ib_error *err) {
  slab_feed *f = user;
  if (f->next == f->n) return IB_END;
  int i = f->next++;
  if (i >= f->n / 2 && (i ^ 1) < f->n) i ^= 1; /* second half: pairs swapped */
  return ib_executor_parse_buffer(f->ex, f->buf[i], f->len[i], NULL, &in->graph, NULL, err);
}

/* An executor on `backend` with the tools' environment options (queue: a
 * run stream); NULL, with "FAIL <what>: executor create: ..." logged, when
 * it cannot start. */
static ib_executor *tool_executor(ib_backend_kind backend, bool queue, const char *what) {
  ib_executor_options eo;
  ib_executor_options_default(&eo);
  eo.backend = backend;
  ib_config *cfg = ib_cli_tool_options(&eo);
  if (!cfg) {
    fprintf(logf_, "FAIL %s: the tools' environment\n", what);
    return NULL;
  }
  eo.queue = queue;
  ib_executor *ex = NULL;
  ib_error err = {0};
  const ib_status st = ib_executor_create(&eo, &ex, &err);
  ib_config_destroy(cfg); /* the executor keeps its own copy */
  if (st != IB_OK) {
    fprintf(logf_, "FAIL %s: executor create: %s\n", what, err.message);
    return NULL;
  }
  return ex;
}

static tally slab_check(jg_rng *r, jg_job *j, jg_arena *arena, uint64_t *key) {
  enum { NS = 96 };
  tally t = {0};
  ib_error err = {0};
  ib_executor *ex = tool_executor(IB_BACKEND_CUDA, true, "slab");
  if (!ex) {
    t.failed++;
    return t;
  }
  uint8_t *buf[NS];
  size_t len[NS];
  ib_graph *ref[NS];
  const uint64_t key0 = *key + 1000; /* keys of one varint length: one Job length */
  for (int k = 0; k < NS; k++) {
    jg_begin(j, arena, r, IB_MODE_RGB, 200, 150, key0 + (uint64_t)k); /* 90,000 bytes: pinned */
    jg_op(j, r, JG_INVERT, 0, IB_MODE_RGB, 200, 150, -1);
    len[k] = imgbatch__v1__job__get_packed_size(&j->job);
    buf[k] = ib_executor_buffer(ex, len[k]);
    imgbatch__v1__job__pack(&j->job, buf[k]);
    ref[k] = jg_finish(j, &err);
  }
  *key = key0 + NS;
  slab_feed f = {ex, buf, len, NS, 0};
  ib_results *rs = NULL;
  if (ib_executor_run(ex, slab_next, &f, &rs) != IB_OK) {
    fprintf(logf_, "FAIL slab: ib_executor_run\n");
    t.failed++;
  } else {
    ib_result res;
    while (ib_results_next(rs, &res) == IB_OK) {
      t.cases++;
      const int k = res.key.is_u64 ? (int)(res.key.u64 - key0) : -1;
      ib_image cpu = {0};
      ib_error e = {0};
      int md = 0;
      if (k < 0 || k >= NS || !ref[k] || !res.ok || ib_cpu_execute(ref[k], &cpu, &e) != IB_OK) {
        t.failed++;
        fprintf(logf_, "FAIL slab job %d: %s\n", k, res.ok ? e.message : res.error.message);
      } else if (compare(&cpu, &res.image, &md)) {
        t.equal++;
      } else {
        t.failed++;
        t.maxdiff = md > t.maxdiff ? md : t.maxdiff;
        fprintf(logf_, "DIFF slab job %d: max |diff| %d\n", k, md);
      }
      ib_image_release(&cpu);
      ib_result_free(&res);
    }
    ib_results_close(rs);
  }
  ib_executor_counters c;
  ib_executor_counters_get(ex, &c);
  printf("slab: %llu raw sources uploaded from pinned memory in %llu copies, %llu slab misses\n",
         (unsigned long long)c.upload_direct_sources, (unsigned long long)c.upload_direct_copies,
         (unsigned long long)c.pinned_slab_misses);
  /* A pipelined submission (IB_CUDA_PIPE_KIB small) breaks runs at its
   * pieces' ends: a copy per piece more at most. */
  if (c.upload_direct_sources != NS ||
      4 * c.upload_direct_copies > c.upload_direct_sources + 4 * c.pipelined_pieces) {
    t.failed++;
    fprintf(logf_, "FAIL slab: %d Jobs in a slab took %llu copies for %llu sources\n", NS,
            (unsigned long long)c.upload_direct_copies,
            (unsigned long long)c.upload_direct_sources);
  }
  for (int k = 0; k < NS; k++) ib_graph_free(ref[k]);
  ib_executor_destroy(ex);
  return t;
}

/* 6. Resident outputs (output gpu) through the executor: every handle's
 * download equals the CPU result; the handles keep their bytes charged
 * until released, then every credit is back; a handle outlives
 * ib_executor_destroy and still downloads. */
static tally resident_check(jg_rng *r, jg_job *j, jg_arena *arena, uint64_t *key) {
  enum { NR = 16 };
  tally t = {0};
  ib_error err = {0};
  ib_executor *ex = tool_executor(IB_BACKEND_CUDA, false, "resident");
  if (!ex) {
    t.failed++;
    return t;
  }
  Imgbatch__V1__GpuOutput gout;
  imgbatch__v1__gpu_output__init(&gout);
  Imgbatch__V1__OutputSpec spec;
  imgbatch__v1__output_spec__init(&spec);
  spec.target_case = IMGBATCH__V1__OUTPUT_SPEC__TARGET_GPU;
  spec.gpu = &gout;
  ib_image ref[NR] = {{0}};
  ib_handle *h[NR] = {0};
  uint64_t ids[NR] = {0};
  for (int k = 0; k < NR; k++) {
    ib_mode m = (ib_mode)(1 + jg_below(r, 6));
    uint32_t w = 1 + jg_below(r, 300), h2 = 1 + jg_below(r, 200);
    jg_begin(j, arena, r, m, w, h2, (*key)++);
    int op;
    do op = (int)jg_below(r, JG_COUNT);
    while (!jg_admitted(op, m) || op == JG_TONE);
    jg_op(j, r, op, 0, m, w, h2, -1);
    j->job.output = &spec;
    ib_graph *g1 = jg_finish(j, &err), *g2 = jg_finish(j, &err);
    ib_error e = {0};
    if (!g1 || !g2 || ib_cpu_execute(g2, &ref[k], &e) != IB_OK ||
        submit_job(ex, g1, &ids[k], &err) != IB_OK) {
      fprintf(logf_, "FAIL resident job %d (%s): %s %s\n", k, jg_names[op], err.message, e.message);
      ib_graph_free(g1);
      t.cases++, t.failed++;
    }
    ib_graph_free(g2);
  }
  ib_results *rs = NULL;
  ib_result res;
  if (ib_executor_join(ex, &rs) == IB_OK) {
    while (ib_results_next(rs, &res) == IB_OK) {
      int k = 0;
      while (k < NR && ids[k] != res.job_id) k++;
      t.cases++;
      if (k == NR || res.kind != IB_RESULT_RESIDENT) {
        t.failed++;
        fprintf(logf_, "FAIL resident job %llu: %s\n", (unsigned long long)res.job_id,
                res.ok ? "not a resident result" : res.error.message);
      } else {
        h[k] = res.handle;
        res.handle = NULL;
      }
      ib_result_free(&res);
    }
    ib_results_close(rs);
  }
  ib_executor_counters c;
  ib_executor_counters_get(ex, &c);
  uint64_t live = 0;
  for (int k = 0; k < NR; k++) live += h[k] != NULL;
  if (c.resident_live != live || c.gpu_bytes.in_use != c.resident_gpu_bytes) {
    t.failed++;
    fprintf(logf_, "FAIL resident: %llu live, %llu gpu bytes charged (%llu resident)\n",
            (unsigned long long)c.resident_live, (unsigned long long)c.gpu_bytes.in_use,
            (unsigned long long)c.resident_gpu_bytes);
  }
  /* Download every other one, release it; the rest after destroy. */
  uint64_t released = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int k = pass; k < NR; k += 2) {
      if (!h[k]) continue;
      ib_image im = {0};
      int md = 0;
      if (ib_handle_download(h[k], &im, &err) != IB_OK) {
        t.failed++;
        fprintf(logf_, "FAIL resident download %d: %s\n", k, err.message);
      } else if (compare(&ref[k], &im, &md)) {
        t.equal++;
      } else {
        t.failed++;
        t.maxdiff = md > t.maxdiff ? md : t.maxdiff;
        fprintf(logf_, "DIFF resident job %d: max |diff| %d\n", k, md);
      }
      ib_image_release(&im);
      ib_handle_release(&h[k]);
      released++;
    }
    if (pass == 0) {
      ib_executor_counters_get(ex, &c);
      if (c.resident_live != live - released || c.gpu_bytes.in_use != c.resident_gpu_bytes) {
        t.failed++;
        fprintf(logf_, "FAIL resident: %llu live after releasing half\n",
                (unsigned long long)c.resident_live);
      }
      ib_executor_destroy(ex); /* the other half must outlive it */
    }
  }
  for (int k = 0; k < NR; k++) ib_image_release(&ref[k]);
  return t;
}

/* 7. Capacity at the default caps (docs/credits.md): with
 * ib_executor_options_default (host_bytes 256 MiB, gpu_bytes 512 MiB,
 * max_in_flight 2) a 4096^2 RGBA 3x3 Kernel job and a two-op chain
 * (Kernel -> GaussianBlur), parsed in place into the executor's (pinned)
 * buffer as `imgbatch run` does, are admitted and equal the CPU reference
 * byte for byte; two Kernel jobs streamed together all complete and are
 * equal; two 4096^2 -> L GetChannel jobs are admitted side by side, and on
 * the CUDA backend so are two full-size Kernel jobs (each output goes back
 * into its own Job buffer: docs/credits.md). `backend` CPU
 * (--cpu-only) runs the same checks on the reference backend, where two
 * full-size jobs wait for each other (streamed). */
enum { CAP_KERNEL, CAP_CHAIN, CAP_GETCHANNEL };

typedef struct cap_job {
  ib_graph *g, *ref;
} cap_job;

/* Job `kind` on a random 4096^2 RGBA source: the executor's graph (parsed
 * in place) and a reference graph (heap). */
static cap_job cap_make(ib_executor *ex, jg_rng *r, jg_job *j, jg_arena *arena, int kind,
                        uint64_t key) {
  cap_job c = {0};
  ib_error err = {0};
  jg_begin(j, arena, r, IB_MODE_RGBA, 4096, 4096, key);
  int p = kind == CAP_GETCHANNEL ? jg_op(j, r, JG_GETCHANNEL, 0, IB_MODE_RGBA, 4096, 4096, -1)
                                 : jg_op(j, r, JG_KERNEL, 0, IB_MODE_RGBA, 4096, 4096, 0);
  if (kind == CAP_CHAIN) {
    p = jg_op(j, r, JG_GAUSS, p, IB_MODE_RGBA, 4096, 4096, -1);
    j->nodes[p]->gaussian_blur->radius_x = j->nodes[p]->gaussian_blur->radius_y = 2.5;
  }
  size_t len = 0;
  uint8_t *buf = jg_pack(j, &len);
  uint8_t *eb = buf ? ib_executor_buffer(ex, len) : NULL;
  if (eb) {
    memcpy(eb, buf, len);
    if (ib_executor_parse_buffer(ex, eb, len, NULL, &c.g, NULL, &err) != IB_OK)
      fprintf(logf_, "FAIL capacity parse: %s\n", err.message);
  }
  free(buf);
  c.ref = jg_finish(j, &err);
  return c;
}

static void cap_compare(tally *t, const char *what, const ib_result *res, ib_graph *ref) {
  ib_image want = {0};
  ib_error e = {0};
  int md = 0;
  t->cases++;
  if (!res->ok || !ref || ib_cpu_execute(ref, &want, &e) != IB_OK) {
    t->failed++;
    fprintf(logf_, "FAIL capacity %s: %s / cpu %s\n", what, res->ok ? "ok" : res->error.message,
            ref ? e.message : "no reference graph");
  } else if (compare(&want, &res->image, &md)) {
    t->equal++;
  } else {
    t->failed++;
    t->maxdiff = md > t->maxdiff ? md : t->maxdiff;
    fprintf(logf_, "DIFF capacity %s: max |diff| %d\n", what, md);
  }
  ib_image_release(&want);
}

/* One job alone: submitted, joined, compared. */
static void cap_alone(tally *t, ib_backend_kind backend, jg_rng *r, jg_job *j, jg_arena *arena,
                      int kind, const char *what) {
  char name[96];
  snprintf(name, sizeof name, "capacity %s", what);
  ib_executor *ex = tool_executor(backend, false, name);
  ib_error err = {0};
  if (!ex) {
    t->cases++, t->failed++;
    return;
  }
  cap_job c = cap_make(ex, r, j, arena, kind, 1);
  uint64_t id = 0;
  if (!c.g || ib_executor_submit(ex, c.g, NULL, &id, &err) != IB_OK) {
    t->cases++, t->failed++;
    fprintf(logf_, "FAIL capacity %s: not admitted at the default caps: %s\n", what, err.message);
    if (c.g) ib_graph_free(c.g);
  } else {
    ib_executor_counters k;
    ib_executor_counters_get(ex, &k);
    printf("capacity %-22s admitted: host %.3f MiB, gpu %.3f MiB charged\n", what,
           k.host_bytes.in_use / 1048576.0, k.gpu_bytes.in_use / 1048576.0);
    ib_results *rs = NULL;
    ib_result res;
    if (ib_executor_join(ex, &rs) == IB_OK && ib_results_next(rs, &res) == IB_OK) {
      cap_compare(t, what, &res, c.ref);
      ib_result_free(&res);
    } else {
      t->cases++, t->failed++;
      fprintf(logf_, "FAIL capacity %s: no result\n", what);
    }
    ib_results_close(rs);
  }
  ib_graph_free(c.ref);
  ib_executor_destroy(ex);
}

typedef struct cap_stream {
  cap_job jobs[2];
  int next;
} cap_stream;

static ib_status cap_next(void *user, ib_input *in, ib_error *err) {
  (void)err;
  cap_stream *s = user;
  if (s->next == 2) return IB_END;
  in->graph = s->jobs[s->next].g;
  s->jobs[s->next++].g = NULL; /* the stream owns it now */
  return IB_OK;
}

/* Two jobs of `kind` at once: streamed (`streamed`) or submitted side by
 * side (both must be admitted). */
static void cap_pair(tally *t, ib_backend_kind backend, jg_rng *r, jg_job *j, jg_arena *arena,
                     int kind, int streamed, const char *what) {
  char name[96];
  snprintf(name, sizeof name, "capacity %s", what);
  ib_executor *ex = tool_executor(backend, true, name);
  ib_error err = {0};
  if (!ex) {
    t->cases++, t->failed++;
    return;
  }
  cap_stream s = {0};
  uint64_t ids[2] = {0};
  ib_graph *refs[2];
  for (int k = 0; k < 2; k++) {
    s.jobs[k] = cap_make(ex, r, j, arena, kind, (uint64_t)k + 1);
    refs[k] = s.jobs[k].ref;
  }
  ib_results *rs = NULL;
  int ok = s.jobs[0].g && s.jobs[1].g;
  if (ok && !streamed)
    for (int k = 0; k < 2; k++) {
      if (ib_executor_submit(ex, s.jobs[k].g, NULL, &ids[k], &err) != IB_OK) {
        t->cases++, t->failed++, ok = 0;
        fprintf(logf_, "FAIL capacity %s: job %d not admitted beside the other: %s\n", what, k,
                err.message);
        ib_graph_free(s.jobs[k].g);
      }
      s.jobs[k].g = NULL;
    }
  ib_status st = streamed ? ib_executor_run(ex, cap_next, &s, &rs) : ib_executor_join(ex, &rs);
  int got = 0;
  if (st == IB_OK) {
    ib_result res;
    while (ib_results_next(rs, &res) == IB_OK) {
      int k = streamed ? (res.key.is_u64 ? (int)res.key.u64 - 1 : 0) : res.job_id == ids[1];
      char label[80];
      snprintf(label, sizeof label, "%s #%d", what, k);
      cap_compare(t, label, &res, refs[k & 1]);
      got++;
      ib_result_free(&res);
    }
    ib_results_close(rs);
  }
  if (ok && got != 2) {
    t->cases++, t->failed++;
    fprintf(logf_, "FAIL capacity %s: %d of 2 results\n", what, got);
  }
  ib_executor_counters c;
  ib_executor_counters_get(ex, &c);
  printf(
      "capacity %-22s %d results; jobs live at once %llu, host peak %.3f MiB, gpu peak %.3f MiB\n",
      what, got, (unsigned long long)c.jobs.peak, c.host_bytes.peak / 1048576.0,
      c.gpu_bytes.peak / 1048576.0);
  for (int k = 0; k < 2; k++) {
    ib_graph_free(s.jobs[k].g);
    ib_graph_free(refs[k]);
  }
  ib_executor_destroy(ex);
}

static tally capacity_check(ib_backend_kind backend, jg_rng *r, jg_job *j, jg_arena *arena) {
  tally t = {0};
  cap_alone(&t, backend, r, j, arena, CAP_KERNEL, "kernel 3x3");
  cap_alone(&t, backend, r, j, arena, CAP_CHAIN, "kernel -> gaussian");
  cap_pair(&t, backend, r, j, arena, CAP_KERNEL, 1, "2 x kernel streamed");
  cap_pair(&t, backend, r, j, arena, CAP_GETCHANNEL, 0, "2 x getchannel at once");
  if (backend == IB_BACKEND_CUDA)
    cap_pair(&t, backend, r, j, arena, CAP_KERNEL, 0, "2 x kernel at once");
  return t;
}

/* Cases [i, i + b): the CPU reference of each, then all of them submitted
 * to `ex` (which takes the graphs) and joined: each case gets its result
 * or its refusal. Returns the CPU seconds of submit + join. */
static double run_cases(ib_executor *ex, ccase *cs, size_t i, size_t b) {
  for (size_t k = i; k < i + b; k++)
    cs[k].ref_st =
        cs[k].g->job->n_renditions
            ? ib_cpu_execute_cached(cs[k].g, NULL, &cs[k].ref, &cs[k].ref_rend, &cs[k].ref_err)
            : ib_cpu_execute(cs[k].g, &cs[k].ref, &cs[k].ref_err);
  clock_t t0 = clock();
  for (size_t k = i; k < i + b; k++) {
    ccase *c = &cs[k];
    c->st = submit_job(ex, c->g, &c->id, &c->err);
    if (c->st == IB_OK) {
      c->g = NULL;       /* the executor's now */
      c->st = IB_DEVICE; /* until its result says otherwise */
      snprintf(c->err.message, sizeof c->err.message, "no result");
    }
  }
  ib_results *rs = NULL;
  ib_status st = ib_executor_join(ex, &rs);
  ib_result res;
  while (st == IB_OK && (st = ib_results_next(rs, &res)) == IB_OK) {
    size_t k = i;
    while (k < i + b && !(cs[k].g == NULL && cs[k].id == res.job_id)) k++;
    if (k == i + b) {
      fprintf(logf_, "submission at job %zu: result for unknown job %llu\n", i,
              (unsigned long long)res.job_id);
      ib_result_free(&res);
      continue;
    }
    cs[k].res = res;
    cs[k].st = res.ok ? IB_OK : res.error.status ? res.error.status : IB_INTERNAL;
    cs[k].err = res.error;
  }
  if (st != IB_END) fprintf(logf_, "submission at job %zu: join: %s\n", i, ib_status_name(st));
  ib_results_close(rs);
  return (double)(clock() - t0) / CLOCKS_PER_SEC;
}

/* Tallies one case (CPU reference against the executor's result); returns
 * 1 when the device failed it. */
static int judge(const ccase *c, tally *t) {
  t->cases++;
  if (c->st != IB_OK || c->ref_st != IB_OK) {
    if (c->ref_st != IB_OK && c->st != IB_OK) {
      t->skipped++;
      fprintf(logf_, "both refused %s: cpu %s / cuda %s\n", c->label, c->ref_err.message,
              c->err.message);
      return 0;
    }
    t->failed++;
    fprintf(logf_, "FAIL %s: cpu %s, cuda %s: %s\n", c->label, ib_status_name(c->ref_st),
            ib_status_name(c->st), c->st != IB_OK ? c->err.message : c->ref_err.message);
    return c->st == IB_DEVICE;
  }
  int md = 0;
  if (c->ref_rend.n) { /* every rendition, in the Job's order */
    int eq = c->res.n_renditions == c->ref_rend.n;
    if (!eq)
      fprintf(logf_, "FAIL %s: %zu renditions, the cpu's %zu\n", c->label, c->res.n_renditions,
              c->ref_rend.n);
    for (size_t q = 0; eq && q < c->ref_rend.n; q++) {
      int d = 0;
      if (compare(&c->ref_rend.images[q], &c->res.renditions[q], &d)) continue;
      fprintf(logf_, "DIFF %s: rendition %zu: max |diff| %d\n", c->label, q, d);
      eq = 0;
      if (d > md) md = d;
    }
    if (eq) {
      t->equal++;
      return 0;
    }
    if (md > t->maxdiff) t->maxdiff = md;
    t->failed++;
    return 0;
  }
  if (compare(&c->ref, &c->res.image, &md)) {
    t->equal++;
    return 0;
  }
  if (md > t->maxdiff) t->maxdiff = md;
  int tol = getenv("IB_TONE_TOLERANCE") ? atoi(getenv("IB_TONE_TOLERANCE")) : 0;
  int ok_tone = c->has_tone && md <= tol;
  if (!ok_tone) t->failed++;
  fprintf(logf_, "%s %s: max |diff| %d\n", ok_tone ? "TONE-LSB" : "DIFF", c->label, md);
  return 0;
}

int main(int argc, char **argv) {
  int n_random = 300, batch = 24, big = 1, cpu_only = 0, n_blur = 0, blur_only = 0;
  uint64_t seed = 20261202;
  const char *log_path = NULL;
  uint64_t module_cache = 0; /* 0: the default; 1: every module unloaded once unused */
  int n_rank3 = 0;           /* --rank3 */
  int large = 0;             /* --large */
  int n_resample = 1;        /* --resample */
  int n_rend = 60;           /* --renditions */
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--random"))
      n_random = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed"))
      seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--batch"))
      batch = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--blur"))
      n_blur = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--blur-only"))
      blur_only = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--big"))
      big = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--log"))
      log_path = argv[i + 1];
    else if (!strcmp(argv[i], "--cpu-only"))
      cpu_only = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--large"))
      large = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--resample"))
      n_resample = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--renditions"))
      n_rend = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rank3"))
      n_rank3 = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--module-cache"))
      module_cache = strtoull(argv[i + 1], NULL, 10);
  }
  logf_ = log_path ? fopen(log_path, "w") : stderr;
  if (!logf_) logf_ = stderr;
  ib_error err = {0};
  char dev_desc[256] = "none (--cpu-only: generation and CPU runs only)";
  if (!cpu_only && ib_cuda_probe(0, dev_desc, sizeof dev_desc) != IB_OK) {
    printf("gpu_check: %s\n", dev_desc);
    return 2;
  }
  printf("device: %s\n", dev_desc);
  jg_arena arena = {malloc(1u << 28), 0, 1u << 28};
  jg_rng r = {seed};
  size_t cap = 4096, nc = 0;
  ccase *cs = calloc(cap, sizeof *cs);
  jg_job j;
  uint64_t key = 1;
  int refused = 0;

  /* 1. every op x mode (x variant), sizes cycling through the edge list */
  int si = 0;
  for (int op = 0; op < JG_COUNT; op++) {
    if (blur_only && op != JG_BOXBLUR && op != JG_GAUSS) continue;
    int variants = op == JG_CHOPS       ? 12
                   : op == JG_CONVERT   ? 6
                   : op == JG_TRANSPOSE ? 7
                   : op == JG_RANK      ? 4
                   : op == JG_TRANSFORM ? 12
                                        : 2;
    for (int m = 1; m <= 6; m++) {
      if (!jg_admitted(op, (ib_mode)m)) continue;
      for (int v = 0; v < variants; v++) {
        uint32_t w = sizes[si % N_SIZES][0], h = sizes[si % N_SIZES][1];
        si++;
        jg_begin(&j, &arena, &r, (ib_mode)m, w, h, key++);
        jg_op(&j, &r, op, 0, (ib_mode)m, w, h, v);
        ib_graph *g = jg_finish(&j, &err);
        if (!g) {
          fprintf(logf_, "refused %s %s v%d: %s\n", jg_names[op], ib_mode_name((ib_mode)m), v,
                  err.message);
          refused++;
          continue;
        }
        ccase *c = &cs[nc++];
        c->g = g;
        c->op = op;
        c->has_tone = op == JG_TONE;
        snprintf(c->label, sizeof c->label, "%s %s v%d %ux%u", jg_names[op],
                 ib_mode_name((ib_mode)m), v, w, h);
      }
    }
  }
  /* 1b. --rank3 N: 3x3 rank filters (the head computes runs of
   * IB_RANK_RUN outputs per thread) at widths on both sides of multiples
   * of the run, lines of one pixel, rows that start unaligned, every mode,
   * ranks 4, 0, 8 and random, alone and followed by a pointwise step; with
   * --big also 4096 x 4096 and 4093 x 4095. Tallied as rank single ops. */
  {
    static const uint32_t rsz[][2] = {
        {1, 1},  {2, 3},   {3, 1},   {4, 2},    {5, 7},   {6, 1},     {7, 9},    {8, 4},    {9, 3},
        {1, 17}, {13, 13}, {64, 64}, {129, 31}, {255, 3}, {333, 101}, {1000, 7}, {1023, 33}};
    static const uint32_t ranks[] = {4, 0, 8, 9};
    const int nsz = (int)(sizeof rsz / sizeof rsz[0]), nbig = n_rank3 > 0 && big ? 3 : 0;
    jg_arena rarena = {malloc(3u << 27), 0, 3u << 27};
    for (int k = 0; k < n_rank3 + nbig && nc < cap; k++) {
      const int bk = k - n_rank3; /* >= 0: the big ones */
      const ib_mode m = bk < 0 ? (ib_mode)(1 + k % 6) : bk == 2 ? IB_MODE_RGB : IB_MODE_RGBA;
      const int odd = bk == 1; /* 4093 x 4095: rows start unaligned, runs past the width */
      const uint32_t w = bk < 0 ? rsz[k % nsz][0]
                         : odd  ? 4093
                                : 4096,
                     h = bk < 0 ? rsz[k % nsz][1]
                         : odd  ? 4095
                                : 4096;
      uint32_t rank = bk < 0 ? ranks[(k / 6) % 4] : bk == 2 ? 8 : 4;
      if (rank == 9) rank = jg_below(&r, 9);
      const int step = bk < 0 && (k / 24) % 2 == 1;
      jg_begin(&j, &rarena, &r, m, w, h, key++);
      int p = jg_op(&j, &r, JG_RANK, 0, m, w, h, 0);
      j.nodes[p]->rank_filter->size = 3, j.nodes[p]->rank_filter->rank = rank;
      if (step) jg_op(&j, &r, JG_POINT, p, m, w, h, -1);
      ccase *c = &cs[nc];
      if (!(c->g = jg_finish(&j, &err))) {
        fprintf(logf_, "refused rank3: %s\n", err.message);
        refused++;
        continue;
      }
      c->op = JG_RANK;
      snprintf(c->label, sizeof c->label, "rank3 %s %ux%u rank %u%s", ib_mode_name(m), w, h, rank,
               step ? " > point" : "");
      nc++;
    }
    free(rarena.p);
  }
  int n_single = (int)nc;

  /* 2. random chains (fused pointwise runs, two-input heads, contrast) */
  for (int k = 0; k < n_random && nc < cap; k++) {
    ib_mode m = (ib_mode)(1 + jg_below(&r, 6));
    uint32_t w = 1 + jg_below(&r, 300), h = 1 + jg_below(&r, 200);
    if (k % 10 == 0) w = (w | 3) + 1; /* some widths multiple of 4 */
    jg_begin(&j, &arena, &r, m, w, h, key++);
    int prev = 0, len = 1 + (int)jg_below(&r, 6), tone = 0;
    char label[160];
    int lw = snprintf(label, sizeof label, "chain %s %ux%u:", ib_mode_name(m), w, h);
    for (int s = 0; s < len; s++) {
      int op;
      do op = (int)jg_below(&r, JG_COUNT);
      while (!jg_admitted(op, m));
      prev = jg_chain_op(&j, &r, op, prev, &m, &w, &h);
      tone |= op == JG_TONE;
      if (lw < (int)sizeof label)
        lw += snprintf(label + lw, sizeof label - (size_t)lw, " %s", jg_names[op]);
    }
    ib_graph *g = jg_finish(&j, &err);
    if (!g) {
      fprintf(logf_, "refused %s: %s\n", label, err.message);
      refused++;
      continue;
    }
    ccase *c = &cs[nc++];
    c->g = g;
    c->op = -1;
    c->has_tone = tone;
    snprintf(c->label, sizeof c->label, "%s", label);
  }
  int n_chain_end = (int)nc;
  /* Each later section draws from the generator afresh (from --seed alone),
   * so a run with another --random, --big or --large - the warm start's,
   * the sanitizers' - asks for the same kernels there as the cold run: the
   * warm start must compile nothing. */
  r = (jg_rng){seed ^ 0x5eed0003ull};

  /* 3. small images, many per submission (descriptor table): runs of 25
   * jobs whose graphs are equal but for their pixels (the backend copies
   * the parameter blocks of an equal predecessor: each copy is checked
   * here), in 8 runs of 4 ops and 8 sizes. */
  static const int batch_ops[4] = {JG_INVERT, JG_POINT, JG_GAUSS, JG_RESIZE};
  for (int k = 0; k < 200 && nc < cap && !blur_only; k++) {
    const int run = k / 25, op = batch_ops[run % 4];
    const uint32_t w = 96 + (uint32_t)run;
    jg_begin(&j, &arena, &r, IB_MODE_RGB, w, 64, key++);
    jg_rng same = {1000u + (uint64_t)run}; /* equal parameters within a run */
    jg_op(&j, &same, op, 0, IB_MODE_RGB, w, 64, -1);
    ccase *c = &cs[nc];
    if (!(c->g = jg_finish(&j, &err))) continue;
    c->op = -2;
    snprintf(c->label, sizeof c->label, "batch %s RGB #%d", jg_names[op], k);
    nc++;
  }
  int n_batch_end = (int)nc;

  /* 3b. encoded (PNG) sources: decoded by the source row straight into
   * pinned staging on the device path (host threads), into malloc'd
   * memory on the CPU path. */
  int n_png_begin = (int)nc;
  if (!blur_only && ib_codec_init(&err) == IB_OK) {
    static const ib_mode pm[] = {IB_MODE_L, IB_MODE_LA, IB_MODE_RGB, IB_MODE_RGBA};
    for (int k = 0; k < 24 && nc < cap; k++) {
      ib_mode m = pm[k % 4];
      uint32_t w = 1 + jg_below(&r, 150), h = 1 + jg_below(&r, 90);
      ib_image im = {0};
      ib_image_alloc(&im, m, w, h);
      for (size_t q = 0; q < ib_image_bytes(&im); q++) im.data[q] = (uint8_t)jg_u32(&r);
      Imgbatch__V1__CpuOutput spec = IMGBATCH__V1__CPU_OUTPUT__INIT;
      spec.format = IMGBATCH__V1__FORMAT__PNG;
      uint8_t *png = NULL;
      size_t plen = 0;
      if (ib_codec_encode(&im, &spec, NULL, &png, &plen, &err) != IB_OK) {
        fprintf(logf_, "png encode: %s\n", err.message);
        ib_image_release(&im);
        continue;
      }
      jg_begin(&j, &arena, &r, m, 1, 1, key++);
      Imgbatch__V1__Source *src = j.job.source;
      src->kind_case = IMGBATCH__V1__SOURCE__KIND_ENCODED;
      src->encoded.data = jg_alloc(&arena, plen);
      memcpy(src->encoded.data, png, plen);
      src->encoded.len = plen;
      ib_codec_free(png);
      ib_image_release(&im);
      int op;
      do op = (int)jg_below(&r, JG_COUNT);
      while (!jg_admitted(op, m));
      jg_op(&j, &r, op, 0, m, w, h, -1);
      ccase *c = &cs[nc];
      if (!(c->g = jg_finish(&j, &err))) {
        fprintf(logf_, "refused png %s: %s\n", jg_names[op], err.message);
        refused++;
        continue;
      }
      c->op = -4;
      c->has_tone = op == JG_TONE;
      snprintf(c->label, sizeof c->label, "png %s %ux%u %s", ib_mode_name(m), w, h, jg_names[op]);
      nc++;
    }
  }
  int n_png_end = (int)nc;

  /* 3c. --blur N: BoxBlur / GaussianBlur alone and in pairs (the column
   * passes' tiles in shared memory, ib_cols, and their global fallback for
   * radii whose tiles do not fit), over the 4096 bound, lines of one pixel,
   * odd widths and every blur mode; the radii of the jobs of one
   * submission differ (one launch sizes its tiles for the largest, radii
   * up to 129 fit: the first 8). */
  {
    static const double radii[] = {0.5, 8, 2.5, 1, 20, 7.3, 60, 129, 131, 400, 3000, 1048576, 3};
    static const uint32_t bsz[][2] = {{4096, 4096}, {4093, 37}, {37, 4093},  {1, 4096},
                                      {4096, 1},    {333, 101}, {129, 4096}, {17, 13},
                                      {1000, 7},    {2, 2},     {4096, 129}, {255, 300}};
    static const ib_mode bm[] = {IB_MODE_RGBA, IB_MODE_RGB, IB_MODE_L, IB_MODE_LA};
    const int nr = (int)(sizeof radii / sizeof radii[0]), nsz = (int)(sizeof bsz / sizeof bsz[0]);
    jg_arena barena = {malloc(3u << 27), 0, 3u << 27};
    for (int k = 0; k < n_blur && nc < cap; k++) {
      const ib_mode m = bm[k % 4];
      const uint32_t w = bsz[k % nsz][0], h = bsz[k % nsz][1];
      if (blur_only && (uint64_t)w * h > (1u << 20)) continue; /* sanitizer runs */
      const int gauss = k % 2 == 0, pair = k % 5 == 4;
      /* the first half small radii only: whole submissions whose tiles fit */
      const int rr = k < n_blur / 2 ? 8 : nr;
      double rx = k % 6 == 5 ? 0 : radii[k % rr], ry = k % 7 == 6 ? 0 : radii[(k * 5 + 3) % rr];
      if (k == 0) rx = ry = 8; /* the benchmark's GaussianBlur(8), 4096^2 RGBA */
      jg_begin(&j, &barena, &r, m, w, h, key++);
      int p = jg_op(&j, &r, gauss ? JG_GAUSS : JG_BOXBLUR, 0, m, w, h, -1);
      if (gauss)
        j.nodes[p]->gaussian_blur->radius_x = rx, j.nodes[p]->gaussian_blur->radius_y = ry;
      else
        j.nodes[p]->box_blur->radius_x = rx, j.nodes[p]->box_blur->radius_y = ry;
      if (pair) {
        p = jg_op(&j, &r, JG_GAUSS, p, m, w, h, -1);
        j.nodes[p]->gaussian_blur->radius_x = j.nodes[p]->gaussian_blur->radius_y = 2.5;
      }
      ccase *c = &cs[nc];
      if (!(c->g = jg_finish(&j, &err))) {
        fprintf(logf_, "refused blur: %s\n", err.message);
        refused++;
        continue;
      }
      c->op = -5;
      snprintf(c->label, sizeof c->label, "blur %s %s %ux%u r %g,%g%s", gauss ? "gaussian" : "box",
               ib_mode_name(m), w, h, rx, ry, pair ? " > gaussian 2.5" : "");
      nc++;
    }
    free(barena.p);
  }

  /* 3d. --resample N (default 1): Image.resize with every convolution
   * filter (LANCZOS, BILINEAR, BICUBIC, BOX, HAMMING) x every mode x N
   * rounds of the shape variants below, over odd sizes and 1x1 sources:
   * down- and up-scaling, both passes, one axis only (the other pass
   * skipped), a float box, an integral box of the output's size (the crop),
   * a 1x1 output, and a resize followed by a pointwise step (a new stage:
   * nothing fuses after a multi-pass head). With --big 1, a 4096 x 4096
   * RGBA source to 1000 x 3001 and a 3001 x 4096 RGB one upscaled to
   * 4096 x 4096. Consecutive cases share a submission (one launch group of
   * many shapes and skipped passes). */
  {
    static const uint32_t rsz[][2] = {{1, 1},   {3, 5},    {7, 1},   {1, 9},    {17, 13},
                                      {64, 48}, {129, 31}, {2, 257}, {333, 101}};
    static const int filters[] = {1, 2, 3, 4, 5}; /* proto Resample, NEAREST left out */
    static const char *fname[] = {"?", "LANCZOS", "BILINEAR", "BICUBIC", "BOX", "HAMMING"};
    enum { RV = 9 }; /* shape variants */
    const int nsz = (int)(sizeof rsz / sizeof rsz[0]);
    jg_arena rarena = {malloc(3u << 27), 0, 3u << 27};
    int k = 0;
    for (int round = 0; round < n_resample; round++)
      for (int f = 0; f < 5; f++)
        for (int m = 1; m <= 6; m++)
          for (int v = 0; v < RV && nc < cap; v++, k++) {
            if (!jg_admitted(JG_RESIZE, (ib_mode)m)) continue;
            const uint32_t w = rsz[k % nsz][0], h = rsz[k % nsz][1];
            uint32_t ow = w, oh = h;
            double bx[4] = {-1, 0, 0, 0};
            switch (v) {
              case 0: ow = w / 3 + 1, oh = h / 2 + 1; break; /* down */
              case 1: ow = 2 * w + 1, oh = 3 * h + 2; break; /* up */
              case 2: ow = w / 2 + 3, oh = h + 1; break;     /* mixed */
              case 3: oh = h / 2 + 2; break;                 /* vertical only */
              case 4: ow = 2 * w + 3; break;                 /* horizontal only */
              case 5:                                        /* float box */
                ow = w + 2, oh = h / 3 + 1;
                bx[0] = w * 0.13, bx[1] = h * 0.21, bx[2] = w * 0.91, bx[3] = h * 0.77 + 0.2;
                break;
              case 6: /* integral box of the output's size: ImagingCrop */
                bx[0] = w / 3, bx[1] = h / 4, bx[2] = w, bx[3] = h;
                ow = w - w / 3, oh = h - h / 4;
                break;
              case 7: ow = oh = 1; break;                         /* 1x1 */
              default: ow = w + 5, oh = h > 2 ? h - 1 : 3; break; /* then a point step */
            }
            if (bx[0] >= 0 && bx[3] > h) bx[3] = h;
            jg_begin(&j, &rarena, &r, (ib_mode)m, w, h, key++);
            int p = jg_op(&j, &r, JG_RESIZE, 0, (ib_mode)m, w, h, -1);
            Imgbatch__V1__ResizeOp *rz = j.nodes[p]->resize;
            rz->resample = (Imgbatch__V1__Resample)filters[f];
            rz->width = ow, rz->height = oh;
            rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT__NOT_SET;
            rz->box = NULL;
            if (bx[0] >= 0) {
              rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX;
              rz->box = jg_alloc(j.a, sizeof *rz->box);
              imgbatch__v1__box__init(rz->box);
              rz->box->left = bx[0], rz->box->top = bx[1], rz->box->right = bx[2];
              rz->box->bottom = bx[3];
            }
            if (v == RV - 1) jg_op(&j, &r, JG_POINT, p, (ib_mode)m, ow, oh, -1);
            ccase *c = &cs[nc];
            if (!(c->g = jg_finish(&j, &err))) {
              fprintf(logf_, "refused resample: %s\n", err.message);
              refused++;
              continue;
            }
            c->op = -6;
            snprintf(c->label, sizeof c->label, "resample %s %s v%d %ux%u -> %ux%u%s",
                     fname[filters[f]], ib_mode_name((ib_mode)m), v, w, h, ow, oh,
                     v == RV - 1 ? " > point" : "");
            nc++;
          }
    for (int b = 0; big && n_resample > 0 && b < 2 && nc < cap; b++) {
      const ib_mode m = b ? IB_MODE_RGB : IB_MODE_RGBA;
      const uint32_t w = b ? 3001 : 4096, h = 4096;
      jg_begin(&j, &rarena, &r, m, w, h, key++);
      int p = jg_op(&j, &r, JG_RESIZE, 0, m, w, h, -1);
      Imgbatch__V1__ResizeOp *rz = j.nodes[p]->resize;
      rz->resample = (Imgbatch__V1__Resample)(b ? 3 : 1);
      rz->width = b ? 4096 : 1000, rz->height = b ? 4096 : 3001;
      rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT__NOT_SET;
      rz->box = NULL;
      ccase *c = &cs[nc];
      if (!(c->g = jg_finish(&j, &err))) {
        fprintf(logf_, "refused resample: %s\n", err.message);
        refused++;
        continue;
      }
      c->op = -6;
      snprintf(c->label, sizeof c->label, "resample %s %s %ux%u -> %ux%u",
               b ? "BICUBIC" : "LANCZOS", ib_mode_name(m), w, h, rz->width, rz->height);
      nc++;
    }
    free(rarena.p);
  }
  r = (jg_rng){seed ^ 0x5eed003eull}; /* the same with --big 0 (above) */

  /* 3e. --resample N (default 1), N rounds of:
   * - Image.reduce alone: every mode x factors fx = 1..8 with fy = fx over
   *   the whole image and fy = 1 + (3 fx) % 8 over an integer box (partial
   *   last blocks, the (1, 1) copy), sources cycling through odd sizes;
   *   every fourth followed by a point step (fused after the gather head);
   * - reducing_gap: every filter x mode x gaps 1.0, 1.5, 2.0, 2.5, 3.0,
   *   1.37 on 333 x 101 -> 17 x 9 (odd gaps: with a float box), so the
   *   reduce step runs with factors (1..19, 1..11) before the resample;
   * - tall images (height > 100 x width, shrinking vertically: two calls,
   *   vertical first): every filter x mode x 5 shapes, one with a box, one
   *   whose second call is a crop, one reduced first (8 x 4000 -> 1 x 1000,
   *   gap 2.0: the reduced 2 x 2000 is tall).
   * Tallied in the rows "reduce 1..8", "resize gap" and "resize tall". */
  {
    static const uint32_t dsz[][2] = {{1, 1},   {3, 5},    {7, 1},   {1, 9},    {17, 13},
                                      {64, 48}, {129, 31}, {2, 257}, {333, 101}};
    static const char *fname[] = {"?", "LANCZOS", "BILINEAR", "BICUBIC", "BOX", "HAMMING"};
    static const double gaps[] = {1.0, 1.5, 2.0, 2.5, 3.0, 1.37};
    /* w, h, out w, out h, box (top, bottom; -1: none), gap (0: none) */
    static const double tall[][7] = {{1, 101, 1, 50, -1, 0, 0},
                                     {2, 333, 2, 100, -1, 0, 0},
                                     {3, 420, 5, 7, 10.5, 400, 0},
                                     {2, 301, 3, 2, -1, 0, 0},
                                     {8, 4000, 1, 1000, -1, 0, 2}};
    const int nsz = (int)(sizeof dsz / sizeof dsz[0]);
    jg_arena darena = {malloc(3u << 27), 0, 3u << 27};
    int k = 0;
    for (int round = 0; round < n_resample; round++)
      for (int m = 1; m <= 6; m++)
        for (int f = 1; f <= 8; f++)
          for (int v = 0; v < 2 && nc < cap; v++, k++) {
            if (!jg_admitted(JG_REDUCE, (ib_mode)m)) continue;
            const uint32_t w = dsz[k % nsz][0], h = dsz[k % nsz][1];
            const int fx = f, fy = v ? 1 + (3 * f) % 8 : f, step = k % 4 == 3;
            jg_begin(&j, &darena, &r, (ib_mode)m, w, h, key++);
            int p = jg_op(&j, &r, JG_REDUCE, 0, (ib_mode)m, w, h, -1);
            Imgbatch__V1__ReduceOp *rd = j.nodes[p]->reduce;
            rd->factor_x = (uint32_t)fx, rd->factor_y = (uint32_t)fy;
            rd->box_present_case = IMGBATCH__V1__REDUCE_OP__BOX_PRESENT__NOT_SET;
            rd->box = NULL;
            uint32_t bl = 0, bt = 0, br = w, bb = h;
            if (v) {
              bl = w / 5, bt = h / 7, br = w - w / 9, bb = h;
              rd->box_present_case = IMGBATCH__V1__REDUCE_OP__BOX_PRESENT_BOX;
              rd->box = jg_alloc(j.a, sizeof *rd->box);
              imgbatch__v1__box__init(rd->box);
              rd->box->left = bl, rd->box->top = bt, rd->box->right = br, rd->box->bottom = bb;
            }
            const uint32_t ow = (br - bl + fx - 1) / fx, oh = (bb - bt + fy - 1) / fy;
            if (step) jg_op(&j, &r, JG_POINT, p, (ib_mode)m, ow, oh, -1);
            ccase *c = &cs[nc];
            if (!(c->g = jg_finish(&j, &err))) {
              fprintf(logf_, "refused reduce: %s\n", err.message);
              refused++;
              continue;
            }
            c->op = -7;
            snprintf(c->label, sizeof c->label, "reduce %s %ux%u (%d, %d) box (%u, %u, %u, %u)%s",
                     ib_mode_name((ib_mode)m), w, h, fx, fy, bl, bt, br, bb,
                     step ? " > point" : "");
            nc++;
          }
    for (int round = 0; round < n_resample; round++)
      for (int f = 1; f <= 5; f++)
        for (int m = 1; m <= 6; m++)
          for (int g = 0; g < 6 && nc < cap; g++) {
            const uint32_t w = 333, h = 101;
            jg_begin(&j, &darena, &r, (ib_mode)m, w, h, key++);
            int p = jg_op(&j, &r, JG_RESIZE, 0, (ib_mode)m, w, h, -1);
            Imgbatch__V1__ResizeOp *rz = j.nodes[p]->resize;
            rz->resample = (Imgbatch__V1__Resample)f;
            rz->width = 17, rz->height = 9;
            rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT__NOT_SET;
            rz->box = NULL;
            if (g % 2) {
              rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX;
              rz->box = jg_alloc(j.a, sizeof *rz->box);
              imgbatch__v1__box__init(rz->box);
              rz->box->left = 10.25, rz->box->top = 3.5, rz->box->right = 320.75;
              rz->box->bottom = 99;
            }
            rz->reducing_gap_present_case =
                IMGBATCH__V1__RESIZE_OP__REDUCING_GAP_PRESENT_REDUCING_GAP;
            rz->reducing_gap = gaps[g];
            ccase *c = &cs[nc];
            if (!(c->g = jg_finish(&j, &err))) {
              fprintf(logf_, "refused resample gap: %s\n", err.message);
              refused++;
              continue;
            }
            c->op = -8;
            snprintf(c->label, sizeof c->label, "resample gap %s %s %ux%u -> 17x9 gap %g%s",
                     fname[f], ib_mode_name((ib_mode)m), w, h, gaps[g], g % 2 ? " box" : "");
            nc++;
          }
    for (int round = 0; round < n_resample; round++)
      for (int f = 1; f <= 5; f++)
        for (int m = 1; m <= 6; m++)
          for (int t = 0; t < 5 && nc < cap; t++) {
            const double *q = tall[t];
            const uint32_t w = (uint32_t)q[0], h = (uint32_t)q[1];
            jg_begin(&j, &darena, &r, (ib_mode)m, w, h, key++);
            int p = jg_op(&j, &r, JG_RESIZE, 0, (ib_mode)m, w, h, -1);
            Imgbatch__V1__ResizeOp *rz = j.nodes[p]->resize;
            rz->resample = (Imgbatch__V1__Resample)f;
            rz->width = (uint32_t)q[2], rz->height = (uint32_t)q[3];
            rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT__NOT_SET;
            rz->box = NULL;
            if (q[4] >= 0) {
              rz->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX;
              rz->box = jg_alloc(j.a, sizeof *rz->box);
              imgbatch__v1__box__init(rz->box);
              rz->box->left = 0, rz->box->top = q[4], rz->box->right = w, rz->box->bottom = q[5];
            }
            rz->reducing_gap_present_case =
                q[6] > 0 ? IMGBATCH__V1__RESIZE_OP__REDUCING_GAP_PRESENT_REDUCING_GAP
                         : IMGBATCH__V1__RESIZE_OP__REDUCING_GAP_PRESENT__NOT_SET;
            rz->reducing_gap = q[6];
            ccase *c = &cs[nc];
            if (!(c->g = jg_finish(&j, &err))) {
              fprintf(logf_, "refused resample tall: %s\n", err.message);
              refused++;
              continue;
            }
            c->op = -9;
            snprintf(c->label, sizeof c->label, "resample tall %s %s %ux%u -> %ux%u%s%s", fname[f],
                     ib_mode_name((ib_mode)m), w, h, rz->width, rz->height, q[4] >= 0 ? " box" : "",
                     q[6] > 0 ? " gap 2" : "");
            nc++;
          }
    free(darena.p);
  }

  /* 3f. --renditions N (default 60): jobs with 2-5 renditions (contract 3)
   * over a random chain - the source node in every third, a node named
   * twice in another format (RAW, then PNG where the mode has it, else RAW
   * with another compression field: a different CpuOutput) in every
   * fourth, the terminal in every other; every fifth chain only
   * pointwise ops (a fused run the plan must split at each rendition
   * node). With --big, 4 more on 1024 x 768 RGBA in one run (the large
   * jobs' pipeline). Each rendition's image must equal the CPU backend's
   * (ib_cpu_execute_cached), in the Job's order. Tallied in the row
   * "renditions". Drawn from a generator of their own (seeded by --seed
   * alone), so that later sections draw what they drew before and every
   * run of one seed - the warm start, the sanitizers' - asks for the same
   * kernels whatever its --random. */
  int n_rend_begin = (int)nc, n_rend_big = (int)nc;
  {
    static const int pointwise[] = {JG_INVERT, JG_POINT, JG_BRIGHTNESS};
    jg_rng rr = {seed ^ 0x3f3f3f3full};
    const int nbig = big && n_rend > 0 ? 4 : 0;
    jg_arena rendarena = {malloc(3u << 26), 0, 3u << 26};
    for (int k = 0; k < n_rend + nbig && nc < cap; k++) {
      const bool is_big = k >= n_rend;
      if (k == n_rend) n_rend_big = (int)nc;
      ib_mode m = is_big ? IB_MODE_RGBA : (ib_mode)(1 + jg_below(&rr, 6));
      uint32_t w = is_big ? 1024 : 1 + jg_below(&rr, 300),
               h = is_big ? 768 : 1 + jg_below(&rr, 200);
      jg_begin(&j, &rendarena, &rr, m, w, h, key++);
      j.job.contract_version = 3;
      const bool only_point = k % 5 == 2 || is_big;
      int prev = 0, len = 1 + (int)jg_below(&rr, 6);
      char label[160];
      int lw = snprintf(label, sizeof label, "renditions %s %ux%u:", ib_mode_name(m), w, h);
      for (int q = 0; q < len; q++) {
        int op, tries = 0;
        do
          op = only_point && tries++ < 32 ? pointwise[jg_below(&rr, 3)]
                                          : (int)jg_below(&rr, JG_COUNT);
        while (!jg_admitted(op, m));
        prev = jg_chain_op(&j, &rr, op, prev, &m, &w, &h);
        if (lw < (int)sizeof label)
          lw += snprintf(label + lw, sizeof label - (size_t)lw, " %s", jg_names[op]);
      }
      /* The nodes' modes, as validation infers them: the job parsed once
       * without renditions. */
      ib_graph *plain = jg_finish(&j, &err);
      if (!plain) {
        fprintf(logf_, "refused %s: %s\n", label, err.message);
        refused++;
        continue;
      }
      const uint32_t n_nodes = (uint32_t)plain->n_nodes;
      const int nr = is_big ? 4 : 2 + (int)jg_below(&rr, 4);
      uint32_t nodes[5];
      for (int q = 0; q < nr; q++) nodes[q] = jg_below(&rr, n_nodes);
      if (k % 3 == 0) nodes[0] = 0;                /* the source */
      if (k % 2 == 1) nodes[nr - 1] = n_nodes - 1; /* the terminal */
      if (k % 4 == 1) nodes[1] = nodes[0];         /* a node twice */
      if (is_big) nodes[0] = 0, nodes[1] = n_nodes / 2, nodes[2] = n_nodes - 1;
      Imgbatch__V1__Rendition **rl = jg_alloc(&rendarena, (size_t)nr * sizeof *rl);
      for (int q = 0; q < nr; q++) {
        int seen = 0; /* earlier renditions of the same node: each a different output */
        for (int e = 0; e < q; e++) seen += nodes[e] == nodes[q];
        Imgbatch__V1__Rendition *rd = jg_alloc(&rendarena, sizeof *rd);
        imgbatch__v1__rendition__init(rd);
        rd->node = nodes[q];
        rd->output = jg_alloc(&rendarena, sizeof *rd->output);
        imgbatch__v1__cpu_output__init(rd->output);
        if (seen == 1) {
          rd->output->format = IMGBATCH__V1__FORMAT__PNG;
          ib_error e = {0};
          if (ib_output_check(rd->output, plain->nodes[nodes[q]].shape.mode, IB_STAGE_VALIDATE,
                              &e) != IB_OK)
            rd->output->format = IMGBATCH__V1__FORMAT__RAW, rd->output->compression = 1;
        } else if (seen > 1) {
          rd->output->compression = (uint32_t)seen;
        }
        rl[q] = rd;
        if (lw < (int)sizeof label)
          lw += snprintf(label + lw, sizeof label - (size_t)lw, "%s%u%s", q ? "," : " |", nodes[q],
                         rd->output->format == IMGBATCH__V1__FORMAT__PNG ? "png" : "");
      }
      ib_graph_free(plain);
      j.job.n_renditions = (size_t)nr;
      j.job.renditions = rl;
      ccase *c = &cs[nc];
      if (!(c->g = jg_finish(&j, &err))) {
        fprintf(logf_, "FAIL refused %s: %s\n", label, err.message);
        refused++;
        continue;
      }
      c->op = -11;
      snprintf(c->label, sizeof c->label, "%s", label);
      nc++;
    }
    if (nbig == 0 || n_rend_big == n_rend_begin) n_rend_big = (int)nc;
    free(rendarena.p);
  }
  int n_rend_end = (int)nc;

  /* 4. the 4096 bound */
  if (big) {
    jg_arena bigarena = {malloc(3u << 27), 0, 3u << 27};
    for (int k = 0; k < 2; k++) {
      jg_begin(&j, &bigarena, &r, k ? IB_MODE_RGB : IB_MODE_RGBA, 4096, 4096, key++);
      int p = jg_op(&j, &r, JG_POINT, 0, k ? IB_MODE_RGB : IB_MODE_RGBA, 4096, 4096, -1);
      p = jg_op(&j, &r, JG_BRIGHTNESS, p, k ? IB_MODE_RGB : IB_MODE_RGBA, 4096, 4096, -1);
      if (k) jg_op(&j, &r, JG_INVERT, p, IB_MODE_RGB, 4096, 4096, -1);
      ccase *c = &cs[nc];
      if (!(c->g = jg_finish(&j, &err))) {
        fprintf(logf_, "refused big: %s\n", err.message);
        continue;
      }
      c->op = -3;
      snprintf(c->label, sizeof c->label, "big 4096x4096 %s chain", k ? "RGB" : "RGBA");
      nc++;
    }
    free(bigarena.p);
  }

  /* 4b. --large: every op past the old 4096 bound, on thin strips */
  if (large) {
    static const uint32_t lsz[][2] = {{4097, 3}, {3, 4097},  {8192, 5},
                                      {5, 8192}, {16384, 3}, {3, 16384}};
    static const ib_mode lmodes[] = {IB_MODE_L, IB_MODE_RGB, IB_MODE_RGBA};
    jg_arena larena = {malloc(8u << 20), 0, 8u << 20};
    for (int op = 0; op < JG_COUNT; op++)
      for (int mi = 0; mi < 3; mi++)
        for (int k = 0; k < 6; k++) {
          const ib_mode m = lmodes[mi];
          if (!jg_admitted(op, m) || nc == cap) continue;
          larena.used = 0; /* the graph holds its own copy of the job */
          jg_begin(&j, &larena, &r, m, lsz[k][0], lsz[k][1], key++);
          jg_op(&j, &r, op, 0, m, lsz[k][0], lsz[k][1], k % 2);
          ccase *c = &cs[nc];
          if (!(c->g = jg_finish(&j, &err))) {
            fprintf(logf_, "refused large %s %s %ux%u: %s\n", jg_names[op], ib_mode_name(m),
                    lsz[k][0], lsz[k][1], err.message);
            refused++;
            continue;
          }
          c->op = -10;
          c->has_tone = op == JG_TONE;
          snprintf(c->label, sizeof c->label, "large %s %s v%d %ux%u", jg_names[op],
                   ib_mode_name(m), k % 2, lsz[k][0], lsz[k][1]);
          nc++;
        }
    free(larena.p);
  }

  /* Run: the CPU reference one by one; the device through an executor,
   * runs of `batch` jobs (the batch and png sections each as one run, split
   * by the executor into submissions of at most 256 ops). */
  tally per_op[JG_COUNT] = {{0}}, chains = {0}, tone_chains = {0}, batches = {0}, bigs = {0},
        pngs = {0}, blurs = {0}, larges = {0}, resamples = {0}, reduces = {0}, gaps = {0},
        talls = {0}, rends = {0};
  int device_errors = 0;
  size_t most = (size_t)batch;
  if ((size_t)(n_batch_end - n_chain_end) > most) most = (size_t)(n_batch_end - n_chain_end);
  if ((size_t)(n_png_end - n_png_begin) > most) most = (size_t)(n_png_end - n_png_begin);
  ib_executor_options opts;
  ib_executor_options_default(&opts);
  opts.backend = cpu_only ? IB_BACKEND_CPU : IB_BACKEND_CUDA;
  opts.gpu_bytes = opts.host_bytes = 2048ull << 20;
  opts.max_in_flight = 2;
  opts.max_jobs = (uint32_t)(2 * most); /* a full batch: a whole run */
  ib_config *cfg = ib_cli_tool_options(&opts);
  if (!cfg) return 2;
  opts.module_cache_bytes = module_cache;
  ib_executor *main_ex = NULL;
  const ib_status created = ib_executor_create(&opts, &main_ex, &err);
  ib_config_destroy(cfg); /* the executor keeps its own copy */
  if (created != IB_OK) {
    printf("gpu_check: %s\n", err.message);
    return 2;
  }
  double gpu_s = 0;
  for (size_t i = 0; i < nc;) {
    size_t b = (int)i >= n_chain_end && (int)i < n_batch_end ? (size_t)(n_batch_end - (int)i)
               : (int)i >= n_png_begin && (int)i < n_png_end ? (size_t)(n_png_end - (int)i)
               : (int)i >= n_rend_big && (int)i < n_rend_end ? (size_t)(n_rend_end - (int)i)
                                                             : (size_t)batch;
    /* the renditions' small jobs end their runs before the big ones' run */
    if ((int)i >= n_rend_begin && (int)i < n_rend_big && i + b > (size_t)n_rend_big)
      b = (size_t)n_rend_big - i;
    if (i + b > nc) b = nc - i;
    gpu_s += run_cases(main_ex, cs, i, b);
    for (size_t k = i; k < i + b; k++) {
      ccase *c = &cs[k];
      tally *t = c->op >= 0     ? &per_op[c->op]
                 : c->op == -1  ? (c->has_tone ? &tone_chains : &chains)
                 : c->op == -2  ? &batches
                 : c->op == -4  ? &pngs
                 : c->op == -5  ? &blurs
                 : c->op == -6  ? &resamples
                 : c->op == -7  ? &reduces
                 : c->op == -8  ? &gaps
                 : c->op == -9  ? &talls
                 : c->op == -10 ? &larges
                 : c->op == -11 ? &rends
                                : &bigs;
      device_errors += judge(c, t);
      ib_image_release(&c->ref);
      for (size_t q = 0; q < c->ref_rend.n; q++) ib_image_release(&c->ref_rend.images[q]);
      free(c->ref_rend.images);
      c->ref_rend = (ib_cpu_renditions){0};
      ib_result_free(&c->res);
      ib_graph_free(c->g);
    }
    i += b;
  }
  int fails = 0, total = 0, equal = 0;
  printf("\n%-12s %6s %6s %6s %6s %8s\n", "op", "cases", "equal", "fail", "skip", "maxdiff");
  for (int op = 0; op < JG_COUNT; op++) {
    tally *t = &per_op[op];
    printf("%-12s %6d %6d %6d %6d %8d\n", jg_names[op], t->cases, t->equal, t->failed, t->skipped,
           t->maxdiff);
    fails += t->failed, total += t->cases, equal += t->equal;
  }
  /* per-op rows above are the single-op cases */
  tally *rest[] = {&chains,    &tone_chains, &batches, &bigs,  &pngs,   &blurs,
                   &resamples, &reduces,     &gaps,    &talls, &larges, &rends};
  const char *rn[] = {"chains",     "chains+tone", "batch",    "4096",
                      "png source", "blur",        "resample", "reduce 1..8",
                      "resize gap", "resize tall", "large",    "renditions"};
  for (int k = 0; k < 12; k++) {
    printf("%-12s %6d %6d %6d %6d %8d\n", rn[k], rest[k]->cases, rest[k]->equal, rest[k]->failed,
           rest[k]->skipped, rest[k]->maxdiff);
    fails += rest[k]->failed, total += rest[k]->cases, equal += rest[k]->equal;
  }
  printf(
      "TOTAL cases %d byte-equal %d failures %d (device errors %d, refused by validation %d, "
      "single-op cases %d) gpu wall %.2fs\n",
      total, equal, fails, device_errors, refused, n_single, gpu_s);
  /* 5. through the executor (ib_executor_* with backend CUDA): admission,
   * credits and submissions of the core driving ib_backend_cuda. Every
   * other job is larger and parsed into pinned memory - by
   * ib_executor_parse (a copy) or ib_executor_parse_buffer (in place) - so
   * its raw sources upload from where they lie (batched copies); the rest
   * by ib_graph_parse (heap sources, staged). Every image result must be a
   * lent range of its submission's arena. */
  tally exec_t = {0};
  r = (jg_rng){seed ^ 0x5eed0005ull};
  if (!cpu_only) {
    ib_executor *ex = tool_executor(IB_BACKEND_CUDA, true, "executor");
    if (!ex) {
      exec_t.failed++;
    } else {
      enum { NE = 48 };
      ib_graph *refg[NE] = {0};
      uint64_t ids[NE] = {0};
      for (int k = 0; k < NE; k++) {
        ib_mode m = (ib_mode)(1 + jg_below(&r, 6));
        const int pinned = k % 2 == 0;
        uint32_t w = 1 + jg_below(&r, pinned ? 600 : 200), h = 1 + jg_below(&r, pinned ? 400 : 100);
        jg_begin(&j, &arena, &r, m, w, h, key++);
        int prev = 0;
        for (int q = 0; q < 3; q++) {
          int op;
          do op = (int)jg_below(&r, JG_COUNT);
          while (!jg_admitted(op, m) || op == JG_TONE);
          prev = jg_chain_op(&j, &r, op, prev, &m, &w, &h);
        }
        ib_graph *g1 = NULL, *g2 = jg_finish(&j, &err);
        if (!g2) continue;
        if (pinned) {
          size_t len = imgbatch__v1__job__get_packed_size(&j.job);
          uint8_t *buf = malloc(len ? len : 1);
          imgbatch__v1__job__pack(&j.job, buf);
          ib_status pst;
          if (k % 4 == 0) { /* copied into pinned memory */
            pst = ib_executor_parse(ex, buf, len, NULL, &g1, NULL, &err);
            free(buf);
          } else { /* in place: pixels stay in the executor's buffer */
            uint8_t *eb = ib_executor_buffer(ex, len);
            if (eb) memcpy(eb, buf, len);
            free(buf);
            pst = eb ? ib_executor_parse_buffer(ex, eb, len, NULL, &g1, NULL, &err) : IB_INTERNAL;
          }
          if (pst != IB_OK) fprintf(logf_, "FAIL executor parse %d: %s\n", k, err.message);
        } else {
          g1 = jg_finish(&j, &err);
        }
        if (!g1) {
          ib_graph_free(g2);
          exec_t.failed++;
          exec_t.cases++;
          continue;
        }
        refg[k] = g2;
        if (submit_job(ex, g1, &ids[k], &err) != IB_OK) {
          fprintf(logf_, "FAIL executor submit %d: %s\n", k, err.message);
          ib_graph_free(g1);
          exec_t.failed++;
          exec_t.cases++;
          ib_graph_free(refg[k]);
          refg[k] = NULL;
        }
      }
      ib_results *rs = NULL;
      if (ib_executor_join(ex, &rs) == IB_OK) {
        ib_result res;
        while (ib_results_next(rs, &res) == IB_OK) {
          int k = 0;
          while (k < NE && !(refg[k] && ids[k] == res.job_id)) k++;
          exec_t.cases++;
          if (k == NE) {
            exec_t.failed++;
            fprintf(logf_, "FAIL executor: unknown job id %llu\n", (unsigned long long)res.job_id);
          } else {
            ib_image ref = {0};
            ib_error e = {0};
            ib_status cst = ib_cpu_execute(refg[k], &ref, &e);
            int md = 0;
            if (!res.ok || cst != IB_OK) {
              exec_t.failed++;
              fprintf(logf_, "FAIL executor job %llu: %s / cpu %s\n",
                      (unsigned long long)res.job_id, res.ok ? "ok" : res.error.message,
                      cst == IB_OK ? "ok" : e.message);
            } else if (!res.image.free_fn) {
              exec_t.failed++;
              fprintf(logf_, "FAIL executor job %llu: result not lent from its arena\n",
                      (unsigned long long)res.job_id);
            } else if (compare(&ref, &res.image, &md)) {
              exec_t.equal++;
            } else {
              exec_t.failed++;
              exec_t.maxdiff = md > exec_t.maxdiff ? md : exec_t.maxdiff;
              fprintf(logf_, "DIFF executor job %llu: max |diff| %d\n",
                      (unsigned long long)res.job_id, md);
            }
            ib_image_release(&ref);
            ib_graph_free(refg[k]);
            refg[k] = NULL;
          }
          ib_result_free(&res);
        }
        ib_results_close(rs);
      }
      ib_executor_destroy(ex);
    }
    printf("%-12s %6d %6d %6d %6d %8d\n", "executor", exec_t.cases, exec_t.equal, exec_t.failed,
           exec_t.skipped, exec_t.maxdiff);
    fails += exec_t.failed;
    tally slab_t = slab_check(&r, &j, &arena, &key);
    printf("%-12s %6d %6d %6d %6d %8d\n", "slab", slab_t.cases, slab_t.equal, slab_t.failed,
           slab_t.skipped, slab_t.maxdiff);
    fails += slab_t.failed;
    tally res_t = resident_check(&r, &j, &arena, &key);
    printf("%-12s %6d %6d %6d %6d %8d\n", "resident", res_t.cases, res_t.equal, res_t.failed,
           res_t.skipped, res_t.maxdiff);
    fails += res_t.failed;
  }
  if (big) {
    tally cap_t = capacity_check(cpu_only ? IB_BACKEND_CPU : IB_BACKEND_CUDA, &r, &j, &arena);
    printf("%-12s %6d %6d %6d %6d %8d\n", "capacity", cap_t.cases, cap_t.equal, cap_t.failed,
           cap_t.skipped, cap_t.maxdiff);
    fails += cap_t.failed;
  }
  ib_executor_counters mc;
  ib_executor_counters_get(main_ex, &mc);
  if (cpu_only)
    printf("\n");
  else
    printf(
        "nvrtc: %llu compiled (%.1f s), %llu from disk (%llu corrupt), %llu from memory, %llu "
        "evicted; cache dir '%s'; interpreter tier %llu stages, %llu waited for a compile; "
        "%llu blur groups on global-memory passes\n",
        (unsigned long long)mc.nvrtc_compiles, (double)mc.nvrtc_compile_us * 1e-6,
        (unsigned long long)mc.module_cache_hits_disk, (unsigned long long)mc.disk_cache_corrupt,
        (unsigned long long)mc.module_cache_hits_memory,
        (unsigned long long)mc.module_cache_evictions, opts.cache_dir ? opts.cache_dir : "",
        (unsigned long long)mc.interp_executions, (unsigned long long)mc.jobs_waited_compile,
        (unsigned long long)mc.blur_global_passes);
  printf("pipeline (main runs): %llu of %llu submissions pipelined, in %llu pieces\n",
         (unsigned long long)mc.pipelined_submissions, (unsigned long long)mc.submissions,
         (unsigned long long)mc.pipelined_pieces);
  ib_executor_destroy(main_ex);
  free(cs);
  free(arena.p);
  if (logf_ != stderr) fclose(logf_);
  return fails ? 1 : 0;
}
