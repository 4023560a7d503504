/*
 * imgbatch demo: the README's main job. Starts the embedded broker and one
 * worker as child processes, publishes the sample jobs (written with the
 * Python client by scripts/demo_jobs.py, with Pillow's own bytes for each
 * as the expectation), collects one Result per job (a resident output is
 * fetched back with a Download command), writes the images to the output
 * folder and prints a table: key, graph, outcome, time, equal to Pillow.
 */
#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "codec/codec.h"
#include "gpu/cuda_probe.h"
#include "proto/imgbatch.pb-c.h"

#define MAX_DEMO_JOBS 256

typedef struct demo_job {
  uint8_t *bytes;
  size_t len;
  char key[160]; /* topic/partition/offset once delivered */
  bool delivered;
  int32_t partition;
  int64_t offset;
  double sent_ms, got_ms;
  Imgbatch__V1__Result *result;   /* what the worker answered */
  Imgbatch__V1__Result *expected; /* Pillow's bytes, or the error expected */
  char control_key[160];          /* a resident output's Download command */
} demo_job;

typedef struct demo {
  const char *jobs_path, *expect_path, *out_dir, *backend;
  const char *max_side; /* --max-side, handed to the worker as is; NULL: its default */
  demo_job jobs[MAX_DEMO_JOBS];
  size_t n;
  pid_t broker, worker;
  char bootstrap[256];
  int64_t results_next[1024]; /* per results partition: the offset expected next */
  int64_t results_deleted;    /* Results the broker deleted before we read them */
} demo;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void demo_usage(FILE *f) {
  fprintf(f,
          "usage: imgbatch demo --jobs FILE [--expect FILE] [--out DIR] [--backend auto|cuda|cpu]\n"
          "                     [--max-side N]\n\n"
          "Starts the embedded broker and one worker, publishes the delimited Jobs of FILE\n"
          "(scripts/demo_jobs.py writes them, with Pillow's bytes for each in --expect), writes\n"
          "every result image to DIR (default demo-out) and prints key, graph, outcome, time and\n"
          "whether the bytes equal Pillow 12.3. --backend auto (default) uses the GPU when there\n"
          "is one, else the CPU reference backend, and says so. --max-side N is the worker's\n"
          "(default 16384: the widest and tallest image a job may hold).\n"
          "exit codes: 0 every job as expected, 1 a mismatch or a failure, 2 usage error\n");
}

static bool read_frames(const char *path, demo *d) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t len;
  ib_frame_status fs;
  while ((fs = ib_frame_read_len(f, 64u << 20, &len)) == IB_FRAME_OK && d->n < MAX_DEMO_JOBS) {
    demo_job *j = &d->jobs[d->n++];
    j->bytes = malloc(len ? len : 1);
    j->len = len;
    if (!j->bytes || ib_frame_read_body(f, j->bytes, len) != IB_FRAME_OK) break;
  }
  fclose(f);
  return fs == IB_FRAME_EOF;
}

static bool read_expected(const char *path, demo *d) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t len;
  for (size_t i = 0; i < d->n && ib_frame_read_len(f, 256u << 20, &len) == IB_FRAME_OK; i++) {
    uint8_t *buf = malloc(len ? len : 1);
    if (buf && ib_frame_read_body(f, buf, len) == IB_FRAME_OK)
      d->jobs[i].expected = imgbatch__v1__result__unpack(NULL, len, buf);
    free(buf);
  }
  fclose(f);
  return true;
}

/* fork + exec of this binary with `args`; stdout to a pipe when `out`. */
static pid_t spawn(char *const args[], int *out, const char *log_path) {
  int fds[2] = {-1, -1};
  if (out && pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (out) dup2(fds[1], 1);
    if (log_path) {
      FILE *l = fopen(log_path, "w");
      if (l) dup2(fileno(l), 2);
    }
    if (out) close(fds[0]), close(fds[1]);
    execv("/proc/self/exe", args);
    _exit(127);
  }
  if (out) {
    close(fds[1]);
    *out = fds[0];
  }
  return pid;
}

static bool start_broker(demo *d) {
  char *args[] = {"imgbatch", "broker", NULL};
  int fd = -1;
  d->broker = spawn(args, &fd, NULL);
  if (d->broker < 0) return false;
  FILE *f = fdopen(fd, "r");
  char line[240] = "";
  bool ok = f && fgets(line, sizeof line, f) && strncmp(line, "bootstrap=", 10) == 0;
  if (ok) {
    line[strcspn(line, "\n")] = 0;
    snprintf(d->bootstrap, sizeof d->bootstrap, "%s", line + 10);
  }
  return ok;
}

