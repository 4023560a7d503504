/* stall.h - the hung-job rule (stall.c). */
#ifndef IB_KAFKA_STALL_H
#define IB_KAFKA_STALL_H

#include "kafka/wstate.h"

/* Answers with Timeout the oldest unfinished job of each assigned
 * partition that is older than --stall-seconds and stuck in its stage. */
void ib_wstall_check(ib_worker *w);

#endif
