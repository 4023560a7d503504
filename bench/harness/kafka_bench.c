/*
 * kafka_bench - the worker through Kafka against its floor, a plain
 * librdkafka relay (consume -> produce of the same bytes) on the same
 * broker (bench/kafka_bench.sh drives it).
 *
 *   kafka_bench drive --brokers B --n N --kind raw|png [--side S]
 *                     [--jobs FILE] [--results FILE]
 *       produces N Jobs on imgbatch.jobs (raw RGB SxS -> copy -> raw out, or
 *       PNG SxS -> GaussianBlur(2) -> PNG out: codec-bound), paced by the
 *       Results it reads back (a window deep enough that the worker sets
 *       the pace); prints jobs/s, MB/s and latency p50/p99 after a warm-up.
 *       The first Job waits until the Results reader has its partitions (at
 *       most 60 s), so that early Results are not read late in one burst
 *       (which counted as their latency).
 *       --jobs FILE: the Jobs are FILE's length-delimited frames (varint
 *       length + Job bytes, as `imgbatch run --in` reads them), the i-th
 *       message frame i % count, in place of --kind/--side's synthetic Job.
 *       --results FILE: the Results read back, in arrival order, written
 *       after the run as length-delimited frames (for a caller's checks).
 *   kafka_bench relay --brokers B --n N     the floor: N messages jobs -> results
 */
#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "codec/codec.h"
#include "core/frame.h"
#include "proto/imgbatch.pb-c.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wall-clock ms, the clock of Kafka's CreateTime timestamps. */
static double wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);

/* trace: the drive's producer records every Job's delivery into it. */
static rd_kafka_t *client(const char *brokers, rd_kafka_type_t type, const char *group,
                          void *trace) {
  char err[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  if (trace) {
    rd_kafka_conf_set_opaque(c, trace);
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
  }
  rd_kafka_conf_set(c, "bootstrap.servers", brokers, err, sizeof err);
  if (type == RD_KAFKA_PRODUCER) {
    rd_kafka_conf_set(c, "linger.ms", "5", err, sizeof err);
    rd_kafka_conf_set(c, "enable.idempotence", "true", err, sizeof err);
  }
  if (group) {
    /* The mock broker answers a fetch only when fetch.wait.max.ms ends. */
    rd_kafka_conf_set(c, "fetch.wait.max.ms", "10", err, sizeof err);
    rd_kafka_conf_set(c, "group.id", group, err, sizeof err);
    rd_kafka_conf_set(c, "auto.offset.reset", "earliest", err, sizeof err);
    rd_kafka_conf_set(c, "enable.auto.commit", "true", err, sizeof err);
  }
  rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "kafka_bench: %s\n", err);
    exit(1);
  }
  if (group) rd_kafka_poll_set_consumer(rk);
  return rk;
}

