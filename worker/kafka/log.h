/* log.h - the worker's structured log lines, through the front end's
 * callback (ib_worker_config.log); the worker itself never prints. */
#ifndef IB_KAFKA_LOG_H
#define IB_KAFKA_LOG_H

#include "kafka/wstate.h"

/* One line: `event` names what happened; fmt makes the JSON object body
 * of its fields (text from outside goes through ib_json_escape). */
void ib_wlog(ib_worker *w, const char *level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
