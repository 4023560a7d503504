/* gap.h - jobs the broker deleted before this worker consumed them (gap.c). */
#ifndef IB_KAFKA_GAP_H
#define IB_KAFKA_GAP_H

#include <librdkafka/rdkafka.h>

#include "kafka/wstate.h"

/* A message of assigned partition p arrived: counts and logs the jobs
 * before it that the broker deleted unconsumed (may query the broker). */
void ib_wgap_check(ib_worker *w, ib_wpart *p, const rd_kafka_message_t *m);

#endif
