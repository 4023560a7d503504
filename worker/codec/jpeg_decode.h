/*
 * jpeg_decode.h - a JPEG decoded by libjpeg as Pillow decodes it, at full
 * size or at the DCT scale of a draft (internal).
 *
 * Pillow's JpegDecode.c runs libjpeg with its defaults: the ISLOW IDCT and
 * fancy upsampling, out_color_space GRAYSCALE / RGB / CMYK for a 1- / 3- /
 * 4-component file, the file's colour space as libjpeg guesses it. After
 * JpegImageFile.draft() it sets the scale and nothing else (the draft flag
 * that would pick the fast IDCT and plain upsampling stays 0): scale_num 1,
 * scale_denom 2, 4 or 8, the image jdiv_round_up(w, s) x jdiv_round_up(h, s),
 * every partial block kept. CMYK comes out inverted (Pillow's rawmode
 * "CMYK;I", taken for every 4-component JPEG, Adobe marker or not).
 * libvips' jpegload gives the same bytes at full size, but its
 * shrink-on-load floors the size, it answers a truncated file in its own
 * words, and its region machinery costs a small image several times the
 * decode and keeps threads of one process from scaling
 * (bench/harness/codec_bench.c). So JPEG sources are read here, at every
 * scale.
 *
 * Untrusted bytes: libjpeg's fatal errors return through longjmp as values;
 * its warnings are ignored as Pillow ignores them, except running out of
 * data before the last row, which Pillow reports as a truncated file. The
 * coefficient buffers of a multi-scan (progressive) file are capped by
 * IB_JPEG_MAX_MEMORY and the scans by IB_JPEG_MAX_SCANS, both checked by
 * libjpeg before it allocates or reads more. Stage DECODE; messages start
 * "decode: jpeg:" at full size and "decode: jpeg draft 1/s:" at a scale.
 */
#ifndef IB_JPEG_DECODE_H
#define IB_JPEG_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"
#include "model/shape.h"

/* A progressive 48 MP 4:4:4 file needs 288 MiB of coefficients; past this
 * (about 89 MP at 4:4:4, 179 MP at 4:2:0) a progressive file is IB_LIMIT.
 * Baseline files need no coefficient buffers. */
#define IB_JPEG_MAX_MEMORY (512ul << 20)
/* libjpeg-turbo's own suggestion for untrusted progressive files. */
#define IB_JPEG_MAX_SCANS 500

/* True for bytes that start as a JPEG (FF D8 FF), the test codec.c's loader
 * choice and Pillow's JpegImagePlugin._accept make. */
bool ib_jpeg_is(const uint8_t *bytes, size_t len);

/* The mode (L, RGB or CMYK) and the size after scaling by 1/scale (1, 2, 4
 * or 8; another scale is IB_INVALID naming it). IB_DECODE for a corrupt
 * header, IB_UNSUPPORTED for other component counts or samples of other
 * than 8 bits. */
ib_status ib_jpeg_header(const uint8_t *bytes, size_t len, unsigned scale, ib_shape *shape,
                         ib_error *err);

/* Decodes into dst (exactly the shape ib_jpeg_header gave for this scale,
 * rows packed). IB_DECODE: corrupt or truncated; IB_LIMIT: the memory or
 * scan cap. */
ib_status ib_jpeg_decode_into(const uint8_t *bytes, size_t len, unsigned scale,
                              const ib_shape *shape, uint8_t *dst, ib_error *err);

#endif
