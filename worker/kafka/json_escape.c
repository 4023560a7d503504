#include "kafka/json_escape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

const char *ib_json_escape(char *buf, size_t cap, const char *s) {
  size_t o = 0;
  const uint8_t *p = (const uint8_t *)(s ? s : "");
  size_t left = strlen((const char *)p);
  while (*p && o + 8 < cap) {
    size_t n = ib_utf8_char_len(p, left);
    if (!n) {
      o += (size_t)snprintf(buf + o, cap - o, "\\ufffd");
      n = 1;
    } else if (*p == '"' || *p == '\\') {
      buf[o++] = '\\';
      buf[o++] = (char)*p;
    } else if (*p < 0x20) {
      o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", *p);
    } else {
      if (o + n >= cap - 1) break;
      memcpy(buf + o, p, n);
      o += n;
    }
    p += n;
    left -= n;
  }
  buf[o] = 0;
  return buf;
}
