/*
 * imgbatch run: the offline front end. Reads varint-delimited Job messages,
 * writes one varint-delimited Result per job, streaming: one frame in memory
 * at a time on the way in, each result written as soon as it exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/result_msg.h"
#include "codec/codec.h"
#include "cpu/cpu_backend.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_probe.h"

#define MAX_FRAME (512u << 20)

typedef struct run_opts {
  const char *in, *out, *source_root;
  ib_backend_kind backend;
  int device;
  ib_cuda *cuda; /* --backend cuda: opened once for the stream */
} run_opts;

static void run_usage(FILE *f) {
  fprintf(f,
          "usage: imgbatch run [--backend cpu|cuda] [--device N] [--in FILE] [--out FILE]\n"
          "                   [--source-root DIR]\n\n"
          "Reads varint-length-delimited imgbatch.v1.Job messages (stdin by default) and writes\n"
          "one varint-length-delimited imgbatch.v1.Result per job (stdout by default). A job\n"
          "that fails yields an error Result naming stage and kind; the stream goes on.\n"
          "--source-root DIR lets jobs name path sources inside DIR.\n"
          "exit codes: 0 input consumed, 1 unreadable/truncated stream or I/O error, 2 usage\n");
}

static int parse_args(int argc, char **argv, run_opts *o) {
  *o = (run_opts){.backend = IB_BACKEND_CPU};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) goto bad;
    if (strcmp(a, "--backend") == 0) {
      if (strcmp(v, "cpu") == 0)
        o->backend = IB_BACKEND_CPU;
      else if (strcmp(v, "cuda") == 0)
        o->backend = IB_BACKEND_CUDA;
      else
        goto bad;
    } else if (strcmp(a, "--device") == 0) {
      o->device = atoi(v);
    } else if (strcmp(a, "--in") == 0) {
      o->in = v;
    } else if (strcmp(a, "--out") == 0) {
      o->out = v;
    } else if (strcmp(a, "--source-root") == 0) {
      o->source_root = v;
    } else {
      goto bad;
    }
    i++;
  }
  return IB_EXIT_OK;
bad:
  fprintf(stderr, "imgbatch run: bad argument '%s'\n", argv[argc > 1 ? 1 : 0]);
  run_usage(stderr);
  return IB_EXIT_USAGE;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Runs one job to a Result and writes it. */
static bool run_job(const run_opts *o, const uint8_t *buf, size_t len, uint64_t job_id, FILE *out) {
  ib_graph_limits lim = {.source_root = o->source_root};
  ib_graph *g = NULL;
  ib_key key = {0};
  ib_error err = {0};
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  uint64_t t0 = now_us();
  ib_status st = ib_graph_parse(buf, len, &lim, &g, &key, &err);
  if (st != IB_OK) {
    bool parsed = err.stage != IB_STAGE_PARSE;
    ib_result_msg_error(&rm, parsed, job_id, parsed ? &key : NULL, &err);
  } else if (o->backend == IB_BACKEND_CUDA) {
    /* Minimal direct path until the executor core drives ib_backend_cuda:
     * one job per submission. */
    ib_backend_job job = {.graph = g, .job_id = job_id};
    ib_cuda_execute_batch(o->cuda, &job, 1, &err);
    uint64_t t1 = now_us();
    st = job.status;
    err = job.err;
    if (st == IB_OK) st = ib_result_msg_image(&rm, job_id, g, &job.out, &err);
    if (st != IB_OK) ib_result_msg_error(&rm, true, job_id, ib_graph_key(g), &err);
    rm.timings.gpu_us = t1 - t0;
    rm.timings.encode_us = now_us() - t1;
    ib_image_release(&job.out);
  } else {
    ib_image im = {0};
    st = ib_cpu_execute(g, &im, &err);
    uint64_t t1 = now_us();
    if (st == IB_OK) st = ib_result_msg_image(&rm, job_id, g, &im, &err);
    if (st != IB_OK) ib_result_msg_error(&rm, true, job_id, ib_graph_key(g), &err);
    rm.timings.gpu_us = t1 - t0;
    rm.timings.encode_us = now_us() - t1;
    ib_image_release(&im);
  }
  bool ok = ib_result_msg_write(&rm, out);
  ib_result_msg_clear(&rm);
  ib_graph_free(g);
  ib_key_clear(&key);
  return ok;
}

static bool frame_error(ib_frame_status fs, FILE *out) {
  ib_error err = {.status = IB_INVALID, .stage = IB_STAGE_PARSE};
  snprintf(err.message, sizeof err.message, "parse: %s",
           fs == IB_FRAME_TRUNCATED ? "input stream ends inside a frame (truncated)"
                                    : "frame length prefix is malformed or exceeds 512 MiB");
  ib_result_msg rm;
  ib_result_msg_init(&rm);
  ib_result_msg_error(&rm, false, 0, NULL, &err);
  bool ok = ib_result_msg_write(&rm, out);
  ib_result_msg_clear(&rm);
  fprintf(stderr, "imgbatch run: %s\n", err.message);
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
  if (o.backend == IB_BACKEND_CUDA) {
    ib_executor_options eo = {.backend = IB_BACKEND_CUDA, .device = o.device};
    ib_error err = {0};
    if (ib_cuda_open(&eo, &o.cuda, &err) != IB_OK) {
      fprintf(stderr, "imgbatch run: --backend cuda: %s\n", err.message);
      return IB_EXIT_FAILURE;
    }
  }
  FILE *in = o.in ? fopen(o.in, "rb") : stdin;
  FILE *out = o.out ? fopen(o.out, "wb") : stdout;
  if (!in || !out) {
    fprintf(stderr, "imgbatch run: cannot open %s\n", !in ? o.in : o.out);
    return IB_EXIT_FAILURE;
  }
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0;
  uint64_t next_id = 1;
  for (;;) {
    ib_frame_status fs = ib_frame_read(in, MAX_FRAME, &buf, &cap, &len);
    if (fs == IB_FRAME_EOF) break;
    if (fs != IB_FRAME_OK) {
      frame_error(fs, out);
      rc = IB_EXIT_FAILURE;
      break;
    }
    if (!run_job(&o, buf, len, next_id++, out) || fflush(out) != 0) {
      fprintf(stderr, "imgbatch run: writing results failed\n");
      rc = IB_EXIT_FAILURE;
      break;
    }
  }
  free(buf);
  ib_cuda_close(o.cuda);
  if (o.in) fclose(in);
  if (o.out && fclose(out) != 0) rc = IB_EXIT_FAILURE;
  return rc;
}

int ib_cmd_worker(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    printf("usage: imgbatch worker\n\nNot implemented yet (the Kafka worker issue adds it).\n"
           "exit codes: 1 (not implemented)\n");
    return IB_EXIT_OK;
  }
  fprintf(stderr, "imgbatch worker: not implemented yet (the Kafka worker issue adds it)\n");
  return IB_EXIT_FAILURE;
}
