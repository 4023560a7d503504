/* A program that knows imgbatch only as an installed package: built with
 * `pkg-config --cflags --libs imgbatch` against libimgbatch.so, it runs one
 * job on a CPU executor and checks the pixels (tests/install/run.sh). */
#include <imgbatch.h>
#include <stdio.h>
#include <string.h>

/* imgbatch.v1.Job, serialized: key_string "k"; source raw {mode "L",
 * width 3, height 2, data 00 01 02 7f 80 ff}; nodes [{source {index 0}},
 * {inputs [0], invert {}}]. */
static const uint8_t job[] = {
    0x0a, 0x01, 0x6b,                               /* 1 key_string "k" */
    0x1a, 0x11,                                     /* 3 source, 17 bytes */
    0x1a, 0x0f,                                     /*   3 raw, 15 bytes */
    0x0a, 0x01, 0x4c,                               /*     1 mode "L" */
    0x10, 0x03, 0x18, 0x02,                         /*     2 width 3, 3 height 2 */
    0x22, 0x06, 0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, /*     4 data */
    0x2a, 0x02, 0x52, 0x00,                         /* 5 nodes: 10 source {} */
    0x2a, 0x06, 0x0a, 0x01, 0x00, 0xa2, 0x01, 0x00, /* 5 nodes: 1 inputs [0], 20 invert {} */
};

static int fail(const char *what, const ib_error *err) {
  fprintf(stderr, "hello: %s: %s/%s: %s\n", what, ib_status_name(err->status),
          ib_stage_name(err->stage), err->message);
  return 1;
}

int main(void) {
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", IB_VERSION_MAJOR, IB_VERSION_MINOR, IB_VERSION_PATCH);
  if (strcmp(ib_version(), header) != 0) {
    fprintf(stderr, "hello: library %s, header %s\n", ib_version(), header);
    return 1;
  }
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.backend = IB_BACKEND_CPU;
  o.host_threads = 1;
  ib_error err = {0};
  /* Tuning goes through the string setter; an unknown key is named. */
  ib_config *cfg = ib_config_new();
  if (!cfg) return 1;
  if (ib_config_set(cfg, "cuda_pieces", "1", &err) != IB_OK) return fail("config", &err);
  if (ib_config_set(cfg, "no_such_key", "1", &err) != IB_UNSUPPORTED ||
      !strstr(err.message, "no_such_key")) {
    fprintf(stderr, "hello: unknown config key accepted or not named: %s\n", err.message);
    return 1;
  }
  o.config = cfg;
  ib_executor *ex = NULL;
  const ib_status created = ib_executor_create(&o, &ex, &err);
  ib_config_destroy(cfg);
  if (created != IB_OK) return fail("create", &err);
  ib_graph *g = NULL;
  if (ib_graph_parse(job, sizeof job, NULL, &g, NULL, &err) != IB_OK) return fail("parse", &err);
  uint64_t id = 0;
  if (ib_executor_submit(ex, g, NULL, &id, &err) != IB_OK) return fail("submit", &err);
  ib_results *rs = NULL;
  if (ib_executor_join(ex, &rs) != IB_OK) return fail("join", &err);
  ib_result r;
  ib_status st = ib_results_next(rs, &r);
  if (st != IB_OK) {
    fprintf(stderr, "hello: results_next: %s\n", ib_status_name(st));
    return 1;
  }
  if (!r.ok) return fail("job", &r.error);
  static const uint8_t want[] = {0xff, 0xfe, 0xfd, 0x80, 0x7f, 0x00};
  if (r.job_id != id || r.key.is_u64 || strcmp(r.key.str, "k") != 0 || r.image.mode != IB_MODE_L ||
      r.image.width != 3 || r.image.height != 2 || ib_image_bytes(&r.image) != sizeof want ||
      memcmp(r.image.data, want, sizeof want) != 0) {
    fprintf(stderr, "hello: wrong result (job %llu, mode %s, %ux%u)\n",
            (unsigned long long)r.job_id, ib_mode_name(r.image.mode), r.image.width,
            r.image.height);
    return 1;
  }
  ib_result_free(&r);
  if (ib_results_next(rs, &r) != IB_END) {
    fprintf(stderr, "hello: a second result\n");
    return 1;
  }
  ib_results_close(rs);
  ib_executor_destroy(ex);
  printf("imgbatch %s: invert of 3x2 L ok\n", ib_version());
  return 0;
}
