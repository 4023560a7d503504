/*
 * webp_meta.h - adds ICCP, EXIF and XMP chunks to a WebP file libvips wrote
 * in the extended layout the WebP container specification gives: VP8X,
 * ICCP, the image chunks, EXIF, XMP; without metadata or alpha, the simple
 * layout (the image chunk alone). Whatever else libvips wrote is dropped:
 * libvips 8.14 writes an EXIF of its own (resolution, orientation 1) even
 * when told to strip, where Pillow writes none, and would pass a kept
 * EXIF through libexif, which rewrites it.
 */
#ifndef IB_CODEC_WEBP_META_H
#define IB_CODEC_WEBP_META_H

#include <stddef.h>
#include <stdint.h>

struct ib_meta_keep;

/* `*out` is g_malloc'ed; 0, or -1 when `in` is not a WebP file this reads
 * or memory ran out. `alpha`: the image has an alpha band; `m` NULL: no
 * metadata. */
int ib_webp_add_meta(const uint8_t *in, size_t len, int alpha, uint32_t width, uint32_t height,
                     const struct ib_meta_keep *m, uint8_t **out, size_t *out_len);

#endif
