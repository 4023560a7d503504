/*
 * output_spec.h - what a CpuOutput asks for, checked against Pillow's save()
 * (internal): the parameter ranges and the modes each format writes, and
 * the mode the encoded file has. Pillow 12.3, per plugin:
 *   PNG   writes L, LA, RGB, RGBA; refuses CMYK and RGBX ("cannot write
 *         mode CMYK as PNG").
 *   JPEG  writes L, RGB, CMYK, and RGBX as RGB; refuses LA and RGBA.
 *   WebP  writes RGB, RGBA, and RGBX as RGB; converts L to RGB, LA to RGBA
 *         and CMYK to RGB first (WebPImagePlugin._convert_frame).
 *   TIFF  writes every mode; RGBX reads back as RGB.
 * A refusal is Unsupported naming the mode and the format: nothing is
 * converted that Pillow would not convert.
 */
#ifndef IB_OUTPUT_SPEC_H
#define IB_OUTPUT_SPEC_H

#include "imgbatch.h"
#include "proto/imgbatch.pb-c.h"

/* IB_OK when `spec` (NULL: raw) can be encoded from an image of `mode`.
 * IB_INVALID names a parameter out of its range (quality over 100,
 * compression over 9, an unknown subsampling or format, a JPEG-only option on another format);
 * IB_UNSUPPORTED names a mode the format cannot hold. Errors are set at
 * `stage`. */
ib_status ib_output_check(const Imgbatch__V1__CpuOutput *spec, ib_mode mode, ib_stage stage,
                          ib_error *err);

/* The mode of the encoded file as Pillow opens it (RGBX in JPEG, WebP and
 * TIFF reads back as RGB, L in WebP as RGB, ...); `mode` itself for raw. */
ib_mode ib_output_mode(const Imgbatch__V1__CpuOutput *spec, ib_mode mode);

#endif
