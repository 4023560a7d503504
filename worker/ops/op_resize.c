/*
 * op_resize.c - Image.resize((width, height), resample, box, reducing_gap)
 * for every admitted mode and every filter.
 *
 * NEAREST: Pillow 12.3's path (Image.resize -> _imaging.c _resize ->
 * ImagingTransformAffine -> ImagingScaleAffine) is separable: one table per
 * axis maps an output index to a source index or to "zero"
 * (kernels/geometry.h ib_resize_axis_table), and
 * out(x, y) = xtab[x] < 0 || ytab[y] < 0 ? 0 : in(xtab[x], ytab[y]).
 *
 * BOX, BILINEAR, HAMMING, BICUBIC, LANCZOS: the calls Image.resize makes
 * (resize_plan, below) run by op_resample.c over kernels/resample.h and
 * kernels/reduce.h; on the CUDA backend a multi-pass head
 * (kernels/resample.cuh) runs the same plan (below).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/geometry.h"
#include "kernels/resample.h"
#include "ops/op.h"
#include "ops/op_geometry.h"
#include "ops/op_resize.h"
#include "model/graph.h"

static const char *const resample_names[] = {"NEAREST", "LANCZOS", "BILINEAR",
                                             "BICUBIC", "BOX",     "HAMMING"};

static bool has_box(const Imgbatch__V1__ResizeOp *r) {
  return r->box_present_case == IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX && r->box;
}

static bool has_gap(const Imgbatch__V1__ResizeOp *r) {
  return r->reducing_gap_present_case == IMGBATCH__V1__RESIZE_OP__REDUCING_GAP_PRESENT_REDUCING_GAP;
}

/* The box as Image.resize sees it (Python floats); no box means
 * (0, 0, width, height). */
static void python_box(const Imgbatch__V1__ResizeOp *r, const ib_shape *in, double b[4]) {
  if (has_box(r)) {
    b[0] = r->box->left;
    b[1] = r->box->top;
    b[2] = r->box->right;
    b[3] = r->box->bottom;
  } else {
    b[0] = b[1] = 0.0;
    b[2] = in->width;
    b[3] = in->height;
  }
}

/* The box as _resize holds it: PyArg "f", i.e. each double rounded to C
 * float. */
static void resize_box(const ib_node *node, const ib_shape *in, float box[4]) {
  double b[4];
  python_box(node->pb->resize, in, b);
  for (int i = 0; i < 4; i++) box[i] = (float)b[i];
}

/* _resize's checks, in its order and float arithmetic, against an input of
 * w x h. A NaN edge passes all of them in Pillow and then yields
 * platform-dependent pixels ((int)NaN), so it is rejected here as
 * IB_INVALID. */
static ib_status check_box(const float b[4], uint32_t w, uint32_t h, ib_error *err) {
  for (int i = 0; i < 4; i++)
    if (isnan(b[i]))
      return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE, "op resize: box edge %d is NaN", i);
  if (b[0] < 0 || b[1] < 0)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: box offset (%g, %g) can't be negative", (double)b[0],
                        (double)b[1]);
  if (b[2] > (float)w || b[3] > (float)h)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: box (%g, %g) can't exceed the original %ux%u image",
                        (double)b[2], (double)b[3], w, h);
  if (b[2] - b[0] < 0 || b[3] - b[1] < 0)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: box (%g, %g, %g, %g) can't be empty", (double)b[0],
                        (double)b[1], (double)b[2], (double)b[3]);
  return IB_OK;
}

static bool fits_int(double v) { return v >= -2147483648.0 && v <= 2147483647.0; }

/* reducing_gap's first step (Image.resize, Image._get_safe_box,
 * Image.reduce -> _imaging.c _reduce), in Python's double arithmetic:
 *   factor = int(box_span / size / reducing_gap) or 1, per axis;
 *   when either factor > 1: reduce_box = (max(0, int(left - s_x)),
 *     max(0, int(top - s_y)), min(W, ceil(right + s_x)), min(H, ceil(bottom + s_y)))
 *     with s = (support - 0.5) * box_span / size, the image reduced over it,
 *   and the box moved into the reduced image: (edge - reduce_box edge) / factor.
 * Pillow raises OverflowError for a factor or box past a C int and
 * ValueError for a factor below 1 or an empty reduce box. */
