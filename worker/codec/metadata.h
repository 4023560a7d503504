/*
 * metadata.h - the EXIF, XMP and ICC blocks of an encoded source, found
 * where Pillow 12.3's plugins find them (its info["exif"], info["xmp"] /
 * info["XML:com.adobe.xmp"] and info["icc_profile"]), for
 * ImageOps.exif_transpose's orientation and the output metadata policy
 * (docs/metadata.md). Untrusted bytes: a walk over the container's
 * markers or chunks, every length bounds-checked; GIF carries none here.
 */
#ifndef IB_CODEC_METADATA_H
#define IB_CODEC_METADATA_H

#include <stddef.h>
#include <stdint.h>

typedef struct ib_meta_block {
  const uint8_t *data; /* into the source bytes or `owned` */
  size_t len;
  uint8_t *owned; /* malloc'ed (joined JPEG segments, inflated PNG text) */
} ib_meta_block;

typedef struct ib_meta {
  ib_meta_block exif; /* a TIFF structure, maybe after "Exif\0\0" */
  ib_meta_block xmp;  /* the XMP packet */
  ib_meta_block icc;  /* the ICC profile */
  /* A JPEG without JFIF dots per inch: JpegImageFile._open reads the EXIF
   * for its resolution and swallows the header's SyntaxError/struct.error,
   * leaving an empty EXIF that later getexif() calls return as it is (no
   * XMP fallback). */
  int exif_read_at_open;
} ib_meta;

/* Fills `m` (zeroed first) from a PNG, JPEG, WebP or TIFF file; a block
 * that is absent, malformed or over 1 MiB inflated stays empty. Returns
 * 0, or -1 when out of memory. Free with ib_meta_free. */
int ib_meta_read(const uint8_t *bytes, size_t len, ib_meta *m);
void ib_meta_free(ib_meta *m);

/* ImageOps.exif_transpose's orientation of a source with metadata `m`
 * (Image.getexif: EXIF IFD0 tag 274, else XMP tiff:Orientation): 1..8
 * where 2..8 name a transpose and 1 none; -1 when Pillow raises on the
 * EXIF header. */
int ib_meta_orientation(const ib_meta *m);

/* What an encoder writes (views into a blob of ib_meta_pack): the TIFF
 * structure of the EXIF (no "Exif\0\0"), the XMP packet, the ICC
 * profile; empty ones are not written. */
typedef struct ib_meta_keep {
  const uint8_t *exif, *xmp, *icc;
  size_t exif_len, xmp_len, icc_len;
} ib_meta_keep;

/* One malloc'ed blob holding m's blocks for an encoder, the EXIF without
 * its "Exif\0\0" prefixes. With drop_orientation, IFD0's Orientation entry
 * is taken out of the EXIF (the later entries move up, so every offset in
 * it stays right) and every `tiff:Orientation="d"` and
 * `<tiff:Orientation>d</tiff:Orientation>` out of the XMP, the removals
 * ImageOps.exif_transpose makes (an EXIF header Pillow cannot read is then
 * dropped whole). *blob is NULL when nothing is kept. 0, or -1 when out of
 * memory. */
int ib_meta_pack(const ib_meta *m, int drop_orientation, uint8_t **blob, size_t *len);
/* The views of a blob ib_meta_pack wrote; 0, or -1 when it is not one. */
int ib_meta_unpack(const uint8_t *blob, size_t len, ib_meta_keep *k);

/* A job's renditions each have their own policy: what rendition i keeps,
 * sel[i], is IB_META_NONE, IB_META_AS_READ (ib_meta_pack without
 * drop_orientation) or IB_META_NO_ORIENTATION (with it). One malloc'ed
 * blob holds the selectors and each packing some rendition needs, once;
 * *blob is NULL when no rendition keeps anything. 0, or -1 when out of
 * memory. */
enum { IB_META_NONE = 0, IB_META_AS_READ = 1, IB_META_NO_ORIENTATION = 2 };
int ib_meta_pack_renditions(const ib_meta *m, const uint8_t *sel, size_t n, uint8_t **blob,
                            size_t *len);
/* Rendition i's views in a blob of ib_meta_pack_renditions: 1 when it keeps
 * blocks (k set), 0 when it keeps none, -1 when the blob is not one. */
int ib_meta_rendition(const uint8_t *blob, size_t len, size_t i, ib_meta_keep *k);

#endif
