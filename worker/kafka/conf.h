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
/* The value of the last -X for key, NULL when none was given. */
const char *ib_wconf_prop(const ib_worker *w, const char *key);
/* The jobs consumer's group.instance.id (static membership: a restart with
 * the same id takes its partitions back without a rebalance, and an exit
 * does not leave the group, README "Restarts"): the worker id when it was
 * given (--worker-id, the environment or the file), since a generated one
 * changes with every start; -X group.instance.id=ID sets another, an empty
 * value none. NULL: dynamic membership. */
const char *ib_wconf_static_id(const ib_worker *w);

#endif
