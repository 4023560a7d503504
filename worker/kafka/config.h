/*
 * config.h - what the front end sets for the Kafka worker (worker.h runs
 * it); the worker's own files read it through ib_worker.cfg.
 */
#ifndef IB_KAFKA_CONFIG_H
#define IB_KAFKA_CONFIG_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "imgbatch.h"

/* One structured log line: `event` names what happened; `fields` is a
 * JSON object body ("\"partition\":3,\"offset\":7", possibly empty). */
typedef void (*ib_wlog_fn)(void *ctx, const char *level, const char *event, const char *fields);

#define IB_WORKER_MAX_PROPS 64
/* The default kill bound. A job holds a max_jobs slot through execute +
 * delivery and a kill-bound slot through delivery + commit; the commit
 * round trip is about the delivery's, so twice the default max_jobs keeps
 * the kill bound from being the tighter one. */
#define IB_WORKER_MAX_UNCOMMITTED 128

typedef struct ib_worker_config {
  const char *brokers;
  const char *group, *jobs_topic, *results_topic, *control_topic;
  const char *dlq_topic;   /* NULL: none */
  const char *source_root; /* NULL: path sources rejected */
  uint32_t max_side;       /* ib_graph_limits.max_side; 0: the library's default */
  const char *output_dir;  /* NULL: results too large for a message fail with Limit */
  uint64_t output_ttl_s;
  uint64_t max_result_bytes; /* 0: the producer's message.max.bytes less the envelope */
  int decode_threads;        /* encode/decode pool; 0: the core count */
  /* exec.max_jobs bounds a job from admission until its Result's delivery
   * is acknowledged (pending + executing + undelivered: docs/credits.md). */
  ib_executor_options exec;
  /* The kill bound: Results out that no acknowledged commit covers (a
   * crash repeats at most this many); 0: IB_WORKER_MAX_UNCOMMITTED. */
  uint32_t max_uncommitted;
  bool transactional;
  uint64_t grace_s;
  uint64_t stall_s; /* oldest unfinished job of a partition older than this: Timeout */
  uint64_t lease_s; /* resident handles */
  const char *worker_id;
  const char *props[IB_WORKER_MAX_PROPS][2]; /* -X key=value, to every client */
  int n_props;
  const char *metrics_addr; /* HOST:PORT of /metrics, /healthz, /readyz; NULL: none */
  const char *fault;        /* IB_FAULTS builds: executor fault spec, "sink" for output writes */
  ib_wlog_fn log;
  void *log_ctx;
  /* Set by the front end's signal handler: 1 = drain, 2 = exit at once. */
  volatile sig_atomic_t *stop;
} ib_worker_config;

#endif