static void subscribe(rd_kafka_t *c, const char *topic) {
  rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(t, topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(c, t);
  rd_kafka_topic_partition_list_destroy(t);
}

/* One serialized Job of the benchmark's two kinds. */
static uint8_t *make_job(const char *kind, uint32_t side, uint64_t key, size_t *len) {
  ib_image im = {0};
  ib_image_alloc(&im, IB_MODE_RGB, side, side);
  /* Noise: a PNG of it is about as large as the pixels (a codec-bound job). */
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < ib_image_bytes(&im); i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    im.data[i] = (uint8_t)(x >> 24);
  }
  Imgbatch__V1__Job job = IMGBATCH__V1__JOB__INIT;
  job.input_key_case = IMGBATCH__V1__JOB__INPUT_KEY_KEY_U64;
  job.key_u64 = key;
  job.contract_version = IB_CONTRACT_VERSION;
  Imgbatch__V1__Source src;
  imgbatch__v1__source__init(&src);
  Imgbatch__V1__RawImage raw = IMGBATCH__V1__RAW_IMAGE__INIT;
  Imgbatch__V1__Node n0 = IMGBATCH__V1__NODE__INIT, n1 = IMGBATCH__V1__NODE__INIT;
  Imgbatch__V1__SourceOp sop = IMGBATCH__V1__SOURCE_OP__INIT;
  Imgbatch__V1__CopyOp cop = IMGBATCH__V1__COPY_OP__INIT;
  Imgbatch__V1__GaussianBlurOp gop = IMGBATCH__V1__GAUSSIAN_BLUR_OP__INIT;
  Imgbatch__V1__OutputSpec out = IMGBATCH__V1__OUTPUT_SPEC__INIT;
  Imgbatch__V1__CpuOutput cpu = IMGBATCH__V1__CPU_OUTPUT__INIT;
  uint8_t *png = NULL;
  uint32_t in0 = 0;
  n0.op_case = IMGBATCH__V1__NODE__OP_SOURCE;
  n0.source = &sop;
  n1.n_inputs = 1;
  n1.inputs = &in0;
  out.target_case = IMGBATCH__V1__OUTPUT_SPEC__TARGET_CPU;
  out.cpu = &cpu;
  job.source = &src;
  if (strcmp(kind, "png") == 0) {
    size_t n = 0;
    ib_error err = {0};
    Imgbatch__V1__CpuOutput enc = IMGBATCH__V1__CPU_OUTPUT__INIT;
    enc.format = IMGBATCH__V1__FORMAT__PNG;
    if (ib_codec_encode(&im, &enc, NULL, &png, &n, &err) != IB_OK) {
      fprintf(stderr, "kafka_bench: %s\n", err.message);
      exit(1);
    }
    src.kind_case = IMGBATCH__V1__SOURCE__KIND_ENCODED;
    src.encoded = (ProtobufCBinaryData){.len = n, .data = png};
    n1.op_case = IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR;
    gop.radius_x = gop.radius_y = 2;
    n1.gaussian_blur = &gop;
    cpu.format = IMGBATCH__V1__FORMAT__PNG;
  } else {
    raw.mode = "RGB";
    raw.width = raw.height = side;
    raw.data = (ProtobufCBinaryData){.len = ib_image_bytes(&im), .data = im.data};
    src.kind_case = IMGBATCH__V1__SOURCE__KIND_RAW;
    src.raw = &raw;
    n1.op_case = IMGBATCH__V1__NODE__OP_COPY;
    n1.copy = &cop;
  }
  Imgbatch__V1__Node *nodes[] = {&n0, &n1};
  job.n_nodes = 2;
  job.nodes = nodes;
  job.output = &out;
  *len = imgbatch__v1__job__get_packed_size(&job);
  uint8_t *buf = malloc(*len);
  if (buf) imgbatch__v1__job__pack(&job, buf);
  ib_codec_free(png);
  ib_image_release(&im);
  return buf;
}

/* The Jobs a drive sends: message i is frame i % count. */
typedef struct {
  uint8_t **data; /* each frame's bytes, its own allocation */
  size_t *len;
  size_t count, max, total;
} frames;

static void frames_free(frames *f) {
  for (size_t i = 0; i < f->count; i++) free(f->data[i]);
  free(f->data);
  free(f->len);
}

/* Appends one frame (taking `buf`); false when out of memory. */
static bool add_frame(frames *f, uint8_t *buf, size_t n) {
  uint8_t **d = realloc(f->data, (f->count + 1) * sizeof *d);
  if (d) f->data = d;
  size_t *l = realloc(f->len, (f->count + 1) * sizeof *l);
  if (l) f->len = l;
  if (!d || !l) {
    free(buf);
    return false;
  }
  f->data[f->count] = buf;
  f->len[f->count++] = n;
  f->total += n;
  if (n > f->max) f->max = n;
  return true;
}

/* FILE's length-delimited Job frames (core/frame.h) into f; false (said on
 * stderr) when it cannot be read, is empty or a frame is cut short. */