static ib_status plan_reduce(const Imgbatch__V1__ResizeOp *r, const ib_shape *in, double box[4],
                             ib_resize_plan *p, ib_error *err) {
  const double gap = r->reducing_gap, w = r->width, h = r->height;
  double fx = trunc((box[2] - box[0]) / w / gap), fy = trunc((box[3] - box[1]) / h / gap);
  if (fx == 0) fx = 1;
  if (fy == 0) fy = 1;
  if (!(fx > 1 || fy > 1)) return IB_OK;
  const double support = ib_resample_support(p->filter) - 0.5;
  const double sx = support * ((box[2] - box[0]) / w), sy = support * ((box[3] - box[1]) / h);
  const double rb[4] = {fmax(0, trunc(box[0] - sx)), fmax(0, trunc(box[1] - sy)),
                        fmin(in->width, ceil(box[2] + sx)), fmin(in->height, ceil(box[3] + sy))};
  if (!fits_int(fx) || !fits_int(fy) || !fits_int(rb[0]) || !fits_int(rb[1]) || !fits_int(rb[2]) ||
      !fits_int(rb[3]))
    return ib_error_set(
        err, IB_INVALID, IB_STAGE_VALIDATE,
        "op resize: reducing_gap %g: reduce factor (%g, %g) or box (%g, %g, %g, %g) "
        "overflows a C int",
        gap, fx, fy, rb[0], rb[1], rb[2], rb[3]);
  if (fx < 1 || fy < 1)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: reducing_gap %g: reduce factor (%g, %g): scale must be > 0",
                        gap, fx, fy);
  if (rb[2] <= rb[0] || rb[3] <= rb[1])
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: reducing_gap %g: reduce box (%g, %g, %g, %g) can't be empty",
                        gap, rb[0], rb[1], rb[2], rb[3]);
  p->reduce = true;
  p->fx = (int)fx;
  p->fy = (int)fy;
  for (int i = 0; i < 4; i++) p->rbox[i] = (int)rb[i];
  /* ImagingReduce's size in C int: (span + factor - 1) / factor. */
  int64_t rw = ((int64_t)p->rbox[2] - p->rbox[0] + p->fx - 1) / p->fx;
  int64_t rh = ((int64_t)p->rbox[3] - p->rbox[1] + p->fy - 1) / p->fy;
  if (rw > 2147483647 || rh > 2147483647)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: reducing_gap %g: reduce factor (%d, %d) overflows a C int", gap,
                        p->fx, p->fy);
  p->rw = (uint32_t)rw;
  p->rh = (uint32_t)rh;
  box[0] = (box[0] - p->rbox[0]) / p->fx;
  box[1] = (box[1] - p->rbox[1]) / p->fy;
  box[2] = (box[2] - p->rbox[0]) / p->fx;
  box[3] = (box[3] - p->rbox[1]) / p->fy;
  return IB_OK;
}

static ib_resize_call call_of(uint32_t in_w, uint32_t in_h, uint32_t out_w, uint32_t out_h,
                              double l, double t, double r, double b) {
  return (ib_resize_call){in_w, in_h, out_w, out_h, {(float)l, (float)t, (float)r, (float)b}};
}

/* Image.resize for a convolution filter, as the calls it makes (op_resize.h),
 * with every check Pillow makes on the way. */
