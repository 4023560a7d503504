/*
 * host_bench.c - the executor API's per-job host cost without a GPU: the
 * zero-copy feed of gpu_bench section 4 (api_bench.h: serialized Job
 * written into an ib_executor_buffer -> ib_executor_parse_buffer in the run
 * callback -> run stream -> result released at once), on a backend whose
 * own work is next to nothing, so that what is left is the core's and the
 * parser's work per job (256² invert through the API).
 *
 *   host_bench [--backend null|cpu] [--side S] [--images N] [--runs R]
 *              [--producers P] [--parsers Q] [--batch B] [--inflight F]
 *
 *   --backend   null: lends every result from one static buffer, like the
 *               CUDA backend's download arena, and does nothing else
 *               (default); cpu: the CPU backend (the op runs on S² pixels)
 *   --side      RGB invert images of S x S; 48 (above the 4096-byte raw run
 *               that ib_executor_parse_buffer keeps in place, as 256² does)
 *   --images    inputs per timed stream; 200000
 *   --runs      timed streams, each printed; 5
 *   --producers also time P producer threads writing + parsing ahead; 0
 *   --parsers   also time the written-ahead feed parsed by Q producer
 *               threads (ib_executor_parse_buffer off the driving thread)
 *               before the clock starts, the callback only taking graphs:
 *               the driving thread's own cost per job when the parse is
 *               elsewhere (gpu_bench --parsers times it with the parse
 *               running beside the stream); 0
 *   --batch     max_jobs (B / F jobs per submission); 512, as section 4
 *   --inflight  max_in_flight; 2
 *
 * Prints jobs/s and us/job per stream, then the median. Tool code: a
 * failure prints what failed and exits.
 */
#pragma GCC diagnostic ignored "-Wunused-function" /* api_bench.h's GPU-only helpers */
#include "api_bench.h"
#include "core/error.h"
#include "exec/exec_internal.h"

/* ------------------------------------------------------------ null backend */

struct ib_backend_submission {
  size_t n;
};

static uint8_t nb_arena[1 << 24];
static int nb_token;

static ib_status nb_open(const ib_executor_options *o, void **state, ib_error *err) {
  (void)o;
  (void)err;
  *state = &nb_token;
  return IB_OK;
}

static void nb_close(void *state) { (void)state; }

static ib_status nb_submit(void *state, ib_backend_job *jobs, size_t n, ib_backend_submission **sub,
                           ib_error *err) {
  (void)state;
  if (!(*sub = malloc(sizeof **sub)))
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "null submit: out of memory");
  (*sub)->n = n;
  for (size_t i = 0; i < n; i++) {
    const ib_graph *g = jobs[i].graph;
    const ib_shape *sh = &g->nodes[g->n_nodes - 1].shape;
    if ((uint64_t)sh->width * sh->height * ib_mode_bands(sh->mode) > sizeof nb_arena)
      return ib_error_set(err, IB_LIMIT, IB_STAGE_EXECUTE, "null submit: image too large");
    jobs[i].status = IB_OK;
    jobs[i].out =
        (ib_image){.mode = sh->mode, .width = sh->width, .height = sh->height, .data = nb_arena};
    jobs[i].lent = &nb_token;
  }
  return IB_OK;
}

static ib_status nb_wait(void *state, ib_backend_submission *sub, ib_error *err) {
  (void)state;
  (void)err;
  free(sub);
  return IB_OK;
}

static bool nb_ready(void *state, ib_backend_submission *sub) {
  (void)state;
  (void)sub;
  return true;
}

static void nb_lent_release(void *state, void *token) {
  (void)state;
  (void)token;
}

static const ib_backend nb_backend = {
    .name = "null",
    .open = nb_open,
    .close = nb_close,
    .job_bytes_stages = true,
    .submit = nb_submit,
    .wait = nb_wait,
    .ready = nb_ready,
    .lent_release = nb_lent_release,
};

