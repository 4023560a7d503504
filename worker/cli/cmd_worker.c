/*
 * imgbatch worker: the Kafka front end (worker/kafka). This file is the
 * command line: flags, IMGBATCH_* environment variables and a config file
 * (precedence in that order), JSON log lines on stderr, and the signals
 * (the first SIGTERM/SIGINT drains, a second exits at once, and so does a
 * drain still running when --grace-seconds have passed).
 */
#include <ctype.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "kafka/json_escape.h"
#include "kafka/worker.h"

static volatile sig_atomic_t stop_requested;
static unsigned grace_backstop_s; /* --grace-seconds, at least 1; set before the handlers */

/* The drain's backstop. The worker checks its grace period between results,
 * but a CPU-backend job runs on the driving thread and may outlast it; the
 * promise is an exit within --grace-seconds, so whatever still runs then is
 * abandoned: not answered, not committed (another member redoes it). Only
 * async-signal-safe calls here, hence the fixed line without a timestamp. */
static void on_grace_expired(int sig) {
  (void)sig;
  static const char line[] =
      "{\"level\":\"error\",\"event\":\"grace_expired\",\"abandoned\":true}\n";
  ssize_t written = write(STDERR_FILENO, line, sizeof line - 1);
  (void)written;
  _exit(1);
}

static void on_signal(int sig) {
  (void)sig;
  if (stop_requested) _exit(1); /* second signal: at once, nothing committed */
  stop_requested = 1;
  alarm(grace_backstop_s);
}

_Static_assert(IB_DEFAULT_MAX_SIDE == 16384u && IB_MAX_SIDE_LIMIT == 65535u,
               "worker_usage states --max-side's default and bound");

#define STR_(x) #x
#define STR(x) STR_(x)

static void worker_usage(FILE *f) {
  fprintf(
      f,
      "usage: imgbatch worker --brokers LIST [--group imgbatch] [--jobs-topic imgbatch.jobs]\n"
      "  [--results-topic imgbatch.results] [--control-topic imgbatch.control]\n"
      "  [--dlq-topic NAME] [--backend cuda|cpu] [--device N] [--source-root DIR]\n"
      "  [--max-side N]\n"
      "  [--output-dir DIR] [--output-ttl S] [--max-result-bytes N] [--decode-threads N]\n"
      "  [--gpu-bytes N] [--host-bytes N] [--max-jobs N] [--max-uncommitted N]\n"
      "  [--max-in-flight N] [--transactional] [--grace-seconds S] [--stall-seconds S]\n"
      "  [--worker-id ID] [--lease-seconds S] [--compile-threads N] [--compile-timeout S]\n"
      "  [--metrics-addr HOST:PORT] [--module-cache-bytes N] [--disk-cache-bytes N]\n"
      "  [-X librdkafka.key=value]... [--tune KEY=VALUE]..."
      " [--config FILE]"
#ifdef IB_FAULTS
      " [--fault SPEC]"
#endif
      "\n\n"
      "Consumes imgbatch.v1.Job messages from a consumer group, executes them and publishes\n"
      "one imgbatch.v1.Result per message (keyed topic/partition/offset of the job), then\n"
      "commits; at-least-once, nothing lost (README: The Kafka worker).\n"
      "Every flag also reads IMGBATCH_<FLAG> (e.g. IMGBATCH_BROKERS, IMGBATCH_HOST_BYTES) and a\n"
      "`flag = value` line of --config FILE (IMGBATCH_CONFIG); flags win over the environment,\n"
      "the environment over the file. -X passes any librdkafka property (SASL/SSL included) to\n"
      "every client; in the file: `X = key=value`. --tune KEY=VALUE sets one of the library's\n"
      "tuning and test settings (docs/tuning.md); in the file: `tune = KEY=VALUE`.\n"
      "--backend defaults to cuda: without a usable GPU the worker exits 1 naming the reason\n"
      "and suggesting --backend cpu (the CPU reference backend).\n"
      "--max-jobs N (default 64): jobs from admission until the broker acknowledges their\n"
      "Result. --max-uncommitted N (default " STR(IB_WORKER_MAX_UNCOMMITTED) "): Results out that no acknowledged commit\n"
      "covers; a crash or kill repeats at most N Results (same keys and bytes), and\n"
      "throughput is at most N Results per delivery + commit round trip.\n"
      "--stall-seconds S (default 60; 0: off): the oldest unfinished job of a partition, older\n"
      "than S and stuck in its stage, is answered with a Timeout Result so that the offsets\n"
      "commit past it; its real result, if it comes later, is dropped.\n"
      "--compile-threads N (cuda, default 2): N threads compile new kernel signatures off the\n"
      "submissions while pointwise stages run on the interpreter tier; 0 compiles inline.\n"
      "--compile-timeout S (cuda, default 30): a kernel compile not done after S seconds fails\n"
      "the jobs waiting for it as a worker fault (retried; sticky faults stop the worker).\n"
      "--module-cache-bytes N (cuda, default 256M), --disk-cache-bytes N (default 2G): the bounds\n"
      "of the loaded kernel modules and of the compiled-kernel cache directory (LRU).\n"
      "Byte sizes take a K, M or G suffix. Logs: one JSON object per line on stderr.\n"
      "--max-side N (default 16384, at most 65535): the widest and tallest image a job may\n"
      "hold, sources (checked from their headers, before decoding) and every step; a larger\n"
      "one is answered Limit. Memory is bounded by the credit caps, not the side: a job too\n"
      "large for --host-bytes / --gpu-bytes is answered Limit naming its need and the cap.\n"
      "--metrics-addr HOST:PORT serves GET /metrics (Prometheus), /healthz and /readyz there\n"
      "(off by default; port 0 picks a free one, logged as {\"event\":\"http\",\"addr\":...}).\n"
#ifdef IB_FAULTS
      "--fault SPEC (test builds only): device@N, device@N+, alloc@N, key=K, stall=MS:K, sink.\n"
#endif
      "exit codes: 0 drained shutdown, 1 failure (start-up, fatal Kafka error, sticky worker\n"
      "fault, grace period exceeded, second signal), 2 usage error\n");
}

