/*
 * wstate.h - the Kafka worker's internal state, shared by its files; each
 * file's functions are in its own header (consume.h: group membership,
 * input; track.h: offset watermarks; publish.h: Results, DLQ, deliveries,
 * output files; control.h: resident handles; worker.h: the loop). Types
 * only, so that every file may include it without tying it to the others.
 * Everything here runs on the worker's one driving thread: librdkafka
 * callbacks are served from its poll calls.
 */
#ifndef IB_KAFKA_WSTATE_H
#define IB_KAFKA_WSTATE_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>

#include "imgbatch.h"
#include "kafka/config.h"
#include "kafka/hist.h"

typedef enum ib_wjob_state {
  IB_WJOB_WAITING,    /* consumed, not yet handed to the executor */
  IB_WJOB_RUNNING,    /* in the executor */
  IB_WJOB_PUBLISHING, /* Result (and DLQ copy) produced, not yet acknowledged */
  IB_WJOB_ACKED,      /* --transactional: acknowledged, its transaction not yet committed */
  IB_WJOB_DONE        /* acknowledged: its offset may be committed */
} ib_wjob_state;

struct ib_wpart;

/* Commits in flight per partition. A job is settled (its kill-bound slot
 * free) only when a commit covering it is answered; with one in flight, a
 * job done just after a commit went out waited for that round trip and
 * then its own. */
#define IB_COMMITS_IN_FLIGHT 4

/* One consumed message, from fetch until its Result is acknowledged. The
 * message itself is kept (librdkafka's buffer, no copy) so a worker fault
 * can resubmit the same bytes and the DLQ can carry the original. */
typedef struct ib_wjob {
  rd_kafka_message_t *msg;
  int32_t partition;
  int64_t offset;
  struct ib_wpart *part;                   /* NULL once its partition was revoked or lost */
  struct ib_wjob *next;                    /* in its partition, by offset */
  struct ib_wjob *qnext;                   /* in the waiting or retry queue */
  struct ib_wjob *alive_prev, *alive_next; /* every job not yet freed (teardown) */
  ib_wjob_state state;
  int pending;          /* deliveries outstanding (Result, DLQ copy) */
  bool delivery_failed; /* re-produce when the broker is back */
  int faults;           /* worker faults seen by this job */
  uint64_t start_seq;   /* when it was last handed to the executor */
  bool counted;         /* in w->unsettled */
  uint64_t fault_seq;   /* the start sequence when it first faulted */
  ib_key key;           /* after a fault: for an Internal Result */
  bool has_key, has_job_id;
  uint64_t job_id;
  uint64_t not_before_us; /* retry backoff */
  uint64_t consumed_us;
  /* The hung-job rule (stall.c): a job answered with Timeout in place of
   * its Result. While the executor or the encode pool still has it, it
   * stays allocated (detached from its partition once done) until its late
   * result comes back and is dropped. */
  bool timed_out;
  bool in_exec;           /* handed to the executor, its result not yet back */
  bool in_pool;           /* its Result being prepared on the encode pool */
  uint64_t exec_since_us; /* when it was handed to the executor */
  uint64_t pool_since_us; /* when its Result went to the encode pool */
  uint64_t produced_us;   /* when its Result was last produced (phase times) */
  uint64_t acked_us;      /* when the broker acknowledged it */
  uint8_t *result;        /* packed Result, kept until acknowledged */
  size_t result_len;
  char result_key[96];
  rd_kafka_headers_t *result_headers; /* template, copied per produce */
  bool to_dlq;
  char dlq_stage[16], dlq_kind[16];
  char dlq_error[320];
} ib_wjob;

typedef struct ib_wjob_queue {
  ib_wjob *head, *tail;
  size_t n;
} ib_wjob_queue;