static bool start_worker(demo *d) {
  char log[600];
  snprintf(log, sizeof log, "%s/worker.log", d->out_dir);
  /* The mock broker answers a fetch only when fetch.wait.max.ms ends. */
  char *args[] = {"imgbatch",
                  "worker",
                  "--brokers",
                  d->bootstrap,
                  "--backend",
                  (char *)d->backend,
                  "--worker-id",
                  "demo-worker",
                  "--grace-seconds",
                  "20",
                  "-X",
                  "session.timeout.ms=6000",
                  "-X",
                  "fetch.wait.max.ms=20",
                  d->max_side ? "--max-side" : NULL,
                  (char *)d->max_side,
                  NULL};
  d->worker = spawn(args, NULL, log);
  return d->worker > 0;
}

/* The worker has joined the group once its log says "assigned" (so the
 * times below are the jobs', not the group join's). */
static bool wait_assigned(const demo *d, double timeout_ms) {
  char path[600], line[4096];
  snprintf(path, sizeof path, "%s/worker.log", d->out_dir);
  double end = now_ms() + timeout_ms;
  while (now_ms() < end) {
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
      found = strstr(line, "\"event\":\"assigned\"");
    if (f) fclose(f);
    if (found) return true;
    int st;
    if (waitpid(d->worker, &st, WNOHANG) == d->worker) return false;
    usleep(50000);
  }
  return false;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  demo_job *j = m->_private;
  if (m->err) return;
  snprintf(j->key, sizeof j->key, "%s/%" PRId32 "/%" PRId64, rd_kafka_topic_name(m->rkt),
           m->partition, m->offset);
  j->partition = m->partition;
  j->offset = m->offset;
  j->delivered = true;
}

static rd_kafka_t *client(demo *d, rd_kafka_type_t type, const char *group) {
  char err[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", d->bootstrap, err, sizeof err);
  rd_kafka_conf_set(c, "log_level", "3", err, sizeof err);
  if (type == RD_KAFKA_PRODUCER) rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
  if (group) {
    rd_kafka_conf_set(c, "group.id", group, err, sizeof err);
    rd_kafka_conf_set(c, "fetch.wait.max.ms", "20", err, sizeof err);
    rd_kafka_conf_set(c, "auto.offset.reset", "earliest", err, sizeof err);
  }
  rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof err);
  if (!rk) fprintf(stderr, "imgbatch demo: %s\n", err);
  return rk;
}

/* A resident output comes back through a Download command (png). */
static void request_download(demo *d, rd_kafka_t *p, demo_job *j) {
  (void)d;
  Imgbatch__V1__Control c = IMGBATCH__V1__CONTROL__INIT;
  Imgbatch__V1__Download dl = IMGBATCH__V1__DOWNLOAD__INIT;
  Imgbatch__V1__CpuOutput png = IMGBATCH__V1__CPU_OUTPUT__INIT;
  png.format = IMGBATCH__V1__FORMAT__PNG;
  dl.handle = j->result->resident;
  dl.output = &png;
  c.command_case = IMGBATCH__V1__CONTROL__COMMAND_DOWNLOAD;
  c.download = &dl;
  size_t n = imgbatch__v1__control__get_packed_size(&c);
  uint8_t *buf = malloc(n);
  if (!buf) return;
  imgbatch__v1__control__pack(&c, buf);
  demo_job *cj = &d->jobs[MAX_DEMO_JOBS - 1]; /* scratch for the delivery report */
  *cj = (demo_job){0};
  rd_kafka_producev(p, RD_KAFKA_V_TOPIC("imgbatch.control"), RD_KAFKA_V_VALUE(buf, n),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE), RD_KAFKA_V_OPAQUE(cj),
                    RD_KAFKA_V_END);
  rd_kafka_flush(p, 10000);
  snprintf(j->control_key, sizeof j->control_key, "%s", cj->key);
}

static demo_job *match(demo *d, const void *key, size_t len, bool *download) {
  for (size_t i = 0; i < d->n; i++) {
    demo_job *j = &d->jobs[i];
    *download =
        j->control_key[0] && strlen(j->control_key) == len && memcmp(j->control_key, key, len) == 0;
    if (*download || (strlen(j->key) == len && memcmp(j->key, key, len) == 0)) return j;
  }
  return NULL;
}

/* The results reader joins its group before any job is sent, so the ms
 * column times the jobs, not the reader's group join (seconds on the mock). */