/* ------------------------------------------------------------ main */

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ab_stream_prefilled's rounds (the buffers written off the clock), timed
 * by this thread's CPU time as well as the wall clock: on a machine shared
 * with other work the CPU time per job is the steadier figure (the null
 * backend's whole stream runs on this thread). */
typedef struct hb_run {
  double wall_us, cpu_us, parse_us; /* per job */
} hb_run;

static hb_run hb_stream(ib_executor *ex, const ab_set *s, int n, int per_round, int parsers,
                        int qcap) {
  uint8_t **filled = calloc((size_t)per_round, sizeof *filled);
  if (!filled) ab_die("out of memory", "rounds");
  double wall = 0, cpu = 0, parse = 0;
  for (int done = 0; done < n;) {
    int m = n - done < per_round ? n - done : per_round;
    ab_item fill = {0};
    for (int i = 0; i < m; i++) filled[i] = ab_fill(ex, s, (done + i) % s->n, &fill);
    ab_feed_spec spec = {.kind = AB_ZERO_COPY,
                         .filled = filled,
                         .first_job = done,
                         .producers = parsers,
                         .qcap = qcap,
                         .parsed_first = parsers > 0};
    ab_run one = ab_stream(ex, s, m, &spec, NULL, "zero copy");
    cpu += one.cpu_ms * 1e-3 * m;
    wall += one.ms * 1e-3 * m;
    parse += one.parse_ms * 1e-3 * m;
    done += m;
  }
  free(filled);
  return (hb_run){wall * 1e6 / n, cpu * 1e6 / n, parse * 1e6 / n};
}

int main(int argc, char **argv) {
  const char *backend = "null";
  int side = 48, images = 200000, runs = 5, producers = 0, parsers = 0, batch = 512, inflight = 2;
  for (int i = 1; i < argc; i++) {
    int *v = !strcmp(argv[i], "--side")        ? &side
             : !strcmp(argv[i], "--images")    ? &images
             : !strcmp(argv[i], "--runs")      ? &runs
             : !strcmp(argv[i], "--producers") ? &producers
             : !strcmp(argv[i], "--parsers")   ? &parsers
             : !strcmp(argv[i], "--batch")     ? &batch
             : !strcmp(argv[i], "--inflight")  ? &inflight
                                               : NULL;
    if (i + 1 < argc && !strcmp(argv[i], "--backend")) {
      backend = argv[++i];
    } else if (v && i + 1 < argc) {
      *v = atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: host_bench [--backend null|cpu] [--side S] [--images N] [--runs R]\n"
              "                  [--producers P] [--parsers Q] [--batch B] [--inflight F]\n");
      return 2;
    }
  }
  bool null = !strcmp(backend, "null");
  if ((!null && strcmp(backend, "cpu")) || side < 1 || images < 1 || runs < 1 || producers < 0 ||
      producers > 64 || parsers < 0 || parsers > 64 || batch < 1 || inflight < 1) {
    fprintf(stderr, "host_bench: bad arguments\n");
    return 2;
  }
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.backend = IB_BACKEND_CPU;
  o.gpu_bytes = o.host_bytes = 2ull << 30;
  o.max_jobs = (uint32_t)batch;
  o.max_in_flight = (uint32_t)inflight;
  o.queue = true;
  ib_executor *ex = NULL;
  ib_error err = {0};
  ab_check(
      null ? ib_exec_create_with(&o, &nb_backend, &ex, &err) : ib_executor_create(&o, &ex, &err),
      "executor create", &err);
  ab_set s = ab_set_make(AB_INVERT, IB_MODE_RGB, (uint32_t)side, 64);
  ab_feed_spec zc = {.kind = AB_ZERO_COPY, .producers = producers, .qcap = batch};
  /* Rounds of at most 64 MiB of Job bytes written ahead. */
  uint64_t per = (64ull << 20) / (s.len[0] ? s.len[0] : 1);
  int per_round = per < 1 ? 1 : per > (uint64_t)images ? images : (int)per;
  /* warm-up: allocator pools, first submissions */
  hb_stream(ex, &s, images / 10 + 1, per_round, 0, batch);
  printf(
      "host_bench: %s backend, RGB invert %d^2, %d images per stream, max_jobs %d, "
      "max_in_flight %d\n",
      backend, side, images, batch, inflight);
  double *cpu = calloc((size_t)runs, sizeof *cpu), *wall = calloc((size_t)runs, sizeof *wall);
  double *ipp = calloc((size_t)runs, sizeof *ipp), *par = calloc((size_t)runs, sizeof *par);
  double *parcpu = calloc((size_t)runs, sizeof *parcpu);
  if (!cpu || !wall || !ipp || !par || !parcpu) ab_die("out of memory", "runs");
  for (int r = 0; r < runs; r++) {
    hb_run a = hb_stream(ex, &s, images, per_round, 0, batch);
    cpu[r] = a.cpu_us;
    wall[r] = a.wall_us;
    printf(
        "  run %d: zero copy, callback parses: %9.0f jobs/s  %6.3f us/job wall, %6.3f cpu "
        "(parse_buffer %.3f)",
        r, 1e6 / a.wall_us, a.wall_us, a.cpu_us, a.parse_us);
    if (parsers > 0) { /* cpu: the driving thread's alone */
      hb_run c = hb_stream(ex, &s, images, per_round, parsers, batch);
      par[r] = c.wall_us;
      parcpu[r] = c.cpu_us;
      printf("; %d parsers: %9.0f jobs/s  %6.3f us/job wall, %6.3f cpu driving", parsers,
             1e6 / c.wall_us, c.wall_us, c.cpu_us);
    }
    if (producers > 0) {
      ab_run b = ab_stream(ex, &s, images, &zc, NULL, "producers");
      ipp[r] = 1e3 / b.ms;
      printf("; %d producers: %9.0f jobs/s  %6.3f us/job", producers, ipp[r], b.ms * 1e3);
    }
    printf("\n");
    fflush(stdout);
  }
  qsort(cpu, (size_t)runs, sizeof *cpu, dcmp);
  qsort(wall, (size_t)runs, sizeof *wall, dcmp);
  qsort(ipp, (size_t)runs, sizeof *ipp, dcmp);
  qsort(par, (size_t)runs, sizeof *par, dcmp);
  qsort(parcpu, (size_t)runs, sizeof *parcpu, dcmp);
  printf("median: zero copy %.3f us/job cpu, %.3f wall (%.0f jobs/s)", cpu[runs / 2],
         wall[runs / 2], 1e6 / wall[runs / 2]);
  if (parsers > 0)
    printf("; %d parsers %.3f us/job cpu driving, %.3f wall (%.0f jobs/s)", parsers,
           parcpu[runs / 2], par[runs / 2], 1e6 / par[runs / 2]);
  if (producers > 0) printf("; %d producers %.0f jobs/s", producers, ipp[runs / 2]);
  printf("\n");
  free(cpu);
  free(wall);
  free(ipp);
  free(par);
  free(parcpu);
  ab_set_free(&s);
  ib_executor_destroy(ex);
  return 0;
}
