/* json_escape.h - text from outside (a broker's reason, a path, a library
 * message) as the body of a JSON string in a log line. */
#ifndef IB_KAFKA_JSON_ESCAPE_H
#define IB_KAFKA_JSON_ESCAPE_H

#include <stddef.h>

/* JSON string body of `s` (NULL: empty) into buf[0..cap): '"' and '\\'
 * escaped, control bytes as \u00XX, each byte that is not part of a
 * well-formed UTF-8 code point (core/utf8.h) as one \ufffd. It writes while
 * 9 bytes or more are left (room for the longest escape and the NUL), so a
 * long `s` is cut between characters. Returns buf. */
const char *ib_json_escape(char *buf, size_t cap, const char *s);

#endif
