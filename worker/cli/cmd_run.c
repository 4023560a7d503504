/*
 * imgbatch run: the offline front end over the executor API. A reader
 * thread (run_reader.c) reads each frame straight into an executor buffer
 * that its job keeps until done; the executor's run stream pulls them
 * lazily, parsed on the driving thread (at most the credit window plus one
 * job admitted); each Result the stream yields goes to a writer thread (run_writer.c) that
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_reader.h"
#include "cli/run_writer.h"
#include "core/error.h"

typedef struct run_opts {
  const char *in, *out, *source_root;
  uint32_t max_side; /* --max-side; 0: the library's default */
  bool download_resident;
  uint64_t read_ahead; /* bytes of frames read ahead past the first; UINT64_MAX: default */
  uint64_t exec_ahead; /* --executor-ahead; UINT64_MAX: default */
  int decode_threads;  /* encoder threads, and the backend's host threads; 0: every CPU */
  ib_executor_options exec;
  ib_config *config; /* --tune settings (exec.config); NULL until one is given */
} run_opts;

_Static_assert(IB_DEFAULT_MAX_SIDE == 16384u && IB_MAX_SIDE_LIMIT == 65535u,
               "run_usage states --max-side's default and bound");

/* The defaults of --read-ahead and --executor-ahead: a quarter of
 * host_bytes, at most 64 MiB each (what the default caps give): larger
 * caps let more be held, not more be written per second. */
#define IB_RUN_AHEAD_MAX ((uint64_t)64 << 20)

/* Where the time of `imgbatch run` goes (IB_RUN_PROFILE=1: on stderr at the
 * end): seconds per thread and what it was doing. The driving thread's: in
 * the stream, parsing, with no input, with the writer full. */
typedef struct run_prof {
  double next_s, parse_s, starve_s, put_s;
  uint64_t depth_max, held_back; /* frames in the stream at most; AGAINs for the bound */
} run_prof;

/* The driving thread's view of the input: frames the reader thread read
 * (run_reader.h), parsed here. */
