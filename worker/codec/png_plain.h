/*
 * png_plain.h - the common PNG decoded without libpng's inflate (internal).
 * A 2048^2 photo-like PNG spent two thirds of its libpng decode in zlib's
 * inflate; libdeflate inflates the same stream in well under half the time,
 * but only whole (one call, the whole output at once), which libpng's
 * row-by-row reading cannot use. So a "plain" file - the kind the pipeline
 * mostly sees - is read here: chunks walked and CRC-checked, the IDAT data
 * inflated in one call, the rows unfiltered. Anything else about a file,
 * good or bad, is left to libpng (png_decode.c), whose outcome is the
 * reference: this path only ever answers where libpng would have decoded
 * the same bytes - with one exception, chosen for speed. zlib refuses
 * codes RFC 1951 says never occur (litlen 286/287 and distance 30/31 in a
 * fixed block, more than 286/30 code lengths, a degenerate code's unused
 * codeword, a length repeat past the end); libdeflate reads each by its
 * nearest meaning. A stream using one, whose Adler-32 still matches what
 * libdeflate inflated, decodes here where libpng (and Pillow, which
 * inflates with zlib) fails. Telling these apart needs every symbol
 * decoded a second time, which would give back much of what libdeflate
 * saves; no encoder writes them (a fuzzer did, by flipping a distance code
 * 29 to 30, which libdeflate reads alike).
 *
 * Plain: IHDR first; 8-bit grey, grey+alpha, RGB or RGBA; not interlaced;
 * every chunk before the last IDAT well-formed (length, letters, CRC) and
 * ancillary but for IHDR and the IDATs, and no tRNS (which changes the
 * mode); the IDATs consecutive, holding one zlib stream with a 32 KiB
 * window that ends exactly with them and inflates to exactly the filtered
 * rows (valid filter types only). A different window size is left to libpng
 * because zlib refuses a distance past a smaller declared window, which
 * libdeflate does not check. A wrong Adler-32 is left to libpng too, which
 * ignores it as libvips told it to.
 *
 * Size: at most a 4096^2 RGBA image's rows (64 MiB); a larger image goes to
 * libpng, because the inflated rows (height x (row + 1) bytes) and the
 * joined IDAT data are scratch outside the host credits, as libpng's own row
 * buffers are, and libpng needs only a row or two. The decoding thread
 * keeps each up to 24 MiB for its next decode (codec/thread_buf.h).
 *
 * No globals. Never prints.
 */
#ifndef IB_PNG_PLAIN_H
#define IB_PNG_PLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/shape.h"

/* libvips' read_new() limit on a chunk's data (libpng's chunk_malloc_max):
 * libpng fails a longer chunk but IDAT, so the plain path leaves one to it. */
#define IB_PNG_CHUNK_MAX (50u * 1024 * 1024)

/* Decodes a plain PNG of exactly `shape` into dst (width * height * bands
 * bytes): true when it did. False when the file is not plain, is not that
 * shape, or memory ran out: dst's contents are then undefined and the
 * caller decodes with libpng. */
bool ib_png_plain_decode(const uint8_t *bytes, size_t len, const ib_shape *shape, uint8_t *dst);

#endif
