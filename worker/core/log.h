/* log.h - the library's one way to say something that is not an error:
 * through the caller's ib_log_fn (imgbatch.h), never to a stream. */
#ifndef IB_CORE_LOG_H
#define IB_CORE_LOG_H

#include "imgbatch.h"

typedef struct ib_log_sink {
  ib_log_fn fn;
  void *opaque;
} ib_log_sink;

/* Formats and hands one message to the sink; nothing when it has no fn. */
void ib_log(const ib_log_sink *sink, ib_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