static ib_status resize_plan(const Imgbatch__V1__ResizeOp *r, const ib_shape *in, ib_resize_plan *p,
                             ib_error *err) {
  memset(p, 0, sizeof *p);
  p->filter = (int)r->resample;
  const uint32_t w = r->width, h = r->height;
  double box[4];
  python_box(r, in, box);
  if (in->width == w && in->height == h && box[0] == 0 && box[1] == 0 && box[2] == in->width &&
      box[3] == in->height) {
    p->copy = true;
    return IB_OK;
  }
  p->premultiply = in->mode == IB_MODE_LA || in->mode == IB_MODE_RGBA;
  ib_status st;
  if (!p->premultiply && has_gap(r) && (st = plan_reduce(r, in, box, p, err)) != IB_OK) return st;
  const uint32_t cw = p->reduce ? p->rw : in->width, ch = p->reduce ? p->rh : in->height;
  if (ch > (uint64_t)cw * 100 && h < ch) {
    p->n_calls = 2;
    p->call[0] = call_of(cw, ch, cw, h, 0, box[1], cw, box[3]);
    p->call[1] = call_of(cw, h, w, h, box[0], 0, box[2], h);
  } else {
    p->n_calls = 1;
    p->call[0] = call_of(cw, ch, w, h, box[0], box[1], box[2], box[3]);
  }
  for (int i = 0; i < p->n_calls; i++)
    if ((st = check_box(p->call[i].box, p->call[i].in_w, p->call[i].in_h, err)) != IB_OK) return st;
  return IB_OK;
}

static ib_status resize_infer(const ib_node *node, const ib_shape *in, ib_shape *out,
                              ib_error *err) {
  ib_status st = ib_op_check_mode(node->op, &in[0], err);
  if (st != IB_OK) return st;
  const Imgbatch__V1__ResizeOp *r = node->pb->resize;
  unsigned f = (unsigned)r->resample;
  if (f >= sizeof resample_names / sizeof resample_names[0])
    return ib_error_set(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                        "op resize: resample %d is not a filter this worker knows",
                        (int)r->resample);
  if (has_gap(r) && !(r->reducing_gap >= 1.0))
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: reducing_gap %g: reducing_gap must be 1.0 or greater",
                        r->reducing_gap);
  if (r->width == 0 || r->height == 0)
    return ib_error_set(err, IB_INVALID, IB_STAGE_VALIDATE,
                        "op resize: size %ux%u: height and width must be > 0", r->width, r->height);
  if ((st = ib_geom_check_side(node, "width", r->width, err)) != IB_OK) return st;
  if ((st = ib_geom_check_side(node, "height", r->height, err)) != IB_OK) return st;
  if (f == IMGBATCH__V1__RESAMPLE__NEAREST) {
    float box[4];
    resize_box(node, &in[0], box);
    if ((st = check_box(box, in[0].width, in[0].height, err)) != IB_OK) return st;
  } else {
    ib_resize_plan plan;
    if ((st = resize_plan(r, &in[0], &plan, err)) != IB_OK) return st;
  }
  *out = (ib_shape){in[0].mode, r->width, r->height};
  return IB_OK;
}

/* NEAREST: the two axis tables the backend uploads. A filter: what
 * ib_resize_run allocates (copies, reduced and intermediate images, weight
 * tables), from the input's shape. */
static uint64_t resize_param_bytes(const ib_node *node) {
  const Imgbatch__V1__ResizeOp *r = node->pb->resize;
  uint64_t tables = ((uint64_t)r->width + r->height) * sizeof(int32_t);
  if (r->resample == IMGBATCH__V1__RESAMPLE__NEAREST || !node->graph || node->n_inputs < 1)
    return tables;
  const ib_shape *in = &node->graph->nodes[node->inputs[0]].shape;
  ib_resize_plan plan;
  ib_error err = {0};
  if (resize_plan(r, in, &plan, &err) != IB_OK) return tables;
  return ib_resize_scratch_bytes(&plan, ib_mode_bands(in->mode));
}

