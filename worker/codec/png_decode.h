/*
 * png_decode.h - PNG header and decode straight through libpng 1.6
 * (internal). libvips' pngload ran the same libpng calls but through its
 * per-image machinery (operation objects, a region pipeline, GObject
 * signals), whose locks kept two threads of one process at one thread's
 * throughput. This file makes libvips 8.14's libpng calls itself
 * (libvips/foreign/vipspng.c: the same transforms, options, limits and
 * error wording, fail_on=truncated), so every PNG gives the bytes, mode and
 * message the libvips path gave, and reads each image once. Where it
 * differs on purpose (hostile input only): the header allocates no rows;
 * metadata chunks (text, ICC, sPLT, eXIf) are skipped unread instead of
 * decompressed and kept (so a failing file's message lacks their warnings);
 * compressed data after the last row is bounded (16 x a row + 64 KiB: more
 * is a decode error, where libvips inflated on, up to ~1000x the file).
 * No globals: safe on any number of threads. Never prints.
 */
#ifndef IB_PNG_DECODE_H
#define IB_PNG_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"
#include "model/shape.h"

/* The mode and size the decoded pixels will have (L, LA, RGB, RGBA; palette
 * to RGB, or RGBA with tRNS; grey with tRNS to LA). Reads the chunks up to
 * the first IDAT only and allocates nothing per row. Errors (stage
 * IB_STAGE_DECODE): IB_DECODE for a corrupt or truncated header,
 * IB_UNSUPPORTED for 16-bit samples. `bytes` must start with the PNG
 * signature (the caller sniffed it). */
ib_status ib_png_header(const uint8_t *bytes, size_t len, ib_shape *shape, ib_error *err);

/* Decodes into `dst`, exactly width * height * bands bytes of the shape
 * ib_png_header reported: a plain file through libdeflate (png_plain.h),
 * any other through libpng, with the same outcome. A truncated or corrupt
 * image is IB_DECODE. */
ib_status ib_png_decode_into(const uint8_t *bytes, size_t len, const ib_shape *shape, uint8_t *dst,
                             ib_error *err);

/* The same through libpng alone, for any file: the reference the plain
 * path is tested against. */
ib_status ib_png_decode_libpng(const uint8_t *bytes, size_t len, const ib_shape *shape,
                               uint8_t *dst, ib_error *err);

#endif