static bool load_frames(const char *path, frames *f) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "kafka_bench: %s: %s\n", path, strerror(errno));
    return false;
  }
  bool ok = true;
  for (;;) {
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    const ib_frame_status st = ib_frame_read(fp, (size_t)1 << 30, &buf, &cap, &n);
    if (st == IB_FRAME_EOF) {
      free(buf);
      break;
    }
    if (st != IB_FRAME_OK) {
      fprintf(stderr, "kafka_bench: %s: frame %zu %s\n", path, f->count,
              st == IB_FRAME_TRUNCATED ? "cut short" : "too large (or out of memory)");
      free(buf);
      ok = false;
      break;
    }
    if (!(ok = add_frame(f, buf, n))) {
      fprintf(stderr, "kafka_bench: out of memory\n");
      break;
    }
  }
  fclose(fp);
  if (ok && f->count == 0) {
    fprintf(stderr, "kafka_bench: %s: no Job frames\n", path);
    ok = false;
  }
  return ok;
}

/* The synthetic Job of --kind/--side as the only frame. */
static bool one_frame(const char *kind, uint32_t side, frames *f) {
  size_t n = 0;
  uint8_t *job = make_job(kind, side, 0, &n);
  if (!job || !add_frame(f, job, n)) {
    fprintf(stderr, "kafka_bench: out of memory\n");
    return false;
  }
  return true;
}

/* The Results kept (msgs[i], lens[i]) to path as length-delimited frames. */
static bool write_results(const char *path, uint8_t *const *msgs, const size_t *lens, long got) {
  FILE *fp = fopen(path, "wb");
  if (!fp) {
    fprintf(stderr, "kafka_bench: %s: %s\n", path, strerror(errno));
    return false;
  }
  bool ok = true;
  for (long i = 0; i < got && ok; i++) ok = ib_frame_write(fp, msgs[i], lens[i]);
  if (fclose(fp) != 0) ok = false;
  if (!ok) fprintf(stderr, "kafka_bench: %s: write failed\n", path);
  return ok;
}

