/*
 * op_resample.c - the CPU run of a resize plan (op_resize.h): Image.resize
 * with a convolution filter, byte for byte as Pillow 12.3 does it, the pixel
 * math in kernels/resample.h and kernels/reduce.h.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/reduce.h"
#include "kernels/resample.h"
#include "ops/op.h"
#include "ops/op_geometry.h"
#include "ops/op_resize.h"

static size_t image_bytes(uint32_t w, uint32_t h, unsigned bands) { return (size_t)w * h * bands; }

static ib_status no_memory(ib_error *err) {
  return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "op resize: out of memory");
}

/* ImagingReduce over the box (l, t, r, b), 8-bit bands. */
static void reduce_image(const ib_image *in, int fx, int fy, const int rbox[4], ib_image *out) {
  const int bands = (int)ib_mode_bands(in->mode);
  const int box[4] = {rbox[0], rbox[1], rbox[2] - rbox[0], rbox[3] - rbox[1]};
  const int64_t stride = (int64_t)in->width * bands;
  for (uint32_t y = 0; y < out->height; y++)
    for (uint32_t x = 0; x < out->width; x++)
      ib_reduce_pixel(out->data + ((size_t)y * out->width + x) * bands, in->data, stride, bands,
                      (int)x, (int)y, fx, fy, box);
}

/* One axis's tables (ib_resample_coeffs) in one allocation. */
typedef struct axis_tables {
  int ksize;
  int32_t *bounds, *coeffs;
} axis_tables;

static bool axis_build(axis_tables *t, int filter, int n_in, float in0, float in1, int n_out) {
  t->ksize = ib_resample_ksize(filter, in0, in1, n_out);
  t->bounds = malloc(((size_t)2 * n_out + (size_t)n_out * t->ksize) * sizeof(int32_t));
  double *w = malloc((size_t)t->ksize * sizeof *w);
  if (!t->bounds || !w) {
    free(t->bounds);
    free(w);
    t->bounds = NULL;
    return false;
  }
  t->coeffs = t->bounds + 2 * (size_t)n_out;
  ib_resample_coeffs(filter, n_in, in0, in1, n_out, t->ksize, t->bounds, t->coeffs, w);
  free(w);
  return true;
}

static ib_resample_axis axis_of(const axis_tables *t) {
  return (ib_resample_axis){t->ksize, t->bounds, t->coeffs};
}

/* Rows `first` .. first + rows - 1 of `in`, resampled horizontally into tmp. */
static void pass_horizontal(const ib_image *in, int first, int rows, const axis_tables *t,
                            uint32_t out_w, uint8_t *tmp) {
  const int bands = (int)ib_mode_bands(in->mode);
  const ib_resample_axis ax = axis_of(t);
  for (int y = 0; y < rows; y++) {
    const uint8_t *row = in->data + (size_t)(y + first) * in->width * bands;
    uint8_t *o = tmp + (size_t)y * out_w * bands;
    for (uint32_t x = 0; x < out_w; x++)
      ib_resample_h_pixel(o + (size_t)x * bands, row, bands, (int)x, ax);
  }
}

static void pass_vertical(const uint8_t *in, uint32_t width, int bands, const axis_tables *t,
                          ib_image *out) {
  const ib_resample_axis ax = axis_of(t);
  const int64_t stride = (int64_t)width * bands;
  for (uint32_t y = 0; y < out->height; y++) {
    uint8_t *o = out->data + (size_t)y * width * bands;
    for (uint32_t x = 0; x < width; x++)
      ib_resample_v_pixel(o + (size_t)x * bands, in, stride, bands, (int)x, (int)y, ax);
  }
}

/* ImagingResampleInner: the vertical weights first; the horizontal pass
 * (when needed) only over the rows the vertical pass reads, into an 8-bit
 * image; a pass whose size is unchanged and whose box edges are 0 and the
 * size is skipped (Pillow compares the far edge with the output size). */
static ib_status resample(const ib_image *in, int filter, const ib_resize_call *c, ib_image *out,
                          ib_error *err) {
  const int bands = (int)ib_mode_bands(in->mode);
  const float *box = c->box;
  const bool need_h = c->out_w != in->width || box[0] != 0 || box[2] != (float)c->out_w;
  const bool need_v = c->out_h != in->height || box[1] != 0 || box[3] != (float)c->out_h;
  axis_tables v = {0}, h = {0};
  if (!axis_build(&v, filter, (int)in->height, box[1], box[3], (int)c->out_h))
    return no_memory(err);
  const int first = v.bounds[0];
  const int last = v.bounds[2 * (c->out_h - 1)] + v.bounds[2 * (c->out_h - 1) + 1];
  const uint8_t *src = in->data;
  uint8_t *tmp = NULL;
  uint32_t width = in->width, rows = in->height;
  if (need_h) {
    if (!axis_build(&h, filter, (int)in->width, box[0], box[2], (int)c->out_w)) {
      free(v.bounds);
      return no_memory(err);
    }
    for (uint32_t i = 0; i < c->out_h; i++) v.bounds[2 * i] -= first;
    width = c->out_w;
    rows = (uint32_t)(last - first);
    tmp = malloc(image_bytes(width, rows, bands) + 1);
    if (!tmp) {
      free(v.bounds);
      free(h.bounds);
      return no_memory(err);
    }
    pass_horizontal(in, first, (int)rows, &h, width, tmp);
    free(h.bounds);
    src = tmp;
  }
  ib_status st = IB_OK;
  if (need_v)
    pass_vertical(src, width, bands, &v, out);
  else if (rows == out->height && width == out->width)
    memcpy(out->data, src, image_bytes(width, rows, bands));
  else /* an unchanged axis reads exactly its rows (Pillow would return a wrong-sized image) */
    st = ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE,
                      "op resize: pass skipped over %u rows for %u", rows, out->height);
  free(tmp);
  free(v.bounds);
  return st;
}

