/*
 * jpeg_draft.h - a JPEG decoded at a libjpeg DCT scale of 1/2, 1/4 or 1/8,
 * as Pillow decodes it after JpegImageFile.draft() (internal).
 *
 * Pillow's draft sets the decoder's scale and nothing else (the draft flag
 * that would pick the fast IDCT and plain upsampling stays 0), so libjpeg
 * runs with scale_num 1, scale_denom s, its default ISLOW IDCT and fancy
 * upsampling, out_color_space GRAYSCALE / RGB / CMYK for a 1- / 3- /
 * 4-component file, the file's colour space as libjpeg guesses it; the
 * image is jdiv_round_up(w, s) x jdiv_round_up(h, s), every partial block
 * kept. CMYK comes out inverted (Pillow's rawmode "CMYK;I", taken for every
 * 4-component JPEG). libvips' shrink-on-load floors the size instead,
 * which is why this path calls libjpeg itself.
 *
 * Untrusted bytes: libjpeg's fatal errors return through longjmp as values;
 * its warnings are ignored as Pillow ignores them, except running out of
 * data before the last row, which Pillow reports as a truncated file. The
 * coefficient buffers of a multi-scan file are capped by
 * IB_JPEG_DRAFT_MAX_MEMORY and the scans by IB_JPEG_DRAFT_MAX_SCANS, both
 * checked by libjpeg before it allocates or reads more. Stage DECODE.
 */
#ifndef IB_JPEG_DRAFT_H
#define IB_JPEG_DRAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"
#include "model/shape.h"

/* A progressive 48 MP 4:4:4 file needs 288 MiB of coefficients. */
#define IB_JPEG_DRAFT_MAX_MEMORY (512ul << 20)
/* libjpeg-turbo's own suggestion for untrusted progressive files. */
#define IB_JPEG_DRAFT_MAX_SCANS 500

/* True for bytes that start as a JPEG (FF D8 FF), the test codec.c's loader
 * choice and Pillow's JpegImagePlugin._accept make. */
bool ib_jpeg_is(const uint8_t *bytes, size_t len);

/* The mode (L, RGB or CMYK) and the size after scaling by 1/scale (2, 4 or
 * 8). IB_DECODE for a corrupt header, IB_UNSUPPORTED for other component
 * counts or samples of other than 8 bits. */
ib_status ib_jpeg_draft_header(const uint8_t *bytes, size_t len, unsigned scale, ib_shape *shape,
                               ib_error *err);

/* Decodes into dst (exactly the shape ib_jpeg_draft_header gave, rows
 * packed). IB_DECODE: corrupt or truncated; IB_LIMIT: the memory or scan
 * cap. */
ib_status ib_jpeg_draft_decode_into(const uint8_t *bytes, size_t len, unsigned scale,
                                    const ib_shape *shape, uint8_t *dst, ib_error *err);

#endif
