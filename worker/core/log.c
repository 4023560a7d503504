#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

void ib_log(const ib_log_sink *sink, ib_log_level level, const char *fmt, ...) {
  if (!sink || !sink->fn) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  sink->fn(sink->opaque, level, msg);
}
