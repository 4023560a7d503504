/*
 * jobs_bench.c - images/s of any file of varint-delimited Jobs (raw sources
 * and raw outputs, e.g. built by bench/drivers/thumbs_bench.py with the
 * Python client) through the public executor API, on the cuda or the cpu
 * backend: the zero-copy feed of gpu_bench (api_bench.h: each packed Job
 * written into an ib_executor_buffer before the stream, parsed in place by
 * ib_executor_parse_buffer in the run callback -> run stream -> result
 * released at once). Job 0's result is checked byte for byte against the
 * CPU backend's (MISMATCH: exit 1; on --backend cpu against a second CPU
 * executor, so the harness itself is what the check covers there).
 *
 *   jobs_bench --jobs FILE [--backend cuda|cpu] [--images N] [--reps R]
 *              [--max-jobs J] [--inflight F] [--gpu-bytes B] [--host-bytes B]
 *              [--row part,workload,mode,side] [--csv FILE]
 *
 *   --images     inputs per timed stream (the file's Jobs round robin); 20000
 *   --reps       timed streams; the median is reported; 3
 *   --max-jobs   executor max_jobs; 64 (the default caps)
 *   --inflight   max_in_flight; 2
 *   --gpu-bytes / --host-bytes: credit caps in MiB; 8192 / 8192
 *   --row        the CSV row's part, workload, mode, side (bench/lib/csvrows.py)
 * Prints one line per stream and "  PART: WORKLOAD ... img/s" last; appends
 * rows (img_per_s, ms_per_img, and the streams' min/max) to --csv. Tool code:
 * a failure prints what failed and exits (an Unsupported job: exit 3, so a
 * driver can say "unsupported on cuda").
 */
#pragma GCC diagnostic ignored "-Wunused-function" /* api_bench.h's helpers left unused */
#include "api_bench.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) ab_die("cannot open", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
  if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) ab_die("cannot read", path);
  fclose(f);
  *len = (size_t)n;
  return p;
}

