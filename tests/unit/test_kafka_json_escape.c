/*
 * The JSON string bodies of the worker's log fields (worker/kafka): every
 * byte that is not part of a well-formed UTF-8 code point (RFC 3629, as
 * worker/core/utf8.c judges it) becomes one U+FFFD, quotes and backslashes
 * are escaped, control bytes become \u00XX, and a field cut short by its
 * buffer ends between escapes, never inside a code point.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "kafka/json_escape.h"

static const char *esc(const char *s) {
  static char buf[512];
  return ib_json_escape(buf, sizeof buf, s);
}

Test(json_escape, copies_plain_ascii_and_valid_multibyte) {
  cr_assert_str_eq(esc("abc 123"), "abc 123");
  cr_assert_str_eq(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
                   "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  cr_assert_str_eq(esc("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf"); /* U+10FFFF */
}

Test(json_escape, null_is_the_empty_string) { cr_assert_str_eq(esc(NULL), ""); }

Test(json_escape, escapes_quotes_backslashes_and_control_bytes) {
  cr_assert_str_eq(esc("a\"b\\c"), "a\\\"b\\\\c");
  cr_assert_str_eq(esc("x\ny\tz\x01\x1f"), "x\\u000ay\\u0009z\\u0001\\u001f");
  cr_assert_str_eq(esc("\x7f"), "\x7f");
}

Test(json_escape, each_byte_of_an_ill_formed_sequence_is_one_replacement) {
  cr_assert_str_eq(esc("a\xff"
                       "b"),
                   "a\\ufffdb");
  cr_assert_str_eq(esc("\xc0\x80"), "\\ufffd\\ufffd");            /* overlong NUL */
  cr_assert_str_eq(esc("\xc1\xbf"), "\\ufffd\\ufffd");            /* overlong */
  cr_assert_str_eq(esc("\xe0\x9f\xbf"), "\\ufffd\\ufffd\\ufffd"); /* overlong */
  cr_assert_str_eq(esc("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd"); /* surrogate */
  cr_assert_str_eq(esc("\xf0\x8f\xbf\xbf"), "\\ufffd\\ufffd\\ufffd\\ufffd");
  cr_assert_str_eq(esc("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd"); /* > U+10FFFF */
  cr_assert_str_eq(esc("\xf5\x80"), "\\ufffd\\ufffd");
  cr_assert_str_eq(esc("\x80z"), "\\ufffdz"); /* a lone continuation byte */
  /* Cut short by the end of the string, then a valid character after it. */
  cr_assert_str_eq(esc("\xe2\x82"), "\\ufffd\\ufffd");
  cr_assert_str_eq(esc("\xe2\x82"
                       "A"),
                   "\\ufffd\\ufffdA");
}

/* The output leaves room for the longest escape (6 bytes) and the NUL:
 * it goes on while 9 bytes or more are left, and ends after a whole
 * character or escape. */
Test(json_escape, a_short_buffer_cuts_between_escapes) {
  char buf[64];
  cr_assert_str_eq(ib_json_escape(buf, 10, "abcdefghij"), "ab");
  cr_assert_str_eq(ib_json_escape(buf, 1, "abc"), "");
  cr_assert_str_eq(ib_json_escape(buf, 9, "abc"), "a");
  cr_assert_str_eq(ib_json_escape(buf, 12, "\xff\xff\xff"), "\\ufffd");
  cr_assert_str_eq(ib_json_escape(buf, 11, "\xf0\x9f\x98\x80\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
  const char *s = "\"\xc3\xa9\x01\xff\xe2\x82\xac\\z";
  char full[128];
  ib_json_escape(full, sizeof full, s);
  for (size_t cap = 1; cap < sizeof buf; cap++) {
    ib_json_escape(buf, cap, s);
    cr_assert_lt(strlen(buf), cap);
    cr_assert_eq(strncmp(full, buf, strlen(buf)), 0, "cap %zu: %s is no prefix of %s", cap, buf,
                 full);
  }
}
