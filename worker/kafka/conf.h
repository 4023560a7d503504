/* conf.h - the librdkafka configuration that the worker's three clients
 * (consumer, producer, control) share. */
#ifndef IB_KAFKA_CONF_H
#define IB_KAFKA_CONF_H

#include "kafka/wstate.h"

/* A configuration with the brokers, the worker's id and the error and log
 * callbacks (into ib_wlog); NULL with errbuf set when a key is refused. */
rd_kafka_conf_t *ib_wconf_new(ib_worker *w, char *errbuf, size_t cap);
/* rd_kafka_conf_set; false with errbuf set when librdkafka refuses it. */
bool ib_wconf_set(ib_worker *w, rd_kafka_conf_t *c, const char *k, const char *v, char *errbuf,
                  size_t cap);
/* The -X key=value pass-through properties (ib_worker_config.props), in
 * order, after a client's own settings so that they win; false at the
 * first one librdkafka refuses. */
bool ib_wconf_props(ib_worker *w, rd_kafka_conf_t *c, char *errbuf, size_t cap);

#endif
