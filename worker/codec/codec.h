/*
 * codec.h - image decode/encode and header checks (internal).
 * Untrusted bytes: the magic is checked and the specific loader called
 * (png/jpeg/webp/tiff/gif), never the generic loader (which probes
 * ImageMagick). Headers are read lazily, so limits are checked before decode.
 * PNG is read by libpng directly (png_decode.h), JPEG by libjpeg
 * (jpeg_decode.h), the rest by libvips.
 * Encodes follow Pillow's save(): JPEG through libjpeg with its settings
 * (jpeg_encode.h), PNG through libdeflate (png_encode.h), WebP and TIFF
 * through libvips, each mode written, converted or refused as Pillow's
 * plugin does (output_spec.h).
 */
#ifndef IB_CODEC_H
#define IB_CODEC_H

#include "imgbatch.h"
#include "model/shape.h"
#include "proto/imgbatch.pb-c.h"

/* Process-wide libvips start-up; safe to call repeatedly and from threads. */
ib_status ib_codec_init(ib_error *err);

/* Reads the header only: the mode the decoded pixels will have (L, LA, RGB,
 * RGBA, CMYK from bands/interpretation; 8-bit only) and the size. Errors:
 * IB_DECODE (unknown magic, corrupt header), IB_UNSUPPORTED (16-bit, float,
 * odd band counts). Stage is IB_STAGE_DECODE. */
ib_status ib_codec_header(const uint8_t *bytes, size_t len, ib_shape *shape, ib_error *err);

/* Decodes into `dst`, whose data the caller allocated for exactly the shape
 * ib_codec_header reported (so the decoder can write straight into pinned
 * upload staging). Truncated or corrupt data is IB_DECODE. */
ib_status ib_codec_decode_into(const uint8_t *bytes, size_t len, const ib_shape *shape,
                               uint8_t *dst, ib_error *err);

/* The same two for a source with Source.draft_scale: a JPEG with a scale of
 * 2, 4 or 8 is decoded by libjpeg at 1/scale as Pillow's draft() has it
 * (jpeg_decode.h); 0 or 1, or bytes that are not a JPEG, go to the two
 * above, as Pillow ignores draft() there. */
ib_status ib_codec_header_draft(const uint8_t *bytes, size_t len, unsigned draft_scale,
                                ib_shape *shape, ib_error *err);
ib_status ib_codec_decode_into_draft(const uint8_t *bytes, size_t len, unsigned draft_scale,
                                     const ib_shape *shape, uint8_t *dst, ib_error *err);

/* The same two through libvips for every format, PNG and JPEG included:
 * the path they took before png_decode.h and jpeg_decode.h, kept as the
 * reference those are tested and benchmarked against
 * (tests/unit/test_png_decode.c, test_jpeg_decode.c,
 * bench/harness/codec_bench.c). */
ib_status ib_codec_header_vips(const uint8_t *bytes, size_t len, ib_shape *shape, ib_error *err);
ib_status ib_codec_decode_into_vips(const uint8_t *bytes, size_t len, const ib_shape *shape,
                                    uint8_t *dst, ib_error *err);

/* Encodes `im` per `spec` (RAW returns a copy of the pixels), after
 * ib_output_check, writing the metadata `meta` holds (NULL: none) into a
 * PNG, JPEG or WebP file (codec/metadata.h, docs/metadata.md). The file's
 * mode is ib_output_mode's. `*out` is g_malloc'ed: free it with
 * ib_codec_free. Stage IB_STAGE_ENCODE. */
struct ib_meta_keep;
ib_status ib_codec_encode(const ib_image *im, const Imgbatch__V1__CpuOutput *spec,
                          const struct ib_meta_keep *meta, uint8_t **out, size_t *len,
                          ib_error *err);
void ib_codec_free(void *p);

#endif