static int relay(const char *brokers, long n) {
  rd_kafka_t *c = client(brokers, RD_KAFKA_CONSUMER, "kafka-bench-relay", NULL);
  rd_kafka_t *p = client(brokers, RD_KAFKA_PRODUCER, NULL, NULL);
  /* A handle made now starts the results topic's metadata lookup at once,
   * as the worker's warm_out_topics does (worker/kafka/publish.c): made at
   * the first produce, every Result of a short run waited ~0.9 s for
   * librdkafka's next metadata scan, and the floor's latency was that. */
  rd_kafka_topic_t *out = rd_kafka_topic_new(p, "imgbatch.results", NULL);
  if (!out) {
    fprintf(stderr, "kafka_bench: relay: imgbatch.results: %s\n",
            rd_kafka_err2str(rd_kafka_last_error()));
    return 1;
  }
  subscribe(c, "imgbatch.jobs");
  for (long done = 0; done < n;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
    rd_kafka_poll(p, 0);
    if (!m) continue;
    if (!m->err) {
      /* Keyed as the worker keys its Results: the Job's coordinates. */
      char key[64];
      snprintf(key, sizeof key, "imgbatch.jobs/%" PRId32 "/%" PRId64, m->partition, m->offset);
      while (rd_kafka_producev(p, RD_KAFKA_V_RKT(out), RD_KAFKA_V_KEY(key, strlen(key)),
                               RD_KAFKA_V_VALUE(m->payload, m->len),
                               RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        rd_kafka_poll(p, 10);
      done++;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_flush(p, 120000);
  rd_kafka_topic_destroy(out);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  rd_kafka_destroy(p);
  /* Its CPU, for kafka_bench.sh to set beside the worker's. */
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    printf("cpu %.2f s\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Where each Job landed (its delivery report) and when its Result came
 * back, joined after the run: the worker keys a Result by the Job's
 * "topic/partition/offset", and Results of different partitions arrive
 * out of order. */
typedef struct {
  long n;
  int32_t *part;
  int64_t *off;
  double *sent, *back; /* back < 0: no Result yet */
  /* Wall clock (ms): the Job sent, its Result's CreateTime (when the
   * worker or relay produced it), the Result read back. */
  double *sent_wall, *made_wall, *back_wall;
} trace;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)opaque;
  trace *t = rd_kafka_opaque(rk);
  long i = (long)(intptr_t)m->_private;
  if (i < 0 || i >= t->n || m->err) return;
  t->part[i] = m->partition;
  t->off[i] = m->offset;
}

/* The partition and offset of the Job a Result answers, from its key
 * "imgbatch.jobs/P/O"; false for any other key. */
static bool job_coords(const rd_kafka_message_t *m, int32_t *part, int64_t *off) {
  char key[96];
  if (!m->key || m->key_len == 0 || m->key_len >= sizeof key) return false;
  memcpy(key, m->key, m->key_len);
  key[m->key_len] = 0;
  const char *slash = strchr(key, '/');
  long long p = 0, o = 0;
  if (!slash || sscanf(slash + 1, "%lld/%lld", &p, &o) != 2) return false;
  *part = (int32_t)p;
  *off = (int64_t)o;
  return true;
}

static const trace *g_sort; /* qsort has no context argument */
static int cmp_coords(const void *a, const void *b) {
  long i = *(const long *)a, j = *(const long *)b;
  if (g_sort->part[i] != g_sort->part[j]) return g_sort->part[i] < g_sort->part[j] ? -1 : 1;
  return (g_sort->off[i] > g_sort->off[j]) - (g_sort->off[i] < g_sort->off[j]);
}

/* Joins the Results (partition, offset, arrival) to the Jobs' delivery
 * reports; returns how many matched no delivered Job. */
static long join(trace *t, long produced, const int32_t *rp, const int64_t *ro, const double *rt,
                 const double *rmade, const double *rwall, long got) {
  long *by = malloc((size_t)produced * sizeof *by), unmatched = 0;
  if (!by) return got;
  for (long i = 0; i < produced; i++) by[i] = i;
  g_sort = t;
  qsort(by, (size_t)produced, sizeof *by, cmp_coords);
  for (long r = 0; r < got; r++) {
    long lo = 0, hi = produced;
    while (lo < hi) {
      long mid = (lo + hi) / 2, i = by[mid];
      if (t->part[i] < rp[r] || (t->part[i] == rp[r] && t->off[i] < ro[r]))
        lo = mid + 1;
      else
        hi = mid;
    }
    long i = lo < produced ? by[lo] : -1;
    if (i >= 0 && t->part[i] == rp[r] && t->off[i] == ro[r] && t->back[i] < 0) {
      t->back[i] = rt[r];
      t->made_wall[i] = rmade[r];
      t->back_wall[i] = rwall[r];
    } else
      unmatched++;
  }
  free(by);
  return unmatched;
}

/* Produces n Jobs, keyed by their sequence number so that they spread over
 * the topic's partitions, paced by the Results read back: at most `window`
 * outstanding, inside what the mock broker keeps (5 MiB a partition, the
 * oldest dropped beyond that) with room for the key hash's unevenness.
 * The window is deep enough that the worker, not this loop, sets the pace
 * (a closed loop of W jobs measures W / latency). Times the stream after
 * its warm-up. */
/* The partition count of a topic, from the broker (1 when unknown). */
static int partitions_of(rd_kafka_t *rk, const char *topic) {
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  int n = 1;
  if (t && rd_kafka_metadata(rk, 0, t, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0)
      n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
  }
  if (t) rd_kafka_topic_destroy(t);
  return n;
}

/* Polls the Results reader until its group gives it partitions, at most
 * `seconds`; false when it got none. *stale counts the Results read
 * meanwhile (none can answer a Job of this run: none is out yet). */
static bool await_assignment(rd_kafka_t *c, double seconds, long *stale) {
  for (double end = now_s() + seconds; now_s() < end;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 50);
    if (m) {
      if (!m->err) (*stale)++;
      rd_kafka_message_destroy(m);
    }
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(c, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    int cnt = parts->cnt;
    rd_kafka_topic_partition_list_destroy(parts);
    if (cnt > 0) return true;
  }
  return false;
}

static int drive(const char *brokers, long n, const frames *jobs, const char *results_path) {
  trace t = {.n = n};
  t.part = malloc((size_t)n * sizeof *t.part);
  t.off = malloc((size_t)n * sizeof *t.off);
  t.sent = calloc((size_t)n, sizeof *t.sent);
  t.back = malloc((size_t)n * sizeof *t.back);
  t.sent_wall = calloc((size_t)n, sizeof *t.sent_wall);
  t.made_wall = calloc((size_t)n, sizeof *t.made_wall);
  t.back_wall = calloc((size_t)n, sizeof *t.back_wall);
  double *lat = calloc((size_t)n, sizeof *lat), *rt = calloc((size_t)n, sizeof *rt);
  double *lin = calloc((size_t)n, sizeof *lin), *lout = calloc((size_t)n, sizeof *lout);
  double *rmade = calloc((size_t)n, sizeof *rmade), *rwall = calloc((size_t)n, sizeof *rwall);
  int32_t *rp = calloc((size_t)n, sizeof *rp);
  int64_t *ro = calloc((size_t)n, sizeof *ro);
  /* --results: each Result's bytes, kept to be written after the run. */
  uint8_t **kept = results_path ? calloc((size_t)n, sizeof *kept) : NULL;
  size_t *kept_len = results_path ? calloc((size_t)n, sizeof *kept_len) : NULL;
  if (!t.part || !t.off || !t.sent || !t.back || !t.sent_wall || !t.made_wall || !t.back_wall ||
      !lat || !rt || !lin || !lout || !rmade || !rwall || !rp || !ro ||
      (results_path && (!kept || !kept_len))) {
    fprintf(stderr, "kafka_bench: out of memory\n");
    return 1;
  }
  for (long i = 0; i < n; i++) t.part[i] = -1, t.off[i] = -1, t.back[i] = -1;
  rd_kafka_t *c = client(brokers, RD_KAFKA_CONSUMER, "kafka-bench-collect", NULL);
  rd_kafka_t *p = client(brokers, RD_KAFKA_PRODUCER, NULL, &t);
  subscribe(c, "imgbatch.results");
  long stale = 0;
  if (!await_assignment(c, 60, &stale))
    fprintf(stderr, "kafka_bench: the Results reader got no partitions in 60 s; driving anyway\n");
  if (stale) fprintf(stderr, "kafka_bench: %ld Results read before any Job was sent\n", stale);
  /* The window from the largest Job; in-MB/s from their mean size. */
  size_t len = jobs->max;
  double mean_len = (double)jobs->total / (double)jobs->count;
  int partitions = partitions_of(p, "imgbatch.jobs");
  long window = (long)((size_t)partitions * (2u << 20) / len);
  if (window < 4) window = 4;
  if (window > 1024) window = 1024;
  long warm = window < n / 4 ? window : n / 4;
  double t_warm = 0, last = 0, deadline = now_s() + 900;
  uint64_t out_bytes = 0;
  long got = 0, produced = 0;
  bool kept_ok = true;
  while (got < n && now_s() < deadline) {
    while (produced < n && produced - got < window) {
      char key[24];
      size_t f = (size_t)produced % jobs->count;
      snprintf(key, sizeof key, "%ld", produced);
      t.sent[produced] = now_s();
      t.sent_wall[produced] = wall_ms();
      if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC("imgbatch.jobs"), RD_KAFKA_V_KEY(key, strlen(key)),
                            RD_KAFKA_V_VALUE((void *)jobs->data[f], jobs->len[f]),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_OPAQUE((void *)(intptr_t)produced), RD_KAFKA_V_END) != 0)
        break;
      produced++;
    }
    rd_kafka_poll(p, 0);
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 5);
    if (!m) continue;
    if (!m->err) {
      last = now_s();
      if (got == warm) t_warm = last, out_bytes = 0;
      out_bytes += m->len;
      if (job_coords(m, &rp[got], &ro[got])) {
        rt[got] = last;
        rwall[got] = wall_ms();
        rmade[got] = (double)rd_kafka_message_timestamp(m, NULL);
      } else
        rp[got] = -1;
      if (kept && kept_ok) {
        kept_ok = (kept[got] = malloc(m->len ? m->len : 1)) != NULL;
        if (kept_ok) memcpy(kept[got], m->payload, m->len), kept_len[got] = m->len;
      }
      got++;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_flush(p, 10000); /* every delivery report served */
  long unmatched = join(&t, produced, rp, ro, rt, rmade, rwall, got), timed = got - warm - 1,
       nl = 0;
  double span = last > t_warm ? last - t_warm : 1e-9;
  /* Latency of the Jobs sent after the warm-up window, and its two legs
   * split at the Result's CreateTime (ms, wall clock): in = Job sent ->
   * Result produced (the Job's delivery, the consumer's fetch, the work),
   * out = Result produced -> read back (linger, the produce round trip,
   * this side's fetch). */
  for (long i = warm; i < n; i++) {
    if (t.back[i] < 0) continue;
    lin[nl] = t.made_wall[i] - t.sent_wall[i];
    lout[nl] = t.back_wall[i] - t.made_wall[i];
    lat[nl++] = (t.back[i] - t.sent[i]) * 1e3;
  }
  qsort(lat, (size_t)nl, sizeof *lat, cmp_double);
  qsort(lin, (size_t)nl, sizeof *lin, cmp_double);
  qsort(lout, (size_t)nl, sizeof *lout, cmp_double);
  if (unmatched) fprintf(stderr, "kafka_bench: %ld Results matched no Job sent\n", unmatched);
  if (!kept_ok) fprintf(stderr, "kafka_bench: out of memory keeping the Results\n");
  if (kept && kept_ok) kept_ok = write_results(results_path, kept, kept_len, got);
  printf(
      "%ld of %ld results (window %ld over %d partitions, %zu-byte jobs): %.1f jobs/s, in %.1f "
      "MB/s, out %.1f MB/s, "
      "latency p50 %.1f ms p99 %.1f ms (p50 in %.0f ms, out %.0f ms)\n",
      got, n, window, partitions, len, (double)timed / span, mean_len * (double)timed / span / 1e6,
      (double)out_bytes / span / 1e6, nl > 0 ? lat[nl / 2] : 0.0, nl > 0 ? lat[nl * 99 / 100] : 0.0,
      nl > 0 ? lin[nl / 2] : 0.0, nl > 0 ? lout[nl / 2] : 0.0);
  free(lat);
  free(lin);
  free(lout);
  free(rmade);
  free(rwall);
  free(t.sent_wall);
  free(t.made_wall);
  free(t.back_wall);
  free(t.sent);
  free(t.back);
  free(t.part);
  free(t.off);
  free(rt);
  free(rp);
  free(ro);
  for (long i = 0; kept && i < got; i++) free(kept[i]);
  free(kept);
  free(kept_len);
  rd_kafka_destroy(p);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  return got == n && !unmatched && !stale && kept_ok ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *brokers = NULL, *kind = "raw", *jobs_path = NULL, *results_path = NULL;
  long n = 1000;
  uint32_t side = 256;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--brokers") == 0)
      brokers = argv[i + 1];
    else if (strcmp(argv[i], "--n") == 0)
      n = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--kind") == 0)
      kind = argv[i + 1];
    else if (strcmp(argv[i], "--side") == 0)
      side = (uint32_t)atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--jobs") == 0)
      jobs_path = argv[i + 1];
    else if (strcmp(argv[i], "--results") == 0)
      results_path = argv[i + 1];
  }
  if (argc < 2 || !brokers || n < 2) {
    fprintf(stderr,
            "usage: kafka_bench drive|relay --brokers B --n N [--kind raw|png] [--side S]\n"
            "                   [--jobs FILE] [--results FILE]\n"
            "  --jobs FILE: drive sends FILE's length-delimited Job frames (message i: frame\n"
            "  i %% count) in place of the synthetic --kind Job; --results FILE: drive writes the\n"
            "  Results it read back there, length-delimited\n");
    return 2;
  }
  if (strcmp(argv[1], "relay") == 0) return relay(brokers, n);
  if (strcmp(argv[1], "drive") != 0) return 2;
  frames jobs = {0};
  int rc = (jobs_path ? load_frames(jobs_path, &jobs) : one_frame(kind, side, &jobs))
               ? drive(brokers, n, &jobs, results_path)
               : 1;
  frames_free(&jobs);
  return rc;
}
