/*
 * api_bench.h - the through-the-API half of gpu_bench (docs/design.md, "The
 * benchmark": fresh graph construction, upload, execution, materialization
 * of the terminal bytes),
 * driven through the public executor only (imgbatch.h):
 *
 *   serialized Job (raw source bytes, packed before timing)
 *     -> zero copy: the producer writes it into an ib_executor_buffer (the
 *        fetch or read it does anyway; pinned memory on CUDA) and
 *        ib_executor_parse_buffer parses it in place - the upload DMAs the
 *        raw pixels from that buffer;
 *        copy-parse: ib_executor_parse unpacks the producer's bytes (one
 *        more CPU pass over the raw pixels, inside imgbatch)
 *     -> run stream of a CUDA executor (queue mode, max_in_flight submissions)
 *     -> ib_results_next (a lent image in the pinned download arena)
 *     -> ib_result_free right away.
 *
 * Feeds: zero copy with the buffers written before the stream and the run
 * callback parsing (imgbatch's own cost: the main number); zero copy with
 * producer threads writing and parsing ahead into a bounded queue the
 * callback pops (a worker whose consumer threads fetch into the buffers:
 * their memcpy overlaps the stream and is reported as "ingest copy");
 * copy-parse in the callback and on producer threads (the previous path).
 * Every case's Job-0 result through both ingest paths is checked byte for
 * byte against the CPU backend on the same Job bytes.
 * Tool code: a failure prints what failed and exits.
 */
#ifndef IB_BENCH_API_BENCH_H
#define IB_BENCH_API_BENCH_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "imgbatch.h"
#include "tools/jobgen.h"

static double ab_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* This thread's CPU time. */
static double ab_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void ab_die(const char *what, const char *detail) {
  fflush(stdout);
  printf("bench: %s: %s\n", what, detail ? detail : "");
  exit(1);
}

static void ab_check(ib_status st, const char *what, const ib_error *err) {
  if (st == IB_OK) return;
  char msg[400];
  snprintf(msg, sizeof msg, "%s%s%s", ib_status_name(st), err && err->message[0] ? ": " : "",
           err ? err->message : "");
  ab_die(what, msg);
}

/* ------------------------------------------------------------ cases */

/* One representative single-op job per op family. */
enum {
  AB_POINT,
  AB_CONVERT,
  AB_TONE,
  AB_RANK,
  AB_KERNEL,
  AB_GAUSS2,
  AB_GAUSS8,
  AB_BOX,
  AB_RESIZE,
  AB_TRANSPOSE,
  AB_CHOPS,
  AB_BLEND,
  AB_FAMILIES,
  AB_INVERT = AB_FAMILIES,
  AB_CHAIN5,   /* point > brightness > color > gaussian r2 > mirror */
  AB_CHAIN_PW, /* point > brightness > point: pointwise, folds into one table */
  AB_ALL
};
static const char *const ab_names[] = {
    "point (LUT)", "convert ->L", "tone",        "median 3",    "kernel 3x3",
    "gaussian r2", "gaussian r8", "box blur r5", "resize 0.5x", "transpose",
    "chops add",   "blend 0.5",   "invert",      "chain5",      "point>bri>point"};
/* Short names of the families in bench CSV files (bench/workloads.py uses
 * the same ones for the Pillow and peer baselines). */
static const char *const ab_ids[] = {"point",  "convert_l", "tone",   "median3",     "kernel3",
                                     "gauss2", "gauss8",    "box5",   "resize_half", "transpose",
                                     "add",    "blend",     "invert", "chain5",      "chain_pw"};

/* N packed Jobs of one case, handed out round robin; Job i carries key i. */
typedef struct ab_set {
  uint8_t **buf;
  size_t *len;
  int n;
  ib_mode in_mode, out_mode;
  uint32_t side, out_w, out_h;
  uint64_t in_bytes, out_bytes; /* per image: raw source bytes, terminal bytes */
} ab_set;

/* A second raw input of the same shape, read by a new two-input node. */
static Imgbatch__V1__Node *ab_two_input(jg_job *j, jg_rng *r, Imgbatch__V1__Node__OpCase op,
                                        ib_mode m, uint32_t side) {
  int src2 = jg_extra(j, r, m, side, side);
  return jg_node(j, op, 0, src2);
}

/* Builds the Job of family `fam`; the parameters are fixed so every run
 * measures the same work (jg_op's random ones are overridden). */
