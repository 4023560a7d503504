/*
 * exif_orient.h - the EXIF orientation as Pillow 12.3's Image.getexif()
 * gives it (Image.Exif.load over TiffImagePlugin.ImageFileDirectory_v2,
 * then the XMP fallback). Untrusted bytes: every read is bounds-checked;
 * nothing is allocated.
 */
#ifndef IB_CODEC_EXIF_ORIENT_H
#define IB_CODEC_EXIF_ORIENT_H

#include <stddef.h>
#include <stdint.h>

typedef enum ib_exif_orient {
  IB_EXIF_NO_TAG = 0,  /* no Orientation in IFD0 (or no EXIF): XMP decides */
  IB_EXIF_TAG = 1,     /* IFD0 has the tag; *value says what Pillow reads */
  IB_EXIF_REFUSED = 2, /* a header Pillow raises on (SyntaxError, struct.error) */
} ib_exif_orient;

/* EXIF bytes as Pillow holds them in info["exif"] (leading "Exif\0\0"
 * prefixes are skipped, as Exif.load does). With IB_EXIF_TAG, *value is the
 * orientation when the tag's first value is a number equal to an integer in
 * 2..8 (SHORT, LONG, signed, LONG8, IFD, rational or float types compare
 * equal in Pillow's lookup), else 1 (BYTE, ASCII and UNDEFINED values are
 * bytes or str there and match no method). */
ib_exif_orient ib_exif_orientation(const uint8_t *exif, size_t len, int *value);

/* Image.getexif's XMP fallback: the digit of the first match of
 * `tiff:Orientation(="|>)([0-9])` in the packet, or 0 when none. */
int ib_xmp_orientation(const uint8_t *xmp, size_t len);

/* Where IFD0's Orientation entry lies (the offset of its 12 bytes, counted
 * after the `*prefix` bytes of "Exif\0\0"), for writers that drop it; -1
 * when the tag is absent or the header is not one Pillow reads. */
long ib_exif_orientation_entry(const uint8_t *exif, size_t len, size_t *prefix);

#endif
