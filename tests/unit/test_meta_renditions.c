/* The renditions' metadata blob (codec/metadata.c ib_meta_pack_renditions,
 * ib_meta_rendition): each packing stored once, a selector per rendition,
 * and a reader that refuses every blob it did not write - cut short,
 * padded, an index past the count, a selector it does not know.
 * tests/py/run/test_metadata_output.py reads the files back with Pillow. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "codec/metadata.h"

static const char XMP[] =
    "<x:xmpmeta><rdf:Description tiff:Orientation=\"6\" tiff:Make=\"m\"/>"
    "</x:xmpmeta>";
static const uint8_t ICC[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

static ib_meta sample(void) {
  ib_meta m = {0};
  m.xmp.data = (const uint8_t *)XMP, m.xmp.len = sizeof XMP - 1;
  m.icc.data = ICC, m.icc.len = sizeof ICC;
  return m;
}

static bool has_orientation(const ib_meta_keep *k) {
  return k->xmp && memmem(k->xmp, k->xmp_len, "tiff:Orientation", 16) != NULL;
}

Test(meta_renditions, each_rendition_gets_its_own_packing) {
  ib_meta m = sample();
  const uint8_t sel[] = {IB_META_AS_READ, IB_META_NONE, IB_META_NO_ORIENTATION, IB_META_AS_READ};
  uint8_t *blob = NULL;
  size_t len = 0;
  cr_assert_eq(ib_meta_pack_renditions(&m, sel, 4, &blob, &len), 0);
  cr_assert_not_null(blob);
  ib_meta_keep k;
  cr_assert_eq(ib_meta_rendition(blob, len, 0, &k), 1);
  cr_assert(has_orientation(&k));
  cr_assert_eq(k.icc_len, sizeof ICC);
  cr_assert_eq(memcmp(k.icc, ICC, sizeof ICC), 0);
  cr_assert_eq(ib_meta_rendition(blob, len, 1, &k), 0);
  cr_assert_null(k.xmp);
  cr_assert_eq(ib_meta_rendition(blob, len, 2, &k), 1);
  cr_assert_not(has_orientation(&k), "the second packing drops the orientation");
  cr_assert_not_null(memmem(k.xmp, k.xmp_len, "tiff:Make", 9));
  cr_assert_eq(ib_meta_rendition(blob, len, 3, &k), 1);
  cr_assert(has_orientation(&k));
  cr_assert_eq(ib_meta_rendition(blob, len, 4, &k), -1, "past the count");
  /* Both packings once: the blob is the header, 4 selectors and two
   * packings, whatever the number of renditions using them. */
  uint8_t *one = NULL, *two = NULL;
  size_t l1 = 0, l2 = 0;
  cr_assert_eq(ib_meta_pack(&m, 0, &one, &l1), 0);
  cr_assert_eq(ib_meta_pack(&m, 1, &two, &l2), 0);
  cr_assert_eq(len, 4 + 4 + 4 + l1 + 4 + l2);
  free(one);
  free(two);
  free(blob);
}

Test(meta_renditions, no_rendition_keeping_anything_is_no_blob) {
  ib_meta m = sample();
  const uint8_t sel[] = {IB_META_NONE, IB_META_NONE};
  uint8_t *blob = (uint8_t *)1;
  size_t len = 7;
  cr_assert_eq(ib_meta_pack_renditions(&m, sel, 2, &blob, &len), 0);
  cr_assert_null(blob);
  cr_assert_eq(len, 0);
  ib_meta empty = {0};
  const uint8_t keep[] = {IB_META_AS_READ};
  cr_assert_eq(ib_meta_pack_renditions(&empty, keep, 1, &blob, &len), 0);
  cr_assert_null(blob, "a source without blocks keeps nothing");
}

Test(meta_renditions, a_blob_it_did_not_write_is_refused) {
  ib_meta m = sample();
  const uint8_t sel[] = {IB_META_AS_READ, IB_META_NO_ORIENTATION};
  uint8_t *blob = NULL;
  size_t len = 0;
  cr_assert_eq(ib_meta_pack_renditions(&m, sel, 2, &blob, &len), 0);
  ib_meta_keep k;
  for (size_t cut = 0; cut < len; cut++)
    cr_assert_eq(ib_meta_rendition(blob, cut, 0, &k), -1, "cut at %zu", cut);
  uint8_t *pad = malloc(len + 1);
  memcpy(pad, blob, len);
  pad[len] = 0;
  cr_assert_eq(ib_meta_rendition(pad, len + 1, 0, &k), -1, "a byte past the end");
  pad[4] = 7; /* rendition 0's selector */
  cr_assert_eq(ib_meta_rendition(pad, len, 0, &k), -1, "an unknown selector");
  pad[0] = 0xff; /* a count past the blob */
  cr_assert_eq(ib_meta_rendition(pad, len, 0, &k), -1);
  free(pad);
  free(blob);
}
