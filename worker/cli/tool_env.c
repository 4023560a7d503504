/* The library's tuning settings from a command line (--tune KEY=VALUE),
 * and the GPU tools' environment (gpu_check, gpu_bench) onto executor
 * options (cli.h): a tool, unlike the library, may read it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/error.h"

bool ib_cli_tune(ib_config *cfg, const char *key_value, ib_error *err) {
  const char *eq = strchr(key_value, '=');
  char key[128];
  const size_t n = eq ? (size_t)(eq - key_value) : 0;
  if (!eq || !n || n >= sizeof key) {
    ib_error_set(err, IB_INVALID, IB_STAGE_NONE, "tune: \"%s\" is not KEY=VALUE", key_value);
    return false;
  }
  memcpy(key, key_value, n);
  key[n] = 0;
  return ib_config_set(cfg, key, eq + 1, err) == IB_OK;
}

/* Environment names older than IB_TUNE, each one config key. */
static const char *const named[][2] = {
    {"IB_CUDA_PROFILE", "cuda_profile"},   {"IB_BLUR_GLOBAL_ROWS", "cuda_blur_global_rows"},
    {"IB_CUDA_PIECES", "cuda_pieces"},     {"IB_CUDA_BATCH_MIN", "cuda_batch_min"},
    {"IB_CUDA_PIPE_KIB", "cuda_pipe_kib"}, {"IB_RAMP_JOBS", "ramp_jobs"},
};

static bool tune_list(ib_config *cfg, const char *list, ib_error *err) {
  char buf[1024];
  if (strlen(list) >= sizeof buf) {
    ib_error_set(err, IB_INVALID, IB_STAGE_NONE, "IB_TUNE: longer than %zu bytes", sizeof buf);
    return false;
  }
  strcpy(buf, list);
  char *save = NULL;
  for (char *kv = strtok_r(buf, ", ", &save); kv; kv = strtok_r(NULL, ", ", &save))
    if (!ib_cli_tune(cfg, kv, err)) return false;
  return true;
}

ib_config *ib_cli_tool_options(ib_executor_options *o) {
  ib_config *cfg = ib_config_new();
  ib_error err = {0};
  bool ok = cfg != NULL;
  for (size_t i = 0; ok && i < sizeof named / sizeof named[0]; i++) {
    const char *v = getenv(named[i][0]);
    if (v && *v) ok = ib_config_set(cfg, named[i][1], v, &err) == IB_OK;
  }
  const char *list = getenv("IB_TUNE");
  if (ok && list) ok = tune_list(cfg, list, &err);
  if (!ok) {
    fprintf(stderr, "imgbatch tool environment: %s\n", cfg ? err.message : "out of memory");
    ib_config_destroy(cfg);
    return NULL;
  }
  const char *ct = getenv("IB_COMPILE_THREADS");
  o->cache_dir = ib_cli_cache_dir();
  o->compile_threads = ct ? atoi(ct) : 0;
  o->log_cb = ib_cli_log_stderr;
  o->config = cfg;
  return cfg;
}
