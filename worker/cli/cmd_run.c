/*
 * imgbatch run: the offline front end over the executor API. Jobs are
 * pulled lazily by the executor's run stream (each frame read straight into
 * an executor buffer that its job keeps until done; at most the credit
 * window plus one job admitted);
 * each Result the stream yields goes to a writer thread (run_writer.c) that
 * writes it while the stream goes on, in the order yielded. Results come in
 * completion order: match them by job_id or input_key.
 *
 * Resident outputs (OutputSpec gpu; cuda backend only - the cpu backend
 * rejects them at admission): `run` is offline and cannot keep handles past
 * its exit, so a resident result is written as a Result whose outcome is a
 * HandleRef (worker_id "run", handle_id = the job id, generation 1) and the
 * handle is released at once. With --download-resident it is downloaded
 * instead and written as a raw image Result (native bytes), then released.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_spare.h"
#include "cli/run_writer.h"
#include "core/error.h"

#define MAX_FRAME (512u << 20)

typedef struct run_opts {
  const char *in, *out, *source_root;
  bool download_resident;
  uint64_t read_ahead; /* bytes of frames read ahead past the first; UINT64_MAX: default */
  int decode_threads;  /* encoder threads, and the backend's host threads; 0: every CPU */
  ib_executor_options exec;
} run_opts;

/* One input read ahead by the reader thread: a graph, or the error that
 * stands in for it. */
typedef struct run_item {
  ib_status st;
  uint8_t *buf; /* a frame in an executor buffer (st IB_OK), parsed by the driver */
  size_t len;
  ib_error err;
} run_item;

/* The input side of the stream. A reader thread reads frames (the driver
 * parses them) so that it never blocks on input: while the input has
 * nothing (a pipe left open), the stream still writes every Result as its
 * job completes. It reads ahead into a queue of up to READ_AHEAD_ITEMS
 * frames and, past the first, ahead_bytes of them (--read-ahead; by default
 * a quarter of the executor's host_bytes cap: on the CUDA backend the
 * frames lie in pinned memory whose parse budget is twice that cap, and the
 * stream's window and the writer hold up to the cap itself), so that
 * reading the next frames overlaps the executor and the writer instead of
 * waiting for the driver to take the previous one. Besides the queue the
 * reader holds the frame it is reading and, within the same budget, one
 * spare buffer for the next (run_spare.h); the run stream's own lookahead
 * bounds the rest. */
#define READ_AHEAD_ITEMS 16u

/* Where the time of `imgbatch run` goes (IB_RUN_PROFILE=1: on stderr at the
 * end): seconds per thread and what it was doing. */
typedef struct run_prof {
  double read_s, alloc_s, full_s; /* reader: reading bodies, getting buffers, queue full */
  double next_s, parse_s, starve_s,
      put_s; /* driver: in the stream, parsing, no input, writer full */
  uint64_t frames, bytes;
} run_prof;