typedef struct worker_cli {
  ib_worker_config cfg;
  const char *config_file;
  char *owned[256]; /* strings read from the file or environment */
  int n_owned;
  ib_config *config;      /* --tune settings (cfg.exec.config); NULL until one is given */
  bool tuned_host_stream; /* --tune host_stream=... given: the cpu default is not applied */
} worker_cli;

static const char *keep(worker_cli *c, const char *s) {
  char *d = strdup(s);
  if (d && c->n_owned < (int)(sizeof c->owned / sizeof c->owned[0])) c->owned[c->n_owned++] = d;
  return d;
}

static bool set_prop(worker_cli *c, const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv || c->cfg.n_props >= IB_WORKER_MAX_PROPS) return false;
  char key[256];
  size_t n = (size_t)(eq - kv);
  if (n >= sizeof key) return false;
  memcpy(key, kv, n);
  key[n] = 0;
  c->cfg.props[c->cfg.n_props][0] = keep(c, key);
  c->cfg.props[c->cfg.n_props][1] = keep(c, eq + 1);
  c->cfg.n_props++;
  return true;
}

/* --tune KEY=VALUE onto c->config (created at the first). */
static bool tune(worker_cli *c, const char *kv) {
  ib_error err = {0};
  if (!c->config && !(c->config = ib_config_new())) return false;
  c->cfg.exec.config = c->config;
  if (strncmp(kv, "host_stream=", 12) == 0) c->tuned_host_stream = true;
  if (ib_cli_tune(c->config, kv, &err)) return true;
  fprintf(stderr, "imgbatch worker: --tune: %s\n", err.message);
  return false;
}

