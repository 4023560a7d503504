/* jpeg_decode.c - JPEG decoded through libjpeg as Pillow decodes it, at
 * full size or a draft's scale (see jpeg_decode.h). */
#include "codec/jpeg_decode.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "core/error.h"

/* libjpeg's error exits, the one warning that is fatal here and the scan
 * cap all leave through `jump`, with the kind and message kept. */
typedef struct reader_fail {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  ib_status status;
  char message[JMSG_LENGTH_MAX];
} reader_fail;

typedef struct jpeg_reader {
  struct jpeg_decompress_struct cinfo;
  reader_fail fail;
  struct jpeg_progress_mgr progress;
  const uint8_t *bytes;
  size_t len;
  unsigned scale;
  ib_shape shape;
  const ib_shape *want; /* NULL: header only */
  uint8_t *dst;
} jpeg_reader;

bool ib_jpeg_is(const uint8_t *b, size_t n) {
  return n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
}

static void fail_with(j_common_ptr c, ib_status st, const char *msg) {
  reader_fail *f = (reader_fail *)c->err;
  f->status = st;
  snprintf(f->message, sizeof f->message, "%s", msg);
  longjmp(f->jump, 1);
}

static void on_error(j_common_ptr c) {
  reader_fail *f = (reader_fail *)c->err;
  if (c->err->msg_code == JERR_NO_BACKING_STORE) {
    char msg[JMSG_LENGTH_MAX];
    snprintf(msg, sizeof msg, "coefficient buffers exceed the %lu MiB limit",
             IB_JPEG_MAX_MEMORY >> 20);
    fail_with(c, IB_LIMIT, msg);
  }
  c->err->format_message(c, f->message);
  f->status = c->err->msg_code == JERR_BAD_PRECISION ? IB_UNSUPPORTED : IB_DECODE;
  longjmp(f->jump, 1);
}

/* Warnings are dropped as Pillow drops them (its output_message does
 * nothing), but for the data running out: Pillow's suspending source then
 * waits for more and ImageFile.load calls the file truncated. Running out
 * is only noticed while rows are wanted (jpeg_finish_decompress, which
 * looks for the EOI, is not called), so a file that lacks its EOI decodes
 * exactly where Pillow's does: where the Huffman decoder's read-ahead
 * stays inside the data. */
static void on_message(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF)
    fail_with(c, IB_DECODE, "truncated: the data ends before the last row");
}

static void on_progress(j_common_ptr c) {
  j_decompress_ptr d = (j_decompress_ptr)c;
  if (d->input_scan_number > IB_JPEG_MAX_SCANS) {
    char msg[JMSG_LENGTH_MAX];
    snprintf(msg, sizeof msg, "more than %d scans", IB_JPEG_MAX_SCANS);
    fail_with(c, IB_LIMIT, msg);
  }
}

/* Pillow's rawmode for the file's component count (JpegImagePlugin SOF and
 * _open), as the out_color_space JpegDecode.c asks libjpeg for. */
static bool pick_mode(jpeg_reader *r) {
  struct jpeg_decompress_struct *c = &r->cinfo;
  switch (c->num_components) {
    case 1: r->shape.mode = IB_MODE_L, c->out_color_space = JCS_GRAYSCALE; break;
    case 3: r->shape.mode = IB_MODE_RGB, c->out_color_space = JCS_RGB; break;
    case 4: r->shape.mode = IB_MODE_CMYK, c->out_color_space = JCS_CMYK; break;
    default: return false;
  }
  return true;
}

/* Rows straight into dst; Pillow's "CMYK;I" unpacker inverts every byte. */
static void read_rows(jpeg_reader *r) {
  struct jpeg_decompress_struct *c = &r->cinfo;
  size_t stride = (size_t)c->output_width * (size_t)c->output_components;
  while (c->output_scanline < c->output_height) {
    JSAMPROW row = r->dst + (size_t)c->output_scanline * stride;
    if (jpeg_read_scanlines(c, &row, 1) != 1)
      fail_with((j_common_ptr)c, IB_DECODE, "no row returned");
  }
  if (r->shape.mode == IB_MODE_CMYK) {
    size_t n = stride * c->output_height;
    for (size_t i = 0; i < n; i++) r->dst[i] = (uint8_t)(255 - r->dst[i]);
  }
}

