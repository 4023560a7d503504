/* The GPU tools' environment (gpu_check, gpu_bench) onto executor options
 * (cli.h): a tool, unlike the library, may read it. */
#include <stdlib.h>

#include "cli/cli.h"

void ib_cli_tool_options(ib_executor_options *o) {
  const char *p = getenv("IB_CUDA_PROFILE"), *g = getenv("IB_BLUR_GLOBAL_ROWS");
  const char *ct = getenv("IB_COMPILE_THREADS"), *pc = getenv("IB_CUDA_PIECES");
  const char *bm = getenv("IB_CUDA_BATCH_MIN"), *pk = getenv("IB_CUDA_PIPE_KIB");
  const char *rj = getenv("IB_RAMP_JOBS");
  o->cache_dir = ib_cli_cache_dir();
  o->cuda_profile = p && *p == '1';
  o->cuda_blur_global_rows = g && *g == '1';
  o->compile_threads = ct ? atoi(ct) : 0;
  o->cuda_pieces = pc ? (uint32_t)atoi(pc) : 0;
  o->cuda_batch_min = bm ? (uint32_t)atoi(bm) : 0;
  o->cuda_pipe_kib = pk ? atoi(pk) : 0;
  o->ramp_jobs = rj ? (uint32_t)atoi(rj) : 0;
  o->log_cb = ib_cli_log_stderr;
}