static ib_status resize_cpu(const ib_node *node, const ib_image *const *in, ib_image *out,
                            ib_error *err) {
  const ib_image *src = in[0];
  ib_shape shape = {src->mode, src->width, src->height};
  if (node->pb->resize->resample != IMGBATCH__V1__RESAMPLE__NEAREST) {
    ib_resize_plan plan;
    ib_status st = resize_plan(node->pb->resize, &shape, &plan, err);
    if (st != IB_OK) return st;
    return ib_resize_run(&plan, src, out, err);
  }
  float box[4];
  resize_box(node, &shape, box);
  int32_t *xtab = malloc(((size_t)out->width + out->height) * sizeof *xtab);
  if (!xtab) return ib_error_set(err, IB_INTERNAL, IB_STAGE_EXECUTE, "op resize: out of memory");
  int32_t *ytab = xtab + out->width;
  double scale, offset;
  ib_resize_axis_coeffs(box[0], box[2], out->width, &scale, &offset);
  ib_resize_axis_table(scale, offset, out->width, (int)src->width, xtab);
  ib_resize_axis_coeffs(box[1], box[3], out->height, &scale, &offset);
  ib_resize_axis_table(scale, offset, out->height, (int)src->height, ytab);

  unsigned bands = ib_mode_bands(out->mode);
  for (uint32_t y = 0; y < out->height; y++) {
    if (ytab[y] < 0) continue; /* stays zero */
    const uint8_t *srow = src->data + (size_t)ytab[y] * src->width * bands;
    uint8_t *row = out->data + (size_t)y * out->width * bands;
    for (uint32_t x = 0; x < out->width; x++)
      if (xtab[x] >= 0)
        ib_pixel_copy(row + (size_t)x * bands, srow + (size_t)xtab[x] * bands, bands);
  }
  free(xtab);
  return IB_OK;
}

/* Device step: a gather head (kernels/geometry.cuh) reading the two axis
 * tables resize_cpu builds, uploaded after the chain's shared block. */
static size_t resize_extra_bytes(const ib_node *node) {
  return ((size_t)node->shape.width + node->shape.height) * sizeof(int32_t);
}

static void resize_fill_extra(const ib_node *node, const ib_shape *in, uint8_t *extra) {
  float box[4];
  resize_box(node, in, box);
  int32_t *xtab = (int32_t *)(void *)extra, *ytab = xtab + node->shape.width;
  double scale, offset;
  ib_resize_axis_coeffs(box[0], box[2], node->shape.width, &scale, &offset);
  ib_resize_axis_table(scale, offset, node->shape.width, (int)in->width, xtab);
  ib_resize_axis_coeffs(box[1], box[3], node->shape.height, &scale, &offset);
  ib_resize_axis_table(scale, offset, node->shape.height, (int)in->height, ytab);
}

static const ib_dev_op resize_dev_op = {.tag = 'N',
                                        .role = IB_DEV_GATHER,
                                        .header = "geometry.cuh",
                                        .fn = "ib_head_resize",
                                        .extra_bytes = resize_extra_bytes,
                                        .fill_extra = resize_fill_extra};

/* A convolution filter: a multi-pass head (kernels/resample.cuh) running
 * the plan's whole sequence - reducing_gap's reduce step, one _resize call
 * or a tall image's two - as ib_resample_params (kernels/resample.h) lays
 * it out, with the weight tables of every pass that runs built here exactly
 * as op_resample.c builds them. A call runs the crop _resize takes for an
 * integral box of its output size (also the whole-image copy), else
 * ImagingResampleInner's passes, each skipped as resample() skips it. */
typedef struct dev_seq {
  ib_resample_params q;
  int filter;
  ib_resize_call c[2];
  size_t words;   /* int32 words of the tables */
  size_t w_off;   /* word offset of the double scratch ib_resample_coeffs uses */
  int kmax;       /* its doubles */
  size_t scratch; /* bytes of the job's scratch buffer */
} dev_seq;

/* Input 0's shape; a node outside a graph (none in a job) has none. */
static const ib_shape *input_shape(const ib_node *node) {
  return node->graph && node->n_inputs >= 1 ? &node->graph->nodes[node->inputs[0]].shape : NULL;
}

static bool is_crop(const ib_resize_call *c) {
  const float *b = c->box;
  return b[0] - (int)b[0] == 0 && b[2] - b[0] == (float)c->out_w && b[1] - (int)b[1] == 0 &&
         b[3] - b[1] == (float)c->out_h;
}

/* A quad table's word offset (ib_resample_quads: a multiple of 4, so the
 * kernels load its quads 16 bytes at a time), *words moved past it. */
static int32_t take_quads(size_t *words, uint32_t n_out, int ksize) {
  *words = (*words + 3) & ~(size_t)3;
  const int32_t at = (int32_t)*words;
  *words += ib_resample_quad_words((int)n_out, ksize);
  return at;
}