/* An assigned partition of the jobs topic. */
typedef struct ib_wpart {
  int32_t id;
  bool assigned;
  int64_t assigned_ms;  /* wall clock: input older than this waited for us to join */
  ib_wjob *head, *tail; /* every tracked message, in offset order */
  int64_t done_upto;    /* next offset after the last message popped done; -1 none */
  int64_t committed;    /* last offset the broker accepted from us; -1 none */
  int64_t next_offset;  /* the offset expected next (gap.c); -1 before the first message */
  /* Commits in flight, oldest first (consume.c: pipelined; the broker
   * applies a group's commits in the order they arrive, but librdkafka
   * retries a failed one by sending it again, after newer ones). */
  int64_t inflight[IB_COMMITS_IN_FLIGHT];
  int n_inflight;
  int64_t committing;           /* offset of the newest commit in flight; -1 none */
  uint64_t committing_since_us; /* the last commit sent or answered */
  /* A refused commit backs off (consume.c): no commit but a final or a
   * revoking one goes before commit_retry_us. */
  uint64_t commit_retry_us, commit_backoff_us;
  struct ib_wsettle {
    int64_t offset;
    uint64_t done_us;
  } * settle; /* jobs done here, waiting for a commit to cover them */
  size_t settle_head, settle_n, settle_cap;
} ib_wpart;

typedef struct ib_handle_slot ib_handle_slot;

typedef struct ib_wpool ib_wpool;
typedef struct ib_wmetrics ib_wmetrics;

/* Result outcomes and worker fault kinds, as counted for /metrics. */
enum { IB_WO_IMAGE, IB_WO_ERROR, IB_WO_FILE, IB_WO_RESIDENT, IB_WO_N };
enum { IB_WF_DEVICE, IB_WF_INTERNAL, IB_WF_ALLOC, IB_WF_ENCODE, IB_WF_SINK, IB_WF_OTHER, IB_WF_N };

/* Where a job's time goes between fetch and settle, averaged per status
 * line (a job holds a max_jobs slot from EXEC through DELIVER, and a
 * max_uncommitted one from its send through SETTLE). */
enum {
  IB_WP_FETCH,   /* the Job's CreateTime -> fetched (wall clock, ms resolution) */
  IB_WP_WAIT,    /* fetched -> handed to the executor */
  IB_WP_EXEC,    /* in the executor */
  IB_WP_POOL,    /* result -> Result produced (encode pool, then the send) */
  IB_WP_DELIVER, /* produced -> acknowledged by the broker */
  IB_WP_SETTLE,  /* done -> a commit covering it acknowledged */
  IB_WP_N
};

enum {
  IB_WC_CONSUMED,
  IB_WC_RESULTS,
  IB_WC_ERRORS,
  IB_WC_FAULTS,
  IB_WC_RETRIES,
  IB_WC_RESETS,
  IB_WC_COMMITS,
  IB_WC_REPRODUCED,
  IB_WC_TIMED_OUT,    /* jobs answered with Timeout by the hung-job rule */
  IB_WC_LATE_DROPPED, /* their real results, come back later, dropped */
  IB_WC_DELETED,      /* jobs the broker deleted before we consumed them (gap.c) */
  IB_WC_N
};