typedef struct run_input {
  ib_executor *ex;     /* frames are read into its buffers (pinned on CUDA) */
  ib_run_spare *spare; /* the next large frame's buffer, got while one is read */
  FILE *in;
  ib_graph_limits limits;
  pthread_mutex_t mu;
  pthread_cond_t changed;
  run_item q[READ_AHEAD_ITEMS]; /* read, not yet taken: q[head], ... (count of them) */
  size_t head, count, queued_bytes, ahead_bytes;
  bool eof;
  bool stream_failed; /* a framing error ended the input */
  bool stop;          /* the driver is done: read no further */
  bool done;          /* the reader thread has returned (or is about to) */
  bool profile;       /* IB_RUN_PROFILE set: timings on stderr at the end */
  double t_start;
  run_prof prof;
  ib_run_writer_prof wprof;
} run_input;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run_usage(FILE *f) {
  fprintf(f,
          "usage: imgbatch run [--backend cpu|cuda] [--device N] [--in FILE] [--out FILE]\n"
          "                    [--source-root DIR] [--max-jobs N] [--max-in-flight N]\n"
          "                    [--gpu-bytes N] [--host-bytes N] [--compile-threads N]\n"
          "                    [--decode-threads N] [--read-ahead N] [--download-resident]\n\n"
          "Reads varint-length-delimited imgbatch.v1.Job messages (stdin by default) and writes\n"
          "one varint-length-delimited imgbatch.v1.Result per job (stdout by default), in\n"
          "completion order (match by job_id or input_key). A job that fails yields an error\n"
          "Result naming stage and kind; the stream goes on.\n"
          "--source-root DIR lets jobs name path sources inside DIR.\n"
          "--max-jobs (64), --max-in-flight (2), --gpu-bytes (512M), --host-bytes (256M) set the\n"
          "executor's credit caps; byte sizes take a K, M or G suffix (powers of 1024).\n"
          "--read-ahead N (default: a quarter of --host-bytes): bytes of input frames read\n"
          "ahead of the executor, past the first (at most 16 frames; 0: one frame).\n"
          "--device N picks the CUDA device (cuda backend).\n"
          "--compile-threads N (cuda, default 2): N threads compile new kernel signatures off\n"
          "the submissions while pointwise stages run on the interpreter tier; 0 compiles inline.\n"
          "--decode-threads N (default 0: every CPU): threads that encode PNG/JPEG/WebP/TIFF\n"
          "outputs (and the cuda backend's source decodes), several results at once.\n"
          "Jobs with output gpu (cuda backend) are answered with a resident HandleRef\n"
          "(worker_id \"run\", handle_id = job id, generation 1) and released at once: run keeps\n"
          "nothing after it exits. --download-resident downloads each one instead and writes it\n"
          "as a raw image Result.\n"
          "exit codes: 0 input consumed, 1 unreadable/truncated stream, I/O error or executor\n"
          "start-up failure (e.g. no CUDA driver), 2 usage\n");
}

static bool parse_opt(run_opts *o, const char *a, const char *v) {
  uint64_t n;
  if (strcmp(a, "--backend") == 0) {
    if (strcmp(v, "cpu") == 0)
      o->exec.backend = IB_BACKEND_CPU;
    else if (strcmp(v, "cuda") == 0)
      o->exec.backend = IB_BACKEND_CUDA;
    else
      return false;
  } else if (strcmp(a, "--in") == 0) {
    o->in = v;
  } else if (strcmp(a, "--out") == 0) {
    o->out = v;
  } else if (strcmp(a, "--read-ahead") == 0) {
    return ib_cli_parse_u64(v, true, &o->read_ahead) && o->read_ahead != UINT64_MAX;
  } else if (strcmp(a, "--source-root") == 0) {
    o->source_root = v;
  } else if (strcmp(a, "--device") == 0) {
    if (!ib_cli_parse_u64(v, false, &n) || n > 1024) return false;
    o->exec.device = (int)n;
  } else if (strcmp(a, "--max-jobs") == 0) {
    return ib_cli_parse_u32(v, &o->exec.max_jobs) && o->exec.max_jobs > 0;
  } else if (strcmp(a, "--decode-threads") == 0) {
    uint32_t n = 0;
    if (!ib_cli_parse_u32(v, &n) || n > 1024) return false;
    o->decode_threads = (int)n;
    o->exec.host_threads = n ? (int)n : -1;
  } else if (strcmp(a, "--compile-threads") == 0) {
    uint32_t n = 0;
    if (!ib_cli_parse_u32(v, &n) || n > 64) return false;
    o->exec.compile_threads = (int)n;
  } else if (strcmp(a, "--max-in-flight") == 0) {
    return ib_cli_parse_u32(v, &o->exec.max_in_flight) && o->exec.max_in_flight > 0;
  } else if (strcmp(a, "--gpu-bytes") == 0) {
    return ib_cli_parse_u64(v, true, &o->exec.gpu_bytes) && o->exec.gpu_bytes > 0;
  } else if (strcmp(a, "--host-bytes") == 0) {
    return ib_cli_parse_u64(v, true, &o->exec.host_bytes) && o->exec.host_bytes > 0;
  } else {
    return false;
  }
  return true;
}

