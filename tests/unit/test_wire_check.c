/*
 * The wire walk that runs before protobuf-c (worker/parse/wire_check.c) and
 * the UTF-8 rules of error messages (worker/core/utf8.c, error.c): nesting
 * is bounded at exactly IB_WIRE_MAX_DEPTH, strings are checked by RFC 3629
 * and named by their field path, what the contract lacks is noted, and a
 * message is cut only between code points.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "parse/wire_check.h"
#include "proto/imgbatch.pb-c.h"

typedef struct buf {
  uint8_t *p;
  size_t len;
} buf;

static void put(buf *b, const void *p, size_t n) {
  b->p = realloc(b->p, b->len + n + 1);
  cr_assert(b->p);
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

static void put_varint(buf *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  while (v >= 0x80) tmp[n++] = (uint8_t)(v | 0x80), v >>= 7;
  tmp[n++] = (uint8_t)v;
  put(b, tmp, n);
}

/* Wraps b in a length-delimited field fn (b is consumed). */
static buf wrap(uint32_t fn, buf b) {
  buf o = {0};
  put_varint(&o, (uint64_t)fn << 3 | 2);
  put_varint(&o, b.len);
  if (b.len) put(&o, b.p, b.len);
  free(b.p);
  return o;
}

static buf bytes_field(uint32_t fn, const char *s, size_t n) {
  buf b = {0};
  if (n) put(&b, s, n);
  return wrap(fn, b);
}

/* Job.metadata {"m": Value nested `lists` lists deep around an int}: the
 * Value sits at message depth 2, each list adds 2. */
static buf deep_job(unsigned lists) {
  buf v = {0};
  put_varint(&v, 2 << 3); /* Value.int_value = 7 */
  put_varint(&v, 7);
  for (unsigned i = 0; i < lists; i++) v = wrap(7, wrap(1, v));
  buf entry = bytes_field(1, "m", 1);
  buf value = wrap(2, v);
  put(&entry, value.p, value.len);
  free(value.p);
  return wrap(7, entry);
}

static ib_status check(buf b, ib_wire_notes *notes, ib_error *err) {
  ib_status st = ib_wire_check(&imgbatch__v1__job__descriptor, b.p, b.len, notes, err);
  free(b.p);
  return st;
}

Test(wire_check, nesting_is_bounded_at_exactly_the_max_depth) {
  ib_wire_notes notes;
  ib_error err = {0};
  /* The innermost Value is at depth 2 + 2 * lists. */
  unsigned fits = (IB_WIRE_MAX_DEPTH - 2) / 2;
  cr_assert_eq(check(deep_job(fits), &notes, &err), IB_OK, "%s", err.message);
  cr_assert_eq(check(deep_job(fits + 1), &notes, &err), IB_LIMIT);
  cr_assert_eq(err.stage, IB_STAGE_PARSE);
  cr_assert(strstr(err.message, "metadata nests messages deeper than"), "%s", err.message);
  /* Past the ~4,400 lists that overflowed protobuf-c's stack: one clean answer
   * (the imgbatch run suite goes to 100,000). */
  cr_assert_eq(check(deep_job(6000), &notes, &err), IB_LIMIT);
}

Test(wire_check, what_protobuf_c_unpacks_at_the_bound_it_unpacks_fine) {
  unsigned fits = (IB_WIRE_MAX_DEPTH - 2) / 2;
  buf b = deep_job(fits);
  Imgbatch__V1__Job *j = imgbatch__v1__job__unpack(NULL, b.len, b.p);
  cr_assert(j);
  imgbatch__v1__job__free_unpacked(j, NULL);
  free(b.p);
}

Test(wire_check, malformed_bytes_and_groups_are_invalid_at_parse) {
  ib_wire_notes notes;
  ib_error err = {0};
  const uint8_t cut[] = {0x1a, 0x05, 0x0a};            /* length past the end */
  const uint8_t group[] = {0x0b, 0x0c};                /* field 1 start/end group */
  const uint8_t deep_cut[] = {0x3a, 0x02, 0x12, 0x05}; /* metadata entry, value cut */
  const uint8_t *cases[] = {cut, group, deep_cut};
  size_t lens[] = {sizeof cut, sizeof group, sizeof deep_cut};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(ib_wire_check(&imgbatch__v1__job__descriptor, cases[i], lens[i], &notes, &err),
                 IB_INVALID, "case %d", i);
    cr_assert_eq(err.stage, IB_STAGE_PARSE);
    cr_assert(strstr(err.message, "not a valid imgbatch.v1.Job message"), "%s", err.message);
  }
}