/* One call's passes, table offsets (from word `*words` on), for both
 * passes the rows the horizontal pass covers (ib_resample_bound of the
 * first and last output rows, as resample() takes them from its y table),
 * and a wide horizontal pass's tiling for `bands` bytes a pixel. */
static void dev_call(dev_seq *d, int ci, size_t *words, int bands) {
  const ib_resize_call *c = &d->c[ci];
  ib_rsp_call *k = &d->q.call[ci];
  const float *b = c->box;
  k->in_w = (int32_t)c->in_w, k->in_h = (int32_t)c->in_h;
  k->out_w = (int32_t)c->out_w, k->out_h = (int32_t)c->out_h;
  if (is_crop(c)) {
    k->passes = IB_RSP_CROP;
    k->crop_x = (int)b[0];
    k->crop_y = (int)b[1];
    return;
  }
  const bool need_h = c->out_w != c->in_w || b[0] != 0 || b[2] != (float)c->out_w;
  const bool need_v = c->out_h != c->in_h || b[1] != 0 || b[3] != (float)c->out_h;
  k->passes = (need_h ? IB_RSP_H : 0) | (need_v ? IB_RSP_V : 0);
  int lo0, n0, lo1, n1;
  ib_resample_bound(d->filter, (int)c->in_h, b[1], b[3], (int)c->out_h, 0, &lo0, &n0);
  ib_resample_bound(d->filter, (int)c->in_h, b[1], b[3], (int)c->out_h, (int)c->out_h - 1, &lo1,
                    &n1);
  k->first = need_v ? lo0 : 0;
  k->rows = need_v ? lo1 + n1 - lo0 : (int32_t)c->in_h;
  if (need_v) {
    k->ksize_y = ib_resample_ksize(d->filter, b[1], b[3], (int)c->out_h);
    k->yb = (int32_t)*words;
    k->yk = k->yb + 2 * (int32_t)c->out_h;
    *words += (size_t)2 * c->out_h + (size_t)c->out_h * k->ksize_y;
    if (k->ksize_y > d->kmax) d->kmax = k->ksize_y;
  }
  if (need_h) {
    k->ksize_x = ib_resample_ksize(d->filter, b[0], b[2], (int)c->out_w);
    k->xb = (int32_t)*words;
    k->xk = k->xb + 2 * (int32_t)c->out_w;
    *words += (size_t)2 * c->out_w + (size_t)c->out_w * k->ksize_x;
    if (k->ksize_x > d->kmax) d->kmax = k->ksize_x;
    ib_resample_tile_plan(d->filter, (int)c->in_w, b[0], b[2], (int)c->out_w, k->ksize_x, bands,
                          &k->tile_x, &k->tile_pitch, &k->tile_smem);
    if (k->tile_x > 0) k->xq = take_quads(words, c->out_w, k->ksize_x);
  }
  /* the vertical pass's quads, over the horizontal pass's four-row words */
  if (need_h && need_v) k->yq = take_quads(words, c->out_h, k->ksize_y);
}

/* The sequence's images: the reduced one at scratch offset 0, a tall
 * image's middle one after it, then the horizontal pass's rows (one region
 * for both calls: they run one after the other; where a vertical pass reads
 * them, four rows a word, ib_resample_tmp_at). */
static void dev_images(dev_seq *d, unsigned bands) {
  ib_resample_params *q = &d->q;
  uint64_t at = q->reduce ? (uint64_t)q->rw * (uint64_t)q->rh * bands : 0;
  const int src0 = q->reduce ? IB_RSI_SCRATCH : IB_RSI_SRC;
  q->call[0].src = src0;
  q->call[0].src_off = 0;
  q->call[0].dst = IB_RSI_OUT;
  if (q->n_calls == 2) {
    q->call[0].dst = IB_RSI_SCRATCH;
    q->call[0].dst_off = at;
    q->call[1].src = IB_RSI_SCRATCH;
    q->call[1].src_off = at;
    q->call[1].dst = IB_RSI_OUT;
    at += (uint64_t)d->c[0].out_w * d->c[0].out_h * bands;
  }
  uint64_t tmp = 0;
  at = (at + 15) & ~(uint64_t)15; /* the four-row words are loaded as words */
  for (int i = 0; i < q->n_calls; i++) {
    ib_rsp_call *k = &q->call[i];
    k->tmp_off = at;
    if ((k->passes & IB_RSP_H) && (k->passes & IB_RSP_V)) {
      const uint64_t t = (uint64_t)k->out_w * (uint64_t)ib_resample_tmp_rows(k->rows) * bands;
      if (t > tmp) tmp = t;
    }
  }
  d->scratch = (size_t)(at + tmp);
}