static int parse_args(int argc, char **argv, run_opts *o) {
  *o = (run_opts){0};
  ib_executor_options_default(&o->exec);
  o->exec.cache_dir = ib_cli_cache_dir();
  o->exec.compile_threads = IB_CLI_COMPILE_THREADS;
  o->exec.log_cb = ib_cli_log_stderr;
  o->exec.log_opaque = "imgbatch run";
  o->read_ahead = UINT64_MAX;
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--download-resident") == 0) {
      o->download_resident = true;
      i--; /* a flag: no value */
      continue;
    }
    if (i + 1 >= argc || !parse_opt(o, argv[i], argv[i + 1])) {
      fprintf(stderr, "imgbatch run: bad argument '%s'\n", argv[i]);
      run_usage(stderr);
      return IB_EXIT_USAGE;
    }
  }
  return IB_EXIT_OK;
}

/* A framing error ends the input after its error result. */
static ib_status frame_failed(run_input *ri, ib_frame_status fs, ib_error *err) {
  ri->stream_failed = true;
  *err = (ib_error){.status = IB_INVALID, .stage = IB_STAGE_PARSE};
  snprintf(err->message, sizeof err->message, "parse: %s",
           fs == IB_FRAME_TRUNCATED ? "input stream ends inside a frame (truncated)"
                                    : "frame length prefix is malformed or exceeds 512 MiB");
  fprintf(stderr, "imgbatch run: %s\n", err->message);
  return IB_INVALID;
}

/* No executor buffer for the frame: its body is read past (so the next
 * frame lines up) and it is answered with an internal error, stage parse. */
static ib_status frame_unbuffered(run_input *ri, size_t len, ib_error *err) {
  ib_frame_status fs = ib_frame_skip_body(ri->in, len);
  if (fs != IB_FRAME_OK) return frame_failed(ri, fs, err);
  return ib_error_set(err, IB_INTERNAL, IB_STAGE_PARSE, "parse: out of memory for a %zu-byte frame",
                      len);
}

/* Reads and parses one frame. Each frame is read straight into an
 * executor buffer and parsed in place (ib_executor_parse_buffer), so raw
 * source pixels cross host memory once: stdin -> the memory the backend
 * uploads from. A frame that does not parse is an error without an id
 * (stage parse) or, when the Job unpacked but failed validation, an
 * admission rejection (the executor gives it an id). IB_END at the end. */
static ib_status read_input(run_input *ri, run_item *it) {
  if (ri->stream_failed) return IB_END;
  size_t len = 0;
  ib_frame_status fs = ib_frame_read_len(ri->in, MAX_FRAME, &len);
  if (fs == IB_FRAME_EOF) return IB_END;
  if (fs != IB_FRAME_OK) return frame_failed(ri, fs, &it->err);
  double t0 = ri->profile ? now_s() : 0;
  /* The spare for the next frame is read-ahead too: asked for only while
   * this frame, queued, leaves room for it. */
  pthread_mutex_lock(&ri->mu);
  bool ask = ri->queued_bytes + len <= ri->ahead_bytes;
  pthread_mutex_unlock(&ri->mu);
  uint8_t *buf = ib_run_spare_take(ri->spare, ri->ex, len, ask);
  double t1 = ri->profile ? now_s() : 0;
  if (!buf) return frame_unbuffered(ri, len, &it->err);
  fs = ib_frame_read_body(ri->in, buf, len);
  if (ri->profile) {
    ri->prof.alloc_s += t1 - t0;
    ri->prof.read_s += now_s() - t1;
    ri->prof.frames++;
    ri->prof.bytes += len;
  }
  if (fs != IB_FRAME_OK) {
    ib_executor_buffer_free(ri->ex, buf);
    return frame_failed(ri, fs, &it->err);
  }
  it->buf = buf;
  it->len = len;
  return IB_OK;
}

