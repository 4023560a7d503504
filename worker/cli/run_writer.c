/* The writer thread of `imgbatch run`. The driving thread queues each
 * result; its Result message is built on the spot (small: the pixels stay
 * where the executor put them) unless it runs a codec, which an encoder
 * thread does, several at once. The writer takes the queue in order as
 * each message is ready, packs the frame around the pixels, writes it with
 * writev and only then frees the result, which gives a lent image back to
 * its arena. A bounded queue keeps the pixels held here (and so the arena
 * charges on the executor's host budget) to a few images. */
#include "cli/run_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "cli/run_frame.h"
#include "result/result_msg.h"

/* One result on its way out. The message points into itself and into the
 * result, so an entry never moves once built. */
typedef enum { OUT_QUEUED, OUT_ENCODING, OUT_READY } out_state;

typedef struct run_out {
  struct run_out *next;
  ib_result res;
  ib_result_msg rm;
  size_t bytes; /* pixels (or encoded bytes) it holds */
  out_state state;
} run_out;

struct ib_run_writer {
  int fd;
  size_t max_items, max_bytes;
  pthread_t thread;
  pthread_t *encoders;
  int n_encoders;
  pthread_mutex_t mu;
  pthread_cond_t changed;
  run_out *head, *last; /* waiting to be written */
  size_t items, bytes;  /* taken and not yet written: waiting + the one in writev */
  bool closing, failed;
  int err;                 /* the failed write's errno */
  ib_run_writer_prof prof; /* the writer thread's own */
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void out_free(run_out *o) {
  ib_result_msg_clear(&o->rm);
  ib_result_free(&o->res); /* after the message: it borrows the pixels */
  free(o);
}

static run_out *out_new(ib_result *res) {
  run_out *o = calloc(1, sizeof *o);
  if (!o) {
    ib_result_free(res);
    return NULL;
  }
  o->res = *res;
  *res = (ib_result){0};
  ib_result_msg_init(&o->rm);
  if (o->res.kind == IB_RESULT_IMAGE) o->bytes = ib_image_bytes(&o->res.image);
  return o;
}

/* Builds the message (an encode, when the output spec asks for one). */
static void out_build(run_out *o) {
  ib_error err = {0};
  /* A failed encode becomes the message's error result: written as such. */
  ib_result_msg_from_result_lent(&o->rm, &o->res, &err);
  if (o->rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_RESIDENT) {
    o->rm.handle.worker_id = (char *)"run";
    o->rm.handle.generation = 1;
  }
  /* `run` keeps no handle past its exit and the message has all it needs
   * of one, so the device memory goes back now, not after the write. */
  ib_handle_release(&o->res.handle);
  o->rm.timings.queue_us = o->res.queue_us;
  o->rm.timings.gpu_us = o->res.exec_us;
}

/* 0 or the errno of the failed write. */
static int write_all(int fd, struct iovec *iov, int n) {
  while (n > 0) {
    ssize_t k = writev(fd, iov, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    if (k == 0) return EIO;
    size_t left = (size_t)k;
    while (n > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (uint8_t *)iov->iov_base + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

static int write_out(int fd, const run_out *o) {
  ib_run_frame f;
  if (!ib_run_frame_pack(&f, &o->rm)) return ENOMEM;
  int e = write_all(fd, f.iov, f.iovcnt);
  ib_run_frame_clear(&f);
  return e;
}

static void *writer_main(void *arg) {
  ib_run_writer *w = arg;
  pthread_setname_np(pthread_self(), "ib-write"); /* for per-thread profiles */
  pthread_mutex_lock(&w->mu);
  for (;;) {
    double t0 = now_s();
    while ((!w->head && !w->closing) || (w->head && w->head->state != OUT_READY))
      pthread_cond_wait(&w->changed, &w->mu);
    run_out *o = w->head;
    if (!o) break;
    w->head = o->next;
    if (!w->head) w->last = NULL;
    bool write = !w->failed;
    pthread_mutex_unlock(&w->mu);
    double t1 = now_s();
    int e = write ? write_out(w->fd, o) : 0;
    double t2 = now_s();
    size_t bytes = o->bytes;
    out_free(o);
    w->prof.idle_s += t1 - t0;
    w->prof.write_s += t2 - t1;
    w->prof.free_s += now_s() - t2;
    pthread_mutex_lock(&w->mu);
    if (e && !w->failed) w->failed = true, w->err = e;
    w->items--;
    w->bytes -= bytes;
    pthread_cond_broadcast(&w->changed);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* The oldest result still waiting for its encode, or NULL. */
static run_out *first_queued(ib_run_writer *w) {
  for (run_out *o = w->head; o; o = o->next)
    if (o->state == OUT_QUEUED) return o;
  return NULL;
}

static void *encoder_main(void *arg) {
  ib_run_writer *w = arg;
  pthread_setname_np(pthread_self(), "ib-encode");
  pthread_mutex_lock(&w->mu);
  for (;;) {
    run_out *o;
    while (!(o = first_queued(w)) && !w->closing) pthread_cond_wait(&w->changed, &w->mu);
    if (!o) break;
    o->state = OUT_ENCODING;
    bool build = !w->failed; /* after a failed write nothing more is written */
    pthread_mutex_unlock(&w->mu);
    if (build) out_build(o);
    pthread_mutex_lock(&w->mu);
    o->state = OUT_READY;
    pthread_cond_broadcast(&w->changed);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Stops and joins the threads started (closing: they finish the queue). */
static void stop_threads(ib_run_writer *w, bool writer) {
  pthread_mutex_lock(&w->mu);
  w->closing = true;
  pthread_cond_broadcast(&w->changed);
  pthread_mutex_unlock(&w->mu);
  for (int i = 0; i < w->n_encoders; i++) pthread_join(w->encoders[i], NULL);
  if (writer) pthread_join(w->thread, NULL);
}

static void writer_free(ib_run_writer *w) {
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->changed);
  free(w->encoders);
  free(w);
}

ib_run_writer *ib_run_writer_start(int fd, size_t max_items, size_t max_bytes, int encoders) {
  ib_run_writer *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->fd = fd;
  w->max_items = max_items ? max_items : 1;
  w->max_bytes = max_bytes;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->changed, NULL);
  if (encoders > 0 && !(w->encoders = calloc((size_t)encoders, sizeof *w->encoders))) {
    writer_free(w);
    return NULL;
  }
  for (; w->n_encoders < encoders; w->n_encoders++)
    if (pthread_create(&w->encoders[w->n_encoders], NULL, encoder_main, w) != 0) break;
  if (w->n_encoders < encoders || pthread_create(&w->thread, NULL, writer_main, w) != 0) {
    stop_threads(w, false);
    writer_free(w);
    return NULL;
  }
  return w;
}

bool ib_run_writer_put(ib_run_writer *w, ib_result *res) {
  const bool encode_here = w->n_encoders == 0 || !ib_result_msg_encodes(res);
  run_out *o = out_new(res);
  if (o && encode_here) {
    out_build(o);
    o->state = OUT_READY; /* before anyone else can see it */
  }
  pthread_mutex_lock(&w->mu);
  if (!o && !w->failed) w->failed = true, w->err = ENOMEM;
  /* The first one always goes in, however large. */
  while (!w->failed && w->items > 0 &&
         (w->items >= w->max_items || w->bytes + o->bytes > w->max_bytes))
    pthread_cond_wait(&w->changed, &w->mu);
  bool ok = !w->failed;
  if (ok) {
    if (w->last)
      w->last->next = o;
    else
      w->head = o;
    w->last = o;
    w->items++;
    w->bytes += o->bytes;
    pthread_cond_broadcast(&w->changed);
  }
  pthread_mutex_unlock(&w->mu);
  if (!ok && o) out_free(o);
  return ok;
}

size_t ib_run_writer_pending(ib_run_writer *w) {
  pthread_mutex_lock(&w->mu);
  size_t n = w->items;
  pthread_mutex_unlock(&w->mu);
  return n;
}

void ib_run_writer_drain(ib_run_writer *w) {
  pthread_mutex_lock(&w->mu);
  while (w->items > 0) pthread_cond_wait(&w->changed, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

bool ib_run_writer_finish(ib_run_writer *w, char *why, size_t why_len, ib_run_writer_prof *prof) {
  stop_threads(w, true);
  if (prof) *prof = w->prof;
  bool ok = !w->failed;
  if (!ok) snprintf(why, why_len, "%s", strerror(w->err));
  writer_free(w);
  return ok;
}
