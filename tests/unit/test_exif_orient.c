/* The EXIF orientation reader (codec/exif_orient.c) and the orientation
 * removal of the output metadata policy (codec/metadata.c ib_meta_pack) on
 * hand-built TIFF structures: both byte orders, the headers Pillow refuses,
 * walks cut short, and a removal that leaves every other tag readable.
 * tests/py/parity/test_exif_transpose.py compares the reader with live
 * Pillow on random hostile blocks. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exif_orient.h"
#include "codec/metadata.h"

/* An IFD0 at offset 8 with `n` entries (tag, type, count, inline value),
 * in the byte order of `big`. Returns the length. */
typedef struct entry {
  unsigned tag, type, count, value;
} entry;

static size_t put16(uint8_t *p, unsigned v, int big) {
  p[big ? 0 : 1] = (uint8_t)(v >> 8), p[big ? 1 : 0] = (uint8_t)v;
  return 2;
}

static size_t put32(uint8_t *p, unsigned v, int big) {
  put16(p + (big ? 0 : 2), v >> 16, big);
  put16(p + (big ? 2 : 0), v & 0xffff, big);
  return 4;
}

static size_t tiff(uint8_t *b, int big, const entry *e, unsigned n) {
  memcpy(b, big ? "MM\0*" : "II*\0", 4);
  size_t at = 4 + put32(b + 4, 8, big);
  at += put16(b + at, n, big);
  for (unsigned i = 0; i < n; i++) {
    at += put16(b + at, e[i].tag, big);
    at += put16(b + at, e[i].type, big);
    at += put32(b + at, e[i].count, big);
    if (e[i].type == 3)
      at += put16(b + at, e[i].value, big), at += put16(b + at, 0, big);
    else
      at += put32(b + at, e[i].value, big);
  }
  return at + put32(b + at, 0, big);
}

Test(exif_orient, short_orientation_reads_in_both_byte_orders) {
  uint8_t b[64];
  for (int big = 0; big < 2; big++) {
    const entry e[] = {{305, 2, 4, 0x41424300}, {274, 3, 1, 6}};
    size_t n = tiff(b, big, e, 2);
    int v = 0;
    cr_assert_eq(ib_exif_orientation(b, n, &v), IB_EXIF_TAG);
    cr_assert_eq(v, 6, "big %d", big);
  }
}

Test(exif_orient, exif_prefixes_are_skipped_and_the_last_duplicate_wins) {
  uint8_t b[80];
  memcpy(b, "Exif\0\0Exif\0\0", 12);
  const entry e[] = {{274, 3, 1, 3}, {274, 4, 1, 8}};
  size_t n = 12 + tiff(b + 12, 0, e, 2);
  int v = 0;
  cr_assert_eq(ib_exif_orientation(b, n, &v), IB_EXIF_TAG);
  cr_assert_eq(v, 8);
}

Test(exif_orient, byte_and_ascii_values_are_present_but_name_no_transpose) {
  uint8_t b[64];
  const entry bytes[] = {{274, 1, 1, 6}}, ascii[] = {{274, 2, 2, 0x36000000}};
  int v = 0;
  cr_assert_eq(ib_exif_orientation(b, tiff(b, 1, bytes, 1), &v), IB_EXIF_TAG);
  cr_assert_eq(v, 1);
  cr_assert_eq(ib_exif_orientation(b, tiff(b, 1, ascii, 1), &v), IB_EXIF_TAG);
  cr_assert_eq(v, 1);
}

Test(exif_orient, headers_pillow_refuses_are_refused) {
  int v;
  cr_assert_eq(ib_exif_orientation((const uint8_t *)"IX*\0\x08\0\0\0", 8, &v), IB_EXIF_REFUSED);
  cr_assert_eq(ib_exif_orientation((const uint8_t *)"II*\0\x08", 5, &v), IB_EXIF_REFUSED);
  cr_assert_eq(ib_exif_orientation((const uint8_t *)"II+\0\x08\0\0\0", 8, &v), IB_EXIF_REFUSED);
  cr_assert_eq(ib_exif_orientation((const uint8_t *)"Exif\0\0", 6, &v), IB_EXIF_NO_TAG);
}

Test(exif_orient, a_value_past_the_end_stops_the_walk) {
  uint8_t b[64];
  /* A RATIONAL (8 bytes, out of line) pointing past the end, then 274. */
  const entry e[] = {{282, 5, 1, 0xfffffff0u}, {274, 3, 1, 6}};
  int v = 0;
  cr_assert_eq(ib_exif_orientation(b, tiff(b, 0, e, 2), &v), IB_EXIF_NO_TAG);
  /* An entry count larger than the bytes: the entries read stay. */
  const entry f[] = {{274, 3, 1, 5}};
  size_t n = tiff(b, 0, f, 1);
  put16(b + 8, 40, 0);
  cr_assert_eq(ib_exif_orientation(b, n, &v), IB_EXIF_TAG);
  cr_assert_eq(v, 5);
}

Test(exif_orient, xmp_attribute_and_element_forms) {
  const char *a = "<x tiff:Orientation=\"7\"/>", *e = "<tiff:Orientation>3</tiff:Orientation>";
  cr_assert_eq(ib_xmp_orientation((const uint8_t *)a, strlen(a)), 7);
  cr_assert_eq(ib_xmp_orientation((const uint8_t *)e, strlen(e)), 3);
  cr_assert_eq(ib_xmp_orientation((const uint8_t *)"tiff:Orientation=\"", 18), 0);
}

Test(exif_orient, dropping_the_orientation_keeps_the_other_tags) {
  uint8_t b[96];
  for (int big = 0; big < 2; big++) {
    const entry e[] = {{271, 3, 1, 9}, {274, 3, 1, 6}, {305, 4, 1, 77}};
    size_t n = tiff(b, big, e, 3);
    const char *xmp =
        "<a tiff:Orientation=\"6\" b=\"1\"><tiff:Orientation>6</tiff:Orientation></a>";
    ib_meta m = {.exif = {b, n, NULL}, .xmp = {(const uint8_t *)xmp, strlen(xmp), NULL}};
    uint8_t *blob;
    size_t len;
    cr_assert_eq(ib_meta_pack(&m, 1, &blob, &len), 0);
    ib_meta_keep k;
    cr_assert_eq(ib_meta_unpack(blob, len, &k), 0);
    int v;
    cr_assert_eq(ib_exif_orientation(k.exif, k.exif_len, &v), IB_EXIF_NO_TAG);
    cr_assert_eq(k.exif[8 + (big ? 1 : 0)], 2, "entry count");
    /* The entry after it moved up: 305 is the second entry now. */
    uint8_t *second = (uint8_t *)k.exif + 10 + 12;
    cr_assert_eq(big ? second[0] << 8 | second[1] : second[1] << 8 | second[0], 305);
    cr_assert_eq(k.xmp_len, strlen("<a  b=\"1\"></a>"));
    cr_assert_eq(memcmp(k.xmp, "<a  b=\"1\"></a>", k.xmp_len), 0);
    free(blob);
  }
}