/* Room in the queue for an item of `len` bytes (the first always fits). */
static bool queue_room(const run_input *ri, size_t len) {
  return ri->count == 0 ||
         (ri->count < READ_AHEAD_ITEMS && ri->queued_bytes + len <= ri->ahead_bytes);
}

static void *reader_main(void *arg) {
  run_input *ri = arg;
  bool stop = false;
  while (!stop) {
    run_item it = {0};
    it.st = read_input(ri, &it);
    double t0 = ri->profile ? now_s() : 0;
    pthread_mutex_lock(&ri->mu);
    while (it.st != IB_END && !queue_room(ri, it.len) && !ri->stop)
      pthread_cond_wait(&ri->changed, &ri->mu);
    if (ri->profile) ri->prof.full_s += now_s() - t0;
    stop = ri->stop;
    if (stop && it.buf) { /* nobody will take it */
      ib_executor_buffer_free(ri->ex, it.buf);
    } else if (it.st == IB_END) {
      ri->eof = stop = true;
    } else if (!stop) {
      ri->q[(ri->head + ri->count++) % READ_AHEAD_ITEMS] = it;
      ri->queued_bytes += it.len;
    }
    ri->done = stop;
    pthread_cond_broadcast(&ri->changed);
    pthread_mutex_unlock(&ri->mu);
  }
  return NULL;
}

/* Tells the reader that nothing more is taken and, when the input is a
 * regular file (whose reads always return), waits for it to return. True
 * when it has. */
static bool stop_reader(run_input *ri, bool regular) {
  pthread_mutex_lock(&ri->mu);
  ri->stop = true;
  pthread_cond_broadcast(&ri->changed);
  while (regular && !ri->done) pthread_cond_wait(&ri->changed, &ri->mu);
  bool done = ri->done;
  pthread_mutex_unlock(&ri->mu);
  return done;
}

/* ib_input_next_fn: parses what the reader has read, or says "nothing
 * now". Parsing (header probes through libvips) stays on the driving
 * thread: libvips keeps one error buffer per process, and a probe beside a
 * decode would take the other's cause out of its message. */
static ib_status next_input(void *user, ib_input *in, ib_error *err) {
  run_input *ri = user;
  pthread_mutex_lock(&ri->mu);
  bool has = ri->count > 0;
  run_item it = has ? ri->q[ri->head] : (run_item){0};
  ib_status st = has ? it.st : ri->eof ? IB_END : IB_AGAIN;
  if (has) {
    ri->head = (ri->head + 1) % READ_AHEAD_ITEMS;
    ri->count--;
    ri->queued_bytes -= it.len;
    pthread_cond_broadcast(&ri->changed);
  }
  pthread_mutex_unlock(&ri->mu);
  if (!has || st != IB_OK) {
    if (has) *err = it.err;
    return st;
  }
  double t0 = ri->profile ? now_s() : 0;
  ib_key key = {0};
  st = ib_executor_parse_buffer(ri->ex, it.buf, it.len, &ri->limits, &in->graph, &key, err);
  if (st != IB_OK && err->stage != IB_STAGE_PARSE) {
    in->key = key;
    in->has_key = true;
  } else {
    ib_key_clear(&key);
  }
  if (ri->profile) ri->prof.parse_s += now_s() - t0;
  return st;
}

/* Blocks until the reader has an input or reached the end. */
static void wait_input(run_input *ri) {
  double t0 = ri->profile ? now_s() : 0;
  pthread_mutex_lock(&ri->mu);
  while (ri->count == 0 && !ri->eof) pthread_cond_wait(&ri->changed, &ri->mu);
  pthread_mutex_unlock(&ri->mu);
  if (ri->profile) ri->prof.starve_s += now_s() - t0;
}