typedef struct run_input {
  ib_executor *ex;
  ib_run_reader *reader;
  ib_graph_limits limits;
  /* The executor's depth: inputs handed to the stream and results got
   * back. The writer is the slowest stage, so past a few frames more
   * depth only holds more buffers (each a fresh pinned block the first
   * time round: cuMemHostAlloc is slow) without more throughput;
   * large caps would otherwise let it take every frame the reader read. */
  uint64_t taken, received;
  size_t max_len;     /* the largest frame taken */
  size_t ahead_bytes; /* the bound (--executor-ahead); 0: none */
  uint64_t ahead_min; /* frames always allowed */
  bool held_back;     /* the last next_input said AGAIN for the bound */
  bool let_one;       /* the stream had nothing live: let one through */
  bool profile;       /* IB_RUN_PROFILE set: timings on stderr at the end */
  double t_start;
  run_prof prof;
  ib_run_reader_prof rprof;
  ib_run_writer_prof wprof;
} run_input;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run_usage(FILE *f) {
  fprintf(
      f,
      "usage: imgbatch run [--backend cpu|cuda] [--device N] [--in FILE] [--out FILE]\n"
      "                    [--source-root DIR] [--max-side N] [--max-jobs N] [--max-in-flight N]\n"
      "                    [--gpu-bytes N] [--host-bytes N] [--compile-threads N]\n"
      "                    [--compile-timeout S]\n"
      "                    [--decode-threads N] [--read-ahead N] [--executor-ahead N]\n"
      "                    [--download-resident] [--tune KEY=VALUE]...\n\n"
      "Reads varint-length-delimited imgbatch.v1.Job messages (stdin by default) and writes\n"
      "one varint-length-delimited imgbatch.v1.Result per job (stdout by default), in\n"
      "completion order (match by job_id or input_key). A job that fails yields an error\n"
      "Result naming stage and kind; the stream goes on.\n"
      "--source-root DIR lets jobs name path sources inside DIR.\n"
      "--max-side N (default 16384, at most 65535): the widest and tallest image a job may\n"
      "hold, sources (checked from their headers, before decoding) and every step; a larger\n"
      "one is answered Limit. Memory is bounded by the credit caps, not the side: a job too\n"
      "large for --host-bytes / --gpu-bytes is answered Limit naming its need and the cap.\n"
      "--max-jobs (64), --max-in-flight (2), --gpu-bytes (512M), --host-bytes (256M) set the\n"
      "executor's credit caps; byte sizes take a K, M or G suffix (powers of 1024).\n"
      "--read-ahead N (default: min(--host-bytes / 4, 64M)): bytes of input frames read\n"
      "ahead of the executor, past the first (at most 16 frames; 0: one frame).\n"
      "--executor-ahead N (default: min(--host-bytes / 4, 64M)): bytes of frames handed to\n"
      "the executor whose results have not come back, past max-in-flight + 2 frames\n"
      "(0: only the caps bound them).\n"
      "--device N picks the CUDA device (cuda backend).\n"
      "--compile-threads N (cuda, default 2): N threads compile new kernel signatures off\n"
      "the submissions while pointwise stages run on the interpreter tier; 0 compiles inline.\n"
      "--compile-timeout S (cuda, default 30): a kernel compile not done after S seconds fails\n"
      "the jobs waiting for it (error Results, stage execute, kind Internal).\n"
      "--decode-threads N (default 0: every CPU): threads that encode PNG/JPEG/WebP/TIFF\n"
      "outputs (and the cuda backend's source decodes), several results at once.\n"
      "Jobs with output gpu (cuda backend) are answered with a resident HandleRef\n"
      "(worker_id \"run\", handle_id = job id, generation 1) and released at once: run keeps\n"
      "nothing after it exits. --download-resident downloads each one instead and writes it\n"
      "as a raw image Result.\n"
      "--tune KEY=VALUE sets one of the library's tuning and test settings (repeatable;\n"
      "keys and ranges: docs/tuning.md); an unknown key or a value out of range is a usage\n"
      "error naming it.\n"
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
  } else if (strcmp(a, "--executor-ahead") == 0) {
    return ib_cli_parse_u64(v, true, &o->exec_ahead) && o->exec_ahead != UINT64_MAX;
  } else if (strcmp(a, "--source-root") == 0) {
    o->source_root = v;
  } else if (strcmp(a, "--max-side") == 0) {
    return ib_cli_parse_max_side("run", v, &o->max_side);
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
  } else if (strcmp(a, "--compile-timeout") == 0) {
    uint32_t n = 0;
    if (!ib_cli_parse_u32(v, &n) || !n || n > UINT32_MAX / 1000u) return false;
    o->exec.compile_timeout_ms = n * 1000u;
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

/* --tune KEY=VALUE onto o->config (created at the first). */
static bool tune(run_opts *o, const char *kv) {
  ib_error err = {0};
  if (!o->config && !(o->config = ib_config_new())) {
    fprintf(stderr, "imgbatch run: out of memory\n");
    return false;
  }
  o->exec.config = o->config;
  if (ib_cli_tune(o->config, kv, &err)) return true;
  fprintf(stderr, "imgbatch run: --tune: %s\n", err.message);
  return false;
}

static int parse_args(int argc, char **argv, run_opts *o) {
  *o = (run_opts){0};
  ib_executor_options_default(&o->exec);
  o->exec.cache_dir = ib_cli_cache_dir();
  o->exec.compile_threads = IB_CLI_COMPILE_THREADS;
  o->exec.log_cb = ib_cli_log_stderr;
  o->exec.log_opaque = "imgbatch run";
  o->read_ahead = UINT64_MAX;
  o->exec_ahead = UINT64_MAX;
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--download-resident") == 0) {
      o->download_resident = true;
      i--; /* a flag: no value */
      continue;
    }
    if (strcmp(argv[i], "--tune") == 0 && i + 1 < argc) {
      if (!tune(o, argv[i + 1])) return IB_EXIT_USAGE;
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

/* Whether the executor holds enough frames for now (see run_input). */
static bool deep_enough(run_input *ri) {
  const uint64_t live = ri->taken - ri->received;
  if (!ri->ahead_bytes || live < ri->ahead_min || ri->let_one) return false;
  return (live + 1) * ri->max_len > ri->ahead_bytes;
}

/* ib_input_next_fn: parses what the reader has read, or says "nothing
 * now" (also while the executor is deep enough). Parsing (header probes
 * through libvips) stays on the driving thread: libvips keeps one error
 * buffer per process, and a probe beside a decode would take the other's
 * cause out of its message. */

static ib_status next_input(void *user, ib_input *in, ib_error *err) {
  run_input *ri = user;
  if ((ri->held_back = deep_enough(ri))) {
    ri->prof.held_back++;
    return IB_AGAIN;
  }
  ri->let_one = false;
  uint8_t *buf = NULL;
  size_t len = 0;
  ib_status st = ib_run_reader_take(ri->reader, &buf, &len, err);
  if (st == IB_AGAIN || st == IB_END) return st;
  ri->taken++; /* every input taken yields one result, an error one too */
  if (ri->taken - ri->received > ri->prof.depth_max) ri->prof.depth_max = ri->taken - ri->received;
  if (len > ri->max_len) ri->max_len = len;
  if (st != IB_OK) return st;
  double t0 = ri->profile ? now_s() : 0;
  ib_key key = {0};
  st = ib_executor_parse_buffer(ri->ex, buf, len, &ri->limits, &in->graph, &key, err);
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
  ib_run_reader_wait(ri->reader);
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
 * (96 MiB at the default caps), past the first result. At most 192 MiB
 * however large the caps (sixteen 2048^2 RGB images for the encoder
 * threads): the writer is the slowest stage, so its queue stays full, and
 * more in it is only more pinned buffers held. */
#define WRITER_ITEMS 4u /* twice the encoder threads when there are more */
#define WRITER_BYTES_MAX ((uint64_t)192 << 20)
static size_t writer_bytes(const ib_executor_options *o) {
  const uint64_t b = o->host_bytes / 8 * 3;
  return (size_t)(b < WRITER_BYTES_MAX ? b : WRITER_BYTES_MAX);
}

static void print_profile(const run_input *ri, double start, double destroy) {
  const run_prof *p = &ri->prof;
  const ib_run_reader_prof *rp = &ri->rprof;
  const ib_run_writer_prof *wp = &ri->wprof;
  double wall = now_s() - ri->t_start;
  fprintf(stderr,
          "imgbatch run profile: %.3f s (executor start %.3f s, stop %.3f s), %llu frames, %.1f MB "
          "in; reader: read %.3f s, buffers "
          "%.3f s, queue full %.3f s; driver: stream %.3f s (parse %.3f), no input %.3f s, "
          "writer full %.3f s, executor depth at most %llu frames (held back %llu times); "
          "writer: write %.3f s, free %.3f s, idle %.3f s\n",
          wall, start, destroy, (unsigned long long)rp->frames, (double)rp->bytes / 1e6, rp->read_s,
          rp->alloc_s, rp->full_s, p->next_s, p->parse_s, p->starve_s, p->put_s,
          (unsigned long long)p->depth_max, (unsigned long long)p->held_back, wp->write_s,
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
      /* Held back with nothing live in the stream (not expected: the
       * frames it holds come back as results first): never wait on that. */
      if (ri->held_back)
        ri->let_one = true;
      else
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
    ri->received++;
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
  const char *prof = getenv("IB_RUN_PROFILE");
  const bool profile = prof && *prof && strcmp(prof, "0") != 0;
  /* The CUDA backend's own profile too (its pinned pool among it), logged
   * at close. */
  if (rc == IB_EXIT_OK && profile && !tune(&o, "cuda_profile=true")) rc = IB_EXIT_FAILURE;
  if (rc != IB_EXIT_OK) {
    ib_config_destroy(o.config);
    return rc;
  }
  ib_executor *ex = NULL;
  ib_error err = {0};
  double t_start = now_s();
  const ib_status created = ib_executor_create(&o.exec, &ex, &err);
  ib_config_destroy(o.config); /* the executor keeps its own copy */
  o.exec.config = o.config = NULL;
  if (created != IB_OK) {
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
  const uint64_t quarter = o.exec.host_bytes / 4;
  const uint64_t exec_ahead = o.exec_ahead != UINT64_MAX   ? o.exec_ahead
                              : quarter < IB_RUN_AHEAD_MAX ? quarter
                                                           : IB_RUN_AHEAD_MAX;
  run_input ri = {.ex = ex,
                  .limits = {.source_root = o.source_root, .max_side = o.max_side},
                  .ahead_bytes = (size_t)exec_ahead,
                  .ahead_min = (uint64_t)o.exec.max_in_flight + 2,
                  .profile = profile,
                  .t_start = t_start};
  double t_exec = now_s();
  struct stat st;
  bool regular = fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode);
  /* A reader gone away is a write error (EPIPE), said and exit 1, not a
   * silent death by signal. */
  signal(SIGPIPE, SIG_IGN);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int encoders = o.decode_threads ? o.decode_threads : cpus > 0 ? (int)cpus : 1;
  size_t items = 2u * (size_t)encoders > WRITER_ITEMS ? 2u * (size_t)encoders : WRITER_ITEMS;
  ib_run_writer *w = ib_run_writer_start(fileno(out), items, writer_bytes(&o.exec), encoders);
  size_t ahead = (size_t)(o.read_ahead != UINT64_MAX   ? o.read_ahead
                          : quarter < IB_RUN_AHEAD_MAX ? quarter
                                                       : IB_RUN_AHEAD_MAX);
  if (w) ri.reader = ib_run_reader_start(ex, in, ahead, ri.profile);
  if (!ri.reader) {
    fprintf(stderr, "imgbatch run: cannot start the %s thread\n", w ? "input reader" : "writer");
    if (w) ib_run_writer_finish(w, NULL, 0, NULL);
    ib_executor_destroy(ex);
    return IB_EXIT_FAILURE;
  }
  bool ok = drive(ex, &ri, o.download_resident, w);
  if (!ib_run_reader_stop(ri.reader, regular)) {
    /* The stream failed while the input (a pipe) stays open: the reader
     * may sit in a read that never returns, or inside the executor, so
     * neither is torn down under it (nor its state freed); the process is
     * about to exit. */
    fprintf(stderr, "imgbatch run: stopping with input unread\n");
    return IB_EXIT_FAILURE;
  }
  if (!ok || ib_run_reader_failed(ri.reader)) rc = IB_EXIT_FAILURE;
  ib_run_reader_free(ri.reader, &ri.rprof);
  double t_destroy = now_s();
  ib_executor_destroy(ex);
  if (ri.profile) print_profile(&ri, t_exec - t_start, now_s() - t_destroy);
  if (o.in) fclose(in);
  if (o.out && fclose(out) != 0) rc = IB_EXIT_FAILURE;
  return rc;
}