static rd_kafka_t *reader(demo *d) {
  rd_kafka_t *c = client(d, RD_KAFKA_CONSUMER, "imgbatch-demo-reader");
  if (!c) return NULL;
  rd_kafka_poll_set_consumer(c);
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, "imgbatch.results", RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(c, t);
  rd_kafka_topic_partition_list_destroy(t);
  double end = now_ms() + 60000;
  bool assigned = false;
  while (!err && !assigned && now_ms() < end) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
    if (m) rd_kafka_message_destroy(m); /* nothing was sent yet */
    rd_kafka_topic_partition_list_t *a = NULL;
    if (rd_kafka_assignment(c, &a) == RD_KAFKA_RESP_ERR_NO_ERROR) assigned = a->cnt > 0;
    if (a) rd_kafka_topic_partition_list_destroy(a);
  }
  if (!assigned) {
    fprintf(stderr, "imgbatch demo: the results reader was not assigned imgbatch.results (%s)\n",
            err ? rd_kafka_err2str(err) : "timed out");
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return NULL;
  }
  return c;
}

/* The broker's log start of a partition; -1 when it does not answer. */
static int64_t low_watermark(rd_kafka_t *c, const char *topic, int32_t partition) {
  int64_t lo = -1, hi = -1;
  if (rd_kafka_query_watermark_offsets(c, topic, partition, &lo, &hi, 2000)) return -1;
  return lo;
}

/* The embedded broker deletes the oldest messages of a full partition and
 * the reader then moves on to the log start without an error: a jump in the
 * offsets read, to past a log start beyond the offset expected, is a loss.
 * The demo's broker is fresh, so every partition is expected from 0. */
static void note_offset(demo *d, rd_kafka_t *c, const rd_kafka_message_t *m) {
  if (m->partition < 0 || m->partition >= 1024) return;
  int64_t expected = d->results_next[m->partition];
  d->results_next[m->partition] = m->offset + 1;
  if (m->offset <= expected) return;
  int64_t lo = low_watermark(c, "imgbatch.results", m->partition);
  if (lo > expected) d->results_deleted += (lo < m->offset ? lo : m->offset) - expected;
}

/* Names what the broker deleted of the jobs that have no Result. */
static void report_gap(const demo *d, rd_kafka_t *c, size_t missing) {
  size_t jobs_deleted = 0;
  for (size_t i = 0; i < d->n; i++) {
    const demo_job *j = &d->jobs[i];
    if (j->result || !j->delivered) continue;
    int64_t lo = low_watermark(c, "imgbatch.jobs", j->partition);
    if (lo > j->offset) jobs_deleted++;
  }
  fprintf(stderr,
          "imgbatch demo: %zu job(s) have no Result; the broker deleted %zu of those jobs before "
          "the worker read them and %" PRId64
          " Result(s) before the demo read them (the embedded broker keeps about 5 MiB a "
          "partition)\n",
          missing, jobs_deleted, d->results_deleted);
}

static bool collect(demo *d, rd_kafka_t *p, rd_kafka_t *c) {
  size_t missing = d->n;
  double deadline = now_ms() + 180000;
  while (missing && now_ms() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
    if (!m) continue;
    if (!m->err) note_offset(d, c, m);
    bool download = false;
    demo_job *j = m->err ? NULL : match(d, m->key, m->key_len, &download);
    Imgbatch__V1__Result *r = j ? imgbatch__v1__result__unpack(NULL, m->len, m->payload) : NULL;
    rd_kafka_message_destroy(m);
    if (!r) continue;
    if (download || !j->result) {
      if (j->result) imgbatch__v1__result__free_unpacked(j->result, NULL);
      j->result = r;
      j->got_ms = now_ms();
      if (r->outcome_case == IMGBATCH__V1__RESULT__OUTCOME_RESIDENT && !download)
        request_download(d, p, j);
      else
        missing--;
    } else {
      imgbatch__v1__result__free_unpacked(r, NULL); /* a duplicate */
    }
  }
  if (missing || d->results_deleted) report_gap(d, c, missing);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  return missing == 0;
}

/* Decodes the result's bytes (png, or raw as is) and compares them with
 * Pillow's; "n/a" where the graph has no Pillow equivalent. */
