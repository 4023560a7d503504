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
 * (kernels/resample.cuh) runs a plan of one call (below).
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
      return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE, "op resize: box edge %d is NaN", i);
  if (b[0] < 0 || b[1] < 0)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: box offset (%g, %g) can't be negative", (double)b[0],
                      (double)b[1]);
  if (b[2] > (float)w || b[3] > (float)h)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: box (%g, %g) can't exceed the original %ux%u image", (double)b[2],
                      (double)b[3], w, h);
  if (b[2] - b[0] < 0 || b[3] - b[1] < 0)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: box (%g, %g, %g, %g) can't be empty", (double)b[0], (double)b[1],
                      (double)b[2], (double)b[3]);
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
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: reducing_gap %g: reduce factor (%g, %g) or box (%g, %g, %g, %g) "
                      "overflows a C int",
                      gap, fx, fy, rb[0], rb[1], rb[2], rb[3]);
  if (fx < 1 || fy < 1)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: reducing_gap %g: reduce factor (%g, %g): scale must be > 0", gap,
                      fx, fy);
  if (rb[2] <= rb[0] || rb[3] <= rb[1])
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: reducing_gap %g: reduce box (%g, %g, %g, %g) can't be empty", gap,
                      rb[0], rb[1], rb[2], rb[3]);
  p->reduce = true;
  p->fx = (int)fx;
  p->fy = (int)fy;
  for (int i = 0; i < 4; i++) p->rbox[i] = (int)rb[i];
  /* ImagingReduce's size in C int: (span + factor - 1) / factor. */
  int64_t rw = ((int64_t)p->rbox[2] - p->rbox[0] + p->fx - 1) / p->fx;
  int64_t rh = ((int64_t)p->rbox[3] - p->rbox[1] + p->fy - 1) / p->fy;
  if (rw > 2147483647 || rh > 2147483647)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
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
    return ib_op_fail(err, IB_UNSUPPORTED, IB_STAGE_VALIDATE,
                      "op resize: resample %d is not a filter this worker knows", (int)r->resample);
  if (has_gap(r) && !(r->reducing_gap >= 1.0))
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
                      "op resize: reducing_gap %g: reducing_gap must be 1.0 or greater",
                      r->reducing_gap);
  if (r->width == 0 || r->height == 0)
    return ib_op_fail(err, IB_INVALID, IB_STAGE_VALIDATE,
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
  if (!xtab) return ib_op_fail(err, IB_INTERNAL, IB_STAGE_EXECUTE, "op resize: out of memory");
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

/* A convolution filter: a multi-pass head (kernels/resample.cuh) for a
 * plan of one _resize call, its parameters ib_resample_params
 * (kernels/resample.h) and its weight tables built here exactly as
 * op_resample.c builds them. What the head runs for the call (`dev_call`):
 * the crop _resize takes for an integral box of the output's size (also the
 * whole-image copy), else ImagingResampleInner's passes, each skipped as
 * resample() skips it. */
typedef struct dev_call {
  ib_resample_params q;
  int filter;
  bool need_h, need_v;
  ib_resize_call c;
  size_t words; /* int32 words of the tables */
  size_t w_off; /* word offset of the double scratch ib_resample_coeffs uses */
  int kmax;
} dev_call;

/* Input 0's shape; a node outside a graph (none in a job) has none. */
static const ib_shape *input_shape(const ib_node *node) {
  return node->graph && node->n_inputs >= 1 ? &node->graph->nodes[node->inputs[0]].shape : NULL;
}

/* The device layout of a plan that dev() admitted (one call, no reduce). */
static void dev_layout(const ib_resize_plan *p, dev_call *d) {
  memset(d, 0, sizeof *d);
  d->filter = p->filter;
  d->c = p->call[0];
  const ib_resize_call *c = &d->c;
  const float *b = c->box;
  if (p->copy) {
    d->q.passes = IB_RSP_CROP;
    return;
  }
  if (b[0] - (int)b[0] == 0 && b[2] - b[0] == (float)c->out_w && b[1] - (int)b[1] == 0 &&
      b[3] - b[1] == (float)c->out_h) {
    d->q.passes = IB_RSP_CROP;
    d->q.crop_x = (int)b[0];
    d->q.crop_y = (int)b[1];
    return;
  }
  d->need_h = c->out_w != c->in_w || b[0] != 0 || b[2] != (float)c->out_w;
  d->need_v = c->out_h != c->in_h || b[1] != 0 || b[3] != (float)c->out_h;
  d->q.passes = (d->need_h ? IB_RSP_H : 0) | (d->need_v ? IB_RSP_V : 0);
  d->q.ksize_y = ib_resample_ksize(p->filter, b[1], b[3], (int)c->out_h);
  d->q.yb = 0;
  d->q.yk = 2 * (int32_t)c->out_h;
  size_t words = (size_t)2 * c->out_h + (size_t)c->out_h * d->q.ksize_y;
  d->kmax = d->q.ksize_y;
  if (d->need_h) {
    d->q.ksize_x = ib_resample_ksize(p->filter, b[0], b[2], (int)c->out_w);
    d->q.xb = (int32_t)words;
    d->q.xk = d->q.xb + 2 * (int32_t)c->out_w;
    words += (size_t)2 * c->out_w + (size_t)c->out_w * d->q.ksize_x;
    if (d->q.ksize_x > d->kmax) d->kmax = d->q.ksize_x;
  }
  d->words = words;
  d->w_off = (words + 3) & ~(size_t)3;
}

/* The y tables and first / rows: the vertical weights first, as
 * resample() builds them (`w` holds kmax doubles). */
static void dev_y_tables(dev_call *d, int32_t *t, double *w) {
  const ib_resize_call *c = &d->c;
  ib_resample_coeffs(d->filter, (int)c->in_h, c->box[1], c->box[3], (int)c->out_h, d->q.ksize_y,
                     t + d->q.yb, t + d->q.yk, w);
  const int32_t *yb = t + d->q.yb;
  const int first = yb[0], last = yb[2 * (c->out_h - 1)] + yb[2 * (c->out_h - 1) + 1];
  d->q.first = first;
  d->q.rows = last - first;
}

static ib_status dev_plan(const ib_node *node, const ib_shape *in, dev_call *d, ib_error *err) {
  if (!in)
    return ib_op_fail(err, IB_INTERNAL, IB_STAGE_ADMIT,
                      "backend cuda: op resize: a filtered resize's node has no input shape");
  ib_resize_plan p;
  ib_status st = resize_plan(node->pb->resize, in, &p, err);
  if (st != IB_OK) return st;
  dev_layout(&p, d);
  return IB_OK;
}

static size_t resample_extra_bytes(const ib_node *node) {
  dev_call d;
  ib_error err = {0};
  if (dev_plan(node, input_shape(node), &d, &err) != IB_OK || !(d.q.passes & ~IB_RSP_CROP))
    return 0;
  return (d.w_off + (size_t)2 * d.kmax) * sizeof(int32_t);
}

static void resample_fill_extra(const ib_node *node, const ib_shape *in, uint8_t *extra) {
  dev_call d;
  ib_error err = {0};
  if (dev_plan(node, in, &d, &err) != IB_OK || !(d.q.passes & ~IB_RSP_CROP)) return;
  int32_t *t = (int32_t *)(void *)extra;
  double *w = (double *)(void *)(t + d.w_off);
  dev_y_tables(&d, t, w);
  if (d.need_h) {
    if (d.need_v)
      for (uint32_t i = 0; i < d.c.out_h; i++) t[d.q.yb + 2 * i] -= d.q.first;
    ib_resample_coeffs(d.filter, (int)d.c.in_w, d.c.box[0], d.c.box[2], (int)d.c.out_w, d.q.ksize_x,
                       t + d.q.xb, t + d.q.xk, w);
  }
}

static void resample_fill(const ib_gstep *s, const ib_node *node, uint8_t *p) {
  (void)s;
  dev_call d;
  ib_error err = {0};
  memset(p, 0, sizeof(ib_resample_params));
  if (dev_plan(node, input_shape(node), &d, &err) != IB_OK) return;
  if (d.q.passes & ~IB_RSP_CROP) {
    /* first / rows come from the y bounds: built once more here */
    const size_t n = d.w_off + (size_t)2 * d.kmax;
    int32_t *t = malloc(n * sizeof *t);
    if (!t) return; /* dev() built the same tables: unreachable in practice */
    dev_y_tables(&d, t, (double *)(void *)(t + d.w_off));
    free(t);
  }
  memcpy(p, &d.q, sizeof d.q);
}

/* Scratch: the horizontal pass's out_w x rows image when both passes run. */
static size_t resample_scratch(const ib_node *node, const ib_shape *in) {
  dev_call d;
  ib_error err = {0};
  if (dev_plan(node, in, &d, &err) != IB_OK || !d.need_h || !d.need_v) return 0;
  const size_t n = d.w_off + (size_t)2 * d.kmax;
  int32_t *t = malloc(n * sizeof *t);
  if (!t) return 0;
  dev_y_tables(&d, t, (double *)(void *)(t + d.w_off));
  free(t);
  return (size_t)d.c.out_w * (size_t)d.q.rows * ib_mode_bands(in->mode);
}

/* The horizontal launch over the largest job's out_w x rows (when any job
 * runs it), then the vertical (or crop) launch over the largest output. */
static int resample_plan(const ib_dev_group *g, ib_dev_launch *out) {
  uint64_t h_items = 0, v_items = 0;
  for (size_t i = 0; i < g->n_jobs; i++) {
    ib_dev_job j;
    g->job(g, i, &j);
    ib_resample_params q;
    memcpy(&q, j.params, sizeof q);
    const uint64_t hi = (uint64_t)j.width * (uint64_t)(q.rows > 0 ? q.rows : 0);
    const uint64_t vi = (uint64_t)j.width * j.height;
    if ((q.passes & IB_RSP_H) && !(q.passes & IB_RSP_CROP) && hi > h_items) h_items = hi;
    if ((q.passes & (IB_RSP_V | IB_RSP_CROP)) && vi > v_items) v_items = vi;
  }
  int k = 0;
  if (h_items)
    out[k++] = (ib_dev_launch){.kernel = IB_RESAMPLE_K_H,
                               .blocks = (h_items + g->threads - 1) / g->threads};
  if (v_items)
    out[k++] = (ib_dev_launch){.kernel = IB_RESAMPLE_K_V,
                               .blocks = (v_items + g->threads - 1) / g->threads};
  return k;
}

static const ib_dev_passes resample_passes = {
    .kernels = {[IB_RESAMPLE_K_H] = {"ib_resample_h", 0}, [IB_RESAMPLE_K_V] = {"ib_resample_v", 0}},
    .n_kernels = 2,
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

/* NEAREST: the gather head. A filter: the multi-pass head for a plan of one
 * call; reducing_gap's reduce step and the tall-image two-call rule have no
 * device sequence yet and are refused by name. */
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
    return ib_op_fail(err, IB_INTERNAL, IB_STAGE_ADMIT,
                      "backend cuda: op resize (mode %s): resample %s: the node has no input shape",
                      mode, name);
  ib_resize_plan p;
  ib_status st = resize_plan(node->pb->resize, in, &p, err);
  if (st != IB_OK) return st;
  if (p.reduce)
    return ib_op_fail(err, IB_UNSUPPORTED, IB_STAGE_ADMIT,
                      "backend cuda: op resize (mode %s): resample %s: reducing_gap's reduce step "
                      "(factor %dx%d) has no device kernel yet",
                      mode, name, p.fx, p.fy);
  if (!p.copy && p.n_calls != 1)
    return ib_op_fail(err, IB_UNSUPPORTED, IB_STAGE_ADMIT,
                      "backend cuda: op resize (mode %s): resample %s: the tall-image two-call "
                      "resize (height > 100 x width) has no device sequence yet",
                      mode, name);
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
