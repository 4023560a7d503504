/* jpeg_encode.c - JPEG out through libjpeg(-turbo) (see jpeg_encode.h). */
#include "codec/jpeg_encode.h"

#include <glib.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "codec/metadata.h"
#include "core/error.h"

/* A destination that grows one g_malloc'ed buffer, so the bytes are handed
 * out without a copy. */
typedef struct grow_dest {
  struct jpeg_destination_mgr pub;
  uint8_t *buf;
  size_t cap;
} grow_dest;

/* libjpeg's error exits land here (longjmp) with its message kept; its
 * warnings (emit_message) are dropped: the library prints nothing. */
typedef struct fail_jump {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} fail_jump;

static void dest_init(j_compress_ptr c) {
  grow_dest *d = (grow_dest *)c->dest;
  d->pub.next_output_byte = d->buf;
  d->pub.free_in_buffer = d->cap;
}

static boolean dest_grow(j_compress_ptr c) {
  grow_dest *d = (grow_dest *)c->dest;
  size_t used = d->cap;
  uint8_t *bigger = g_try_realloc(d->buf, d->cap * 2);
  if (!bigger) ERREXIT1(c, JERR_OUT_OF_MEMORY, 0);
  d->buf = bigger;
  d->cap *= 2;
  d->pub.next_output_byte = d->buf + used;
  d->pub.free_in_buffer = d->cap - used;
  return TRUE;
}

static void dest_term(j_compress_ptr c) { (void)c; }

static void on_error(j_common_ptr c) {
  fail_jump *f = (fail_jump *)c->err;
  c->err->format_message(c, f->message);
  longjmp(f->jump, 1);
}

static void on_message(j_common_ptr c, int level) { (void)c, (void)level; }

/* Pillow's sampling factors for its subsampling numbers (JpegEncode.c):
 * component 0 gets h x v, components 1 and 2 get 1 x 1; it writes all three
 * for any colour space (for CMYK too, leaving K as libjpeg set it). */
static void set_sampling(j_compress_ptr c, int subsampling) {
  static const int h0[3] = {1, 2, 2}, v0[3] = {1, 1, 2};
  if (subsampling < 0 || subsampling > 2) return;
  c->comp_info[0].h_samp_factor = h0[subsampling];
  c->comp_info[0].v_samp_factor = v0[subsampling];
  for (int k = 1; k < 3; k++) c->comp_info[k].h_samp_factor = c->comp_info[k].v_samp_factor = 1;
}

static void configure(j_compress_ptr c, uint32_t width, uint32_t height, ib_mode mode,
                      const ib_jpeg_options *opt) {
  c->image_width = width;
  c->image_height = height;
  switch (mode) {
    case IB_MODE_L: c->input_components = 1, c->in_color_space = JCS_GRAYSCALE; break;
    case IB_MODE_RGB: c->input_components = 3, c->in_color_space = JCS_RGB; break;
    case IB_MODE_RGBX: c->input_components = 4, c->in_color_space = JCS_EXT_RGBX; break;
    default: c->input_components = 4, c->in_color_space = JCS_CMYK; break;
  }
  jpeg_set_defaults(c);
  if (opt->quality != -1) jpeg_set_quality(c, opt->quality, TRUE);
  set_sampling(c, opt->subsampling);
  if (opt->progressive) jpeg_simple_progression(c);
  c->optimize_coding = opt->optimize ? TRUE : FALSE;
}

static const char XMP_NS[] = "http://ns.adobe.com/xap/1.0/";

/* One marker's payload is at most 65533 bytes: the EXIF after its 6-byte
 * header, the XMP after its namespace and NUL (Pillow refuses longer ones:
 * "EXIF data is too long", "XMP data is too long"). The ICC profile is
 * split over APP2 segments by libjpeg. */
static const char *meta_too_long(const ib_meta_keep *m) {
  if (!m) return NULL;
  if (m->exif_len > 65533 - 6) return "EXIF";
  if (m->xmp_len > 65533 - sizeof XMP_NS) return "XMP";
  return NULL;
}

