/* utf8.h - UTF-8 checks for what crosses the wire. Every proto3 `string` a
 * Result carries must be valid UTF-8 (RFC 3629: no overlongs, no surrogates,
 * nothing past U+10FFFF), or strict protobuf runtimes (upb, Java, Go) refuse
 * the whole message. */
#ifndef IB_UTF8_H
#define IB_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of the well-formed code point at s[0..n) (1 to 4), or 0 when the
 * bytes there are not one (invalid or cut short). */
size_t ib_utf8_char_len(const uint8_t *s, size_t n);

/* Offset of the first byte of s[0..n) that is not part of a well-formed code
 * point, or of the first NUL; n when there is none. */
size_t ib_utf8_first_bad(const uint8_t *s, size_t n, bool nul_is_bad);

/* Writes s[0..n) into dst[0..cap) NUL-terminated, as valid UTF-8: a byte
 * that is not part of a well-formed code point, and a NUL, become "\xNN".
 * The output is cut only between code points (and whole escapes), so it is
 * valid however short cap is. Returns the bytes written (without the NUL). */
size_t ib_utf8_escape(char *dst, size_t cap, const uint8_t *s, size_t n);

#endif
