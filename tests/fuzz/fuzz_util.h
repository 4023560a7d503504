/*
 * fuzz_util.h - oracles shared by the libFuzzer targets. A sanitizer report
 * is one kind of finding; a broken contract is another: these abort (so
 * libFuzzer saves the input) with a line saying which rule broke.
 */
#ifndef IB_FUZZ_UTIL_H
#define IB_FUZZ_UTIL_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Well-formed UTF-8 as protobuf runtimes demand of a proto3 string: no
 * overlongs, no surrogates, nothing above U+10FFFF, no cut sequence. */
static inline bool fz_utf8_ok(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned c = p[i];
    size_t k;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      k = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      k = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      k = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (n - i <= k) return false; /* cut sequence */
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (size_t j = 2; j <= k; j++)
      if (p[i + j] < 0x80 || p[i + j] > 0xBF) return false;
    i += k + 1;
  }
  return true;
}

/* Aborts naming the broken rule and the offending string. */
static inline void fz_fail(const char *rule, const char *s) {
  fprintf(stderr, "FUZZ ORACLE: %s: \"", rule);
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && n < 120; p++, n++)
    fprintf(stderr, (*p >= 0x20 && *p < 0x7F) ? "%c" : "\\x%02x", *p);
  fprintf(stderr, n == 120 ? "\"...\n" : "\"\n");
  abort();
}

static inline void fz_check_str(const char *what, const char *s) {
  if (s && !fz_utf8_ok(s, __builtin_strlen(s))) fz_fail(what, s);
}

/* libvips reports corrupt-image warnings through GLib logging (stderr);
 * millions of them would drown the fuzzer's own output. */
static inline void fz_drop_log(const gchar *domain, GLogLevelFlags level, const gchar *msg,
                               gpointer user) {
  (void)domain;
  (void)level;
  (void)msg;
  (void)user;
}

static inline void fz_quiet_vips(void) {
  g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO,
                    fz_drop_log, NULL);
}

#endif
