/* output_spec.c - CpuOutput ranges and the modes of each format (see
 * output_spec.h). */
#include "codec/output_spec.h"

#include "core/error.h"

static const char *format_name(Imgbatch__V1__Format f) {
  switch (f) {
    case IMGBATCH__V1__FORMAT__PNG: return "PNG";
    case IMGBATCH__V1__FORMAT__JPEG: return "JPEG";
    case IMGBATCH__V1__FORMAT__WEBP: return "WEBP";
    case IMGBATCH__V1__FORMAT__TIFF: return "TIFF";
    default: return "RAW";
  }
}

static bool writes(Imgbatch__V1__Format f, ib_mode m) {
  switch (f) {
    case IMGBATCH__V1__FORMAT__PNG:
      return m == IB_MODE_L || m == IB_MODE_LA || m == IB_MODE_RGB || m == IB_MODE_RGBA;
    case IMGBATCH__V1__FORMAT__JPEG:
      return m == IB_MODE_L || m == IB_MODE_RGB || m == IB_MODE_RGBX || m == IB_MODE_CMYK;
    default: return true;
  }
}

/* Pillow's JPEG encoder hands any int to jpeg_set_quality, which clamps to
 * 1..100 (0 and below act as 1; Pillow's documented scale is 0..100), and
 * its WebP encoder refuses anything outside 0..100 ("invalid
 * configuration"). 0..100 is therefore encoded exactly as Pillow does;
 * above it is refused rather than clamped to 100 (or, past 2^31, wrapped
 * to the default, as Pillow's int conversion would). */
static ib_status check_params(const Imgbatch__V1__CpuOutput *s, ib_stage stage, ib_error *err) {
  bool quality = s->quality_present_case == IMGBATCH__V1__CPU_OUTPUT__QUALITY_PRESENT_QUALITY;
  if (quality && s->quality > 100)
    return ib_error_set(err, IB_INVALID, stage,
                        "output: quality %u is out of range 0..100 (Pillow's JPEG encoder clamps "
                        "it to 100, its WebP encoder refuses it)",
                        s->quality);
  /* zlib's levels; libvips and zlib refuse the rest. */
  if (s->compression > 9)
    return ib_error_set(err, IB_INVALID, stage, "output: compression %u is out of range 0..9",
                        s->compression);
  if ((unsigned)s->subsampling > IMGBATCH__V1__SUBSAMPLING__SUBSAMPLING_420)
    return ib_error_set(err, IB_INVALID, stage,
                        "output: subsampling %d is not one of DEFAULT, 444, 422, 420",
                        (int)s->subsampling);
  if ((unsigned)s->metadata > IMGBATCH__V1__METADATA_POLICY__METADATA_KEEP_RESET_ORIENTATION)
    return ib_error_set(err, IB_UNSUPPORTED, stage,
                        "output: metadata policy %d is not one this worker knows",
                        (int)s->metadata);
  if (s->metadata && s->format == IMGBATCH__V1__FORMAT__TIFF)
    return ib_error_set(err, IB_INVALID, stage,
                        "output: metadata KEEP applies to PNG, JPEG and WebP, not TIFF");
  if (s->format == IMGBATCH__V1__FORMAT__JPEG) return IB_OK;
  const char *jpeg_only = s->subsampling   ? "subsampling"
                          : s->progressive ? "progressive"
                          : s->optimize    ? "optimize"
                                           : NULL;
  if (jpeg_only)
    return ib_error_set(err, IB_INVALID, stage, "output: %s applies to JPEG only, not %s",
                        jpeg_only, format_name(s->format));
  return IB_OK;
}

ib_status ib_output_check(const Imgbatch__V1__CpuOutput *spec, ib_mode mode, ib_stage stage,
                          ib_error *err) {
  if (!spec) return IB_OK;
  if ((unsigned)spec->format > IMGBATCH__V1__FORMAT__TIFF)
    return ib_error_set(err, IB_INVALID, stage, "output: unknown format %d", (int)spec->format);
  if (spec->format == IMGBATCH__V1__FORMAT__RAW) return IB_OK;
  ib_status st = check_params(spec, stage, err);
  if (st != IB_OK) return st;
  if (!writes(spec->format, mode))
    return ib_error_set(err, IB_UNSUPPORTED, stage,
                        "output: cannot write mode %s as %s (Pillow refuses it too; convert the "
                        "image to a mode %s holds first)",
                        ib_mode_name(mode), format_name(spec->format), format_name(spec->format));
  return IB_OK;
}

ib_mode ib_output_mode(const Imgbatch__V1__CpuOutput *spec, ib_mode mode) {
  Imgbatch__V1__Format f = spec ? spec->format : IMGBATCH__V1__FORMAT__RAW;
  if (f == IMGBATCH__V1__FORMAT__RAW || f == IMGBATCH__V1__FORMAT__PNG) return mode;
  if (mode == IB_MODE_RGBX) return IB_MODE_RGB;
  if (f != IMGBATCH__V1__FORMAT__WEBP) return mode;
  if (mode == IB_MODE_LA) return IB_MODE_RGBA;
  return mode == IB_MODE_RGBA ? IB_MODE_RGBA : IB_MODE_RGB;
}
