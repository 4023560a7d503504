/*
 * codec.c - header checks, decode into caller memory, encode: PNG decodes
 * through png_decode.c, everything else through libvips; JPEG encodes
 * through jpeg_encode.c, PNG through png_encode.c, WebP and TIFF through
 * libvips.
 * The magic bytes pick the loader; the generic loader is never called on
 * untrusted bytes (it probes ImageMagick).
 */
#include "codec/codec.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <vips/vips.h>

#include "codec/png_decode.h"
#include "codec/jpeg_decode.h"
#include "codec/jpeg_encode.h"
#include "codec/metadata.h"
#include "codec/output_spec.h"
#include "codec/png_encode.h"
#include "codec/webp_meta.h"
#include "core/error.h"
#include "kernels/convert.h"

typedef int (*loader_fn)(void *buf, size_t len, VipsImage **out, ...);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_failed;

/* libvips reports many causes (libpng's "IHDR: CRC error", libtiff's read
 * errors) through g_warning, which would print on stderr, and leaves only a
 * generic line in its error buffer. A handler on its log domain keeps them
 * instead, per thread, for the error of the codec call running on that
 * thread (decodes pull their pixels on the caller's thread for this); the
 * library prints nothing. */
typedef struct vips_notes {
  char text[200];
  size_t len;
} vips_notes;
static _Thread_local vips_notes notes;

static void notes_clear(void) {
  notes.len = 0;
  notes.text[0] = 0;
}

static void on_vips_log(const gchar *domain, GLogLevelFlags level, const gchar *msg,
                        gpointer user) {
  (void)domain, (void)level, (void)user;
  if (!msg) return;
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) n--;
  /* The sink's restatement of the failure, once per strip: no cause. */
  if (!n || n >= sizeof notes.text || strncmp(msg, "error in tile", 13) == 0) return;
  char one[sizeof notes.text];
  memcpy(one, msg, n);
  one[n] = 0;
  if (strstr(notes.text, one)) return; /* libvips repeats itself per pass */
  size_t room = sizeof notes.text - notes.len;
  int w = snprintf(notes.text + notes.len, room, "%s%s", notes.len ? "; " : "", one);
  if (w > 0) notes.len += (size_t)w < room ? (size_t)w : room - 1;
}

static void init_vips(void) {
  init_failed = VIPS_INIT("imgbatch") != 0;
  if (!init_failed) {
    /* One CPU pass over the pixels, no operation cache between jobs. */
    vips_cache_set_max(0);
    vips_concurrency_set(1);
    g_log_set_handler("VIPS",
                      (GLogLevelFlags)(G_LOG_LEVEL_MASK & ~G_LOG_LEVEL_ERROR) | G_LOG_FLAG_FATAL |
                          G_LOG_FLAG_RECURSION,
                      on_vips_log, NULL);
  }
}

/* libvips' error buffer (its own lines, cleared here) and this thread's
 * warnings: the cause, as libvips words it. */
static ib_status fail_vips(ib_error *err, ib_status st, ib_stage stage, const char *what) {
  char *buf = vips_error_buffer_copy();
  char detail[240];
  size_t n = 0;
  for (const char *c = buf ? buf : ""; *c && n + 3 < sizeof detail; c++) {
    if (*c != '\n')
      detail[n++] = *c;
    else if (c[1])
      detail[n++] = ';', detail[n++] = ' ';
  }
  detail[n] = 0;
  g_free(buf);
  ib_status r;
  if (n && notes.len)
    r = ib_error_set(err, st, stage, "%s: %s (%s)", what, detail, notes.text);
  else
    r = ib_error_set(err, st, stage, "%s: %s", what,
                     n           ? detail
                     : notes.len ? notes.text
                                 : "libvips failed");
  notes_clear();
  return r;
}

ib_status ib_codec_init(ib_error *err) {
  pthread_once(&init_once, init_vips);
  notes_clear();
  return init_failed ? fail_vips(err, IB_INTERNAL, IB_STAGE_DECODE, "libvips init") : IB_OK;
}

static loader_fn loader_for(const uint8_t *b, size_t n, const char **name) {
  if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0) return *name = "png", vips_pngload_buffer;
  if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
    return *name = "jpeg", vips_jpegload_buffer;
  if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
    return *name = "webp", vips_webpload_buffer;
  if (n >= 4 && (memcmp(b, "II*\0", 4) == 0 || memcmp(b, "MM\0*", 4) == 0))
    return *name = "tiff", vips_tiffload_buffer;
  if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
    return *name = "gif", vips_gifload_buffer;
  return NULL;
}

