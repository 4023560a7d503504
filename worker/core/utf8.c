#include "core/utf8.h"

#include <stdio.h>
#include <string.h>

size_t ib_utf8_char_len(const uint8_t *s, size_t n) {
  if (n == 0) return 0;
  uint8_t b = s[0];
  if (b < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xbf; /* the range of the second byte */
  if (b >= 0xc2 && b <= 0xdf) {
    len = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    len = 3;
    if (b == 0xe0) lo = 0xa0; /* overlong */
    if (b == 0xed) hi = 0x9f; /* U+D800..DFFF: surrogates */
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4;
    if (b == 0xf0) lo = 0x90; /* overlong */
    if (b == 0xf4) hi = 0x8f; /* past U+10FFFF */
  } else {
    return 0; /* a continuation byte, 0xc0/0xc1 (overlong) or 0xf5.. */
  }
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return len;
}

size_t ib_utf8_first_bad(const uint8_t *s, size_t n, bool nul_is_bad) {
  size_t i = 0;
  while (i < n) {
    if (s[i] == 0 && nul_is_bad) return i;
    size_t c = ib_utf8_char_len(s + i, n - i);
    if (!c) return i;
    i += c;
  }
  return n;
}

size_t ib_utf8_escape(char *dst, size_t cap, const uint8_t *s, size_t n) {
  if (cap == 0) return 0;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    size_t c = s[i] ? ib_utf8_char_len(s + i, n - i) : 0;
    size_t w = c ? c : 4;
    if (o + w >= cap) break;
    if (c)
      memcpy(dst + o, s + i, c);
    else
      snprintf(dst + o, 5, "\\x%02x", s[i]);
    o += w;
    i += c ? c : 1;
  }
  dst[o] = 0;
  return o;
}
