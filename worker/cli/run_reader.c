/* The reader thread of `imgbatch run` (see run_reader.h). The read-ahead
 * budget (--read-ahead; by default a quarter of the executor's host_bytes
 * cap, at most 64 MiB: on the CUDA backend the frames lie in pinned memory
 * whose parse budget is twice that cap, and the stream's window and the
 * writer hold up to the cap itself) lets reading the next frames overlap
 * the executor and the writer instead of waiting for the driver to take
 * the previous one; the run stream's own lookahead bounds the rest. */
#include "cli/run_reader.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "cli/run_spare.h"
#include "core/error.h"
#include "core/frame.h"

#define MAX_FRAME (512u << 20)

/* One input read ahead: a frame, or the error that stands in for it. */
typedef struct run_item {
  ib_status st;
  uint8_t *buf; /* a frame in an executor buffer (st IB_OK), parsed by the driver */
  size_t len;
  ib_error err;
} run_item;

/* On the heap: a reader left in a read that never returns (a pipe left
 * open when the stream failed) must not find its state gone. */
struct ib_run_reader {
  ib_executor *ex;     /* frames are read into its buffers (pinned on CUDA) */
  ib_run_spare *spare; /* the next large frame's buffer, got while one is read */
  FILE *in;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t changed;
  run_item q[IB_RUN_READ_AHEAD_ITEMS]; /* read, not yet taken: q[head], ... (count of them) */
  size_t head, count, queued_bytes, ahead_bytes;
  bool eof;
  bool stream_failed; /* a framing error ended the input */
  bool stop;          /* the driver is done: read no further */
  bool done;          /* the reader thread has returned (or is about to) */
  bool profile;
  ib_run_reader_prof prof;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A framing error ends the input after its error result. */
static ib_status frame_failed(ib_run_reader *r, ib_frame_status fs, ib_error *err) {
  r->stream_failed = true;
  *err = (ib_error){.status = IB_INVALID, .stage = IB_STAGE_PARSE};
  snprintf(err->message, sizeof err->message, "parse: %s",
           fs == IB_FRAME_TRUNCATED ? "input stream ends inside a frame (truncated)"
                                    : "frame length prefix is malformed or exceeds 512 MiB");
  fprintf(stderr, "imgbatch run: %s\n", err->message);
  return IB_INVALID;
}

/* No executor buffer for the frame: its body is read past (so the next
 * frame lines up) and it is answered with an internal error, stage parse. */
static ib_status frame_unbuffered(ib_run_reader *r, size_t len, ib_error *err) {
  ib_frame_status fs = ib_frame_skip_body(r->in, len);
  if (fs != IB_FRAME_OK) return frame_failed(r, fs, err);
  return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "parse: out of memory for a %zu-byte frame",
                      len);
}

/* Reads one frame straight into an executor buffer (the driver parses it
 * in place, ib_executor_parse_buffer), so raw source pixels cross host
 * memory once: the input -> the memory the backend uploads from. IB_END at
 * the end. */
static ib_status read_input(ib_run_reader *r, run_item *it) {
  if (r->stream_failed) return IB_END;
  size_t len = 0;
  ib_frame_status fs = ib_frame_read_len(r->in, MAX_FRAME, &len);
  if (fs == IB_FRAME_EOF) return IB_END;
  if (fs != IB_FRAME_OK) return frame_failed(r, fs, &it->err);
  double t0 = r->profile ? now_s() : 0;
  /* The spare for the next frame is read-ahead too: asked for only while
   * this frame, queued, leaves room for it. */
  pthread_mutex_lock(&r->mu);
  bool ask = r->queued_bytes + len <= r->ahead_bytes;
  pthread_mutex_unlock(&r->mu);
  uint8_t *buf = ib_run_spare_take(r->spare, r->ex, len, ask);
  double t1 = r->profile ? now_s() : 0;
  if (!buf) return frame_unbuffered(r, len, &it->err);
  fs = ib_frame_read_body(r->in, buf, len);
  if (r->profile) {
    r->prof.alloc_s += t1 - t0;
    r->prof.read_s += now_s() - t1;
    r->prof.frames++;
    r->prof.bytes += len;
  }
  if (fs != IB_FRAME_OK) {
    ib_executor_buffer_free(r->ex, buf);
    return frame_failed(r, fs, &it->err);
  }
  it->buf = buf;
  it->len = len;
  return IB_OK;
}