static void ab_build(jg_job *j, jg_arena *a, jg_rng *r, int fam, ib_mode m, uint32_t side,
                     uint64_t key) {
  jg_begin(j, a, r, m, side, side, key);
  Imgbatch__V1__Node *n = NULL;
  switch (fam) {
    case AB_POINT: jg_op(j, r, JG_POINT, 0, m, side, side, -1); break;
    case AB_INVERT: jg_op(j, r, JG_INVERT, 0, m, side, side, -1); break;
    case AB_CHAIN5: {
      int k = jg_op(j, r, JG_POINT, 0, m, side, side, -1);
      k = jg_op(j, r, JG_BRIGHTNESS, k, m, side, side, -1);
      k = jg_op(j, r, JG_COLOR, k, m, side, side, -1);
      n = j->nodes[k = jg_op(j, r, JG_GAUSS, k, m, side, side, -1)];
      n->gaussian_blur->radius_x = n->gaussian_blur->radius_y = 2.0;
      jg_op(j, r, JG_TRANSPOSE, k, m, side, side, IMGBATCH__V1__TRANSPOSE_METHOD__FLIP_LEFT_RIGHT);
      break;
    }
    case AB_CHAIN_PW: {
      int k = jg_op(j, r, JG_POINT, 0, m, side, side, -1);
      k = jg_op(j, r, JG_BRIGHTNESS, k, m, side, side, -1);
      jg_op(j, r, JG_POINT, k, m, side, side, -1);
      break;
    }
    case AB_CONVERT: jg_op(j, r, JG_CONVERT, 0, m, side, side, 0); break; /* sub 0: "L" */
    case AB_TONE: jg_op(j, r, JG_TONE, 0, m, side, side, -1); break;
    case AB_RANK:
      n = j->nodes[jg_op(j, r, JG_RANK, 0, m, side, side, 0)]; /* sub 0: size 3 */
      n->rank_filter->rank = 4;
      break;
    case AB_KERNEL: jg_op(j, r, JG_KERNEL, 0, m, side, side, 0); break; /* sub 0: 3x3 */
    case AB_GAUSS2:
    case AB_GAUSS8:
      n = j->nodes[jg_op(j, r, JG_GAUSS, 0, m, side, side, -1)];
      n->gaussian_blur->radius_x = n->gaussian_blur->radius_y = fam == AB_GAUSS2 ? 2.0 : 8.0;
      break;
    case AB_BOX:
      n = j->nodes[jg_op(j, r, JG_BOXBLUR, 0, m, side, side, -1)];
      n->box_blur->radius_x = n->box_blur->radius_y = 5.0;
      break;
    case AB_RESIZE: /* NEAREST: the one filter the backends admit */
      n = j->nodes[jg_op(j, r, JG_RESIZE, 0, m, side, side, -1)];
      n->resize->width = n->resize->height = side / 2;
      n->resize->resample = IMGBATCH__V1__RESAMPLE__NEAREST;
      n->resize->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT__NOT_SET;
      break;
    case AB_TRANSPOSE:
      jg_op(j, r, JG_TRANSPOSE, 0, m, side, side, IMGBATCH__V1__TRANSPOSE_METHOD__TRANSPOSE);
      break;
    case AB_CHOPS:
      n = ab_two_input(j, r, IMGBATCH__V1__NODE__OP_CHOPS, m, side);
      n->chops = jg_alloc(j->a, sizeof *n->chops);
      imgbatch__v1__chops_op__init(n->chops);
      n->chops->function = IMGBATCH__V1__CHOPS_FUNCTION__ADD;
      n->chops->scale = 1.0;
      break;
    case AB_BLEND:
      n = ab_two_input(j, r, IMGBATCH__V1__NODE__OP_BLEND, m, side);
      n->blend = jg_alloc(j->a, sizeof *n->blend);
      imgbatch__v1__blend_op__init(n->blend);
      n->blend->alpha = 0.5;
      break;
    default: ab_die("unknown family", NULL);
  }
}

static ab_set ab_set_make(int fam, ib_mode m, uint32_t side, int n) {
  ab_set s = {.n = n, .in_mode = m, .out_mode = m, .side = side, .out_w = side, .out_h = side};
  if (fam == AB_CONVERT) s.out_mode = IB_MODE_L;
  if (fam == AB_RESIZE) s.out_w = s.out_h = side / 2;
  uint64_t one = (uint64_t)side * side * ib_mode_bands(m);
  s.in_bytes = fam == AB_CHOPS || fam == AB_BLEND ? 2 * one : one;
  s.out_bytes = (uint64_t)s.out_w * s.out_h * ib_mode_bands(s.out_mode);
  s.buf = calloc((size_t)n, sizeof *s.buf);
  s.len = calloc((size_t)n, sizeof *s.len);
  size_t cap = (size_t)(s.in_bytes + (1u << 20));
  jg_arena a = {malloc(cap), 0, cap};
  if (!s.buf || !s.len || !a.p) ab_die("out of memory", "building jobs");
  jg_rng r = {0x9e3779b97f4a7c15ull ^ ((uint64_t)fam << 32) ^ side};
  jg_job j;
  for (int i = 0; i < n; i++) {
    ab_build(&j, &a, &r, fam, m, side, (uint64_t)i);
    if (!(s.buf[i] = jg_pack(&j, &s.len[i]))) ab_die("out of memory", "packing a job");
  }
  free(a.p);
  return s;
}

static void ab_set_free(ab_set *s) {
  for (int i = 0; i < s->n; i++) free(s->buf[i]);
  free(s->buf);
  free(s->len);
  *s = (ab_set){0};
}

/* ------------------------------------------------------------ CPU reference */

/* The CPU backend's bytes for Job 0 of a set, computed on a thread while the
 * device warms up (ib_graph_parse: heap memory, no device involved). */
