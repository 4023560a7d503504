/* The writer thread of `imgbatch run`. The driving thread builds each
 * Result message (small: the pixels stay where the executor put them) and
 * queues it; this thread packs the frame around the pixels, writes it with
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

#include "cli/run_frame.h"
#include "result/result_msg.h"

/* One result on its way out. The message points into itself and into the
 * result, so an entry never moves once built. */
typedef struct run_out {
  struct run_out *next;
  ib_result res;
  ib_result_msg rm;
  size_t bytes; /* pixels (or encoded bytes) it holds */
} run_out;

struct ib_run_writer {
  int fd;
  size_t max_items, max_bytes;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t changed;
  run_out *head, *last; /* waiting to be written */
  size_t items, bytes;  /* taken and not yet written: waiting + the one in writev */
  bool closing, failed;
  int err; /* the failed write's errno */
};

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
  if (o->rm.msg.outcome_case == IMGBATCH__V1__RESULT__OUTCOME_IMAGE)
    o->bytes = o->rm.image.data.len;
  return o;
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
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->head && !w->closing) pthread_cond_wait(&w->changed, &w->mu);
    run_out *o = w->head;
    if (!o) break;
    w->head = o->next;
    if (!w->head) w->last = NULL;
    bool write = !w->failed;
    pthread_mutex_unlock(&w->mu);
    int e = write ? write_out(w->fd, o) : 0;
    size_t bytes = o->bytes;
    out_free(o);
    pthread_mutex_lock(&w->mu);
    if (e && !w->failed) w->failed = true, w->err = e;
    w->items--;
    w->bytes -= bytes;
    pthread_cond_broadcast(&w->changed);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

ib_run_writer *ib_run_writer_start(int fd, size_t max_items, size_t max_bytes) {
  ib_run_writer *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->fd = fd;
  w->max_items = max_items ? max_items : 1;
  w->max_bytes = max_bytes;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->changed, NULL);
  if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->changed);
    free(w);
    return NULL;
  }
  return w;
}

bool ib_run_writer_put(ib_run_writer *w, ib_result *res) {
  run_out *o = out_new(res);
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

bool ib_run_writer_finish(ib_run_writer *w, char *why, size_t why_len) {
  pthread_mutex_lock(&w->mu);
  w->closing = true;
  pthread_cond_broadcast(&w->changed);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  bool ok = !w->failed;
  if (!ok) snprintf(why, why_len, "%s", strerror(w->err));
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->changed);
  free(w);
  return ok;
}
