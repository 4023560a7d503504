/* http.h - the listener of /metrics, /healthz and /readyz (http.c). It
 * reads only the snapshot that metrics.h describes. Without --metrics-addr
 * nothing is started and these do nothing. */
#ifndef IB_KAFKA_HTTP_H
#define IB_KAFKA_HTTP_H

#include "kafka/wstate.h"

ib_status ib_wmetrics_start(ib_worker *w, char *errbuf, size_t cap);
/* Stops the listener (after a failing exit: once it has answered 503 for
 * up to a second more, within the grace period). */
void ib_wmetrics_stop(ib_worker *w);

#endif