typedef struct ab_ref {
  const ab_set *set;
  pthread_t thread;
  ib_image img;
} ab_ref;

static void *ab_ref_main(void *p) {
  ab_ref *ref = p;
  ib_error err = {0};
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.backend = IB_BACKEND_CPU;
  o.gpu_bytes = o.host_bytes = 8ull << 30;
  o.queue = false;
  ib_executor *ex = NULL;
  ab_check(ib_executor_create(&o, &ex, &err), "cpu executor create", &err);
  ib_graph *g = NULL;
  ib_key key = {0};
  ab_check(
      ib_graph_parse(ref->set->buf[0], ref->set->len[0], &(ib_graph_limits){0}, &g, &key, &err),
      "cpu reference ib_graph_parse", &err);
  uint64_t id = 0;
  ab_check(ib_executor_submit(ex, g, NULL, &id, &err), "cpu reference submit", &err);
  ib_results *rs = NULL;
  ab_check(ib_executor_join(ex, &rs), "cpu reference join", NULL);
  ib_result res;
  ab_check(ib_results_next(rs, &res), "cpu reference ib_results_next", NULL);
  if (!res.ok) ab_check(res.error.status, "cpu reference result", &res.error);
  ref->img = res.image;
  res.image = (ib_image){0}; /* moved out: ref->img owns the pixels */
  ib_result_free(&res);
  ib_results_close(rs);
  ib_executor_destroy(ex);
  return NULL;
}

static void ab_ref_start(ab_ref *ref, const ab_set *set) {
  *ref = (ab_ref){.set = set};
  if (pthread_create(&ref->thread, NULL, ab_ref_main, ref) != 0)
    ab_die("pthread_create", "cpu reference");
}

static void ab_ref_join(ab_ref *ref) {
  if (pthread_join(ref->thread, NULL) != 0) ab_die("pthread_join", "cpu reference");
}

/* Compares a device result with the joined reference; MISMATCH exits 1 so
 * a wrong-but-fast path never reports numbers. */
static void ab_ref_compare(const ab_ref *ref, const ib_image *dev, const char *label) {
  const ib_image *c = &ref->img;
  if (!dev->data) ab_die(label, "no result with key 0 was seen in the warm-up");
  if (c->mode != dev->mode || c->width != dev->width || c->height != dev->height) {
    printf("MISMATCH %s: cuda %s %ux%u, cpu %s %ux%u\n", label, ib_mode_name(dev->mode), dev->width,
           dev->height, ib_mode_name(c->mode), c->width, c->height);
    exit(1);
  }
  size_t n = ib_image_bytes(c);
  if (memcmp(c->data, dev->data, n) != 0) {
    size_t i = 0;
    while (c->data[i] == dev->data[i]) i++;
    printf("MISMATCH %s: first differing byte %zu of %zu (cuda %u, cpu %u)\n", label, i, n,
           dev->data[i], c->data[i]);
    exit(1);
  }
}

/* ------------------------------------------------------------ feeds */

/* How a Job reaches the executor. AB_ZERO_COPY: the producer writes the
 * packed Job into an ib_executor_buffer (its fetch or read, which it does
 * anyway: the "ingest copy") and hands it to ib_executor_parse_buffer, which
 * parses in place. AB_COPY_PARSE: ib_executor_parse over the producer's own
 * bytes (one more CPU pass over the raw pixels, inside imgbatch). */
typedef enum ab_feed_kind { AB_ZERO_COPY, AB_COPY_PARSE } ab_feed_kind;

typedef struct ab_item {
  ib_graph *g;
  ib_status st;
  ib_error err;
  double parse_s;  /* ib_executor_parse or ib_executor_parse_buffer */
  double buffer_s; /* ib_executor_buffer */
  double copy_s;   /* the producer's memcpy into the buffer */
} ab_item;

/* Producer threads parse ahead into a bounded ring the run callback pops. */
typedef struct ab_queue {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  ab_item *ring;
  int cap, head, count;
  int claimed; /* inputs a producer has taken */
  bool stop;
} ab_queue;

/* What the run input callback hands out. */
typedef struct ab_feed {
  ib_executor *ex;
  const ab_set *set;
  ab_feed_kind kind;
  uint8_t **filled; /* zero copy: input i's buffer, written before the stream */
  int first_job;    /* input i is Job (first_job + i) mod set->n */
  int n, handed;
  double parse_s, buffer_s, copy_s; /* summed over inputs (and threads) */
  ab_queue *q;                      /* NULL: the callback parses itself */
  struct ab_ring *ring;             /* parse-ahead ring (written-ahead buffers) */
} ab_feed;

/* An executor buffer holding Job k of the set: the producer's write. */
static uint8_t *ab_fill(ib_executor *ex, const ab_set *set, int k, ab_item *it) {
  double t0 = ab_now();
  uint8_t *buf = ib_executor_buffer(ex, set->len[k]);
  double t1 = ab_now();
  if (!buf) ab_die("ib_executor_buffer", "out of memory");
  memcpy(buf, set->buf[k], set->len[k]);
  it->buffer_s += t1 - t0;
  it->copy_s += ab_now() - t1;
  return buf;
}

