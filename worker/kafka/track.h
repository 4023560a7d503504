/* track.h - consumed messages by partition, their offset watermarks and
 * the worker's job queues (track.c). */
#ifndef IB_KAFKA_TRACK_H
#define IB_KAFKA_TRACK_H

#include "kafka/wstate.h"

void ib_wq_push(ib_wjob_queue *q, ib_wjob *j);
void ib_wq_push_front(ib_wjob_queue *q, ib_wjob *j);
ib_wjob *ib_wq_pop(ib_wjob_queue *q);
/* Takes j out of q wherever it is; false when it was not there. */
bool ib_wq_remove(ib_wjob_queue *q, ib_wjob *j);

ib_wpart *ib_wpart_get(ib_worker *w, int32_t id, bool create);
/* Registers a consumed message at the tail of its partition. */
ib_wjob *ib_wjob_track(ib_worker *w, rd_kafka_message_t *msg);
/* The job's Result is acknowledged: pops done jobs off its partition's head
 * and frees them (an orphan, revoked meanwhile, is just freed). */
void ib_wjob_done(ib_worker *w, ib_wjob *j);
/* The offset to commit for a partition: the first message not done, or
 * one past the last done; -1 when nothing new. */
int64_t ib_wpart_commit_offset(const ib_wpart *p);
/* Detaches every job of a partition (revoke/lost): they finish but are
 * never committed; waiting ones are dropped. */
void ib_wpart_drop(ib_worker *w, ib_wpart *p);
/* The broker acknowledged a commit of `offset` for p: the jobs below it are
 * settled (a crash no longer redoes them). */
void ib_wpart_settled(ib_worker *w, ib_wpart *p, int64_t offset);
/* Frees a job (its message, Result bytes, headers). */
void ib_wjob_free(ib_worker *w, ib_wjob *j);
/* A timed-out job's late result came back (dropped): frees the job once
 * nothing else refers to it. */
void ib_wjob_returned(ib_worker *w, ib_wjob *j);

#endif