/* The delimited Jobs of a file as an ab_set (each Job copied out). */
static ab_set load_jobs(const char *path) {
  size_t len = 0, off = 0;
  uint8_t *p = read_file(path, &len);
  ab_set s = {0};
  int cap = 0;
  while (off < len) {
    uint64_t n = 0;
    int shift = 0;
    for (;;) {
      if (off >= len || shift > 63) ab_die("truncated varint in", path);
      uint8_t b = p[off++];
      n |= (uint64_t)(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    if (n > len - off) ab_die("truncated frame in", path);
    if (s.n == cap) {
      cap = cap ? 2 * cap : 16;
      s.buf = realloc(s.buf, (size_t)cap * sizeof *s.buf);
      s.len = realloc(s.len, (size_t)cap * sizeof *s.len);
      if (!s.buf || !s.len) ab_die("out of memory", "loading jobs");
    }
    s.buf[s.n] = malloc(n ? n : 1);
    if (!s.buf[s.n]) ab_die("out of memory", "loading jobs");
    memcpy(s.buf[s.n], p + off, n);
    s.len[s.n++] = (size_t)n;
    off += n;
  }
  free(p);
  if (!s.n) ab_die("no jobs in", path);
  return s;
}

int main(int argc, char **argv) {
  const char *jobs = NULL, *backend = "cuda", *csv = NULL, *row = "api,jobs,?,0";
  int images = 20000, reps = 3, max_jobs = 64, inflight = 2, gpu_mib = 8192, host_mib = 8192;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int *opt = !strcmp(argv[i], "--images")       ? &images
               : !strcmp(argv[i], "--reps")       ? &reps
               : !strcmp(argv[i], "--max-jobs")   ? &max_jobs
               : !strcmp(argv[i], "--inflight")   ? &inflight
               : !strcmp(argv[i], "--gpu-bytes")  ? &gpu_mib
               : !strcmp(argv[i], "--host-bytes") ? &host_mib
                                                  : NULL;
    if (!v) goto usage;
    if (opt)
      *opt = atoi(v);
    else if (!strcmp(argv[i], "--jobs"))
      jobs = v;
    else if (!strcmp(argv[i], "--backend"))
      backend = v;
    else if (!strcmp(argv[i], "--csv"))
      csv = v;
    else if (!strcmp(argv[i], "--row"))
      row = v;
    else
      goto usage;
    i++;
  }
  bool cuda = !strcmp(backend, "cuda");
  if (!jobs || (!cuda && strcmp(backend, "cpu")) || images < 1 || reps < 1 || max_jobs < 1 ||
      inflight < 1 || gpu_mib < 1 || host_mib < 1)
    goto usage;
  char part[64] = "", wl[64] = "", mode[16] = "", side[32] = "";
  if (sscanf(row, "%63[^,],%63[^,],%15[^,],%31s", part, wl, mode, side) != 4) goto usage;

  ab_set s = load_jobs(jobs);
  /* The CPU backend's bytes of Job 0 (beside the device's start-up). */
  ab_ref ref;
  ab_ref_start(&ref, &s);
  ab_ref_join(&ref);
  s.out_mode = ref.img.mode;
  s.out_w = ref.img.width;
  s.out_h = ref.img.height;

  ib_executor_options o;
  ib_executor_options_default(&o);
  ib_config *cfg = ib_cli_tool_options(&o); /* IB_CACHE_DIR etc., as gpu_bench's executors */
  if (!cfg) return 2;
  o.backend = cuda ? IB_BACKEND_CUDA : IB_BACKEND_CPU;
  o.gpu_bytes = (uint64_t)gpu_mib << 20;
  o.host_bytes = (uint64_t)host_mib << 20;
  o.max_jobs = (uint32_t)max_jobs;
  o.max_in_flight = (uint32_t)inflight;
  o.queue = true;
  ib_executor *ex = NULL;
  ib_error err = {0};
  ib_status st;
  /* Job 0 alone on an executor of its own first: a job this backend refuses
   * (Unsupported) is said with exit 3 instead of ab_die's exit 1. */
  {
    ib_executor *px = NULL;
    ib_error e2 = {0};
    ab_check(ib_executor_create(&o, &px, &err), "ib_executor_create", &err);
    ib_graph *g = NULL;
    st = ib_executor_parse(px, s.buf[0], s.len[0], &(ib_graph_limits){0}, &g, NULL, &e2);
    if (st == IB_OK) {
      uint64_t id = 0;
      st = ib_executor_submit(px, g, NULL, &id, &e2);
      if (st == IB_OK) {
        ib_results *rs = NULL;
        ab_check(ib_executor_join(px, &rs), "join", NULL);
        ib_result res;
        ab_check(ib_results_next(rs, &res), "ib_results_next", NULL);
        if (!res.ok) {
          st = res.error.status;
          e2 = res.error;
        }
        ib_result_free(&res);
        ib_results_close(rs);
      }
    }
    ib_executor_destroy(px);
    if (st == IB_UNSUPPORTED) {
      printf("  %s: %s %s %s: unsupported on %s: %s\n", part, wl, mode, side, backend, e2.message);
      if (csv) {
        FILE *f = fopen(csv, "a");
        if (f) {
          fprintf(
              f,
              "%s,imgbatch-api-%s,%s,%s,%s,0,img_per_s,,img/s,,unsupported,\"unsupported on %s\"\n",
              part, backend, wl, mode, side, backend);
          fclose(f);
        }
      }
      return 3;
    }
    ab_check(st, "first job", &e2);
  }
  st = ib_executor_create(&o, &ex, &err);
  ib_config_destroy(cfg);
  ab_check(st, "ib_executor_create", &err);

  /* Warm-up (kernel compiles from the cache, pools): every distinct Job
   * once, at least 2 * max_jobs inputs, Job 0's result kept for the check. */
  char label[200];
  snprintf(label, sizeof label, "%s %s %s %s", backend, wl, mode, side);
  int warm = s.n > 2 * max_jobs ? s.n : 2 * max_jobs;
  if (warm > images) warm = images > s.n ? images : s.n;
  ib_image first = {0};
  uint8_t **filled = calloc((size_t)warm, sizeof *filled);
  if (!filled) ab_die("out of memory", "warm-up");
  ab_item fill = {0};
  for (int i = 0; i < warm; i++) filled[i] = ab_fill(ex, &s, i % s.n, &fill);
  ab_feed_spec ws = {.kind = AB_ZERO_COPY, .filled = filled};
  ab_stream(ex, &s, warm, &ws, &first, label);
  free(filled);
  ab_ref_compare(&ref, &first, label);
  printf("%s: job 0 equal to the cpu backend's bytes (%ux%u %s)\n", label, first.width,
         first.height, ib_mode_name(first.mode));

  double *ms = calloc((size_t)reps, sizeof *ms);
  if (!ms) ab_die("out of memory", "reps");
  for (int r = 0; r < reps; r++) {
    ab_run run = ab_stream_prefilled(ex, &s, images, 2ull << 30, label);
    ms[r] = run.ms;
    printf("%s: stream %d: %d images, %.4f ms/img, %.0f img/s (parse %.4f ms/img)\n", label, r + 1,
           images, run.ms, 1e3 / run.ms, run.parse_ms);
  }
  qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
  double med = ms[reps / 2];
  char setting[120];
  snprintf(setting, sizeof setting, "max_jobs %d max_in_flight %d", max_jobs, inflight);
  printf(
      "  %s: %s %s %s through the API (%s, %s): %.0f img/s (median of %d streams of %d; "
      "%.0f-%.0f)\n",
      part, wl, mode, side, backend, setting, 1e3 / med, reps, images, 1e3 / ms[reps - 1],
      1e3 / ms[0]);
  if (csv) {
    FILE *f = fopen(csv, "a");
    if (!f) ab_die("cannot open", csv);
    fseek(f, 0, SEEK_END);
    if (ftell(f) == 0)
      fprintf(f, "part,impl,workload,mode,side,n,metric,value,unit,setting,status,note\n");
    const char *impl = cuda ? "imgbatch-api-cuda" : "imgbatch-api-cpu";
    fprintf(f,
            "%s,%s,%s,%s,%s,%d,img_per_s,%.6g,img/s,%s,ok,median of %d streams; job 0 equal to the "
            "cpu backend\n",
            part, impl, wl, mode, side, images, 1e3 / med, setting, reps);
    fprintf(f, "%s,%s,%s,%s,%s,%d,ms_per_img,%.6g,ms,%s,ok,\n", part, impl, wl, mode, side, images,
            med, setting);
    fprintf(f, "%s,%s,%s,%s,%s,%d,img_per_s_min,%.6g,img/s,%s,ok,\n", part, impl, wl, mode, side,
            images, 1e3 / ms[reps - 1], setting);
    fprintf(f, "%s,%s,%s,%s,%s,%d,img_per_s_max,%.6g,img/s,%s,ok,\n", part, impl, wl, mode, side,
            images, 1e3 / ms[0], setting);
    fclose(f);
  }
  free(ms);
  ib_image_release(&first);
  ib_image_release(&ref.img);
  ib_executor_destroy(ex);
  ab_set_free(&s);
  return 0;
usage:
  fprintf(stderr,
          "usage: jobs_bench --jobs FILE [--backend cuda|cpu] [--images N] [--reps R]\n"
          "                  [--max-jobs J] [--inflight F] [--gpu-bytes MiB] [--host-bytes MiB]\n"
          "                  [--row part,workload,mode,side] [--csv FILE]\n");
  return 2;
}