/* One option by its flag name (without "--"); `v` must outlive the run. */
static bool set_opt(worker_cli *c, const char *name, const char *v) {
  ib_worker_config *w = &c->cfg;
  static const struct {
    const char *name;
    size_t off;
  } strs[] = {
      {"brokers", offsetof(ib_worker_config, brokers)},
      {"group", offsetof(ib_worker_config, group)},
      {"jobs-topic", offsetof(ib_worker_config, jobs_topic)},
      {"results-topic", offsetof(ib_worker_config, results_topic)},
      {"control-topic", offsetof(ib_worker_config, control_topic)},
      {"dlq-topic", offsetof(ib_worker_config, dlq_topic)},
      {"source-root", offsetof(ib_worker_config, source_root)},
      {"output-dir", offsetof(ib_worker_config, output_dir)},
      {"worker-id", offsetof(ib_worker_config, worker_id)},
      {"metrics-addr", offsetof(ib_worker_config, metrics_addr)},
#ifdef IB_FAULTS
      {"fault", offsetof(ib_worker_config, fault)},
#endif
  };
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
    if (strcmp(name, strs[i].name) == 0) {
      if (!v[0]) return false;
      *(const char **)((char *)w + strs[i].off) = v;
      return true;
    }
  uint64_t n = 0;
  if (strcmp(name, "backend") == 0) {
    if (strcmp(v, "cpu") == 0)
      w->exec.backend = IB_BACKEND_CPU;
    else if (strcmp(v, "cuda") == 0)
      w->exec.backend = IB_BACKEND_CUDA;
    else
      return false;
    return true;
  }
  if (strcmp(name, "config") == 0) return (c->config_file = v) != NULL;
  if (strcmp(name, "X") == 0) return set_prop(c, v);
  if (strcmp(name, "tune") == 0) return tune(c, v);
  if (strcmp(name, "max-side") == 0) return ib_cli_parse_max_side("worker", v, &w->max_side);
  if (strcmp(name, "transactional") == 0) {
    w->transactional = strcmp(v, "false") != 0 && strcmp(v, "0") != 0;
    return true;
  }
  bool sized = strcmp(name, "gpu-bytes") == 0 || strcmp(name, "host-bytes") == 0 ||
               strcmp(name, "max-result-bytes") == 0 || strcmp(name, "module-cache-bytes") == 0 ||
               strcmp(name, "disk-cache-bytes") == 0;
  if (!ib_cli_parse_u64(v, sized, &n)) return false;
  if (strcmp(name, "device") == 0 && n <= 1024)
    w->exec.device = (int)n;
  else if (strcmp(name, "gpu-bytes") == 0 && n)
    w->exec.gpu_bytes = n;
  else if (strcmp(name, "host-bytes") == 0 && n)
    w->exec.host_bytes = n;
  else if (strcmp(name, "max-jobs") == 0 && n && n <= UINT32_MAX)
    w->exec.max_jobs = (uint32_t)n;
  else if (strcmp(name, "max-uncommitted") == 0 && n && n <= UINT32_MAX)
    w->max_uncommitted = (uint32_t)n;
  else if (strcmp(name, "max-in-flight") == 0 && n && n <= 64)
    w->exec.max_in_flight = (uint32_t)n;
  else if (strcmp(name, "max-result-bytes") == 0)
    w->max_result_bytes = n;
  else if (strcmp(name, "module-cache-bytes") == 0 && n)
    w->exec.module_cache_bytes = n;
  else if (strcmp(name, "disk-cache-bytes") == 0 && n)
    w->exec.disk_cache_bytes = n;
  else if (strcmp(name, "decode-threads") == 0 && n <= 1024)
    w->decode_threads = (int)n, w->exec.host_threads = n ? (int)n : -1;
  else if (strcmp(name, "output-ttl") == 0)
    w->output_ttl_s = n;
  else if (strcmp(name, "grace-seconds") == 0)
    w->grace_s = n;
  else if (strcmp(name, "stall-seconds") == 0 && n <= 1000000000u)
    w->stall_s = n;
  else if (strcmp(name, "lease-seconds") == 0 && n)
    w->lease_s = n;
  else if (strcmp(name, "compile-threads") == 0 && n <= 64)
    w->exec.compile_threads = (int)n;
  else if (strcmp(name, "compile-timeout") == 0 && n && n <= UINT32_MAX / 1000u)
    w->exec.compile_timeout_ms = (uint32_t)n * 1000u;
  else
    return false;
  return true;
}

static const char *const flag_names[] = {"brokers",
                                         "group",
                                         "jobs-topic",
                                         "results-topic",
                                         "control-topic",
                                         "dlq-topic",
                                         "source-root",
                                         "output-dir",
                                         "worker-id",
                                         "backend",
                                         "transactional",
                                         "device",
                                         "gpu-bytes",
                                         "host-bytes",
                                         "max-jobs",
                                         "max-uncommitted",
                                         "max-in-flight",
                                         "max-result-bytes",
                                         "decode-threads",
                                         "output-ttl",
                                         "grace-seconds",
                                         "stall-seconds",
                                         "lease-seconds",
                                         "compile-threads",
                                         "compile-timeout",
                                         "metrics-addr",
                                         "max-side",
                                         "module-cache-bytes",
                                         "disk-cache-bytes",
                                         "fault",
                                         NULL};

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

static bool read_file(worker_cli *c, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "imgbatch worker: --config %s: cannot open\n", path);
    return false;
  }
  char line[2048];
  int no = 0;
  bool ok = true;
  while (ok && fgets(line, sizeof line, f)) {
    no++;
    char *s = trim(line);
    if (!*s || *s == '#') continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      ok = false;
      break;
    }
    *eq = 0;
    char *k = trim(s), *v = trim(eq + 1);
    ok = strcmp(k, "config") != 0 && set_opt(c, k, keep(c, v));
  }
  fclose(f);
  if (!ok) fprintf(stderr, "imgbatch worker: %s:%d: bad line\n", path, no);
  return ok;
}

