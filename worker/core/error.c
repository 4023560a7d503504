#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

ib_status ib_error_vset(ib_error *err, ib_status st, ib_stage stage, const char *fmt, va_list ap) {
  if (!err) return st;
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  err->status = st;
  err->stage = stage;
  return st;
}

ib_status ib_error_set(ib_error *err, ib_status st, ib_stage stage, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ib_error_vset(err, st, stage, fmt, ap);
  va_end(ap);
  return st;
}

void ib_error_prefix(ib_error *err, const char *fmt, ...) {
  char prefix[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t plen = strlen(prefix), cap = sizeof err->message;
  if (plen + 2 >= cap) return;
  size_t mlen = strnlen(err->message, cap - 1);
  if (plen + 2 + mlen >= cap) mlen = cap - 1 - plen - 2;
  memmove(err->message + plen + 2, err->message, mlen);
  memcpy(err->message, prefix, plen);
  memcpy(err->message + plen, ": ", 2);
  err->message[plen + 2 + mlen] = 0;
}
