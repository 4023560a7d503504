/*
 * worker.h - the Kafka worker (README, "The Kafka worker"): consumes Jobs from a consumer
 * group, runs them on one executor, publishes one Result per message and
 * commits a partition's offset only past messages whose Results the broker
 * acknowledged. Front-end code over the public executor API; it reports
 * through a log callback and never prints.
 */
#ifndef IB_KAFKA_WORKER_H
#define IB_KAFKA_WORKER_H

#include "kafka/config.h"

/* Runs until *stop (drained shutdown: 0), a fatal error or a sticky worker
 * fault (1). Returns the process exit code. */
int ib_worker_run(const ib_worker_config *cfg);

#endif
