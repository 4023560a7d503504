/* Error values. Every message is stored as valid UTF-8, cut only between
 * code points: it travels in Result.error.message, a proto3 string, and
 * text from elsewhere (file names, libvips) may hold any bytes. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

/* Formatting room before the cut: enough that the cut to the message's
 * size always falls inside it, escapes (4 bytes per bad byte) included. */
#define FORMAT_ROOM 1024

static void store(ib_error *err, const char *text, size_t len) {
  ib_utf8_escape(err->message, sizeof err->message, (const uint8_t *)text, len);
}

ib_status ib_error_vset(ib_error *err, ib_status st, ib_stage stage, const char *fmt, va_list ap) {
  if (!err) return st;
  char text[FORMAT_ROOM];
  int n = vsnprintf(text, sizeof text, fmt, ap);
  store(err, text, n < 0 ? 0 : strnlen(text, sizeof text));
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
  char text[FORMAT_ROOM];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t plen = strnlen(text, sizeof text);
  if (plen + 2 + sizeof err->message > sizeof text) return; /* a prefix longer than a message */
  memcpy(text + plen, ": ", 2);
  size_t mlen = strnlen(err->message, sizeof err->message - 1);
  memcpy(text + plen + 2, err->message, mlen);
  store(err, text, plen + 2 + mlen);
}

void ib_error_ensure_message(ib_error *err) {
  if (err->status == IB_OK || err->message[0]) return;
  snprintf(err->message, sizeof err->message, "%s: %s (no detail)", ib_stage_name(err->stage),
           ib_status_name(err->status));
}