/* _resize: an integral box of the output's size is ImagingCrop; otherwise
 * ImagingResample. */
static ib_status core_resize(const ib_image *in, int filter, const ib_resize_call *c, ib_image *out,
                             ib_error *err) {
  const float *b = c->box;
  if (b[0] - (int)b[0] == 0 && b[2] - b[0] == (float)c->out_w && b[1] - (int)b[1] == 0 &&
      b[3] - b[1] == (float)c->out_h) {
    ib_geom_copy_window(in, out, (int)b[0], (int)b[1]);
    return IB_OK;
  }
  return resample(in, filter, c, out, err);
}

static bool image_new(ib_image *im, ib_mode mode, uint32_t w, uint32_t h) {
  *im = (ib_image){.mode = mode, .width = w, .height = h};
  im->data = malloc(image_bytes(w, h, ib_mode_bands(mode)) + 1);
  return im->data != NULL;
}

ib_status ib_resize_run(const ib_resize_plan *p, const ib_image *src, ib_image *out,
                        ib_error *err) {
  const int bands = (int)ib_mode_bands(src->mode);
  if (p->copy) {
    memcpy(out->data, src->data, image_bytes(src->width, src->height, bands));
    return IB_OK;
  }
  ib_image pm = {0}, red = {0}, mid = {0};
  const ib_image *cur = src;
  ib_status st = IB_OK;
  if (p->premultiply) {
    if (!image_new(&pm, src->mode, src->width, src->height)) return no_memory(err);
    size_t n = (size_t)src->width * src->height;
    memcpy(pm.data, src->data, n * bands);
    for (size_t i = 0; i < n; i++) ib_premultiply_px(pm.data + i * bands, bands);
    cur = &pm;
  }
  if (p->reduce) {
    if (!image_new(&red, src->mode, p->rw, p->rh)) {
      st = no_memory(err);
      goto done;
    }
    reduce_image(cur, p->fx, p->fy, p->rbox, &red);
    cur = &red;
  }
  if (p->n_calls == 2) {
    if (!image_new(&mid, src->mode, p->call[0].out_w, p->call[0].out_h)) {
      st = no_memory(err);
      goto done;
    }
    if ((st = core_resize(cur, p->filter, &p->call[0], &mid, err)) != IB_OK) goto done;
    cur = &mid;
  }
  if ((st = core_resize(cur, p->filter, &p->call[p->n_calls - 1], out, err)) != IB_OK) goto done;
  if (p->premultiply) {
    size_t n = (size_t)out->width * out->height;
    for (size_t i = 0; i < n; i++) ib_unpremultiply_px(out->data + i * bands, bands);
  }
done:
  free(pm.data);
  free(red.data);
  free(mid.data);
  return st;
}

/* One call's tables and horizontal-pass image, at most. */
static uint64_t call_scratch(const ib_resize_call *c, int filter, unsigned bands) {
  uint64_t kv = (uint64_t)ib_resample_ksize(filter, c->box[1], c->box[3], (int)c->out_h);
  uint64_t kh = (uint64_t)ib_resample_ksize(filter, c->box[0], c->box[2], (int)c->out_w);
  uint64_t tables = 4 * ((2 + kv) * c->out_h + (2 + kh) * c->out_w) + 8 * (kv > kh ? kv : kh);
  return tables + (uint64_t)c->out_w * c->in_h * bands;
}

uint64_t ib_resize_scratch_bytes(const ib_resize_plan *p, unsigned bands) {
  if (p->copy) return 0;
  uint64_t n = 0;
  const ib_resize_call *c0 = &p->call[0];
  if (p->premultiply) n += (uint64_t)c0->in_w * c0->in_h * bands;
  if (p->reduce) n += (uint64_t)p->rw * p->rh * bands;
  if (p->n_calls == 2) n += (uint64_t)c0->out_w * c0->out_h * bands;
  uint64_t a = call_scratch(c0, p->filter, bands);
  uint64_t b = p->n_calls == 2 ? call_scratch(&p->call[1], p->filter, bands) : 0;
  return n + (a > b ? a : b);
}
