/* The spare input buffer of `imgbatch run` (see run_spare.h). */
#include "cli/run_spare.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct ib_run_spare {
  ib_executor *ex;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t changed;
  size_t want;  /* the length asked for; 0: none */
  bool busy;    /* the thread is getting a buffer of want */
  uint8_t *buf; /* the spare, of buf_len bytes, or NULL */
  size_t buf_len;
  bool quit;
};

static void *spare_main(void *arg) {
  ib_run_spare *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->quit && (s->want == 0 || s->buf)) pthread_cond_wait(&s->changed, &s->mu);
    if (s->quit) break;
    size_t len = s->want;
    s->busy = true;
    pthread_mutex_unlock(&s->mu);
    uint8_t *b = ib_executor_buffer(s->ex, len);
    pthread_mutex_lock(&s->mu);
    s->busy = false;
    if (b && s->want == len) {
      s->buf = b;
      s->buf_len = len;
      s->want = 0;
    } else if (b) { /* asked for another length meanwhile */
      pthread_mutex_unlock(&s->mu);
      ib_executor_buffer_free(s->ex, b);
      pthread_mutex_lock(&s->mu);
    } else {
      s->want = 0; /* out of memory: the reader gets its own (or says so) */
    }
    pthread_cond_broadcast(&s->changed);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

ib_run_spare *ib_run_spare_start(ib_executor *ex) {
  ib_run_spare *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->ex = ex;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->changed, NULL);
  if (pthread_create(&s->thread, NULL, spare_main, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->changed);
    free(s);
    return NULL;
  }
  return s;
}

/* A spare of buf_len bytes serves a frame of len that wastes under a
 * quarter of it (frames of a stream are often all one size; encoded ones
 * vary a little). */
static bool fits(size_t buf_len, size_t len) { return buf_len >= len && buf_len - len <= len / 4; }

uint8_t *ib_run_spare_take(ib_run_spare *s, ib_executor *ex, size_t len, bool ask) {
  if (!s || len < IB_RUN_SPARE_MIN) return ib_executor_buffer(ex, len);
  uint8_t *b = NULL, *stale = NULL;
  pthread_mutex_lock(&s->mu);
  while (s->busy && fits(s->want, len)) pthread_cond_wait(&s->changed, &s->mu);
  if (s->buf && fits(s->buf_len, len)) {
    b = s->buf;
  } else {
    stale = s->buf; /* frames changed size */
  }
  s->buf = NULL;
  s->want = ask ? len : 0;
  pthread_cond_broadcast(&s->changed);
  pthread_mutex_unlock(&s->mu);
  if (stale) ib_executor_buffer_free(ex, stale);
  return b ? b : ib_executor_buffer(ex, len);
}

void ib_run_spare_stop(ib_run_spare *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->quit = true;
  pthread_cond_broadcast(&s->changed);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  if (s->buf) ib_executor_buffer_free(s->ex, s->buf);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->changed);
  free(s);
}
