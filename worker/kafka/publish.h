/* publish.h - the producer side (publish.c): Results, DLQ copies,
 * deliveries, output files and the kill bound. */
#ifndef IB_KAFKA_PUBLISH_H
#define IB_KAFKA_PUBLISH_H

#include "kafka/wstate.h"

/* A Result on its way out: prepared (encoded, packed) on the encode pool,
 * sent from the driving thread. */
typedef struct ib_wout {
  ib_wjob *j;
  ib_result res;      /* owned until prepared */
  uint64_t handle_id; /* a resident output's published id */
  uint8_t *packed;
  size_t len;
  bool error; /* outcome error: DLQ with `dlq` */
  ib_error dlq;
  int outcome;            /* IB_WO_*, as counted once sent */
  const char *fault_kind; /* a worker fault instead of a Result */
  char fault_msg[320];
  struct ib_wout *next;
} ib_wout;

ib_status ib_wpublish_start(ib_worker *w, char *errbuf, size_t cap);
/* A Result for one executor result (a resident handle is kept); false when
 * a worker fault (output sink, memory) stopped it - the job was handed to
 * ib_wjob_fault. */
bool ib_wpublish_result(ib_worker *w, ib_wjob *j, ib_result *res);
/* Answers a job with an error decided by the worker itself (stall, faults). */
void ib_wpublish_error(ib_worker *w, ib_wjob *j, ib_status st, ib_stage stage, const char *msg);
/* The two halves of ib_wpublish_result: prepare on any thread (reads only
 * immutable worker state), send on the driving thread (false: a fault). */
void ib_wout_prepare(const ib_worker *w, ib_wout *o);
bool ib_wout_send(ib_worker *w, ib_wout *o);
/* Serves delivery reports; re-produces Results whose delivery failed. */
void ib_wpublish_poll(ib_worker *w, int timeout_ms);
/* Jobs holding a max_jobs slot: admitted and not yet acknowledged. */
uint64_t ib_wlive_jobs(const ib_worker *w);
/* Sends the Results held in w->ready while the kill bound has room. */
void ib_wsend_ready(ib_worker *w);
void ib_woutdir_sweep(ib_worker *w);

#endif
