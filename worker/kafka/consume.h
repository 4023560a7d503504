/* consume.h - the jobs consumer (consume.c): group membership, the
 * executor's input, backpressure and commits. */
#ifndef IB_KAFKA_CONSUME_H
#define IB_KAFKA_CONSUME_H

#include "kafka/wstate.h"

ib_status ib_wconsume_start(ib_worker *w, char *errbuf, size_t cap);
/* The executor's input callback (ib_executor_run). */
ib_status ib_wnext_input(void *user, ib_input *in, ib_error *err);
/* The executor's start callback (ib_executor_options.start_cb). */
void ib_wjob_started(void *user, uint64_t job_id, void *tag);
/* Polls the consumer once (rebalances are served here); a message goes to
 * the waiting queue. */
void ib_wconsume_poll(ib_worker *w, int timeout_ms);
void ib_wconsume_pause(ib_worker *w, bool pause);
/* Unacknowledged Results hold more than half the host budget (a broker
 * outage): fetching pauses and no new job starts until they drain. */
bool ib_wresults_backlogged(const ib_worker *w);
/* Commits every partition whose watermark moved (async; sync when `sync`). */
void ib_wcommit(ib_worker *w, bool sync);

#endif