/* The device layout of a plan on an input of `in`. */
static void dev_layout(const ib_resize_plan *p, const ib_shape *in, dev_seq *d) {
  memset(d, 0, sizeof *d);
  d->filter = p->filter;
  ib_resample_params *q = &d->q;
  if (p->copy) { /* the whole image, as a crop at (0, 0) */
    const int32_t w = (int32_t)in->width, h = (int32_t)in->height;
    q->n_calls = 1;
    q->call[0] = (ib_rsp_call){.passes = IB_RSP_CROP,
                               .src = IB_RSI_SRC,
                               .dst = IB_RSI_OUT,
                               .in_w = w,
                               .in_h = h,
                               .out_w = w,
                               .out_h = h};
    return;
  }
  if (p->reduce) {
    q->reduce = 1;
    q->fx = p->fx, q->fy = p->fy;
    q->rbox[0] = p->rbox[0], q->rbox[1] = p->rbox[1];
    q->rbox[2] = p->rbox[2] - p->rbox[0], q->rbox[3] = p->rbox[3] - p->rbox[1];
    q->rw = (int32_t)p->rw, q->rh = (int32_t)p->rh;
  }
  q->n_calls = p->n_calls;
  size_t words = 0;
  for (int i = 0; i < p->n_calls; i++) {
    d->c[i] = p->call[i];
    dev_call(d, i, &words, (int)ib_mode_bands(in->mode));
  }
  d->words = words;
  d->w_off = (words + 1) & ~(size_t)1;
  dev_images(d, ib_mode_bands(in->mode));
}

static ib_status dev_plan(const ib_node *node, const ib_shape *in, dev_seq *d, ib_error *err) {
  memset(d, 0, sizeof *d); /* also on failure: GCC's Release build cannot see callers skip it */
  if (!in)
    return ib_error_set(err, IB_INTERNAL, IB_STAGE_ADMIT,
                        "backend cuda: op resize: a filtered resize's node has no input shape");
  ib_resize_plan p;
  ib_status st = resize_plan(node->pb->resize, in, &p, err);
  if (st != IB_OK) return st;
  dev_layout(&p, in, d);
  return IB_OK;
}

/* The tables, then room for kmax doubles that ib_resample_coeffs works in
 * (uploaded, unread: it saves an allocation that could fail here). */
static size_t resample_extra_bytes(const ib_node *node) {
  dev_seq d;
  ib_error err = {0};
  if (dev_plan(node, input_shape(node), &d, &err) != IB_OK || d.words == 0) return 0;
  return (d.w_off + (size_t)2 * d.kmax) * sizeof(int32_t);
}

static void resample_fill_extra(const ib_node *node, const ib_shape *in, uint8_t *extra) {
  dev_seq d;
  ib_error err = {0};
  if (dev_plan(node, in, &d, &err) != IB_OK || d.words == 0) return;
  int32_t *t = (int32_t *)(void *)extra;
  double *w = (double *)(void *)(t + d.w_off);
  for (int i = 0; i < d.q.n_calls; i++) {
    const ib_rsp_call *k = &d.q.call[i];
    const ib_resize_call *c = &d.c[i];
    if (k->passes & IB_RSP_V) {
      ib_resample_coeffs(d.filter, (int)c->in_h, c->box[1], c->box[3], (int)c->out_h, k->ksize_y,
                         t + k->yb, t + k->yk, w);
      if (k->passes & IB_RSP_H) {
        for (uint32_t y = 0; y < c->out_h; y++) t[k->yb + 2 * y] -= k->first;
        (void)ib_resample_quads(t + k->yb, t + k->yk, (int)c->out_h, k->ksize_y,
                                (uint32_t *)(void *)(t + k->yq));
      }
    }
    if (k->passes & IB_RSP_H)
      ib_resample_coeffs(d.filter, (int)c->in_w, c->box[0], c->box[2], (int)c->out_w, k->ksize_x,
                         t + k->xb, t + k->xk, w);
    /* a weight past three byte planes leaves the pass tap by tap */
    if ((k->passes & IB_RSP_H) && k->tile_x > 0)
      (void)ib_resample_quads(t + k->xb, t + k->xk, (int)c->out_w, k->ksize_x,
                              (uint32_t *)(void *)(t + k->xq));
  }
}

