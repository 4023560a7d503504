/*
 * 10,000 jobs through a streaming run: peak RSS stays under host_bytes plus
 * a fixed overhead, because run never collects inputs or outputs. The
 * numbers are printed; under AddressSanitizer (quarantine keeps freed
 * memory resident) they are printed but not asserted.
 */
#include <stdio.h>

#include "exec_jobs.h"

#define N_JOBS 10000
#define HOST_BYTES (16ull << 20)
#define OVERHEAD (24ull << 20) /* allocator slack, libvips, criterion */

#if defined(__SANITIZE_ADDRESS__)
#define IB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IB_ASAN 1
#endif
#endif

static uint64_t status_kib(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  uint64_t v = 0;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0) v = strtoull(line + n, NULL, 10);
  if (f) fclose(f);
  return v;
}

/* Resets VmHWM to the current RSS (Linux >= 4.0). */
static void reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f) {
    fputs("5", f);
    fclose(f);
  }
}

typedef struct lazy_src {
  uint64_t pulled;
} lazy_src;

static ib_status lazy_next(void *user, ib_input *in, ib_error *err) {
  (void)err;
  lazy_src *s = user;
  if (s->pulled == N_JOBS) return IB_END;
  s->pulled++;
  test_job t = {
      .mode = "RGBA", .w = 128, .h = 128, .copies = 1, .key_is_u64 = true, .key_u64 = s->pulled};
  in->graph = test_graph(&t);
  return IB_OK;
}

Test(rss, ten_thousand_streamed_jobs_stay_under_host_bytes_plus_overhead, .timeout = 120) {
  ib_executor_options o;
  ib_executor_options_default(&o);
  o.host_bytes = HOST_BYTES;
  o.max_jobs = 100000; /* host_bytes, not the job count, bounds the window */
  ib_executor *ex;
  cr_assert_eq(ib_executor_create(&o, &ex, NULL), IB_OK);
  /* Warm libvips/protobuf paths before the baseline. */
  ib_graph_free(test_graph_u64(0));
  uint64_t base_kib = status_kib("VmRSS:");
  reset_peak();
  lazy_src src = {0};
  ib_results *rs;
  cr_assert_eq(ib_executor_run(ex, lazy_next, &src, &rs), IB_OK);
  ib_result r;
  uint64_t ok = 0;
  while (ib_results_next(rs, &r) == IB_OK) {
    ok += r.ok;
    ib_result_free(&r);
  }
  ib_results_close(rs);
  uint64_t peak_kib = status_kib("VmHWM:");
  ib_executor_counters c = test_counters(ex);
  ib_executor_destroy(ex);
  fprintf(stderr,
          "rss: %d jobs of 128x128 RGBA (64 KiB): baseline %.1f MiB, peak %.1f MiB (+%.1f MiB), "
          "host_bytes %.0f MiB, host credits peak %.1f MiB, jobs peak %llu, submissions %llu\n",
          N_JOBS, base_kib / 1024.0, peak_kib / 1024.0, (peak_kib - base_kib) / 1024.0,
          HOST_BYTES / 1048576.0, c.host_bytes.peak / 1048576.0, (unsigned long long)c.jobs.peak,
          (unsigned long long)c.submissions);
  cr_assert_eq(ok, N_JOBS);
  cr_assert_leq(c.host_bytes.peak, HOST_BYTES);
#ifndef IB_ASAN
  cr_assert_lt(peak_kib * 1024, base_kib * 1024 + HOST_BYTES + OVERHEAD,
               "peak RSS %llu KiB over baseline %llu KiB + host_bytes + overhead",
               (unsigned long long)peak_kib, (unsigned long long)base_kib);
#endif
}