static void ab_parse(const ab_feed *f, int i, ab_item *it) {
  int k = (f->first_job + i) % f->set->n;
  ib_key key = {0};
  const ib_graph_limits lim = {0};
  if (f->kind == AB_COPY_PARSE) {
    double t0 = ab_now();
    it->st = ib_executor_parse(f->ex, f->set->buf[k], f->set->len[k], &lim, &it->g, &key, &it->err);
    it->parse_s += ab_now() - t0;
  } else {
    uint8_t *buf = f->filled ? f->filled[i] : ab_fill(f->ex, f->set, k, it);
    double t0 = ab_now();
    it->st = ib_executor_parse_buffer(f->ex, buf, f->set->len[k], &lim, &it->g, &key, &it->err);
    it->parse_s += ab_now() - t0;
  }
  ib_key_clear(&key);
}

typedef struct ab_producer {
  ab_feed *f;
  pthread_t thread;
} ab_producer;

static void *ab_producer_main(void *p) {
  ab_feed *f = ((ab_producer *)p)->f;
  ab_queue *q = f->q;
  for (;;) {
    pthread_mutex_lock(&q->mu);
    if (q->stop || q->claimed >= f->n) {
      pthread_mutex_unlock(&q->mu);
      return NULL;
    }
    int i = q->claimed++;
    pthread_mutex_unlock(&q->mu);
    ab_item it = {0};
    ab_parse(f, i, &it);
    pthread_mutex_lock(&q->mu);
    while (q->count == q->cap && !q->stop) pthread_cond_wait(&q->not_full, &q->mu);
    if (q->stop) {
      pthread_mutex_unlock(&q->mu);
      ib_graph_free(it.g);
      return NULL;
    }
    q->ring[(q->head + q->count++) % q->cap] = it;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
  }
}

/* Parsers over buffers written ahead: parser t parses inputs t, t + P,
 * ... into their own slots, at most `ahead` inputs past the last one
 * taken, and the run callback takes input i from slot i once it is ready:
 * inputs keep their order, and nothing but one flag per input and a
 * counter is shared (no lock, no wake-up call on the driving thread - a
 * condition variable's futex wake per input cost more than the parse it
 * moved). Waiting sides yield. */
typedef struct ab_ring {
  ab_item *items;
  atomic_int *ready;
  atomic_int taken; /* inputs the callback took */
  atomic_bool stop;
  int parsers, ahead;
} ab_ring;

typedef struct ab_parser {
  ab_feed *f;
  int t;
  pthread_t thread;
} ab_parser;

static void *ab_parser_main(void *p) {
  ab_parser *me = p;
  ab_feed *f = me->f;
  ab_ring *r = f->ring;
  for (int i = me->t; i < f->n; i += r->parsers) {
    while (i - atomic_load_explicit(&r->taken, memory_order_acquire) >= r->ahead)
      if (atomic_load_explicit(&r->stop, memory_order_relaxed))
        return NULL;
      else
        sched_yield();
    ab_parse(f, i, &r->items[i]);
    atomic_store_explicit(&r->ready[i], 1, memory_order_release);
  }
  return NULL;
}

static ab_item ab_ring_take(ab_feed *f, int i) {
  ab_ring *r = f->ring;
  for (int spin = 0; !atomic_load_explicit(&r->ready[i], memory_order_acquire); spin++)
    if (spin > 64) sched_yield();
  ab_item it = r->items[i];
  r->items[i].g = NULL;
  atomic_store_explicit(&r->taken, i + 1, memory_order_release);
  return it;
}

static void ab_ring_start(ab_feed *f, ab_ring *r, ab_parser *ps, int parsers, int ahead,
                          const char *label) {
  *r = (ab_ring){.parsers = parsers, .ahead = ahead > 0 ? ahead : 1};
  r->items = calloc((size_t)f->n, sizeof *r->items);
  r->ready = calloc((size_t)f->n, sizeof *r->ready);
  if (!r->items || !r->ready) ab_die(label, "out of memory (ring)");
  f->ring = r;
  for (int t = 0; t < parsers; t++) {
    ps[t] = (ab_parser){.f = f, .t = t};
    if (pthread_create(&ps[t].thread, NULL, ab_parser_main, &ps[t]) != 0)
      ab_die(label, "pthread_create failed");
  }
}

static void ab_ring_stop(ab_feed *f, ab_ring *r, ab_parser *ps, int parsers) {
  atomic_store(&r->stop, true);
  for (int t = 0; t < parsers; t++) pthread_join(ps[t].thread, NULL);
  for (int i = 0; i < f->n; i++)
    if (atomic_load(&r->ready[i])) ib_graph_free(r->items[i].g);
  free(r->items);
  free(r->ready);
  f->ring = NULL;
}

