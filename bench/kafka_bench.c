/*
 * kafka_bench - the worker through Kafka against its floor, a plain
 * librdkafka relay (consume -> produce of the same bytes) on the same
 * broker (issue 10 "Speed"; bench/kafka_bench.sh drives it).
 *
 *   kafka_bench drive --brokers B --n N --kind raw|png [--side S]
 *       produces N Jobs on imgbatch.jobs (raw RGB SxS -> copy -> raw out, or
 *       PNG SxS -> GaussianBlur(2) -> PNG out: codec-bound), paced by the
 *       Results it reads back; prints jobs/s, MB/s and latency p50/p99
 *       after a warm-up window
 *   kafka_bench relay --brokers B --n N     the floor: N messages jobs -> results
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "proto/imgbatch.pb-c.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static rd_kafka_t *client(const char *brokers, rd_kafka_type_t type, const char *group) {
  char err[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
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
    if (ib_codec_encode(&im, &enc, &png, &n, &err) != IB_OK) {
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
  imgbatch__v1__job__pack(&job, buf);
  ib_codec_free(png);
  ib_image_release(&im);
  return buf;
}

static int relay(const char *brokers, long n) {
  rd_kafka_t *c = client(brokers, RD_KAFKA_CONSUMER, "kafka-bench-relay");
  rd_kafka_t *p = client(brokers, RD_KAFKA_PRODUCER, NULL);
  subscribe(c, "imgbatch.jobs");
  for (long done = 0; done < n;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
    rd_kafka_poll(p, 0);
    if (!m) continue;
    if (!m->err) {
      while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC("imgbatch.results"),
                               RD_KAFKA_V_VALUE(m->payload, m->len),
                               RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        rd_kafka_poll(p, 10);
      done++;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_flush(p, 120000);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  rd_kafka_destroy(p);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Produces n Jobs paced by the Results read back (the mock broker keeps
 * only about 1 MB per partition, so a backlog larger than that would be
 * deleted before it is consumed), and times the stream after its warm-up. */
static int drive(const char *brokers, long n, const char *kind, uint32_t side) {
  rd_kafka_t *c = client(brokers, RD_KAFKA_CONSUMER, "kafka-bench-collect");
  rd_kafka_t *p = client(brokers, RD_KAFKA_PRODUCER, NULL);
  subscribe(c, "imgbatch.results");
  size_t len = 0;
  uint8_t *job = make_job(kind, side, 0, &len);
  /* The mock keeps about 1 MB per partition: stay well inside it. */
  long window = (long)((2u << 20) / len);
  if (window < 4) window = 4;
  if (window > 512) window = 512;
  long warm = window < n / 4 ? window : n / 4;
  double t_warm = 0, last = 0, deadline = now_s() + 900;
  double *lat = calloc((size_t)n, sizeof *lat);
  double *sent = calloc((size_t)n, sizeof *sent);
  uint64_t out_bytes = 0;
  long got = 0, produced = 0;
  while (got < n && now_s() < deadline) {
    while (produced < n && produced - got < window) {
      sent[produced] = now_s();
      /* The Job's key carries its sequence number for the latency. */
      char key[24];
      snprintf(key, sizeof key, "%ld", produced);
      if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC("imgbatch.jobs"), RD_KAFKA_V_VALUE(job, len),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) != 0)
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
      lat[got] = (last - sent[got]) * 1e3; /* results in order of jobs, near enough */
      got++;
    }
    rd_kafka_message_destroy(m);
  }
  long timed = got - warm - 1;
  double span = last > t_warm ? last - t_warm : 1e-9;
  qsort(lat + warm, (size_t)(got - warm), sizeof *lat, cmp_double);
  long nl = got - warm;
  printf(
      "%ld of %ld results (window %ld, %zu-byte jobs): %.1f jobs/s, in %.1f MB/s, out %.1f MB/s, "
      "latency p50 %.1f ms p99 %.1f ms\n",
      got, n, window, len, (double)timed / span, (double)len * (double)timed / span / 1e6,
      (double)out_bytes / span / 1e6, nl > 0 ? lat[warm + nl / 2] : 0.0,
      nl > 0 ? lat[warm + nl * 99 / 100] : 0.0);
  free(lat);
  free(sent);
  free(job);
  rd_kafka_flush(p, 10000);
  rd_kafka_destroy(p);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  return got == n ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *brokers = NULL, *kind = "raw";
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
  }
  if (argc < 2 || !brokers || n < 2) {
    fprintf(stderr,
            "usage: kafka_bench drive|relay --brokers B --n N [--kind raw|png] [--side S]\n");
    return 2;
  }
  if (strcmp(argv[1], "relay") == 0) return relay(brokers, n);
  if (strcmp(argv[1], "drive") == 0) return drive(brokers, n, kind, side);
  return 2;
}