static ib_status open_lazy(const uint8_t *bytes, size_t len, VipsImage **img, const char **fmt,
                           ib_error *err) {
  ib_status st = ib_codec_init(err);
  if (st != IB_OK) return st;
  loader_fn load = loader_for(bytes, len, fmt);
  if (!load)
    return ib_error_set(err, IB_DECODE, IB_STAGE_DECODE,
                        "decode: unrecognised image bytes (not PNG, JPEG, WebP, TIFF or GIF)");
  if (load((void *)bytes, len, img, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on",
           VIPS_FAIL_ON_TRUNCATED, NULL) != 0)
    return fail_vips(err, IB_DECODE, IB_STAGE_DECODE, *fmt);
  return IB_OK;
}

static ib_status shape_of(VipsImage *img, const char *fmt, ib_shape *shape, ib_error *err) {
  int bands = vips_image_get_bands(img);
  if (vips_image_get_format(img) != VIPS_FORMAT_UCHAR)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_DECODE,
                        "decode: %s with %s samples not supported (8-bit only)", fmt,
                        vips_enum_nick(VIPS_TYPE_BAND_FORMAT, vips_image_get_format(img)));
  bool cmyk = vips_image_get_interpretation(img) == VIPS_INTERPRETATION_CMYK;
  switch (bands) {
    case 1: shape->mode = IB_MODE_L; break;
    case 2: shape->mode = IB_MODE_LA; break;
    case 3: shape->mode = IB_MODE_RGB; break;
    case 4: shape->mode = cmyk ? IB_MODE_CMYK : IB_MODE_RGBA; break;
    default:
      return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_DECODE,
                          "decode: %s with %d bands not supported", fmt, bands);
  }
  shape->width = (uint32_t)vips_image_get_width(img);
  shape->height = (uint32_t)vips_image_get_height(img);
  return IB_OK;
}

ib_status ib_codec_header_vips(const uint8_t *bytes, size_t len, ib_shape *shape, ib_error *err) {
  VipsImage *img = NULL;
  const char *fmt = "";
  ib_status st = open_lazy(bytes, len, &img, &fmt, err);
  if (st != IB_OK) return st;
  st = shape_of(img, fmt, shape, err);
  g_object_unref(img);
  return st;
}

/* Pulls img's pixels into mem strip by strip on the calling thread, not
 * through vips_image_write's worker threads: the loader's warnings then
 * reach this thread's notes. Top to bottom, as a sequential loader wants. */
static int pull_into(VipsImage *img, VipsImage *mem, int width, int height) {
  enum { STRIP_ROWS = 64 };
  VipsRegion *from = vips_region_new(img);
  VipsRegion *to = from ? vips_region_new(mem) : NULL;
  int rc = -1;
  VipsRect all = {0, 0, width, height};
  if (!to || vips_region_image(to, &all) != 0) goto out;
  for (int y = 0; y < height; y += STRIP_ROWS) {
    VipsRect r = {0, y, width, height - y < STRIP_ROWS ? height - y : STRIP_ROWS};
    if (vips_region_prepare_to(from, to, &r, 0, y) != 0) goto out;
  }
  rc = 0;
out:
  if (to) g_object_unref(to);
  if (from) g_object_unref(from);
  return rc;
}

ib_status ib_codec_decode_into_vips(const uint8_t *bytes, size_t len, const ib_shape *shape,
                                    uint8_t *dst, ib_error *err) {
  VipsImage *img = NULL;
  const char *fmt = "";
  ib_status st = open_lazy(bytes, len, &img, &fmt, err);
  if (st != IB_OK) return st;
  ib_shape got;
  if ((st = shape_of(img, fmt, &got, err)) != IB_OK) goto out;
  if (memcmp(&got, shape, sizeof got) != 0) {
    st = ib_error_set(err, IB_DECODE, IB_STAGE_DECODE, "decode: %s changed shape since its header",
                      fmt);
    goto out;
  }
  size_t size = (size_t)shape->width * shape->height * ib_mode_bands(shape->mode);
  VipsImage *mem = vips_image_new_from_memory(dst, size, (int)shape->width, (int)shape->height,
                                              (int)ib_mode_bands(shape->mode), VIPS_FORMAT_UCHAR);
  if (!mem) {
    st = fail_vips(err, IB_INTERNAL, IB_STAGE_DECODE, "decode target");
    goto out;
  }
  /* Into a memory image wrapping `dst`: the decoder's rows land in the
   * caller's buffer (pinned upload staging on the GPU path). */
  if (pull_into(img, mem, (int)shape->width, (int)shape->height) != 0)
    st = fail_vips(err, IB_DECODE, IB_STAGE_DECODE, fmt);
  g_object_unref(mem);
out:
  g_object_unref(img);
  return st;
}