static bool read_env(worker_cli *c) {
  for (int i = 0; flag_names[i]; i++) {
    char env[64] = "IMGBATCH_";
    size_t n = strlen(env);
    for (const char *p = flag_names[i]; *p && n + 1 < sizeof env; p++)
      env[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    env[n] = 0;
    const char *v = getenv(env);
    if (v && !set_opt(c, flag_names[i], keep(c, v))) {
      fprintf(stderr, "imgbatch worker: bad value in %s\n", env);
      return false;
    }
  }
  return true;
}

static int parse_args(worker_cli *c, int argc, char **argv) {
  ib_worker_config *w = &c->cfg;
  *w = (ib_worker_config){.group = "imgbatch",
                          .jobs_topic = "imgbatch.jobs",
                          .results_topic = "imgbatch.results",
                          .control_topic = "imgbatch.control",
                          .output_ttl_s = 86400,
                          .grace_s = 30,
                          .stall_s = 60,
                          .lease_s = 60};
  ib_executor_options_default(&w->exec);
  w->exec.backend = IB_BACKEND_CUDA;
  w->exec.cache_dir = ib_cli_cache_dir();
  w->exec.compile_threads = IB_CLI_COMPILE_THREADS;
  /* The file first (flags and environment override it): find --config. */
  const char *file = getenv("IMGBATCH_CONFIG");
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--config") == 0) file = argv[i + 1];
  if (file && !read_file(c, file)) return IB_EXIT_USAGE;
  if (!read_env(c)) return IB_EXIT_USAGE;
  /* Props from the file/env stay; flags add theirs after (later wins). */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--transactional") == 0) {
      w->transactional = true;
      continue;
    }
    const char *name = strcmp(a, "-X") == 0 ? "X" : strncmp(a, "--", 2) == 0 ? a + 2 : NULL;
    if (!name || i + 1 >= argc || !set_opt(c, name, argv[++i])) {
      fprintf(stderr, "imgbatch worker: bad argument '%s'\n", a);
      worker_usage(stderr);
      return IB_EXIT_USAGE;
    }
  }
  if (!w->brokers) {
    fprintf(stderr, "imgbatch worker: --brokers is required\n");
    worker_usage(stderr);
    return IB_EXIT_USAGE;
  }
  return IB_EXIT_OK;
}

/* One JSON object per line on stderr; `fields` is already JSON. */
static void log_line(void *ctx, const char *level, const char *event, const char *fields) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  /* A machine without a GPU fails the default backend first: name the way on. */
  const bool no_gpu = strcmp(event, "start_failed") == 0 &&
                      strstr(fields, "\"stage\":\"executor\",\"message\":\"no CUDA ") != NULL;
  fprintf(stderr, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"event\":\"%s\"%s%s%s}\n", when,
          ts.tv_nsec / 1000000, level, event, fields[0] ? "," : "", fields,
          no_gpu ? ",\"hint\":\"no usable GPU here: --backend cpu runs the CPU reference backend\""
                 : "");
  fflush(stderr);
}

/* The library's messages as worker log lines (event "library"). */
static void library_log(void *opaque, ib_log_level level, const char *message) {
  (void)opaque;
  char esc[2200], fields[2300];
  snprintf(fields, sizeof fields, "\"message\":\"%s\"", ib_json_escape(esc, sizeof esc, message));
  log_line(NULL, ib_cli_log_level_name(level), "library", fields);
}

int ib_cmd_worker(int argc, char **argv) {
  if (ib_wants_help(argc, argv)) {
    worker_usage(stdout);
    return IB_EXIT_OK;
  }
  worker_cli c = {0};
  int rc = parse_args(&c, argc, argv);
  if (rc == IB_EXIT_OK) {
    grace_backstop_s = c.cfg.grace_s == 0         ? 1u
                       : c.cfg.grace_s > UINT_MAX ? UINT_MAX
                                                  : (unsigned)c.cfg.grace_s;
    struct sigaction sa = {.sa_handler = on_signal}, alrm = {.sa_handler = on_grace_expired};
    sigemptyset(&sa.sa_mask);
    sigemptyset(&alrm.sa_mask);
    sigaction(SIGALRM, &alrm, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    c.cfg.log = log_line;
    c.cfg.exec.log_cb = library_log;
    /* A diagnostic, as for the GPU tools: the CUDA backend's host time per
     * job by phase, logged (event "library") when the worker exits. */
    const char *prof = getenv("IB_CUDA_PROFILE");
    if (prof && *prof == '1' && !tune(&c, "cuda_profile=true")) rc = IB_EXIT_FAILURE;
    /* Each Result out (and its offset free to commit) as its job finishes:
     * the cpu backend would otherwise answer a batch after its last job. */
    if (rc == IB_EXIT_OK && c.cfg.exec.backend == IB_BACKEND_CPU && !c.tuned_host_stream &&
        !tune(&c, "host_stream=true"))
      rc = IB_EXIT_FAILURE;
  }
  if (rc == IB_EXIT_OK) {
    c.cfg.stop = &stop_requested;
    rc = ib_worker_run(&c.cfg);
  }
  ib_config_destroy(c.config);
  for (int i = 0; i < c.n_owned; i++) free(c.owned[i]);
  return rc;
}
