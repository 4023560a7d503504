/*
 * png_encode.h - PNG encoding of 8-bit L, LA, RGB and RGBA pixels with
 * libdeflate (internal). libvips' pngsave (libpng + zlib, no row filter)
 * took the Kafka worker's whole encode budget for a small image;
 * libdeflate at the same level, with adaptive row filters as Pillow
 * chooses them, is several times faster and writes smaller files
 * (bench/RESULTS.md, codecs).
 */
#ifndef IB_PNG_ENCODE_H
#define IB_PNG_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"

struct ib_meta_keep;

/* Encodes width x height pixels of `channels` (1..4) interleaved bytes,
 * rows `stride` bytes apart, at zlib-style `level` (1..9), with the
 * metadata `meta` holds (NULL: none) before IDAT: iCCP "ICC Profile",
 * eXIf, iTXt XML:com.adobe.xmp, the chunks Pillow's PNG writer uses.
 * `*out` is g_malloc'ed (free with ib_codec_free). Stage IB_STAGE_ENCODE. */
ib_status ib_png_encode(const uint8_t *px, uint32_t width, uint32_t height, unsigned channels,
                        size_t stride, int level, const struct ib_meta_keep *meta, uint8_t **out,
                        size_t *len, ib_error *err);

#endif