/* Room in the queue for an item of `len` bytes (the first always fits). */
static bool queue_room(const ib_run_reader *r, size_t len) {
  return r->count == 0 ||
         (r->count < IB_RUN_READ_AHEAD_ITEMS && r->queued_bytes + len <= r->ahead_bytes);
}

static void *reader_main(void *arg) {
  ib_run_reader *r = arg;
  pthread_setname_np(pthread_self(), "ib-read"); /* for per-thread profiles */
  bool stop = false;
  while (!stop) {
    run_item it = {0};
    it.st = read_input(r, &it);
    double t0 = r->profile ? now_s() : 0;
    pthread_mutex_lock(&r->mu);
    while (it.st != IB_END && !queue_room(r, it.len) && !r->stop)
      pthread_cond_wait(&r->changed, &r->mu);
    if (r->profile) r->prof.full_s += now_s() - t0;
    stop = r->stop;
    if (stop && it.buf) { /* nobody will take it */
      ib_executor_buffer_free(r->ex, it.buf);
    } else if (it.st == IB_END) {
      r->eof = stop = true;
    } else if (!stop) {
      r->q[(r->head + r->count++) % IB_RUN_READ_AHEAD_ITEMS] = it;
      r->queued_bytes += it.len;
    }
    r->done = stop;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->mu);
  }
  return NULL;
}

ib_run_reader *ib_run_reader_start(ib_executor *ex, FILE *in, size_t ahead_bytes, bool profile) {
  ib_run_reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->ex = ex;
  r->in = in;
  r->ahead_bytes = ahead_bytes;
  r->profile = profile;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->changed, NULL);
  r->spare = ib_run_spare_start(ex); /* NULL: the reader gets every buffer itself */
  if (pthread_create(&r->thread, NULL, reader_main, r) != 0) {
    ib_run_spare_stop(r->spare);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->changed);
    free(r);
    return NULL;
  }
  return r;
}

ib_status ib_run_reader_take(ib_run_reader *r, uint8_t **buf, size_t *len, ib_error *err) {
  pthread_mutex_lock(&r->mu);
  bool has = r->count > 0;
  run_item it = has ? r->q[r->head] : (run_item){0};
  ib_status st = has ? it.st : r->eof ? IB_END : IB_AGAIN;
  if (has) {
    r->head = (r->head + 1) % IB_RUN_READ_AHEAD_ITEMS;
    r->count--;
    r->queued_bytes -= it.len;
    pthread_cond_broadcast(&r->changed);
  }
  pthread_mutex_unlock(&r->mu);
  if (has && st != IB_OK) *err = it.err;
  *buf = it.buf;
  *len = it.len;
  return st;
}

void ib_run_reader_wait(ib_run_reader *r) {
  pthread_mutex_lock(&r->mu);
  while (r->count == 0 && !r->eof) pthread_cond_wait(&r->changed, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

bool ib_run_reader_failed(ib_run_reader *r) {
  pthread_mutex_lock(&r->mu);
  bool failed = r->stream_failed;
  pthread_mutex_unlock(&r->mu);
  return failed;
}

bool ib_run_reader_stop(ib_run_reader *r, bool regular) {
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  pthread_cond_broadcast(&r->changed);
  while (regular && !r->done) pthread_cond_wait(&r->changed, &r->mu);
  bool done = r->done;
  pthread_mutex_unlock(&r->mu);
  return done;
}

void ib_run_reader_free(ib_run_reader *r, ib_run_reader_prof *prof) {
  pthread_join(r->thread, NULL);
  ib_run_spare_stop(r->spare);
  for (; r->count > 0; r->count--, r->head = (r->head + 1) % IB_RUN_READ_AHEAD_ITEMS)
    if (r->q[r->head].buf) ib_executor_buffer_free(r->ex, r->q[r->head].buf);
  if (prof) *prof = r->prof;
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->changed);
  free(r);
}