static void resample_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  dev_seq d;
  ib_error err = {0};
  if (dev_plan(node, input_shape(node), &d, &err) != IB_OK) memset(&d, 0, sizeof d);
  memcpy(p, &d.q, sizeof d.q);
}

/* Scratch: the reduced image, a tall image's middle one and the horizontal
 * pass's rows where both passes of a call run (dev_images). */
static size_t resample_scratch(const ib_node *node, const ib_shape *in) {
  dev_seq d;
  ib_error err = {0};
  return dev_plan(node, in, &d, &err) == IB_OK ? d.scratch : 0;
}

static ib_dev_launch launch_of(int kernel, uint64_t items, unsigned threads, int ci) {
  return (ib_dev_launch){.kernel = kernel,
                         .blocks = (items + threads - 1) / threads,
                         .n_args = kernel == IB_RESAMPLE_K_REDUCE ? 0 : 1,
                         .args = {ci}};
}

/* One call index's horizontal launches over a group: the pixel-parallel
 * pass's items (out_w x rows x ib_resample_h_lanes) and the tiled pass's
 * tiles and shared bytes, each the largest of the jobs that run it. */
typedef struct h_need {
  uint64_t items, tiles;
  uint32_t smem;
} h_need;

static void h_need_add(h_need *h, const ib_rsp_call *k) {
  if (!(k->passes & IB_RSP_H) || (k->passes & IB_RSP_CROP)) return;
  const uint64_t rows = (uint64_t)(k->rows > 0 ? k->rows : 0);
  const uint64_t items = (uint64_t)k->out_w * rows * (uint64_t)ib_resample_h_lanes(k->ksize_x);
  if (k->tile_x <= 0) {
    if (items > h->items) h->items = items;
    return;
  }
  const uint64_t tiles = (((uint64_t)k->out_w + (uint64_t)k->tile_x - 1) / (uint64_t)k->tile_x) *
                         ((rows + IB_RESAMPLE_TILE_ROWS - 1) / IB_RESAMPLE_TILE_ROWS);
  if (tiles > h->tiles) h->tiles = tiles;
  if ((uint32_t)k->tile_smem > h->smem) h->smem = (uint32_t)k->tile_smem;
}

/* A call's horizontal launches: the tiled kernel for the tiled calls when
 * the group may take their shared memory, else (counted slow) the
 * pixel-parallel kernel runs them too, over items for every job. */
static int h_launches(const ib_dev_group *g, int c, const h_need *h, uint64_t all_items,
                      ib_dev_launch *out) {
  const uint32_t small = g->smem_max < IB_RESAMPLE_TILE_SMEM ? g->smem_max : IB_RESAMPLE_TILE_SMEM;
  const bool tiled = h->tiles && h->smem <= small;
  int n = 0;
  const uint64_t items = tiled || !h->tiles ? h->items : all_items;
  if (items) {
    out[n] = launch_of(IB_RESAMPLE_K_H, items, g->threads, c);
    out[n].n_args = 2;
    out[n].args[1] = !tiled && h->tiles;
    out[n].slow = !tiled && h->tiles;
    n++;
  }
  if (tiled) {
    out[n] = launch_of(IB_RESAMPLE_K_HT, h->tiles, 1, c);
    out[n++].smem = h->smem;
  }
  return n;
}

/* In stream order: the reduce step over the largest reduced image (when
 * any job reduces), then per call the horizontal launches (h_launches) and
 * the vertical (or crop) launch over the largest output of the jobs that
 * run it (a thread a slice of a vertical window, ib_resample_v_slices). */