static const char *verdict(const demo_job *j, bool *ok) {
  const Imgbatch__V1__Result *e = j->expected, *r = j->result;
  if (!r) return *ok = false, "no result";
  if (!e || e->outcome_case == IMGBATCH__V1__RESULT__OUTCOME__NOT_SET) return "n/a";
  if (e->outcome_case == IMGBATCH__V1__RESULT__OUTCOME_ERROR) {
    bool same = r->outcome_case == IMGBATCH__V1__RESULT__OUTCOME_ERROR &&
                r->error->stage == e->error->stage && r->error->kind == e->error->kind;
    *ok &= same;
    return same ? "expected error" : "UNEXPECTED";
  }
  if (r->outcome_case != IMGBATCH__V1__RESULT__OUTCOME_IMAGE) return *ok = false, "NO";
  const Imgbatch__V1__ImageData *im = r->image, *want = e->image;
  ib_shape shape = {0};
  ib_error err = {0};
  size_t size =
      (size_t)want->width * want->height * (strlen(want->mode) == 4 ? 4 : strlen(want->mode));
  uint8_t *px = malloc(size ? size : 1);
  bool same = false;
  if (px && im->format == IMGBATCH__V1__FORMAT__RAW) {
    same = im->data.len == want->data.len && memcmp(im->data.data, want->data.data, size) == 0;
  } else if (px && ib_codec_header(im->data.data, im->data.len, &shape, &err) == IB_OK &&
             shape.width == want->width && shape.height == want->height &&
             strcmp(ib_mode_name(shape.mode), want->mode) == 0 && size == want->data.len &&
             ib_codec_decode_into(im->data.data, im->data.len, &shape, px, &err) == IB_OK) {
    same = memcmp(px, want->data.data, size) == 0;
  }
  free(px);
  *ok &= same;
  return same ? "yes" : "NO";
}

static void write_image(const demo *d, const demo_job *j, const char *name) {
  const Imgbatch__V1__Result *r = j->result;
  if (!r || r->outcome_case != IMGBATCH__V1__RESULT__OUTCOME_IMAGE) return;
  static const char *const ext[] = {"raw", "png", "jpg", "webp", "tiff"};
  char path[700];
  unsigned f = (unsigned)r->image->format < 5 ? (unsigned)r->image->format : 0;
  snprintf(path, sizeof path, "%s/%s.%s", d->out_dir, name, ext[f]);
  FILE *out = fopen(path, "wb");
  if (out) {
    fwrite(r->image->data.data, 1, r->image->data.len, out);
    fclose(out);
  }
}

static const char *graph_of(const demo_job *j) {
  const Imgbatch__V1__Result *r = j->result;
  for (size_t i = 0; r && i < r->n_metadata; i++)
    if (strcmp(r->metadata[i]->key, "graph") == 0 && r->metadata[i]->value &&
        r->metadata[i]->value->kind_case == IMGBATCH__V1__VALUE__KIND_STRING_VALUE)
      return r->metadata[i]->value->string_value;
  return "-";
}