static ib_status ab_next(void *user, ib_input *in, ib_error *err) {
  ab_feed *f = user;
  if (f->handed == f->n) return IB_END;
  f->handed++;
  ab_item it = {0};
  if (f->ring) {
    it = ab_ring_take(f, f->handed - 1);
  } else if (!f->q) {
    ab_parse(f, f->handed - 1, &it);
  } else {
    ab_queue *q = f->q;
    pthread_mutex_lock(&q->mu);
    while (q->count == 0) pthread_cond_wait(&q->not_empty, &q->mu);
    it = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->mu);
  }
  f->parse_s += it.parse_s;
  f->buffer_s += it.buffer_s;
  f->copy_s += it.copy_s;
  if (it.st != IB_OK) {
    *err = it.err;
    return it.st;
  }
  in->graph = it.g;
  return IB_OK;
}

/* ------------------------------------------------------------ one stream */

typedef struct ab_run {
  double ms;        /* per image, wall clock of the run stream */
  double parse_ms;  /* per image, inside ib_executor_parse(_buffer) (summed over threads) */
  double buffer_ms; /* per image, inside ib_executor_buffer */
  double copy_ms;   /* per image, the producer's memcpy into executor buffers */
  double cpu_ms;    /* per image, the driving thread's CPU time over the stream */
  double t_start, t_first, t_end; /* ab_now() at the stream's start, first and last result */
} ab_run;

/* Called around each timed zero-copy stream of ab_stream_prefilled_by
 * (after its buffers were written): phase 0 before it, phase 1 after it
 * with its times (gpu_bench: the backend's host profile and timeline of
 * that stream alone, warm-ups left out). NULL: none. */
static void (*ab_timed_hook)(ib_executor *ex, const char *label, int phase, const ab_run *run);

static void ab_expect_shape(const ib_result *res, const ab_set *s, const char *label) {
  const ib_image *im = &res->image;
  if (res->kind != IB_RESULT_IMAGE || im->mode != s->out_mode || im->width != s->out_w ||
      im->height != s->out_h || !im->data)
    ab_die(label, "result is not the expected image");
}

/* How one stream is fed. */
typedef struct ab_feed_spec {
  ab_feed_kind kind;
  int producers;     /* 0: the run callback parses, else threads parse ahead */
  int qcap;          /* their queue */
  uint8_t **filled;  /* zero copy with the callback parsing: written beforehand */
  int first_job;     /* input i is Job (first_job + i) mod the set's size */
  bool parsed_first; /* written ahead with producers: every input parsed before
                      * the clock starts (host_bench: the driving thread's own
                      * cost for graphs parsed on other threads) */
} ab_feed_spec;

static void ab_producers_start(ab_feed *f, ab_queue *q, ab_producer *pr, int producers, int qcap,
                               const char *label) {
  *q = (ab_queue){.cap = qcap > 0 ? qcap : 1};
  f->q = q;
  q->ring = calloc((size_t)q->cap, sizeof *q->ring);
  if (!q->ring || pthread_mutex_init(&q->mu, NULL) || pthread_cond_init(&q->not_empty, NULL) ||
      pthread_cond_init(&q->not_full, NULL))
    ab_die(label, "queue set-up failed");
  for (int i = 0; i < producers; i++) {
    pr[i].f = f;
    if (pthread_create(&pr[i].thread, NULL, ab_producer_main, &pr[i]) != 0)
      ab_die(label, "pthread_create failed");
  }
}

static void ab_producers_stop(ab_queue *q, ab_producer *pr, int producers) {
  pthread_mutex_lock(&q->mu);
  q->stop = true;
  pthread_cond_broadcast(&q->not_full);
  pthread_mutex_unlock(&q->mu);
  for (int i = 0; i < producers; i++) pthread_join(pr[i].thread, NULL);
  for (int i = 0; i < q->count; i++) ib_graph_free(q->ring[(q->head + i) % q->cap].g);
  free(q->ring);
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->not_empty);
  pthread_cond_destroy(&q->not_full);
}

/* Drains a run stream, releasing each result at once; with `first` not
 * NULL, the result of Job 0 is copied there. Returns the results seen. */
static int ab_drain(ib_results *rs, const ab_set *s, ib_image *first, double *t_first,
                    const char *label) {
  int got = 0;
  for (;;) {
    ib_result res;
    ib_status st = ib_results_next(rs, &res);
    if (st == IB_END) break;
    if (!got) *t_first = ab_now();
    ab_check(st, "ib_results_next", NULL);
    if (!res.ok) {
      char what[256];
      snprintf(what, sizeof what, "%s: result %d (job %llu)", label, got,
               (unsigned long long)res.job_id);
      ab_check(res.error.status, what, &res.error);
    }
    ab_expect_shape(&res, s, label);
    if (first && !first->data && res.key.is_u64 && res.key.u64 == 0) {
      ab_check(ib_image_alloc(first, res.image.mode, res.image.width, res.image.height),
               "ib_image_alloc", NULL);
      memcpy(first->data, res.image.data, ib_image_bytes(&res.image));
    }
    ib_result_free(&res); /* gives the lent range back */
    got++;
  }
  return got;
}

/* Runs `n` inputs of `s` through one run stream of `ex`, fed as `spec`
 * says; the wall clock runs from ib_executor_run (producers started just
 * before) to the last result. */
