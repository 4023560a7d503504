/*
 * jpeg_encode.h - JPEG encoding through libjpeg(-turbo) with the settings
 * Pillow's JpegEncode.c gives its compressor (internal): jpeg_set_defaults,
 * jpeg_set_quality(q, force_baseline) only when a quality is given, the
 * sampling factors Pillow writes for its `subsampling` (on component 0..2,
 * whatever the colour space), jpeg_simple_progression, optimize_coding.
 * No JFIF density or comment; EXIF, XMP and ICC only when the output
 * metadata policy keeps the source's (docs/metadata.md): a fresh image
 * saved with only quality/subsampling/progressive/optimize has none in
 * Pillow either.
 * libvips' jpegsave differs (4:4:4 from Q90, trellis options), so JPEG
 * output does not go through it.
 */
#ifndef IB_JPEG_ENCODE_H
#define IB_JPEG_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"

struct ib_meta_keep;

typedef struct ib_jpeg_options {
  int quality;     /* -1: libjpeg's default (75); else as Pillow passes it (0 acts as 1) */
  int subsampling; /* Pillow's numbering: -1 libjpeg's default, 0 4:4:4, 1 4:2:2, 2 4:2:0 */
  bool progressive;
  bool optimize;
  /* Metadata to write (NULL: none, Pillow's default): APP1 "Exif\0\0",
   * APP1 XMP, APP2 ICC_PROFILE segments (codec/metadata.h). */
  const struct ib_meta_keep *meta;
} ib_jpeg_options;

/* Encodes width x height pixels of `mode` (L, RGB, RGBX or CMYK; CMYK is
 * written inverted with libjpeg's Adobe marker, Pillow's "CMYK;I"), rows
 * `stride` bytes apart. `*out` is g_malloc'ed (free with ib_codec_free).
 * libjpeg's own errors come back as IB_INTERNAL with its message; its
 * warnings are not printed. Stage IB_STAGE_ENCODE. */
ib_status ib_jpeg_encode(const uint8_t *px, uint32_t width, uint32_t height, ib_mode mode,
                         size_t stride, const ib_jpeg_options *opt, uint8_t **out, size_t *len,
                         ib_error *err);

#endif
