/*
 * sub_bench.c - the CUDA backend's host passes of a submission without a
 * GPU (256² invert through the API): Jobs written one after the
 * other into pinned buffers (the backend's pinned memory over the heap,
 * as ib_executor_buffer's) and parsed in place, then per submission the
 * passes of ib_cuda_submit that need no driver: plan, layout (sources by
 * host address, slab runs), staging (parameter blocks) and the list of
 * upload copies. Launch groups and the driver calls are not here (they
 * need modules and a device): gpu_bench's IB_CUDA_PROFILE covers them.
 *
 *   sub_bench [--side S] [--jobs N] [--rounds R]
 *
 *   --side    RGB invert images of S x S; 256
 *   --jobs    jobs per submission; 256 (max_jobs 512 / max_in_flight 2)
 *   --rounds  submissions timed; 2000
 *
 * Prints us per job of each pass and the upload copies per submission.
 * Tool code: a failure prints what failed and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/cuda_internal.h"
#include "parse/parse.h"
#include "tools/jobgen.h"
#include "tools/page_heap.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* steadier on a shared machine */
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
  printf("sub_bench: %s\n", what);
  exit(1);
}

int main(int argc, char **argv) {
  int side = 256, n = 256, rounds = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    int *v = !strcmp(argv[i], "--side")     ? &side
             : !strcmp(argv[i], "--jobs")   ? &n
             : !strcmp(argv[i], "--rounds") ? &rounds
                                            : NULL;
    if (!v) die("usage: sub_bench [--side S] [--jobs N] [--rounds R]");
    *v = atoi(argv[i + 1]);
  }
  if (side < 1 || n < 1 || rounds < 1) die("bad arguments");
  ib_cuda c = {0};
  c.pin = ib_pinned_new(page_heap_alloc, page_heap_free, NULL, 8ull << 30, 4ull << 30);
  c.hp = ib_hostpar_new(0);
  if (!c.pin || !c.hp) die("out of memory");
  ProtobufCAllocator *al = ib_pinned_allocator(c.pin);
  size_t cap = (size_t)side * side * 4 + (1u << 16);
  jg_arena a = {malloc(cap), 0, cap};
  ib_graph **gs = calloc((size_t)n, sizeof *gs);
  ib_backend_job *jobs = calloc((size_t)n, sizeof *jobs);
  if (!a.p || !gs || !jobs) die("out of memory");
  for (int i = 0; i < n; i++) {
    jg_rng r = {0x9e37 + (uint64_t)i};
    jg_job j;
    jg_begin(&j, &a, &r, IB_MODE_RGB, (uint32_t)side, (uint32_t)side, (uint64_t)i);
    jg_op(&j, &r, JG_INVERT, 0, IB_MODE_RGB, (uint32_t)side, (uint32_t)side, -1);
    size_t len = imgbatch__v1__job__get_packed_size(&j.job);
    uint8_t *buf = al->alloc(al->allocator_data, len);
    imgbatch__v1__job__pack(&j.job, buf);
    ib_graph_memory mem = {al, NULL, NULL};
    ib_error err = {0};
    if (ib_graph_parse_buffer(buf, len, &(ib_graph_limits){0}, &mem, &gs[i], NULL, &err) != IB_OK)
      die(err.message);
  }
  double t_plan = 0, t_layout = 0, t_stage = 0, t_copies = 0;
  size_t copies = 0;
  for (int k = 0; k < rounds; k++) {
    for (int i = 0; i < n; i++) jobs[i] = (ib_backend_job){.graph = gs[i], .job_id = (uint64_t)i};
    ib_backend_submission s = {.c = &c, .jobs = jobs, .n = (size_t)n};
    ib_error err = {0};
    double t0 = now();
    if (!(s.js = calloc((size_t)n, sizeof *s.js))) die("out of memory");
    ib_cuda_sub_plan(&s);
    double t1 = now();
    ib_cuda_sub_layout(&s);
    double t2 = now();
    if (!ib_pinned_get(c.pin, s.lay.upload, &s.hblk)) die("staging block");
    if (ib_cuda_sub_stage(&s, &err) != IB_OK) die(err.message);
    double t3 = now();
    ib_up_copies cp = {0};
    if (ib_cuda_sub_copies(&s, 0, s.n, true, &cp, &err) != IB_OK) die(err.message);
    double t4 = now();
    copies += cp.n;
    ib_cuda_copies_free(&cp);
    ib_pinned_put(c.pin, &s.hblk);
    for (int i = 0; i < n; i++) {
      ib_gplan_free(&s.js[i].plan);
      free(s.js[i].buf_off);
    }
    free(s.js);
    free(s.dsrc);
    t_plan += t1 - t0, t_layout += t2 - t1, t_stage += t3 - t2, t_copies += t4 - t3;
  }
  const double per = 1e6 / ((double)rounds * n);
  printf(
      "sub_bench: RGB invert %d^2, %d jobs per submission, %d submissions: us per job: plan %.3f, "
      "layout %.3f, staging %.3f, copy list %.3f (total %.3f); %.1f upload copies per submission\n",
      side, n, rounds, t_plan * per, t_layout * per, t_stage * per, t_copies * per,
      (t_plan + t_layout + t_stage + t_copies) * per, (double)copies / rounds);
  for (int i = 0; i < n; i++) ib_graph_free(gs[i]);
  free(gs);
  free(jobs);
  free(a.p);
  ib_hostpar_free(c.hp);
  ib_pinned_free(c.pin);
  return 0;
}