static ab_run ab_stream(ib_executor *ex, const ab_set *s, int n, const ab_feed_spec *spec,
                        ib_image *first, const char *label) {
  ab_queue q;
  ab_feed f = {.ex = ex,
               .set = s,
               .kind = spec->kind,
               .filled = spec->filled,
               .first_job = spec->first_job,
               .n = n};
  ab_producer pr[64];
  ab_ring ring;
  ab_parser ps[64];
  int producers = spec->producers > 64 ? 64 : spec->producers;
  /* Written ahead: the producers only parse, through the ring. */
  const bool by_ring = producers > 0 && spec->filled;
  double t0 = ab_now();
  if (by_ring) {
    ab_ring_start(&f, &ring, ps, producers, spec->parsed_first ? n : spec->qcap, label);
    for (int i = 0; spec->parsed_first && i < n; i++)
      while (!atomic_load(&ring.ready[i])) sched_yield();
    if (spec->parsed_first) t0 = ab_now();
  } else if (producers > 0) {
    ab_producers_start(&f, &q, pr, producers, spec->qcap, label);
  }
  const double c0 = ab_cpu_now();
  ib_results *rs = NULL;
  ab_check(ib_executor_run(ex, ab_next, &f, &rs), "ib_executor_run", NULL);
  double t_first = 0;
  int got = ab_drain(rs, s, first, &t_first, label);
  double t1 = ab_now(), c1 = ab_cpu_now();
  ib_results_close(rs);
  if (by_ring)
    ab_ring_stop(&f, &ring, ps, producers);
  else if (producers > 0)
    ab_producers_stop(&q, pr, producers);
  if (got != n) {
    char msg[80];
    snprintf(msg, sizeof msg, "%d results for %d inputs", got, n);
    ab_die(label, msg);
  }
  return (ab_run){.ms = (t1 - t0) * 1e3 / n,
                  .parse_ms = f.parse_s * 1e3 / n,
                  .buffer_ms = f.buffer_s * 1e3 / n,
                  .copy_ms = f.copy_s * 1e3 / n,
                  .cpu_ms = (c1 - c0) * 1e3 / n,
                  .t_start = t0,
                  .t_first = t_first,
                  .t_end = t1};
}

/* The zero-copy feed with its writes off the clock: the producer fills the
 * executor buffers of a round (at most `budget` Job bytes) before the
 * stream starts, and the run callback only calls ib_executor_parse_buffer.
 * The rounds' stream times add up; the fill (ib_executor_buffer, which may
 * grow the pinned pool here, and the memcpy) is reported beside them.
 * parsers > 0: that many producer threads call ib_executor_parse_buffer on
 * the written buffers instead (on the clock, beside the stream; at most
 * qcap graphs ahead), and the callback only pops them - the parse off the
 * driving thread, as the API allows (ib_executor_parse_buffer is safe from
 * any thread while another drives the executor). */
/* Called with true right before and false right after each timed stream
 * of the feed written ahead, off its clock; NULL: not called. gpu_bench
 * --profile-range 1 sets it (cuProfilerStart / cuProfilerStop: the range
 * bench/trace_report.py, nsys --capture-range=cudaProfilerApi and ncu
 * --profile-from-start off keep, leaving out warm-ups and fills). */
static void (*ab_timed_mark)(bool start);

static ab_run ab_stream_prefilled_by(ib_executor *ex, const ab_set *s, int n, uint64_t budget,
                                     int parsers, int qcap, const char *label) {
  uint64_t total = 0;
  for (int i = 0; i < n; i++) total += s->len[i % s->n];
  uint64_t r64 = budget ? (total + budget - 1) / budget : 1;
  int rounds = r64 < 1 ? 1 : r64 > (uint64_t)n ? n : (int)r64;
  uint8_t **filled = calloc((size_t)(n + rounds - 1) / rounds, sizeof *filled);
  if (!filled) ab_die(label, "out of memory");
  ab_run sum = {0};
  for (int r = 0, done = 0; r < rounds; r++) {
    int m = (n - done) / (rounds - r);
    ab_item fill = {0};
    for (int i = 0; i < m; i++) filled[i] = ab_fill(ex, s, (done + i) % s->n, &fill);
    ab_feed_spec spec = {.kind = AB_ZERO_COPY,
                         .filled = filled,
                         .first_job = done,
                         .producers = parsers,
                         .qcap = qcap};
    if (ab_timed_hook) ab_timed_hook(ex, label, 0, NULL);
    if (ab_timed_mark) ab_timed_mark(true);
    ab_run one = ab_stream(ex, s, m, &spec, NULL, label);
    if (ab_timed_mark) ab_timed_mark(false);
    if (ab_timed_hook) ab_timed_hook(ex, label, 1, &one);
    sum.ms += one.ms * m;
    sum.parse_ms += one.parse_ms * m;
    sum.buffer_ms += fill.buffer_s * 1e3;
    sum.copy_ms += fill.copy_s * 1e3;
    sum.cpu_ms += one.cpu_ms * m;
    done += m;
  }
  free(filled);
  return (ab_run){.ms = sum.ms / n,
                  .parse_ms = sum.parse_ms / n,
                  .buffer_ms = sum.buffer_ms / n,
                  .copy_ms = sum.copy_ms / n,
                  .cpu_ms = sum.cpu_ms / n};
}

