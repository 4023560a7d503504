/* error.h - filling ib_error values (internal). Messages are always valid
 * UTF-8 and cut only between code points; bytes that are not UTF-8 (and
 * NULs) are written as "\xNN". */
#ifndef IB_ERROR_H
#define IB_ERROR_H

#include <stdarg.h>

#include "imgbatch.h"

/* Sets status, stage and a formatted message; returns the status. */
ib_status ib_error_set(ib_error *err, ib_status st, ib_stage stage, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
ib_status ib_error_vset(ib_error *err, ib_status st, ib_stage stage, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* An error leaving the library always says something: an empty message
 * becomes "<stage>: <status>" (a bug elsewhere, but never a blank). */
void ib_error_ensure_message(ib_error *err);
/* Prepends "<prefix>: " to the message (truncating at the buffer's end). */
void ib_error_prefix(ib_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