/* imgbatch.v1.ErrorKind names (proto numbering). */
static const char *kind_name(Imgbatch__V1__ErrorKind k) {
  static const char *const names[] = {"unspecified", "invalid", "unsupported", "limit",
                                      "decode",      "device",  "timeout",     "internal"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

static bool report(demo *d) {
  bool ok = true;
  printf("%-22s %-44s %-26s %8s  %s\n", "key", "graph", "outcome", "ms", "equal to Pillow 12.3");
  for (size_t i = 0; i < d->n; i++) {
    demo_job *j = &d->jobs[i];
    const Imgbatch__V1__Result *r = j->result;
    char key[64], outcome[160];
    snprintf(key, sizeof key, "%s",
             !r                                                                ? "?"
             : r->input_key_case == IMGBATCH__V1__RESULT__INPUT_KEY_KEY_STRING ? r->key_string
                                                                               : "(none)");
    if (!r)
      snprintf(outcome, sizeof outcome, "missing");
    else if (r->outcome_case == IMGBATCH__V1__RESULT__OUTCOME_IMAGE)
      snprintf(outcome, sizeof outcome, "%s %ux%u%s", r->image->mode, r->image->width,
               r->image->height, j->control_key[0] ? " (resident)" : "");
    else if (r->outcome_case == IMGBATCH__V1__RESULT__OUTCOME_ERROR)
      snprintf(outcome, sizeof outcome, "error %s/%s", ib_stage_name((ib_stage)r->error->stage),
               kind_name(r->error->kind));
    else
      snprintf(outcome, sizeof outcome, "%s",
               r->outcome_case == IMGBATCH__V1__RESULT__OUTCOME_FILE ? "file" : "other");
    const char *v = verdict(j, &ok);
    printf("%-22s %-44.44s %-26.26s %8.1f  %s\n", key, graph_of(j), outcome,
           j->got_ms > 0 ? j->got_ms - j->sent_ms : 0.0, v);
    if (r && key[0] != '?' && strcmp(key, "(none)") != 0) write_image(d, j, key);
    if (r && r->outcome_case == IMGBATCH__V1__RESULT__OUTCOME_ERROR)
      printf("%-22s   %s\n", "", r->error->message);
  }
  return ok;
}

static void stop_child(pid_t pid, int *status) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  waitpid(pid, status, 0);
}

static int run_demo(demo *d) {
  if (!start_broker(d)) {
    fprintf(stderr, "imgbatch demo: the embedded broker did not start\n");
    return IB_EXIT_FAILURE;
  }
  if (!start_worker(d)) return IB_EXIT_FAILURE;
  printf("demo: broker %s, worker on the %s backend (log: %s/worker.log)\n", d->bootstrap,
         d->backend, d->out_dir);
  if (!wait_assigned(d, 60000)) {
    fprintf(stderr, "imgbatch demo: the worker did not join the group (see %s/worker.log)\n",
            d->out_dir);
    return IB_EXIT_FAILURE;
  }
  rd_kafka_t *c = reader(d);
  if (!c) return IB_EXIT_FAILURE;
  rd_kafka_t *p = client(d, RD_KAFKA_PRODUCER, NULL);
  if (!p) {
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return IB_EXIT_FAILURE;
  }
  for (size_t i = 0; i < d->n; i++) {
    d->jobs[i].sent_ms = now_ms();
    rd_kafka_producev(p, RD_KAFKA_V_TOPIC("imgbatch.jobs"),
                      RD_KAFKA_V_VALUE(d->jobs[i].bytes, d->jobs[i].len),
                      RD_KAFKA_V_OPAQUE(&d->jobs[i]), RD_KAFKA_V_END);
  }
  rd_kafka_flush(p, 30000);
  bool all = collect(d, p, c);
  rd_kafka_destroy(p);
  int wstatus = 0, bstatus = 0;
  stop_child(d->worker, &wstatus);
  d->worker = 0;
  bool ok = report(d) && all;
  bool drained = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
  printf("demo: %zu jobs, %s; worker %s\n", d->n, ok ? "all as expected" : "MISMATCHES",
         drained ? "drained and exited 0" : "did not exit cleanly");
  stop_child(d->broker, &bstatus);
  d->broker = 0;
  return ok && drained ? IB_EXIT_OK : IB_EXIT_FAILURE;
}

int ib_cmd_demo(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    demo_usage(stdout);
    return IB_EXIT_OK;
  }
  static demo d;
  d = (demo){.out_dir = "demo-out", .backend = "auto"};
  for (int i = 1; i < argc; i++) {
    const char **slot = strcmp(argv[i], "--jobs") == 0       ? &d.jobs_path
                        : strcmp(argv[i], "--expect") == 0   ? &d.expect_path
                        : strcmp(argv[i], "--out") == 0      ? &d.out_dir
                        : strcmp(argv[i], "--backend") == 0  ? &d.backend
                        : strcmp(argv[i], "--max-side") == 0 ? &d.max_side
                                                             : NULL;
    if (!slot || i + 1 >= argc) {
      demo_usage(stderr);
      return IB_EXIT_USAGE;
    }
    *slot = argv[++i];
  }
  uint32_t side;
  if (!d.jobs_path || (d.max_side && !ib_cli_parse_max_side("demo", d.max_side, &side))) {
    demo_usage(stderr);
    return IB_EXIT_USAGE;
  }
  if (strcmp(d.backend, "auto") == 0) {
    char desc[256];
    if (ib_cuda_probe(0, desc, sizeof desc) == IB_OK) {
      d.backend = "cuda";
    } else {
      d.backend = "cpu";
      fprintf(stderr, "imgbatch demo: NO CUDA DEVICE (%s) - running on the CPU reference backend\n",
              desc);
    }
  }
  mkdir(d.out_dir, 0755);
  if (!read_frames(d.jobs_path, &d) || d.n == 0 || d.n >= MAX_DEMO_JOBS) {
    fprintf(stderr, "imgbatch demo: cannot read jobs from %s\n", d.jobs_path);
    return IB_EXIT_FAILURE;
  }
  if (d.expect_path && !read_expected(d.expect_path, &d)) {
    fprintf(stderr, "imgbatch demo: cannot read %s\n", d.expect_path);
    return IB_EXIT_FAILURE;
  }
  int rc = run_demo(&d);
  stop_child(d.worker, &(int){0});
  stop_child(d.broker, &(int){0});
  for (size_t i = 0; i < d.n; i++) {
    free(d.jobs[i].bytes);
    if (d.jobs[i].result) imgbatch__v1__result__free_unpacked(d.jobs[i].result, NULL);
    if (d.jobs[i].expected) imgbatch__v1__result__free_unpacked(d.jobs[i].expected, NULL);
  }
  return rc;
}