static ab_run ab_stream_prefilled(ib_executor *ex, const ab_set *s, int n, uint64_t budget,
                                  const char *label) {
  return ab_stream_prefilled_by(ex, s, n, budget, 0, 0, label);
}

static ib_executor *ab_executor(uint64_t gpu_bytes, uint64_t host_bytes, uint32_t max_jobs,
                                uint32_t in_flight) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  /* The tools' environment (IB_CUDA_PROFILE, IB_CACHE_DIR, ...) as for
   * gpu_bench's other executors: without it the host profile that
   * bench/profile.sh reads was never printed. */
  ib_config *cfg = ib_cli_tool_options(&o);
  if (!cfg) exit(2);
  o.backend = IB_BACKEND_CUDA;
  o.gpu_bytes = gpu_bytes;
  o.host_bytes = host_bytes;
  o.max_jobs = max_jobs;
  o.max_in_flight = in_flight;
  o.queue = true;
  ib_executor *ex = NULL;
  ib_error err = {0};
  const ib_status st = ib_executor_create(&o, &ex, &err);
  ib_config_destroy(cfg); /* the executor keeps its own copy */
  ab_check(st, "ib_executor_create (cuda)", &err);
  return ex;
}

/* ------------------------------------------------------------ cases of one size */

typedef struct ab_case {
  int fam;
  ib_mode mode;
  uint32_t side;
  ab_set set;
  ab_ref ref;
  ib_image first_zc, first_copy; /* Job 0's result through each ingest path */
  char label[96];
  uint64_t in_bytes, out_bytes;
  ab_run zc;                   /* zero copy, buffers written before the stream (the median
                                * of ab_params.reps streams) */
  double zc_min_ms, zc_max_ms; /* the fastest and slowest of those streams */
  int reps;                    /* how many there were */
  ab_run zc_parsers;           /* the same, parsed on ab_params.parsers producer threads */
  ab_run zc_threaded;          /* zero copy, producer threads write + parse */
  ab_run copy_one;             /* ib_executor_parse in the run callback */
  ab_run copy_threaded;        /* ib_executor_parse on producer threads */
  ab_run copy_threaded2;       /* the same with producers2 threads */
  int timed;                   /* images per timed stream */
} ab_case;

typedef struct ab_params {
  int images;             /* timed inputs per stream */
  int warmup;             /* untimed inputs first (zero-copy producers), Job 0 among them */
  int distinct;           /* packed Jobs, reused round robin (at most 64) */
  int producers;          /* threads of the threaded feeds */
  int qcap;               /* their queue */
  int producers2;         /* a second threaded copy-parse feed; 0 = none */
  uint64_t prefill_bytes; /* Job bytes written ahead per round of the zero-copy feed */
  bool zc_only;           /* time only the zero-copy feed written ahead */
  int rewarm;             /* untimed zero-copy inputs right before a case is timed: the
                           * device and pinned pools shaped for this case's window (every
                           * case was warmed up first, so the pools hold the last one's
                           * blocks, and growing or trimming them inside the timed stream
                           * costs cuMemAlloc / a synchronising cuMemFree); 0 = none */
  int parsers;            /* > 0: also time it parsed on that many producer threads */
  int reps;               /* timed streams of the zero-copy feed written ahead, back to back
                           * (1..AB_MAX_REPS; 0: 1); the median's figures are kept, so one
                           * stream slowed by the host does not decide a case */
} ab_params;

#define AB_MAX_REPS 9

typedef struct ab_builder {
  ab_case *c;
  int distinct;
  pthread_t thread;
} ab_builder;

static void *ab_build_main(void *p) {
  ab_builder *b = p;
  b->c->set = ab_set_make(b->c->fam, b->c->mode, b->c->side, b->distinct);
  return NULL;
}

static void ab_cases_build(ab_case *cs, int n, const ab_params *p) {
  ab_builder *b = calloc((size_t)n, sizeof *b);
  if (!b) ab_die("out of memory", "builders");
  for (int i = 0; i < n; i++) {
    ab_case *c = &cs[i];
    snprintf(c->label, sizeof c->label, "%s %s %u^2", ab_names[c->fam], ib_mode_name(c->mode),
             c->side);
    b[i] = (ab_builder){.c = c, .distinct = p->distinct};
    if (pthread_create(&b[i].thread, NULL, ab_build_main, &b[i]) != 0)
      ab_die("pthread_create", "builder");
  }
  for (int i = 0; i < n; i++)
    if (pthread_join(b[i].thread, NULL) != 0) ab_die("pthread_join", "builder");
  free(b);
}

