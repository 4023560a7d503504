#include "kafka/log.h"

#include <stdarg.h>
#include <stdio.h>

void ib_wlog(ib_worker *w, const char *level, const char *event, const char *fmt, ...) {
  if (!w->cfg->log) return;
  char fields[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fields, sizeof fields, fmt, ap);
  va_end(ap);
  w->cfg->log(w->cfg->log_ctx, level, event, fields);
}