static int resample_plan(const ib_dev_group *g, ib_dev_launch *out) {
  uint64_t red = 0, v_items[2] = {0, 0}, all_items[2] = {0, 0};
  h_need h[2] = {{0}, {0}};
  for (size_t i = 0; i < g->n_jobs; i++) {
    ib_dev_job j;
    g->job(g, i, &j);
    ib_resample_params q;
    memcpy(&q, j.params, sizeof q);
    if (q.reduce && (uint64_t)q.rw * (uint64_t)q.rh > red) red = (uint64_t)q.rw * (uint64_t)q.rh;
    for (int c = 0; c < q.n_calls && c < 2; c++) {
      ib_rsp_call k = q.call[c];
      const uint64_t px = (uint64_t)k.out_w * (uint64_t)k.out_h;
      const uint64_t vi =
          k.passes & IB_RSP_CROP ? px : ib_resample_v_threads(px, k.ksize_y, k.passes & IB_RSP_H);
      if ((k.passes & (IB_RSP_V | IB_RSP_CROP)) && vi > v_items[c]) v_items[c] = vi;
      h_need_add(&h[c], &k);
      k.tile_x = 0; /* as the pixel-parallel pass would run it */
      h_need untiled = {all_items[c], 0, 0};
      h_need_add(&untiled, &k);
      all_items[c] = untiled.items;
    }
  }
  int n = 0;
  if (red) out[n++] = launch_of(IB_RESAMPLE_K_REDUCE, red, g->threads, 0);
  for (int c = 0; c < 2; c++) {
    n += h_launches(g, c, &h[c], all_items[c], out + n);
    if (v_items[c]) out[n++] = launch_of(IB_RESAMPLE_K_V, v_items[c], g->threads, c);
  }
  return n;
}

static const ib_dev_passes resample_passes = {
    .kernels = {[IB_RESAMPLE_K_H] = {"ib_resample_h", 0},
                [IB_RESAMPLE_K_V] = {"ib_resample_v", 0},
                [IB_RESAMPLE_K_REDUCE] = {"ib_resample_reduce", 0},
                [IB_RESAMPLE_K_HT] = {"ib_resample_ht", 0}},
    .n_kernels = 4,
    .plan = resample_plan,
    .scratch_bytes = resample_scratch,
};

static const ib_dev_op resample_dev_op = {.tag = 'H',
                                          .role = IB_DEV_PASSES,
                                          .header = "resample.cuh",
                                          .fill = resample_fill,
                                          .extra_bytes = resample_extra_bytes,
                                          .fill_extra = resample_fill_extra,
                                          .passes = &resample_passes};

/* NEAREST: the gather head. A filter: the multi-pass head, for every plan
 * Image.resize makes (a = 1 premultiplies LA / RGBA). */
static ib_status resize_dev(const ib_node *node, const int *in_modes, ib_gstep *s, ib_error *err) {
  unsigned f = (unsigned)node->pb->resize->resample;
  if (f == IMGBATCH__V1__RESAMPLE__NEAREST) {
    s->dev = &resize_dev_op;
    return IB_OK;
  }
  const char *mode = ib_mode_name((ib_mode)in_modes[0]);
  const char *name = f < sizeof resample_names / sizeof resample_names[0] ? resample_names[f] : "?";
  const ib_shape *in = input_shape(node);
  if (!in)
    return ib_error_set(
        err, IB_INTERNAL, IB_STAGE_ADMIT,
        "backend cuda: op resize (mode %s): resample %s: the node has no input shape", mode, name);
  ib_resize_plan p;
  ib_status st = resize_plan(node->pb->resize, in, &p, err);
  if (st != IB_OK) return st;
  s->dev = &resample_dev_op;
  s->a = p.premultiply && !p.copy;
  s->param_len = sizeof(ib_resample_params);
  return IB_OK;
}

const ib_op_desc ib_op_resize = {
    IB_OP_HEAD(resize),
    .infer = resize_infer,
    .param_bytes = resize_param_bytes,
    .cpu = resize_cpu,
    .dev = resize_dev,
    .dev_ops = (const ib_dev_op *const[]){&resize_dev_op, &resample_dev_op, NULL},
};
