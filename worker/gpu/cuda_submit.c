/* A CUDA submission (cuda_internal.h): its passes in order, the enqueue of
 * its copies and its event, and the wait that lends the results their
 * memory. */
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "gpu/cuda_resident.h"

/* An event back to its free list (one of ib_cuda's: completion or
 * profile events), or destroyed when the list is full; NULL: nothing. */
static void ev_give(const ib_cuda *c, CUevent *list, unsigned *n, unsigned cap, CUevent e) {
  if (!e) return;
  if (*n < cap)
    list[(*n)++] = e;
  else
    c->cu->cuEventDestroy(e);
}
#define EV_CAP(arr) ((unsigned)(sizeof(arr) / sizeof(arr)[0]))

/* ------------------------------------------------------------ profile timeline */

static double prof_ms(const ib_cuda *c, double t) { return (t - c->prof_base) * 1e3; }

void ib_cuda_prof_mark(ib_backend_submission *s, int k, CUstream stream) {
  ib_cuda *c = s->c;
  if (!c->prof_timeline || s->prof_i < 0 || s->prof_ev[k]) return;
  CUevent e = NULL;
  if (c->n_prof_ev_free)
    e = c->prof_ev_free[--c->n_prof_ev_free];
  else if (c->cu->cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
    return;
  if (c->cu->cuEventRecord(e, stream) == CUDA_SUCCESS)
    s->prof_ev[k] = e;
  else
    ev_give(c, c->prof_ev_free, &c->n_prof_ev_free, EV_CAP(c->prof_ev_free), e);
}

/* The submission's entry on the timeline, while there is room. */
static void prof_begin(ib_backend_submission *s, double t0) {
  ib_cuda *c = s->c;
  s->prof_i = -1;
  if (!c->prof_timeline || c->n_prof_subs >= IB_CUDA_PROF_SUBS) return;
  s->prof_i = (int)c->n_prof_subs++;
  ib_cuda_prof_sub *p = &c->prof_subs[s->prof_i];
  *p = (ib_cuda_prof_sub){
      .jobs = (uint32_t)s->n, .submit = prof_ms(c, t0), .up0 = -1, .up1 = -1, .down1 = -1};
  p->dev_allocs = c->dpool.allocs;
  p->pin_allocs = ib_pinned_stats_get(c->pin).allocs;
}

static void prof_submitted(ib_backend_submission *s, double t_enq, double t_end) {
  ib_cuda *c = s->c;
  if (s->prof_i < 0) return;
  ib_cuda_prof_sub *p = &c->prof_subs[s->prof_i];
  p->enqueue = prof_ms(c, t_enq);
  p->submitted = prof_ms(c, t_end);
  p->dev_allocs = c->dpool.allocs - p->dev_allocs;
  p->pin_allocs = ib_pinned_stats_get(c->pin).allocs - p->pin_allocs;
}

/* After the wait: the device times of its events (all complete: they
 * precede its completion event, or the streams were fenced). */
static void prof_waited(ib_backend_submission *s, double w0, double w1, bool ok) {
  ib_cuda *c = s->c;
  if (s->prof_i < 0) return;
  ib_cuda_prof_sub *p = &c->prof_subs[s->prof_i];
  p->wait = prof_ms(c, w0);
  p->waited = prof_ms(c, w1);
  float *at[3] = {&p->up0, &p->up1, &p->down1};
  for (int k = 0; k < 3 && ok; k++)
    if (s->prof_ev[k] &&
        c->cu->cuEventElapsedTime(at[k], c->prof_base_ev, s->prof_ev[k]) != CUDA_SUCCESS)
      *at[k] = -1;
}

static void prof_release(ib_backend_submission *s) {
  ib_cuda *c = s->c;
  for (int k = 0; k < 3; k++) {
    ev_give(c, c->prof_ev_free, &c->n_prof_ev_free, EV_CAP(c->prof_ev_free), s->prof_ev[k]);
    s->prof_ev[k] = NULL;
  }
}

static void free_launch_plan(ib_launch_plan *lp) {
  for (size_t i = 0; i < lp->n_ikf; i++) free(lp->ikf[i]);
  free(lp->ikf);
  free(lp->ents);
  free(lp->gfunc);
  free(lp->glevel);
  *lp = (ib_launch_plan){0};
}

static void sub_release(ib_backend_submission *s) {
  if (!s) return;
  ib_cuda *c = s->c;
  /* Complete or fenced by now (every caller): its modules may be evicted. */
  for (size_t i = 0; i < s->n_pins; i++) ib_lru_unpin(&c->mods, s->pins[i]);
  free(s->pins);
  free_launch_plan(&s->lp);
  /* Complete, or never recorded (abandon fenced the streams): reusable. */
  ev_give(c, c->ev_free, &c->n_ev_free, EV_CAP(c->ev_free), s->ev);
  prof_release(s);
  ib_pinned_put(c->pin, &s->hblk);
  ib_pinned_put(c->pin, &s->rblk);
  ib_pool_put(&c->dpool, &s->dblk);
  for (size_t i = 0; s->js && i < s->n; i++) ib_pool_put(&c->dpool, &s->js[i].blk);
  if (s->arena) { /* not lent to any result */
    ib_pinned_put(c->pin, &s->arena->blk);
    free(s->arena);
  }
  for (size_t i = 0; s->js && i < s->n; i++) {
    ib_gplan_free(&s->js[i].plan);
    free(s->js[i].buf_off); /* par_off and direct too (plan_job) */
  }
  free(s->js);
  free(s->dsrc);
  free(s);
}

static bool delivers(const ib_backend_submission *s, size_t i) {
  return s->js[i].planned && s->jobs[i].status == IB_OK;
}

#define COPY_BATCH 256

static void add_copy(ib_up_copies *d, CUdeviceptr dst, const void *src, size_t len, size_t job) {
  d->dst[d->n] = dst;
  d->src[d->n] = (CUdeviceptr)(uintptr_t)src;
  d->len[d->n] = len;
  d->job[d->n++] = job;
}

ib_status ib_cuda_sub_copies(ib_backend_submission *s, size_t a, size_t b, bool staging,
                             ib_up_copies *d, ib_error *err) {
  ib_stage_ranges st = {0};
  if (staging && s->lay.upload) st = (ib_stage_ranges){.lo = {0}, .hi = {s->lay.upload}, .n = 1};
  return ib_cuda_sub_copies_in(s, a, b, &st, d, err);
}

ib_status ib_cuda_sub_copies_in(ib_backend_submission *s, size_t a, size_t b,
                                const ib_stage_ranges *st, ib_up_copies *d, ib_error *err) {
  const size_t cap = s->n_dsrc + 2;
  d->dst = malloc(cap * sizeof *d->dst);
  d->src = malloc(cap * sizeof *d->src);
  d->len = malloc(cap * sizeof *d->len);
  d->job = malloc(cap * sizeof *d->job);
  if (!d->dst || !d->src || !d->len || !d->job) return ib_cuda_oom(err);
  for (int r = 0; r < st->n && r < 2; r++)
    add_copy(d, ib_sub_dev(s) + st->lo[r], ib_sub_host(s) + st->lo[r], st->hi[r] - st->lo[r],
             a < s->n ? a : 0);
  const size_t first = d->n;
  uint64_t sources = 0;
  /* open: the last copy may be extended by a joining entry (entries of
   * failed jobs inside a run are copied along: their range is theirs; a
   * job outside [a, b) ends the run: another piece's stream reads it). */
  bool open = false;
  for (size_t k = 0; k < s->n_dsrc; k++) {
    const ib_direct_src *e = &s->dsrc[k];
    if (!e->joins || e->job < a || e->job >= b) open = false;
    if (e->job < a || e->job >= b) continue;
    if (!delivers(s, e->job)) continue;
    sources++;
    if (open) {
      d->len[d->n - 1] = (size_t)((uintptr_t)(e->src + e->bytes) - (uintptr_t)d->src[d->n - 1]);
      continue;
    }
    add_copy(d, ib_sub_dev(s) + s->js[e->job].buf_off[e->buf], e->src, e->bytes, e->job);
    open = true;
  }
  atomic_fetch_add_explicit(&s->c->direct_sources, sources, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->c->direct_copies, d->n - first, memory_order_relaxed);
  return IB_OK;
}

void ib_cuda_copies_free(ib_up_copies *d) {
  free(d->dst), free(d->src), free(d->len), free(d->job);
  *d = (ib_up_copies){0};
}

/* Copies [k0, k0 + m) in one driver call; false when the driver refused
 * (never asked again: copied one by one from then on). */
static bool batch_copy(ib_backend_submission *s, const ib_up_copies *d, size_t k0, size_t m) {
  ib_cuda *c = s->c;
  if (m < 2 || m < c->batch_min || !c->cu->cuMemcpyBatchAsync || c->no_batch_copy) return false;
  CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
  size_t at_idx = 0;
  const CUresult rc = c->cu->cuMemcpyBatchAsync(d->dst + k0, d->src + k0, d->len + k0, m, &at,
                                                &at_idx, 1, s->stream);
  if (rc == CUDA_SUCCESS) return true;
  c->no_batch_copy = 1;
  ib_log(&c->log, IB_LOG_WARN,
         "cuda: cuMemcpyBatchAsync refused (%d); uploads are copied one by one from now on",
         (int)rc);
  return false;
}

/* The uploads of jobs [a, b) (after the staging ranges `st`): in batches
 * of one driver call where the driver has cuMemcpyBatchAsync, else one by
 * one. */
static ib_status enqueue_uploads(ib_backend_submission *s, size_t a, size_t b,
                                 const ib_stage_ranges *st, ib_error *err) {
  ib_up_copies d = {0};
  ib_status rs = ib_cuda_sub_copies_in(s, a, b, st, &d, err);
  for (size_t k0 = 0; k0 < d.n && rs == IB_OK; k0 += COPY_BATCH) {
    const size_t m = d.n - k0 < COPY_BATCH ? d.n - k0 : COPY_BATCH;
    if (batch_copy(s, &d, k0, m)) continue;
    for (size_t k = k0; k < k0 + m && rs == IB_OK; k++) {
      CUresult rc = s->c->cu->cuMemcpyHtoDAsync(d.dst[k], (const void *)(uintptr_t)d.src[k],
                                                d.len[k], s->stream);
      if (rc != CUDA_SUCCESS) rs = ib_cuda_device_fail(s, rc, "upload", d.job[k], err);
    }
  }
  ib_cuda_copies_free(&d);
  return rs;
}

/* After the launches of jobs [a, b), in this order on s->stream: resident
 * outputs copied into their own allocations (so the one event covers them
 * too), their range of the arena in one copy, then own-buffer outputs -
 * after the upload on the same stream, so the source pixels they overwrite
 * were already read - and each rendition node's image into the rendition
 * block. */
static ib_status enqueue_downloads(ib_backend_submission *s, size_t a, size_t b, ib_error *err) {
  ib_cuda *c = s->c;
  const ib_cu *cu = c->cu;
  const CUdeviceptr dev = ib_sub_dev(s), out = dev + s->lay.out_base;
  size_t lo = SIZE_MAX, hi = 0; /* the arena outputs of [a, b) (placed in job order) */
  for (size_t i = a; i < b; i++) {
    const ib_jstate *js = &s->js[i];
    if (js->planned && !s->jobs[i].resident && !js->own && !js->n_rend) {
      if (lo == SIZE_MAX) lo = js->dl_off;
      hi = js->dl_off + ib_cuda_up(js->plan.bufs[js->plan.out_buf].bytes);
    }
    if (!delivers(s, i) || !s->jobs[i].resident) continue;
    ib_cuda_keep(cu, c->ctx, s->stream, dev + js->buf_off[js->plan.out_buf], &js->plan.out_shape,
                 &s->jobs[i]);
  }
  if (hi > s->lay.arena_bytes) hi = s->lay.arena_bytes;
  CUresult rc;
  if (s->pipe) lo = hi; /* each job in its own block: one copy each, below */
  for (size_t i = a; i < b && s->pipe; i++) {
    const ib_jstate *js = &s->js[i];
    if (s->jobs[i].resident || js->own || js->n_rend || !delivers(s, i)) continue;
    if ((rc = cu->cuMemcpyDtoHAsync((void *)(uintptr_t)(s->arena->blk.addr + js->dl_off),
                                    dev + js->buf_off[js->plan.out_buf],
                                    js->plan.bufs[js->plan.out_buf].bytes, s->stream)) !=
        CUDA_SUCCESS)
      return ib_cuda_device_fail(s, rc, "download", i, err);
  }
  if (lo < hi && (rc = cu->cuMemcpyDtoHAsync((void *)(uintptr_t)(s->arena->blk.addr + lo), out + lo,
                                             hi - lo, s->stream)) != CUDA_SUCCESS)
    return ib_cuda_device_fail(s, rc, "download", a, err);
  for (size_t i = a; i < b; i++) {
    const ib_jstate *js = &s->js[i];
    if (!js->own || !delivers(s, i)) continue;
    const CUdeviceptr from = s->pipe ? dev + js->buf_off[js->plan.out_buf] : out + js->dl_off;
    if ((rc = cu->cuMemcpyDtoHAsync(s->jobs[i].graph->buffer, from,
                                    js->plan.bufs[js->plan.out_buf].bytes, s->stream)) !=
        CUDA_SUCCESS)
      return ib_cuda_device_fail(s, rc, "download", i, err);
  }
  /* Renditions: each rendition node's buffer into its range of the
   * rendition block (a node named twice comes down once). */
  for (size_t i = a; i < b; i++) {
    const ib_jstate *js = &s->js[i];
    if (!js->n_rend || !delivers(s, i)) continue;
    for (size_t r = 0; r < js->n_rend; r++) {
      const int buf = ib_cuda_rend_buf(js, s->jobs[i].graph, r);
      if (ib_cuda_rend_first(s->jobs[i].graph, r) != r || !js->plan.bufs[buf].bytes) continue;
      if ((rc = cu->cuMemcpyDtoHAsync((void *)(uintptr_t)(s->rblk.addr + js->rend_off[r]),
                                      dev + js->buf_off[buf], js->plan.bufs[buf].bytes,
                                      s->stream)) != CUDA_SUCCESS)
        return ib_cuda_device_fail(s, rc, "download (rendition)", i, err);
    }
  }
  return IB_OK;
}

/* Pieces of a submission (ib_cuda.pieces): worth it for many jobs whose
 * copies take long enough that a piece's download overlapping the next
 * piece's upload saves more than its launches and event waits cost. */
#define PIECE_MIN_JOBS 4
#define PIECE_MIN_BYTES ((size_t)4 << 20)
static unsigned pieces_of(const ib_backend_submission *s) {
  unsigned k = s->c->pieces;
  if (k < 2 || s->lay.direct + s->lay.upload + s->lay.download < PIECE_MIN_BYTES) return 1;
  while (k > 1 && s->n < (size_t)k * PIECE_MIN_JOBS) k--;
  return k;
}

static ib_stage_ranges whole_staging(const ib_backend_submission *s) {
  ib_stage_ranges st = {0};
  if (s->lay.upload) st = (ib_stage_ranges){.lo = {0}, .hi = {s->lay.upload}, .n = 1};
  return st;
}

/* Jobs [a, b) on s->stream: their uploads (the staging ranges `st` first),
 * launches and downloads. */
static ib_status enqueue_jobs(ib_backend_submission *s, size_t a, size_t b,
                              const ib_stage_ranges *st, ib_error *err) {
  ib_status rs = enqueue_uploads(s, a, b, st, err);
  if (rs == IB_OK) rs = ib_cuda_sub_launch(s, a, b, err);
  if (rs == IB_OK) rs = enqueue_downloads(s, a, b, err);
  return rs;
}

/* Work enqueued on `to` from now on waits for what `from` holds now. */
static ib_status hop(ib_backend_submission *s, CUevent ev, CUstream from, CUstream to, size_t job,
                     ib_error *err) {
  const ib_cu *cu = s->c->cu;
  CUresult rc;
  if ((rc = cu->cuEventRecord(ev, from)) != CUDA_SUCCESS ||
      (rc = cu->cuStreamWaitEvent(to, ev, 0)) != CUDA_SUCCESS)
    return ib_cuda_device_fail(s, rc, "pipeline event", job, err);
  return IB_OK;
}

/* A submission of large jobs as a pipeline (ib_cuda.pipe): piece by piece,
 * its uploads on the up stream, its launches on the run stream once they
 * landed, its downloads on the down stream once the launches ran. The up
 * stream never waits, so the upload of piece p + 1 runs beside the
 * kernels of piece p and the download of piece p - 1, each direction on
 * its own copy engine; the submission's event goes on the down stream
 * (s->stream on return), which waited for every piece's launches and so
 * for its uploads. Each piece costs four driver calls more than one
 * stream would. */
static ib_status enqueue_pipe(ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = s->c;
  ib_status rs = IB_OK;
  uint64_t pieces = 0;
  ib_cuda_prof_mark(s, 0, c->pipe[IB_PIPE_UP]);
  for (size_t a = 0; a < s->n && rs == IB_OK; pieces++) {
    const size_t b = ib_cuda_pipe_next(s, a, c->pipe_bytes);
    ib_stage_ranges st;
    ib_cuda_piece_staging(s, a, b, &st);
    s->stream = c->pipe[IB_PIPE_UP];
    rs = enqueue_uploads(s, a, b, &st, err);
    if (rs == IB_OK) rs = hop(s, c->pipe_ev[0], s->stream, c->pipe[IB_PIPE_RUN], a, err);
    s->stream = c->pipe[IB_PIPE_RUN];
    if (rs == IB_OK) rs = ib_cuda_sub_launch(s, a, b, err);
    if (rs == IB_OK) rs = hop(s, c->pipe_ev[1], s->stream, c->pipe[IB_PIPE_DOWN], a, err);
    s->stream = c->pipe[IB_PIPE_DOWN];
    if (rs == IB_OK) rs = enqueue_downloads(s, a, b, err);
    a = b;
  }
  if (rs != IB_OK) return rs;
  ib_cuda_prof_mark(s, 1, c->pipe[IB_PIPE_UP]);
  if (s->prof_i >= 0) c->prof_subs[s->prof_i].pieces = (uint32_t)pieces;
  atomic_fetch_add_explicit(&c->pipe_subs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->pipe_pieces, pieces, memory_order_relaxed);
  return IB_OK;
}

/* The submission's completion event on s->stream. */
static ib_status record_done(ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = s->c;
  CUresult rc;
  if (c->n_ev_free)
    s->ev = c->ev_free[--c->n_ev_free];
  else if ((rc = c->cu->cuEventCreate(&s->ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
    return ib_cuda_device_fail(s, rc, "cuEventCreate", 0, err);
  ib_cuda_prof_mark(s, 2, s->stream);
  if ((rc = c->cu->cuEventRecord(s->ev, s->stream)) != CUDA_SUCCESS)
    return ib_cuda_device_fail(s, rc, "cuEventRecord", 0, err);
  return IB_OK;
}

/* Everything of the submission, then its one event: as a pipeline
 * (enqueue_pipe), or on its slot's stream. In pieces: the staging block
 * (descriptors, parameters) on the slot's stream, each piece on its own
 * stream after it, the slot's stream after every piece. */
static ib_status enqueue(ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = s->c;
  if (s->pipe) {
    ib_status rs = enqueue_pipe(s, err);
    return rs == IB_OK ? record_done(s, err) : rs;
  }
  const ib_cu *cu = c->cu;
  const unsigned k = pieces_of(s);
  const CUstream main = s->stream;
  ib_cuda_prof_mark(s, 0, main);
  CUevent fork = c->fork_ev[s->slot], *join = c->join_ev[s->slot];
  const ib_stage_ranges whole = whole_staging(s), none = {0};
  ib_status rs =
      k == 1 ? enqueue_jobs(s, 0, s->n, &whole, err) : enqueue_uploads(s, 0, 0, &whole, err);
  CUresult rc;
  if (k > 1 && rs == IB_OK && (rc = cu->cuEventRecord(fork, main)) != CUDA_SUCCESS)
    rs = ib_cuda_device_fail(s, rc, "cuEventRecord (pieces)", 0, err);
  for (unsigned p = 0; k > 1 && p < k && rs == IB_OK; p++) {
    const size_t a = s->n * p / k, b = s->n * (p + 1) / k;
    s->stream = p ? c->aux[s->slot][p - 1] : main;
    if (p && (rc = cu->cuStreamWaitEvent(s->stream, fork, 0)) != CUDA_SUCCESS)
      rs = ib_cuda_device_fail(s, rc, "cuStreamWaitEvent (pieces)", a, err);
    if (rs == IB_OK) rs = enqueue_jobs(s, a, b, &none, err);
    if (rs == IB_OK && p && (rc = cu->cuEventRecord(join[p - 1], s->stream)) != CUDA_SUCCESS)
      rs = ib_cuda_device_fail(s, rc, "cuEventRecord (pieces)", a, err);
  }
  s->stream = main;
  for (unsigned p = 1; k > 1 && p < k && rs == IB_OK; p++)
    if ((rc = cu->cuStreamWaitEvent(main, join[p - 1], 0)) != CUDA_SUCCESS)
      rs = ib_cuda_device_fail(s, rc, "cuStreamWaitEvent (pieces)", 0, err);
  return rs == IB_OK ? record_done(s, err) : rs;
}

/* Something may have been enqueued: fence before the blocks go back. */
static void fence(ib_backend_submission *s) {
  s->c->cu->cuStreamSynchronize(s->c->streams[s->slot]);
  for (unsigned p = 0; p + 1 < s->c->pieces; p++)
    s->c->cu->cuStreamSynchronize(s->c->aux[s->slot][p]);
  for (int p = 0; s->c->pipe_bytes && p < IB_PIPE_STREAMS; p++)
    s->c->cu->cuStreamSynchronize(s->c->pipe[p]);
  for (size_t i = 0; i < s->n; i++) {
    ib_cuda_resident_release(NULL, s->jobs[i].dev);
    s->jobs[i].dev = NULL;
  }
}

static ib_backend_submission *sub_new(ib_cuda *c, ib_backend_job *jobs, size_t n) {
  ib_backend_submission *s = calloc(1, sizeof *s);
  if (!s || !(s->js = calloc(n ? n : 1, sizeof *s->js))) {
    free(s);
    return NULL;
  }
  s->c = c;
  s->jobs = jobs;
  s->n = n;
  s->slot = c->next_stream++ % c->n_streams;
  s->stream = c->streams[s->slot];
  s->prof_i = -1;
  return s;
}

/* Staged: launch groups and the enqueue. On failure the submission is
 * fenced and its blocks are still held. */
static ib_status launch(ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = s->c;
  const double t2 = ib_cuda_prof_now(c);
  ib_status rs = ib_cuda_sub_groups(s, err);
  if (rs == IB_OK) rs = enqueue(s, err);
  free_launch_plan(&s->lp);
  if (rs != IB_OK) {
    fence(s);
    return rs;
  }
  if (c->prof) {
    const double t3 = ib_cuda_prof_now(c);
    prof_submitted(s, t2, t3);
    c->t_launch += t3 - t2;
  }
  return IB_OK;
}

/* Enqueues the submissions of c->staged in order while their staging is
 * done, or, with `upto`, every one up to and including it, waiting for
 * their staging. A failed enqueue is kept for the wait (late_status). */
static void advance(ib_cuda *c, const ib_backend_submission *upto) {
  ib_backend_submission *s;
  while ((s = c->staged_head) && (upto || ib_cuda_sub_staged(s))) {
    c->staged_head = s->staged_next;
    if (!c->staged_head) c->staged_tail = NULL;
    s->staged_next = NULL;
    s->staged_listed = false;
    const double t0 = ib_cuda_prof_now(c);
    ib_cuda_sub_stage_end(s);
    if (c->prof) c->t_stage_wait += ib_cuda_prof_now(c) - t0;
    ib_error err = {0};
    const ib_status rs = launch(s, &err);
    if (rs != IB_OK) {
      s->late_status = rs;
      s->late_err = err;
    }
    if (s == upto) return;
  }
}

ib_status ib_cuda_submit(void *state, ib_backend_job *jobs, size_t n, ib_backend_submission **out,
                         ib_error *err) {
  ib_cuda *c = state;
  c->cu->cuCtxSetCurrent(c->ctx);
  advance(c, NULL);
  const double t0 = ib_cuda_prof_now(c);
  ib_backend_submission *s = sub_new(c, jobs, n);
  if (!s) return ib_cuda_oom(err);
  if (c->prof) prof_begin(s, t0);
  ib_cuda_sub_plan(s);
  ib_cuda_sub_layout(s);
  const double t1 = ib_cuda_prof_now(c);
  ib_status rs = ib_cuda_sub_blocks(s, err);
  if (rs == IB_OK) rs = ib_cuda_sub_stage_begin(s, err);
  if (rs != IB_OK) {
    sub_release(s); /* nothing enqueued */
    return rs;
  }
  if (c->prof) {
    c->t_plan += t1 - t0;
    c->t_stage += ib_cuda_prof_now(c) - t1;
    c->n_sub++;
    c->n_jobs += n;
  }
  *out = s;
  /* Decoding on the pool, or behind one that is: enqueued in order once
   * staged (advance). */
  if (!ib_cuda_sub_staged(s) || c->staged_head) {
    s->staged_listed = true;
    if (c->staged_tail)
      c->staged_tail->staged_next = s;
    else
      c->staged_head = s;
    c->staged_tail = s;
    return IB_OK;
  }
  ib_cuda_sub_stage_end(s);
  rs = launch(s, err);
  if (rs != IB_OK) {
    *out = NULL;
    sub_release(s);
  }
  return rs;
}

/* Job i's renditions (Job.renditions order): each image its range of the
 * rendition block, lent under token ra as the arena's ranges are (the core
 * gives the block back through lent_release once all are released); false
 * when the job failed instead. */
static bool lend_renditions(ib_backend_submission *s, size_t i, ib_lent_arena *ra) {
  ib_backend_job *j = &s->jobs[i];
  const ib_jstate *js = &s->js[i];
  const ib_graph *g = j->graph;
  ib_image *ims = ra ? calloc(js->n_rend, sizeof *ims) : NULL;
  if (!ims) {
    ib_cuda_job_fail(
        j,
        &(ib_error){.status = IB_INTERNAL, .message = "backend cuda: out of memory (renditions)"},
        IB_STAGE_DOWNLOAD);
    return false;
  }
  for (size_t r = 0; r < js->n_rend; r++) {
    const ib_shape *sh = &g->nodes[g->job->renditions[r]->node].shape;
    ims[r] = (ib_image){.mode = sh->mode,
                        .width = sh->width,
                        .height = sh->height,
                        .data = (uint8_t *)(uintptr_t)s->rblk.addr + js->rend_off[r]};
  }
  j->renditions = ims;
  j->n_renditions = js->n_rend;
  j->lent = ra;
  return true;
}

/* Job i's output: its own Job buffer (a token of its own) or its range of
 * the arena (the submission's token); false when only the arena's. */
static bool lend(ib_backend_submission *s, size_t i) {
  ib_backend_job *j = &s->jobs[i];
  const ib_jstate *js = &s->js[i];
  const ib_shape *sh = &js->plan.out_shape;
  j->out = (ib_image){.mode = sh->mode, .width = sh->width, .height = sh->height};
  if (!js->own) {
    j->out.data = (uint8_t *)(uintptr_t)s->arena->blk.addr + js->dl_off;
    j->lent = s->arena;
    return true;
  }
  ib_lent_arena *a = calloc(1, sizeof *a);
  if (!a) {
    ib_cuda_job_fail(j,
                     &(ib_error){.status = IB_INTERNAL, .message = "backend cuda: out of memory"},
                     IB_STAGE_DOWNLOAD);
    return false;
  }
  *a = (ib_lent_arena){.c = s->c, .job_buf = j->graph->buffer};
  j->out.data = a->job_buf;
  j->lent = a;
  j->buffer_lent = true;
  return false;
}

ib_status ib_cuda_wait(void *state, ib_backend_submission *s, ib_error *err) {
  ib_cuda *c = state;
  c->cu->cuCtxSetCurrent(c->ctx);
  if (s->staged_listed) advance(c, s);
  if (s->late_status != IB_OK) {
    ib_status rs = s->late_status;
    *err = s->late_err;
    sub_release(s);
    return rs;
  }
  const double w0 = ib_cuda_prof_now(c);
  CUresult rc = c->cu->cuEventSynchronize(s->ev);
  const double w1 = ib_cuda_prof_now(c);
  ib_status rs = IB_OK;
  if (rc != CUDA_SUCCESS) {
    ib_cuda_device_fail(s, rc, "submission", 0, err);
    rs = IB_DEVICE;
  }
  /* Results are ranges of the arena, renditions ranges of the rendition
   * block (no copies); each is lent once at least one of its jobs
   * succeeded, otherwise sub_release takes it back. */
  bool lent = false, rend = false;
  ib_lent_arena *ra = NULL;
  for (size_t i = 0; i < s->n; i++) {
    ib_backend_job *j = &s->jobs[i];
    if (j->status != IB_OK) continue;
    if (rs != IB_OK) {
      j->status = IB_DEVICE;
      j->err = s->device_err;
      continue;
    }
    if (j->resident) continue; /* j->dev kept at submit */
    if (!s->js[i].n_rend) {
      lent |= lend(s, i);
      continue;
    }
    if (!ra && (ra = calloc(1, sizeof *ra))) *ra = (ib_lent_arena){.c = c, .blk = s->rblk};
    rend |= lend_renditions(s, i, ra);
  }
  if (lent) s->arena = NULL; /* the core gives it back through lent_release */
  if (rend)
    s->rblk = (ib_pool_block){0}; /* likewise, as ra */
  else
    free(ra);
  if (c->prof) {
    prof_waited(s, w0, w1, rc == CUDA_SUCCESS);
    c->t_device += w1 - w0;
    c->t_results += ib_cuda_prof_now(c) - w1;
  }
  sub_release(s);
  return rs;
}

bool ib_cuda_ready(void *state, ib_backend_submission *s) {
  ib_cuda *c = state;
  c->cu->cuCtxSetCurrent(c->ctx);
  advance(c, NULL);
  if (s->staged_listed) return false;
  return s->late_status != IB_OK || c->cu->cuEventQuery(s->ev) != CUDA_ERROR_NOT_READY;
}

void ib_cuda_lent_release(void *state, void *token) {
  (void)state;
  ib_lent_arena *a = token;
  if (a->job_buf) {
    ProtobufCAllocator *al = ib_pinned_allocator(a->c->pin);
    al->free(al->allocator_data, a->job_buf);
  } else {
    ib_pinned_put(a->c->pin, &a->blk);
  }
  free(a);
}