/* PNG through libpng and JPEG through libjpeg directly (png_decode.h,
 * jpeg_decode.h: Pillow's bytes and its answers where a file is damaged,
 * no libvips machinery per image, so decode threads scale); the rest
 * through libvips. */
static bool is_png(const uint8_t *b, size_t n) {
  return n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0;
}

/* A draft scale means something only to a JPEG; 0 and 1 are full size. */
static unsigned jpeg_scale(unsigned draft_scale) { return draft_scale > 1 ? draft_scale : 1; }

ib_status ib_codec_header_draft(const uint8_t *bytes, size_t len, unsigned draft_scale,
                                ib_shape *shape, ib_error *err) {
  if (is_png(bytes, len)) return ib_png_header(bytes, len, shape, err);
  if (ib_jpeg_is(bytes, len))
    return ib_jpeg_header(bytes, len, jpeg_scale(draft_scale), shape, err);
  return ib_codec_header_vips(bytes, len, shape, err);
}

ib_status ib_codec_decode_into_draft(const uint8_t *bytes, size_t len, unsigned draft_scale,
                                     const ib_shape *shape, uint8_t *dst, ib_error *err) {
  if (is_png(bytes, len)) return ib_png_decode_into(bytes, len, shape, dst, err);
  if (ib_jpeg_is(bytes, len))
    return ib_jpeg_decode_into(bytes, len, jpeg_scale(draft_scale), shape, dst, err);
  return ib_codec_decode_into_vips(bytes, len, shape, dst, err);
}

ib_status ib_codec_header(const uint8_t *bytes, size_t len, ib_shape *shape, ib_error *err) {
  return ib_codec_header_draft(bytes, len, 1, shape, err);
}

ib_status ib_codec_decode_into(const uint8_t *bytes, size_t len, const ib_shape *shape,
                               uint8_t *dst, ib_error *err) {
  return ib_codec_decode_into_draft(bytes, len, 1, shape, dst, err);
}

static VipsInterpretation interpretation_of(ib_mode m) {
  switch (m) {
    case IB_MODE_L:
    case IB_MODE_LA: return VIPS_INTERPRETATION_B_W;
    case IB_MODE_CMYK: return VIPS_INTERPRETATION_CMYK;
    default: return VIPS_INTERPRETATION_sRGB;
  }
}

/* The pixels in the mode the file is written in (output_spec.h), as
 * Pillow's convert() gives them: L to RGB replicates, LA to RGBA replicates
 * L, RGBX to RGB drops X, CMYK to RGB is cmyk2rgb (kernels/convert.h). */
static uint8_t *pixels_as(const ib_image *im, ib_mode to) {
  size_t n = (size_t)im->width * im->height;
  unsigned from_b = ib_mode_bands(im->mode), to_b = ib_mode_bands(to);
  uint8_t *out = g_try_malloc(n ? n * to_b : 1);
  if (!out) return NULL;
  const uint8_t *p = im->data;
  for (size_t i = 0; i < n; i++, p += from_b) {
    uint8_t *q = out + i * to_b;
    if (im->mode == IB_MODE_CMYK)
      for (int c = 0; c < 3; c++) q[c] = ib_convert_cmyk_channel(p[c], p[3]);
    else if (from_b <= 2)
      q[0] = q[1] = q[2] = p[0];
    else
      memcpy(q, p, 3);
    if (to_b == 4) q[3] = p[from_b - 1];
  }
  return out;
}