/* --download-resident: the resident output becomes the result's image (or
 * its download error); the handle is released either way. */
static void download_resident(ib_result *res) {
  ib_error err = {0};
  ib_image im = {0};
  if (ib_handle_download(res->handle, &im, &err) == IB_OK) {
    res->image = im;
    res->kind = IB_RESULT_IMAGE;
  } else {
    res->ok = false;
    res->kind = IB_RESULT_ERROR;
    res->error = err;
  }
  ib_handle_release(&res->handle);
}

/* Results waiting in the writer: enough for it to write one while the
 * driving thread produces the next, and few enough that the lent images it
 * holds leave the executor's host budget to admission: 3/8 of host_bytes
 * (96 MiB at the default caps), past the first result. */
#define WRITER_ITEMS 4u /* twice the encoder threads when there are more */
static size_t writer_bytes(const ib_executor_options *o) { return (size_t)(o->host_bytes / 8 * 3); }

static void print_profile(const run_input *ri, double start, double destroy) {
  const run_prof *p = &ri->prof;
  const ib_run_writer_prof *wp = &ri->wprof;
  double wall = now_s() - ri->t_start;
  fprintf(stderr,
          "imgbatch run profile: %.3f s (executor start %.3f s, stop %.3f s), %llu frames, %.1f MB "
          "in; reader: read %.3f s, buffers "
          "%.3f s, queue full %.3f s; driver: stream %.3f s (parse %.3f), no input %.3f s, "
          "writer full %.3f s; writer: write %.3f s, free %.3f s, idle %.3f s\n",
          wall, start, destroy, (unsigned long long)p->frames, (double)p->bytes / 1e6, p->read_s,
          p->alloc_s, p->full_s, p->next_s, p->parse_s, p->starve_s, p->put_s, wp->write_s,
          wp->free_s, wp->idle_s);
}

/* Drives the stream to its end, handing each result to the writer thread;
 * false when the stream or a write failed (said on stderr). */
static bool drive(ib_executor *ex, run_input *ri, bool download, ib_run_writer *w) {
  ib_results *rs = NULL;
  if (ib_executor_run(ex, next_input, ri, &rs) != IB_OK) return false;
  bool ok = true;
  ib_result res;
  ib_status st = IB_END;
  while (ok) {
    double t0 = ri->profile ? now_s() : 0;
    st = ib_results_next(rs, &res);
    double t1 = ri->profile ? now_s() : 0;
    ri->prof.next_s += t1 - t0;
    if (st == IB_AGAIN) {
      wait_input(ri);
      continue;
    }
    /* Lent images still being written hold the budget: they come back as
     * the writer frees them. */
    if (st == IB_RESULT_BACKPRESSURE && ib_run_writer_pending(w) > 0) {
      ib_run_writer_drain(w);
      continue;
    }
    if (st != IB_OK) break;
    if (res.kind == IB_RESULT_RESIDENT && download) download_resident(&res);
    ok = ib_run_writer_put(w, &res);
    if (ri->profile) ri->prof.put_s += now_s() - t1;
  }
  if (ok && st != IB_END) {
    fprintf(stderr, "imgbatch run: executor stopped: %s\n", ib_status_name(st));
    ok = false;
  }
  char why[128] = "";
  ib_run_writer_prof wp = {0};
  if (!ib_run_writer_finish(w, why, sizeof why, &wp)) {
    fprintf(stderr, "imgbatch run: writing results failed: %s\n", why);
    ok = false;
  }
  ib_results_close(rs);
  ri->wprof = wp;
  return ok;
}

