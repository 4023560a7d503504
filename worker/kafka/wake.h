/* wake.h - ends the driving thread's idle wait and wakes the standby
 * thread (wake.c). */
#ifndef IB_KAFKA_WAKE_H
#define IB_KAFKA_WAKE_H

#include "kafka/wstate.h"

/* After both clients exist and before the encode pool starts (its threads
 * read wake_q; pthread_create orders the write before them). */
bool ib_wwake_start(ib_worker *w);
/* Ends the driving thread's idle wait (any thread). */
void ib_wwake(const ib_worker *w);
/* Before the consumer goes (the callback may run until disabled: it is
 * called under the queue's lock, which disabling takes too). */
void ib_wwake_stop(ib_worker *w);

#endif