static ib_jpeg_options jpeg_options(const Imgbatch__V1__CpuOutput *spec, const ib_meta_keep *meta) {
  ib_jpeg_options o = {.meta = meta,
                       .quality = -1,
                       .subsampling = (int)spec->subsampling - 1,
                       .progressive = spec->progressive,
                       .optimize = spec->optimize};
  if (spec->quality_present_case == IMGBATCH__V1__CPU_OUTPUT__QUALITY_PRESENT_QUALITY)
    o.quality = (int)spec->quality;
  return o;
}

static ib_status encode_vips(const uint8_t *px, const ib_image *im, ib_mode mode,
                             const Imgbatch__V1__CpuOutput *spec, const ib_meta_keep *meta,
                             uint8_t **out, size_t *len, ib_error *err) {
  ib_status st = ib_codec_init(err);
  if (st != IB_OK) return st;
  size_t size = (size_t)im->width * im->height * ib_mode_bands(mode);
  VipsImage *img = vips_image_new_from_memory(px, size, (int)im->width, (int)im->height,
                                              (int)ib_mode_bands(mode), VIPS_FORMAT_UCHAR);
  if (!img) return fail_vips(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode source");
  img->Type = interpretation_of(mode);
  void *buf = NULL;
  size_t n = 0;
  int rc = -1;
  const char *name = "tiff";
  bool has_q = spec->quality_present_case == IMGBATCH__V1__CPU_OUTPUT__QUALITY_PRESENT_QUALITY;
  if (spec->format == IMGBATCH__V1__FORMAT__WEBP) {
    /* Pillow's WebP default quality is 80. */
    name = "webp";
    /* The container is rewritten after (webp_meta.h): no EXIF of
     * libvips' own, the kept metadata as read. */
    rc = vips_webpsave_buffer(img, &buf, &n, "Q", has_q ? (int)spec->quality : 80, "lossless",
                              spec->lossless ? TRUE : FALSE, "strip", TRUE, NULL);
  } else {
    rc = vips_tiffsave_buffer(img, &buf, &n, NULL);
  }
  g_object_unref(img);
  if (rc != 0) return fail_vips(err, IB_INTERNAL, IB_STAGE_ENCODE, name);
  if (spec->format == IMGBATCH__V1__FORMAT__WEBP) {
    uint8_t *with = NULL;
    size_t wn = 0;
    int wrc =
        ib_webp_add_meta(buf, n, ib_mode_bands(mode) == 4, im->width, im->height, meta, &with, &wn);
    g_free(buf);
    if (wrc != 0)
      return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode webp: metadata chunks");
    buf = with, n = wn;
  }
  *out = buf;
  *len = n;
  return IB_OK;
}

ib_status ib_codec_encode(const ib_image *im, const Imgbatch__V1__CpuOutput *spec,
                          const ib_meta_keep *meta, uint8_t **out, size_t *len, ib_error *err) {
  size_t size = ib_image_bytes(im);
  Imgbatch__V1__Format format = spec ? spec->format : IMGBATCH__V1__FORMAT__RAW;
  if (format == IMGBATCH__V1__FORMAT__RAW) {
    *out = g_malloc(size ? size : 1);
    memcpy(*out, im->data, size);
    *len = size;
    return IB_OK;
  }
  ib_status st = ib_output_check(spec, im->mode, IB_STAGE_ENCODE, err);
  if (st != IB_OK) return st;
  unsigned bands = ib_mode_bands(im->mode);
  if (format == IMGBATCH__V1__FORMAT__JPEG) {
    ib_jpeg_options o = jpeg_options(spec, meta);
    return ib_jpeg_encode(im->data, im->width, im->height, im->mode, (size_t)im->width * bands, &o,
                          out, len, err);
  }
  /* PNG through libdeflate (png_encode.h: faster than libvips), at the
   * level ib_output_check bounded to 0..9 (0: zlib's default, 6). */
  if (format == IMGBATCH__V1__FORMAT__PNG)
    return ib_png_encode(im->data, im->width, im->height, bands, (size_t)im->width * bands,
                         spec->compression ? (int)spec->compression : 6, meta, out, len, err);
  ib_mode mode = ib_output_mode(spec, im->mode);
  if (mode == im->mode) return encode_vips(im->data, im, mode, spec, meta, out, len, err);
  uint8_t *px = pixels_as(im, mode);
  if (!px) return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode: out of memory");
  st = encode_vips(px, im, mode, spec, meta, out, len, err);
  g_free(px);
  return st;
}

void ib_codec_free(void *p) { g_free(p); }