static void ab_case_time(ib_executor *ex, ab_case *c, const ab_params *p) {
  ab_feed_spec zc = {.kind = AB_ZERO_COPY, .producers = p->producers, .qcap = p->qcap};
  ab_feed_spec one = {.kind = AB_COPY_PARSE, .producers = 0, .qcap = 0};
  ab_feed_spec thr = {.kind = AB_COPY_PARSE, .producers = p->producers, .qcap = p->qcap};
  ab_feed_spec thr2 = {.kind = AB_COPY_PARSE, .producers = p->producers2, .qcap = p->qcap};
  c->timed = p->images;
  if (p->rewarm > 0) ab_stream(ex, &c->set, p->rewarm, &zc, NULL, c->label);
  c->reps = p->reps > 1 ? (p->reps < AB_MAX_REPS ? p->reps : AB_MAX_REPS) : 1;
  ab_run runs[AB_MAX_REPS];
  for (int r = 0; r < c->reps; r++) {
    ab_run one = ab_stream_prefilled(ex, &c->set, p->images, p->prefill_bytes, c->label);
    int k = r;
    for (; k > 0 && runs[k - 1].ms > one.ms; k--) runs[k] = runs[k - 1];
    runs[k] = one;
  }
  c->zc = runs[c->reps / 2]; /* the upper middle for an even count */
  c->zc_min_ms = runs[0].ms;
  c->zc_max_ms = runs[c->reps - 1].ms;
  if (p->parsers > 0) {
    c->zc_parsers = ab_stream_prefilled_by(ex, &c->set, p->images, p->prefill_bytes, p->parsers,
                                           p->qcap, c->label);
    printf("  %-26s zero copy, %d parser threads: %.3f ms/img (parse_buffer %.4f per image)\n",
           c->label, p->parsers, c->zc_parsers.ms, c->zc_parsers.parse_ms);
  }
  if (p->zc_only) {
    char spread[64] = "";
    if (c->reps > 1)
      snprintf(spread, sizeof spread, " median of %d, %.3f-%.3f", c->reps, c->zc_min_ms,
               c->zc_max_ms);
    printf(
        "  %-26s zero copy %.3f ms/img (parse_buffer %.4f; ahead: buffer %.4f, ingest copy "
        "%.3f)%s\n",
        c->label, c->zc.ms, c->zc.parse_ms, c->zc.buffer_ms, c->zc.copy_ms, spread);
    fflush(stdout);
    return;
  }
  c->zc_threaded = ab_stream(ex, &c->set, p->images, &zc, NULL, c->label);
  c->copy_one = ab_stream(ex, &c->set, p->images, &one, NULL, c->label);
  c->copy_threaded = ab_stream(ex, &c->set, p->images, &thr, NULL, c->label);
  if (p->producers2 > 0)
    c->copy_threaded2 = ab_stream(ex, &c->set, p->images, &thr2, NULL, c->label);
  printf(
      "  %-26s zero copy %.3f ms/img (parse_buffer %.4f; ahead: buffer %.4f, ingest copy %.3f); "
      "%d producers %.3f (ingest copy %.3f); copy-parse %.3f (parse %.3f), %d threads %.3f\n",
      c->label, c->zc.ms, c->zc.parse_ms, c->zc.buffer_ms, c->zc.copy_ms, p->producers,
      c->zc_threaded.ms, c->zc_threaded.copy_ms, c->copy_one.ms, c->copy_one.parse_ms, p->producers,
      c->copy_threaded.ms);
  fflush(stdout);
}

/* Runs `n` cases: builds every case's Jobs (threads), starts every CPU
 * reference (threads) and warms each case up on the device meanwhile
 * (kernel compiles, pool growth) through the zero-copy producers, then a
 * few copy-parse inputs; checks Job 0's result of both paths against its
 * reference, and only then - with no other work running - times the feeds
 * case by case. */
static void ab_cases_run(ib_executor *ex, ab_case *cs, int n, const ab_params *p) {
  ab_cases_build(cs, n, p);
  for (int i = 0; i < n; i++) {
    cs[i].in_bytes = cs[i].set.in_bytes;
    cs[i].out_bytes = cs[i].set.out_bytes;
    ab_ref_start(&cs[i].ref, &cs[i].set);
  }
  ab_feed_spec zc = {.kind = AB_ZERO_COPY, .producers = p->producers, .qcap = p->qcap};
  ab_feed_spec copy = {.kind = AB_COPY_PARSE, .producers = p->producers, .qcap = p->qcap};
  for (int i = 0; i < n; i++) {
    ab_stream(ex, &cs[i].set, p->warmup, &zc, &cs[i].first_zc, cs[i].label);
    ab_stream(ex, &cs[i].set, p->producers + 1, &copy, &cs[i].first_copy, cs[i].label);
  }
  for (int i = 0; i < n; i++) {
    char lab[128];
    ab_ref_join(&cs[i].ref);
    snprintf(lab, sizeof lab, "%s (zero copy)", cs[i].label);
    ab_ref_compare(&cs[i].ref, &cs[i].first_zc, lab);
    snprintf(lab, sizeof lab, "%s (copy-parse)", cs[i].label);
    ab_ref_compare(&cs[i].ref, &cs[i].first_copy, lab);
    ib_image_release(&cs[i].ref.img);
    ib_image_release(&cs[i].first_zc);
    ib_image_release(&cs[i].first_copy);
  }
  for (int i = 0; i < n; i++) {
    ab_case_time(ex, &cs[i], p);
    ab_set_free(&cs[i].set);
  }
}

#endif