typedef struct ib_worker {
  const ib_worker_config *cfg;
  char worker_id[128];
  char group_instance_id[128]; /* the jobs consumer's (conf.c); empty: none */
  uint64_t generation;
  ib_executor *ex;
  ib_results *rs;
  rd_kafka_t *consumer, *producer, *control;
  /* Wake-ups (wake.c): the driving thread's idle wait is a poll of the
   * consumer's queue (messages, commit answers, rebalances); a delivery
   * report (the producer's queue turning non-empty) and a prepared Result
   * (the encode pool) cut it short, so neither waits out the poll. */
  rd_kafka_queue_t *wake_q, *producer_q;
  /* The same wake-ups for the standby thread (an eventfd; -1 before the
   * start): while the driving thread is inside the executor, the standby
   * sends prepared Results and serves delivery reports at once. */
  int wake_fd;
  rd_kafka_topic_t *out_topics[2]; /* results, DLQ: held so their metadata stays known */
  ib_wjob *alive;                  /* every job not yet freed */
  ib_wpart *parts;
  int32_t n_parts;
  ib_wjob_queue waiting;   /* consumed, not yet in the executor */
  ib_wjob_queue retry;     /* faulted by the worker, to resubmit one by one */
  ib_wjob_queue republish; /* Results whose delivery failed, to produce again */
  ib_wjob_queue txn;       /* --transactional: acknowledged in the open transaction */
  ib_wjob_queue ready;     /* Results packed, waiting for the kill bound (publish.c) */
  bool txn_open;
  size_t running; /* jobs in the executor */
  size_t pooled;  /* jobs whose Result the encode pool is preparing */
  bool paused;
  bool stopping; /* drain: no more input */
  int exit_code;
  bool fatal;
  bool sick;                 /* a sticky worker fault: stop, exit non-zero */
  uint64_t started;          /* jobs handed to the executor (start sequence) */
  uint64_t last_success_seq; /* the latest start sequence whose Result went out */
  uint64_t consecutive_faults;
  /* Jobs whose Result is out but not yet covered by an acknowledged commit:
   * a crash would repeat them (bounded by max_uncommitted at the send). */
  uint64_t unsettled;
  uint32_t max_uncommitted; /* the kill bound (cfg, or its default) */
  /* Jobs with a delivery outstanding (Result or DLQ copy produced, not yet
   * acknowledged): with running, pooled, ready and republish, the jobs
   * that hold a max_jobs slot (pending + executing + undelivered: docs/credits.md). */
  uint64_t delivering;
  uint64_t max_result_bytes;
  uint64_t undelivered; /* Results + DLQ copies produced, not acknowledged */
  uint64_t held_bytes;  /* packed Results kept until acknowledged */
  bool sink_fault;      /* IB_FAULTS "sink" */
  uint64_t last_commit_us, last_sweep_us;
  /* rd_kafka_commit calls whose answer (offset_commit_cb, sync commits
   * included) has not come: librdkafka retries a timed-out commit itself,
   * so an old offset can land after a newer one (consume.c). */
  uint64_t commits_unanswered;
  ib_wpool *pool; /* encodes Results off the driving thread */
  ib_handle_slot *handles;
  size_t n_handles, cap_handles;
  uint64_t counters[IB_WC_N];
  uint64_t outcomes[IB_WO_N];            /* Results sent, by outcome */
  uint64_t faults[IB_WF_N];              /* worker faults, by kind */
  uint64_t consumed_bytes, result_bytes; /* Job payloads in, Results out */
  ib_hist queue_hist, exec_hist;
  uint64_t phase_sum_us[IB_WP_N], phase_n[IB_WP_N]; /* since the last status line */
  /* The driving thread's time since the last status line: pulling inputs
   * (consume.c: copy, parse), in the executor besides that, and the loop's
   * own work (results, Kafka service), and its polls while nothing was
   * ready (they may sleep). */
  uint64_t drive_input_us, drive_exec_us, drive_loop_us, drive_idle_us;
  /* Since the last status line: the time the executor asked for input
   * while messages waited and max_jobs refused them, the most jobs live at
   * once, and the idle waits (those cut short before their timeout). */
  uint64_t window_full_us, window_full_since_us, live_max;
  uint64_t idle_waits, idle_woken;
  bool joined;            /* in the group: an assignment (possibly empty) was served */
  uint64_t stop_deadline; /* while stopping: the end of the grace period */
  ib_wmetrics *metrics;   /* --metrics-addr: the HTTP listener and its snapshot */
  uint64_t last_status_us;
  /* The standby servicer (worker.c): the driving thread holds `mu` except
   * while it is inside the executor (ib_results_next, which takes it again
   * in the input callback). A job that hangs there (a decode that never
   * ends, a device that never answers) blocks that thread; the standby
   * thread then takes `mu` and does its Kafka work: polls, deliveries,
   * commits, metrics and the hung-job rule. Woken by wake_fd, it also does
   * the part that frees max_jobs slots (prepared Results out, delivery
   * reports) whenever the driving thread is in the executor, so that a job
   * does not wait for a submission of others to complete. */
  pthread_mutex_t mu;
  pthread_t standby;
  uint64_t standby_sends; /* since the last status line: its woken services */
  bool standby_started, standby_quit;
  uint64_t in_exec_since_us;    /* the driving thread entered the executor; 0 outside */
  uint64_t last_exec_result_us; /* the executor last handed back a result */
  uint64_t last_exec_start_us;  /* the executor last began running a job */
} ib_worker;

#endif
