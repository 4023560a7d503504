/*
 * metrics.h - the operations snapshot shared by metrics.c (filled on the
 * driving thread, formatted for /metrics) and http.c (the listener thread).
 * The listener reads nothing of the worker but this snapshot, under its mutex.
 */
#ifndef IB_KAFKA_METRICS_H
#define IB_KAFKA_METRICS_H

#include <pthread.h>
#include <signal.h>

#include "kafka/wstate.h"

enum { IB_CREDIT_GPU, IB_CREDIT_HOST, IB_CREDIT_JOBS, IB_CREDIT_IN_FLIGHT, IB_CREDIT_N };

typedef struct ib_wsnap {
  uint64_t counters[IB_WC_N], outcomes[IB_WO_N], faults[IB_WF_N];
  uint64_t consumed_bytes, result_bytes;
  ib_hist queue, exec, encode;
  uint64_t waiting, running, undelivered, handles, partitions, oldest_us;
  uint64_t live, unsettled; /* --max-jobs and --max-uncommitted slots held */
  int64_t lag;              /* -1: no partition with a known high watermark */
  ib_credit_counter credits[IB_CREDIT_N];
  uint64_t compile_depth, compile_full; /* the executor's compile queue (0 on cpu) */
  uint64_t module_entries, module_bytes, pinned_bytes, disk_cache_bytes;
  /* The kernel caches' bounds, as configured. */
  uint64_t module_cap, disk_cache_cap;
  ib_executor_pools pools;             /* the backend's pools and their caps */
  uint64_t scratch_bytes, scratch_cap; /* ib_codec_scratch_get */
  bool paused, joined, stopping, sick, fatal;
  int exit_code;
  uint64_t stop_deadline;
} ib_wsnap;

struct ib_wmetrics {
  pthread_mutex_t mu;
  ib_wsnap snap;
  /* The front end's stop flag (ib_worker_config.stop), read by the listener
   * itself: the driving thread may be inside a long CPU job when the signal
   * comes and refresh the snapshot only after it, while an orchestrator must
   * see /readyz turn 503 at once. A sig_atomic_t is read whole. */
  const volatile sig_atomic_t *stop;
  uint64_t refreshed_us;
  struct MHD_Daemon *daemon;
};

/* Copies the worker's counters and gauges into the snapshot: from the
 * loop at most every 100 ms, at once (force) where health changes. Does
 * nothing without --metrics-addr. */
void ib_wmetrics_refresh(ib_worker *w, bool force);

/* Health and readiness from a snapshot, at monotonic time now_us. */
bool ib_wsnap_healthy(const ib_wsnap *s, uint64_t now_us);
bool ib_wsnap_ready(const ib_wsnap *s);
/* Prometheus text format 0.0.4; malloc'd (NULL: out of memory). */
char *ib_wsnap_format(const ib_wsnap *s, size_t *len);

#endif