static void write_meta(j_compress_ptr c, const ib_meta_keep *m) {
  if (!m) return;
  if (m->exif_len) {
    jpeg_write_m_header(c, JPEG_APP0 + 1, (unsigned)(6 + m->exif_len));
    for (size_t i = 0; i < 6; i++) jpeg_write_m_byte(c, "Exif\0\0"[i]);
    for (size_t i = 0; i < m->exif_len; i++) jpeg_write_m_byte(c, m->exif[i]);
  }
  if (m->xmp_len) {
    jpeg_write_m_header(c, JPEG_APP0 + 1, (unsigned)(sizeof XMP_NS + m->xmp_len));
    for (size_t i = 0; i < sizeof XMP_NS; i++) jpeg_write_m_byte(c, XMP_NS[i]);
    for (size_t i = 0; i < m->xmp_len; i++) jpeg_write_m_byte(c, m->xmp[i]);
  }
  if (m->icc_len) jpeg_write_icc_profile(c, m->icc, (unsigned)m->icc_len);
}

/* The compression itself, between setjmp and the caller's clean-up: the
 * locals that change after setjmp live in the caller. */
static int compress(struct jpeg_compress_struct *c, fail_jump *f, const uint8_t *px, uint32_t width,
                    uint32_t height, ib_mode mode, size_t stride, const ib_jpeg_options *opt,
                    uint8_t *row) {
  if (setjmp(f->jump)) return -1;
  configure(c, width, height, mode, opt);
  jpeg_start_compress(c, TRUE);
  write_meta(c, opt->meta);
  for (uint32_t y = 0; y < height; y++) {
    const uint8_t *src = px + y * stride;
    JSAMPROW line = (JSAMPROW)src;
    if (mode == IB_MODE_CMYK) {
      /* Pillow writes CMYK as "CMYK;I" (Adobe's inverted convention). */
      for (size_t i = 0; i < (size_t)width * 4; i++) row[i] = (uint8_t)(255 - src[i]);
      line = row;
    }
    jpeg_write_scanlines(c, &line, 1);
  }
  jpeg_finish_compress(c);
  return 0;
}

ib_status ib_jpeg_encode(const uint8_t *px, uint32_t width, uint32_t height, ib_mode mode,
                         size_t stride, const ib_jpeg_options *opt, uint8_t **out, size_t *len,
                         ib_error *err) {
  if (width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_ENCODE,
                        "encode jpeg: %ux%u exceeds JPEG's %d-pixel side", width, height,
                        (int)JPEG_MAX_DIMENSION);
  if (!width || !height ||
      (mode != IB_MODE_L && mode != IB_MODE_RGB && mode != IB_MODE_RGBX && mode != IB_MODE_CMYK))
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode jpeg: mode %s, %ux%u",
                        ib_mode_name(mode), width, height);
  const char *long_block = meta_too_long(opt->meta);
  if (long_block)
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_ENCODE,
                        "encode jpeg: the source's %s is longer than one JPEG marker holds "
                        "(Pillow refuses it too); use metadata STRIP",
                        long_block);
  struct jpeg_compress_struct c;
  fail_jump f;
  /* A tenth of the pixels' bytes holds a photo at Pillow's default
   * quality, so the buffer rarely grows. */
  size_t bands = mode == IB_MODE_L ? 1 : mode == IB_MODE_RGB ? 3 : 4;
  grow_dest d = {.cap = 4096 + (size_t)width * height * bands / 10};
  memset(&c, 0, sizeof c);
  f.message[0] = 0;
  c.err = jpeg_std_error(&f.pub);
  f.pub.error_exit = on_error;
  f.pub.emit_message = on_message;
  d.buf = g_try_malloc(d.cap);
  uint8_t *row = mode == IB_MODE_CMYK ? malloc((size_t)width * 4) : NULL;
  if (!d.buf || (mode == IB_MODE_CMYK && !row)) {
    g_free(d.buf);
    free(row);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode jpeg: out of memory");
  }
  int rc = -1;
  if (!setjmp(f.jump)) {
    jpeg_create_compress(&c);
    d.pub.init_destination = dest_init;
    d.pub.empty_output_buffer = dest_grow;
    d.pub.term_destination = dest_term;
    c.dest = &d.pub;
    rc = compress(&c, &f, px, width, height, mode, stride, opt, row);
  }
  size_t n = d.cap - d.pub.free_in_buffer;
  jpeg_destroy_compress(&c);
  free(row);
  if (rc != 0) {
    g_free(d.buf);
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ENCODE, "encode jpeg: %s",
                        f.message[0] ? f.message : "libjpeg failed");
  }
  *out = d.buf;
  *len = n;
  return IB_OK;
}