/* Everything libjpeg may longjmp out of happens in this one frame; what it
 * changes lives in *r, not in locals. */
static ib_status run(jpeg_reader *r, ib_error *err) {
  struct jpeg_decompress_struct *c = &r->cinfo;
  c->err = jpeg_std_error(&r->fail.pub);
  r->fail.pub.error_exit = on_error;
  r->fail.pub.emit_message = on_message;
  if (setjmp(r->fail.jump)) {
    jpeg_destroy_decompress(c);
    char draft[24] = "";
    if (r->scale > 1) snprintf(draft, sizeof draft, " draft 1/%u", r->scale);
    return ib_error_set(err, r->fail.status, IB_STAGE_DECODE, "decode: jpeg%s: %s", draft,
                        r->fail.message);
  }
  jpeg_create_decompress(c);
  /* Past this, a multi-scan file's coefficient arrays would need libjpeg's
   * backing store, which this build lacks: JERR_NO_BACKING_STORE. */
  c->mem->max_memory_to_use = (long)IB_JPEG_MAX_MEMORY;
  r->progress.progress_monitor = on_progress;
  c->progress = &r->progress;
  jpeg_mem_src(c, r->bytes, (unsigned long)r->len);
  jpeg_read_header(c, TRUE);
  if (c->data_precision != 8 || !pick_mode(r)) {
    int comps = c->num_components, bits = c->data_precision;
    jpeg_destroy_decompress(c);
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_DECODE,
                        "decode: jpeg with %d components of %d bits not supported "
                        "(1, 3 or 4 of 8 bits)",
                        comps, bits);
  }
  c->scale_num = 1;
  c->scale_denom = r->scale;
  jpeg_calc_output_dimensions(c);
  r->shape.width = c->output_width;
  r->shape.height = c->output_height;
  if (!r->want) {
    jpeg_destroy_decompress(c);
    return IB_OK;
  }
  if (memcmp(&r->shape, r->want, sizeof r->shape) != 0)
    fail_with((j_common_ptr)c, IB_DECODE, "changed shape since its header");
  jpeg_start_decompress(c);
  if (c->output_width != r->shape.width || c->output_height != r->shape.height ||
      (unsigned)c->output_components != ib_mode_bands(r->shape.mode))
    fail_with((j_common_ptr)c, IB_INTERNAL, "libjpeg's output differs from its header");
  read_rows(r);
  jpeg_destroy_decompress(c);
  return IB_OK;
}

static ib_status check_scale(unsigned scale, ib_error *err) {
  if (scale == 1 || scale == 2 || scale == 4 || scale == 8) return IB_OK;
  return ib_error_set(err, IB_INVALID, IB_STAGE_DECODE,
                      "decode: jpeg scale 1/%u is not 1, 1/2, 1/4 or 1/8", scale);
}

ib_status ib_jpeg_header(const uint8_t *bytes, size_t len, unsigned scale, ib_shape *shape,
                         ib_error *err) {
  ib_status st = check_scale(scale, err);
  if (st != IB_OK) return st;
  jpeg_reader r;
  memset(&r, 0, sizeof r);
  r.bytes = bytes, r.len = len, r.scale = scale;
  if ((st = run(&r, err)) == IB_OK) *shape = r.shape;
  return st;
}

ib_status ib_jpeg_decode_into(const uint8_t *bytes, size_t len, unsigned scale,
                              const ib_shape *shape, uint8_t *dst, ib_error *err) {
  ib_status st = check_scale(scale, err);
  if (st != IB_OK) return st;
  jpeg_reader r;
  memset(&r, 0, sizeof r);
  r.bytes = bytes, r.len = len, r.scale = scale, r.want = shape, r.dst = dst;
  return run(&r, err);
}