Test(wire_check, strings_are_named_by_path_and_shown_escaped) {
  ib_wire_notes notes;
  ib_error err = {0};
  /* nodes[0] = {}, nodes[1].convert.mode = "RG\xffB" */
  buf b = wrap(5, (buf){0});
  buf n1 = wrap(5, wrap(18, bytes_field(1, "RG\377B", 4)));
  put(&b, n1.p, n1.len);
  free(n1.p);
  cr_assert_eq(check(b, &notes, &err), IB_OK);
  cr_assert(notes.bad_string);
  cr_assert_str_eq(notes.string_path, "nodes[1].convert.mode");
  cr_assert(strstr(notes.string_text, "'RG\\xffB' is not valid UTF-8 (byte 2 of 4)"), "%s",
            notes.string_text);

  cr_assert_eq(check(bytes_field(1, "a\0b", 3), &notes, &err), IB_OK);
  cr_assert_str_eq(notes.string_path, "key_string");
  cr_assert(strstr(notes.string_text, "'a\\x00b' holds a NUL byte"), "%s", notes.string_text);

  /* Bytes fields may hold anything. */
  cr_assert_eq(check(wrap(3, bytes_field(1, "\xff\0", 2)), &notes, &err), IB_OK);
  cr_assert(!notes.bad_string);
}

Test(wire_check, fields_and_enum_values_the_contract_lacks_are_noted) {
  ib_wire_notes notes;
  ib_error err = {0};
  buf b = {0};
  put_varint(&b, 99 << 3);
  put_varint(&b, 1);
  cr_assert_eq(check(b, &notes, &err), IB_OK);
  cr_assert(notes.unknown);
  cr_assert(strstr(notes.unknown_text, "Job: field 99 is newer than this worker"), "%s",
            notes.unknown_text);

  /* output.cpu.format = 99 */
  buf f = {0};
  put_varint(&f, 1 << 3);
  put_varint(&f, 99);
  cr_assert_eq(check(wrap(6, wrap(1, f)), &notes, &err), IB_OK);
  cr_assert(strstr(notes.unknown_text, "output.cpu.format: value 99"), "%s", notes.unknown_text);

  /* A known value is not noted. */
  buf ok = {0};
  put_varint(&ok, 1 << 3);
  put_varint(&ok, 4);
  cr_assert_eq(check(wrap(6, wrap(1, ok)), &notes, &err), IB_OK);
  cr_assert(!notes.unknown);
}

Test(utf8, rfc3629_rejects_overlongs_surrogates_and_past_u10ffff) {
  const char *good[] = {
      "a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"};
  const char *bad[] = {
      "\xc0\xaf",         "\xc1\xbf",         "\xe0\x80\xaf", "\xed\xa0\x80", "\xf0\x80\x80\xaf",
      "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80",         "\xe2\x82",     "\xff"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    cr_assert_eq(ib_utf8_first_bad((const uint8_t *)good[i], strlen(good[i]), true),
                 strlen(good[i]), "good %zu", i);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(ib_utf8_first_bad((const uint8_t *)bad[i], strlen(bad[i]), true), 0, "bad %zu", i);
}

static bool valid(const char *s) {
  return ib_utf8_first_bad((const uint8_t *)s, strlen(s), true) == strlen(s);
}

Test(error, long_messages_are_cut_between_code_points) {
  char text[1200];
  for (int pad = 0; pad < 4; pad++) {
    memset(text, 'x', (size_t)pad);
    size_t n = (size_t)pad;
    while (n + 3 < sizeof text - 1) memcpy(text + n, "\xe2\x82\xac", 3), n += 3;
    text[n] = 0;
    ib_error err = {0};
    ib_error_set(&err, IB_INVALID, IB_STAGE_VALIDATE, "%s", text);
    cr_assert(valid(err.message), "pad %d", pad);
    cr_assert_geq(strlen(err.message), sizeof err.message - 4);
    ib_error_prefix(&err, "node %d", pad);
    cr_assert(valid(err.message), "pad %d", pad);
    cr_assert(strncmp(err.message, "node ", 5) == 0);
  }
}

Test(error, bytes_that_are_not_utf8_are_escaped) {
  ib_error err = {0};
  ib_error_set(&err, IB_DECODE, IB_STAGE_DECODE, "file '%s'", "a\xff\xc3(");
  cr_assert_str_eq(err.message, "file 'a\\xff\\xc3('");
}