int ib_cmd_run(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    run_usage(stdout);
    return IB_EXIT_OK;
  }
  run_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc != IB_EXIT_OK) return rc;
  ib_executor *ex = NULL;
  ib_error err = {0};
  double t_start = now_s();
  if (ib_executor_create(&o.exec, &ex, &err) != IB_OK) {
    fprintf(stderr, "imgbatch run: %s\n", err.message);
    return IB_EXIT_FAILURE;
  }
  FILE *in = o.in ? fopen(o.in, "rb") : stdin;
  FILE *out = o.out ? fopen(o.out, "wb") : stdout;
  if (!in || !out) {
    fprintf(stderr, "imgbatch run: cannot open %s\n", !in ? o.in : o.out);
    if (in && o.in) fclose(in);
    ib_executor_destroy(ex);
    return IB_EXIT_FAILURE;
  }
  /* On the heap: a reader left in a read that never returns (below) must
   * not find its state in a stack frame that is gone. */
  run_input *ri = calloc(1, sizeof *ri);
  if (!ri) {
    fprintf(stderr, "imgbatch run: out of memory\n");
    ib_executor_destroy(ex);
    return IB_EXIT_FAILURE;
  }
  const char *prof = getenv("IB_RUN_PROFILE");
  *ri = (run_input){
      .ex = ex,
      .in = in,
      .limits = {.source_root = o.source_root},
      .ahead_bytes = (size_t)(o.read_ahead != UINT64_MAX ? o.read_ahead : o.exec.host_bytes / 4),
      .profile = prof && *prof && strcmp(prof, "0") != 0,
      .t_start = t_start};
  double t_exec = now_s();
  pthread_mutex_init(&ri->mu, NULL);
  pthread_cond_init(&ri->changed, NULL);
  struct stat st;
  bool regular = fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode);
  /* A reader gone away is a write error (EPIPE), said and exit 1, not a
   * silent death by signal. */
  signal(SIGPIPE, SIG_IGN);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int encoders = o.decode_threads ? o.decode_threads : cpus > 0 ? (int)cpus : 1;
  size_t items = 2u * (size_t)encoders > WRITER_ITEMS ? 2u * (size_t)encoders : WRITER_ITEMS;
  ib_run_writer *w = ib_run_writer_start(fileno(out), items, writer_bytes(&o.exec), encoders);
  pthread_t reader;
  ri->spare = ib_run_spare_start(ex); /* NULL: the reader gets every buffer itself */
  if (!w || pthread_create(&reader, NULL, reader_main, ri) != 0) {
    fprintf(stderr, "imgbatch run: cannot start the %s thread\n", w ? "input reader" : "writer");
    if (w) ib_run_writer_finish(w, NULL, 0, NULL);
    ib_run_spare_stop(ri->spare);
    ib_executor_destroy(ex);
    free(ri);
    return IB_EXIT_FAILURE;
  }
  bool ok = drive(ex, ri, o.download_resident, w);
  if (!stop_reader(ri, regular)) {
    /* The stream failed while the input (a pipe) stays open: the reader
     * may sit in a read that never returns, or inside the executor, so
     * neither is torn down under it (nor its state freed); the process is
     * about to exit. */
    fprintf(stderr, "imgbatch run: stopping with input unread\n");
    return IB_EXIT_FAILURE;
  }
  pthread_join(reader, NULL);
  ib_run_spare_stop(ri->spare);
  for (; ri->count > 0; ri->count--, ri->head = (ri->head + 1) % READ_AHEAD_ITEMS)
    if (ri->q[ri->head].buf) ib_executor_buffer_free(ex, ri->q[ri->head].buf);
  if (!ok || ri->stream_failed) rc = IB_EXIT_FAILURE;
  double t_destroy = now_s();
  ib_executor_destroy(ex);
  if (ri->profile) print_profile(ri, t_exec - t_start, now_s() - t_destroy);
  pthread_mutex_destroy(&ri->mu);
  pthread_cond_destroy(&ri->changed);
  free(ri);
  if (o.in) fclose(in);
  if (o.out && fclose(out) != 0) rc = IB_EXIT_FAILURE;
  return rc;
}
