/*
 * jobgen.h - builds imgbatch.v1.Job messages in C for the GPU parity check
 * and the benchmark (the device machine has no Python protobuf): random raw
 * sources and random graphs over the ops that exist, packed and parsed with
 * ib_graph_parse exactly as a worker would (or handed out packed by jg_pack).
 * Header-only, tools only.
 */
#ifndef IB_TOOLS_JOBGEN_H
#define IB_TOOLS_JOBGEN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgbatch.h"
#include "model/graph.h"
#include "ops/op.h"
#include "proto/imgbatch.pb-c.h"

typedef struct jg_rng {
  uint64_t s;
} jg_rng;
static inline uint32_t jg_u32(jg_rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return (uint32_t)(r->s >> 16);
}
static inline uint32_t jg_below(jg_rng *r, uint32_t n) { return n ? jg_u32(r) % n : 0; }
static inline double jg_unit(jg_rng *r) { return (double)jg_u32(r) / 4294967296.0; }

/* Bump arena: everything one job's message points to. */
typedef struct jg_arena {
  uint8_t *p;
  size_t used, cap;
} jg_arena;
static inline void *jg_alloc(jg_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (a->used + n > a->cap) {
    fprintf(stderr, "jobgen: arena full\n");
    abort();
  }
  void *r = a->p + a->used;
  a->used += n;
  memset(r, 0, n);
  return r;
}

typedef struct jg_job {
  jg_arena *a;
  Imgbatch__V1__Job job;
  Imgbatch__V1__Node *nodes[64];
  Imgbatch__V1__Source *extra[8];
  ib_shape shape[64]; /* our own tracking of node output shapes (approximate) */
} jg_job;

static inline Imgbatch__V1__Source *jg_raw(jg_job *j, jg_rng *r, ib_mode m, uint32_t w,
                                           uint32_t h) {
  Imgbatch__V1__Source *s = jg_alloc(j->a, sizeof *s);
  imgbatch__v1__source__init(s);
  Imgbatch__V1__RawImage *raw = jg_alloc(j->a, sizeof *raw);
  imgbatch__v1__raw_image__init(raw);
  raw->mode = (char *)ib_mode_name(m);
  raw->width = w;
  raw->height = h;
  size_t n = (size_t)w * h * ib_mode_bands(m);
  raw->data.len = n;
  raw->data.data = jg_alloc(j->a, n ? n : 1);
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = jg_u32(r);
    for (size_t k = 0; k < 4 && i + k < n; k++) raw->data.data[i + k] = (uint8_t)(v >> (8 * k));
  }
  s->kind_case = IMGBATCH__V1__SOURCE__KIND_RAW;
  s->raw = raw;
  return s;
}

/* Node 0 reads source 0. */
static inline void jg_begin(jg_job *j, jg_arena *a, jg_rng *r, ib_mode m, uint32_t w, uint32_t h,
                            uint64_t key) {
  a->used = 0;
  memset(j, 0, sizeof *j);
  j->a = a;
  imgbatch__v1__job__init(&j->job);
  j->job.input_key_case = IMGBATCH__V1__JOB__INPUT_KEY_KEY_U64;
  j->job.key_u64 = key;
  j->job.source = jg_raw(j, r, m, w, h);
  j->job.nodes = j->nodes;
  j->job.extra_sources = j->extra;
  Imgbatch__V1__Node *n = jg_alloc(a, sizeof *n);
  imgbatch__v1__node__init(n);
  n->op_case = IMGBATCH__V1__NODE__OP_SOURCE;
  n->source = jg_alloc(a, sizeof *n->source);
  imgbatch__v1__source_op__init(n->source);
  j->nodes[j->job.n_nodes++] = n;
  j->shape[0] = (ib_shape){m, w, h};
}

/* Appends a node reading `in0` (and `in1` when >= 0); returns it. */
static inline Imgbatch__V1__Node *jg_node(jg_job *j, Imgbatch__V1__Node__OpCase op, int in0,
                                          int in1) {
  Imgbatch__V1__Node *n = jg_alloc(j->a, sizeof *n);
  imgbatch__v1__node__init(n);
  n->op_case = op;
  n->n_inputs = in1 >= 0 ? 2 : 1;
  n->inputs = jg_alloc(j->a, 2 * sizeof(uint32_t));
  n->inputs[0] = (uint32_t)in0;
  n->inputs[1] = (uint32_t)(in1 >= 0 ? in1 : 0);
  j->nodes[j->job.n_nodes++] = n;
  return n;
}

/* A second source as a node: returns its node index. */
static inline int jg_extra(jg_job *j, jg_rng *r, ib_mode m, uint32_t w, uint32_t h) {
  j->extra[j->job.n_extra_sources++] = jg_raw(j, r, m, w, h);
  Imgbatch__V1__Node *n = jg_alloc(j->a, sizeof *n);
  imgbatch__v1__node__init(n);
  n->op_case = IMGBATCH__V1__NODE__OP_SOURCE;
  n->source = jg_alloc(j->a, sizeof *n->source);
  imgbatch__v1__source_op__init(n->source);
  n->source->index = (uint32_t)j->job.n_extra_sources;
  int idx = (int)j->job.n_nodes;
  j->nodes[j->job.n_nodes++] = n;
  j->shape[idx] = (ib_shape){m, w, h};
  return idx;
}

/* The serialized Job (malloc'd, owned by the caller; NULL when out of
 * memory), as a producer would send it: for parsing elsewhere. */
static inline uint8_t *jg_pack(jg_job *j, size_t *len) {
  *len = imgbatch__v1__job__get_packed_size(&j->job);
  uint8_t *buf = malloc(*len ? *len : 1);
  if (buf) imgbatch__v1__job__pack(&j->job, buf);
  return buf;
}

/* Packs and parses: NULL with err filled when validation refuses it. */
static inline ib_graph *jg_finish(jg_job *j, ib_error *err) {
  size_t len = 0;
  uint8_t *buf = jg_pack(j, &len);
  if (!buf) {
    *err = (ib_error){.status = IB_INTERNAL, .stage = IB_STAGE_PARSE};
    snprintf(err->message, sizeof err->message, "jobgen: out of memory packing a job");
    return NULL;
  }
  ib_graph *g = NULL;
  ib_graph_limits lim = {0};
  ib_key key = {0};
  ib_status st = ib_graph_parse(buf, len, &lim, &g, &key, err);
  ib_key_clear(&key);
  free(buf);
  return st == IB_OK ? g : NULL;
}

/* ------------------------------------------------------------ op generators */

enum {
  JG_COPY,
  JG_POINT,
  JG_INVERT,
  JG_SOLARIZE,
  JG_POSTERIZE,
  JG_GETCHANNEL,
  JG_CONSTANT,
  JG_CONVERT,
  JG_BRIGHTNESS,
  JG_COLOR,
  JG_CONTRAST,
  JG_TONE,
  JG_CHOPS,
  JG_BLEND,
  JG_TRANSPOSE,
  JG_CROP,
  JG_EXPAND,
  JG_RESIZE,
  JG_PASTE,
  JG_RANK,
  JG_KERNEL,
  JG_BOXBLUR,
  JG_GAUSS,
  JG_REDUCE,
  JG_TRANSFORM,
  JG_EXIF_TRANSPOSE,
  JG_COUNT
};
static const char *const jg_names[JG_COUNT] = {
    "copy",      "point",      "invert", "solarize",  "posterize",     "getchannel", "constant",
    "convert",   "brightness", "color",  "contrast",  "tone",          "chops",      "blend",
    "transpose", "crop",       "expand", "resize",    "paste",         "rank",       "kernel",
    "box_blur",  "gaussian",   "reduce", "transform", "exif_transpose"};
/* The op each generator writes: what it admits is its op-table row's modes
 * (jg_admitted). tools/optable.py checks that jg_op has every op. */
static const Imgbatch__V1__Node__OpCase jg_cases[JG_COUNT] = {
    [JG_COPY] = IMGBATCH__V1__NODE__OP_COPY,
    [JG_POINT] = IMGBATCH__V1__NODE__OP_POINT,
    [JG_INVERT] = IMGBATCH__V1__NODE__OP_INVERT,
    [JG_SOLARIZE] = IMGBATCH__V1__NODE__OP_SOLARIZE,
    [JG_POSTERIZE] = IMGBATCH__V1__NODE__OP_POSTERIZE,
    [JG_GETCHANNEL] = IMGBATCH__V1__NODE__OP_GETCHANNEL,
    [JG_CONSTANT] = IMGBATCH__V1__NODE__OP_CONSTANT,
    [JG_CONVERT] = IMGBATCH__V1__NODE__OP_CONVERT,
    [JG_BRIGHTNESS] = IMGBATCH__V1__NODE__OP_ENHANCE,
    [JG_COLOR] = IMGBATCH__V1__NODE__OP_ENHANCE,
    [JG_CONTRAST] = IMGBATCH__V1__NODE__OP_ENHANCE,
    [JG_TONE] = IMGBATCH__V1__NODE__OP_TONE,
    [JG_CHOPS] = IMGBATCH__V1__NODE__OP_CHOPS,
    [JG_BLEND] = IMGBATCH__V1__NODE__OP_BLEND,
    [JG_TRANSPOSE] = IMGBATCH__V1__NODE__OP_TRANSPOSE,
    [JG_CROP] = IMGBATCH__V1__NODE__OP_CROP,
    [JG_EXPAND] = IMGBATCH__V1__NODE__OP_EXPAND,
    [JG_RESIZE] = IMGBATCH__V1__NODE__OP_RESIZE,
    [JG_PASTE] = IMGBATCH__V1__NODE__OP_PASTE,
    [JG_RANK] = IMGBATCH__V1__NODE__OP_RANK_FILTER,
    [JG_KERNEL] = IMGBATCH__V1__NODE__OP_KERNEL,
    [JG_BOXBLUR] = IMGBATCH__V1__NODE__OP_BOX_BLUR,
    [JG_GAUSS] = IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR,
    [JG_REDUCE] = IMGBATCH__V1__NODE__OP_REDUCE,
    [JG_TRANSFORM] = IMGBATCH__V1__NODE__OP_TRANSFORM,
    [JG_EXIF_TRANSPOSE] = IMGBATCH__V1__NODE__OP_EXIF_TRANSPOSE,
};

/* Image.transform(AFFINE) as Image.rotate builds it (angle about a centre,
 * sometimes a scale), plus Pillow's other NEAREST paths: scale-only
 * matrices and strips that start 33000+ pixels away (the double running
 * sum). sub % 3 picks NEAREST, BILINEAR, BICUBIC when >= 0. */
static inline void jg_transform(jg_job *j, jg_rng *r, Imgbatch__V1__Node *n, unsigned bands,
                                uint32_t w, uint32_t h, int sub) {
  static const Imgbatch__V1__Resample filters[3] = {IMGBATCH__V1__RESAMPLE__NEAREST,
                                                    IMGBATCH__V1__RESAMPLE__BILINEAR,
                                                    IMGBATCH__V1__RESAMPLE__BICUBIC};
  Imgbatch__V1__TransformOp *t = n->transform = jg_alloc(j->a, sizeof *n->transform);
  imgbatch__v1__transform_op__init(t);
  t->resample = filters[sub >= 0 ? sub % 3 : (int)jg_below(r, 3)];
  t->n_matrix = 6;
  double *a = t->matrix = jg_alloc(j->a, 6 * sizeof(double));
  t->width = 1 + jg_below(r, 2 * w + 2);
  t->height = 1 + jg_below(r, 2 * h + 2);
  if (t->width > 1024) t->width = 1024;
  if (t->height > 1024) t->height = 1024;
  const uint32_t kind = jg_below(r, 6);
  if (kind == 0) { /* scale only */
    a[0] = (jg_unit(r) * 3 + 0.05) * (jg_below(r, 2) ? 1 : -1);
    a[4] = (jg_unit(r) * 3 + 0.05) * (jg_below(r, 2) ? 1 : -1);
    a[2] = a[0] > 0 ? jg_unit(r) * w : w - a[0] * t->width * jg_unit(r);
    a[5] = a[4] > 0 ? jg_unit(r) * h : h - a[4] * t->height * jg_unit(r);
    a[1] = a[3] = 0;
  } else if (kind == 1) { /* far: back on the source after thousands of sums */
    a[0] = -(4 + 5 * jg_unit(r));
    a[2] = 33000 + 3000 * jg_unit(r);
    t->width = (uint32_t)(a[2] / -a[0]) + w + 5;
    if (t->width > 4096) t->width = 4096;
    t->height = 1 + jg_below(r, 3);
    a[1] = jg_unit(r) * 2 - 1;
    a[3] = (jg_unit(r) * 2 - 1) * 1e-4;
    a[4] = 0.5 + jg_unit(r);
    a[5] = jg_unit(r) * h / 2;
  } else { /* a rotation about a point, maybe scaled */
    const double ang = jg_below(r, 4) ? jg_unit(r) * 6.283185307179586 : jg_below(r, 4) * 1.5707963,
                 sc = jg_below(r, 2) ? 1.0 : 0.5 + jg_unit(r) * 1.5;
    const double c = cos(ang) * sc, s = sin(ang) * sc, cx = jg_unit(r) * w, cy = jg_unit(r) * h;
    a[0] = c, a[1] = s, a[3] = -s, a[4] = c;
    a[2] = cx - c * t->width / 2.0 - s * t->height / 2.0;
    a[5] = cy + s * t->width / 2.0 - c * t->height / 2.0;
  }
  if (jg_below(r, 2)) {
    t->fill.len = bands;
    t->fill.data = jg_alloc(j->a, 4);
    for (unsigned b = 0; b < bands; b++) t->fill.data[b] = (uint8_t)jg_u32(r);
  }
}

/* Adds op `op` reading node `prev` whose mode is `m` and size w x h; returns
 * the new node index. `sub` picks a variant (chops function, convert target)
 * when >= 0, else random. */
static inline int jg_op(jg_job *j, jg_rng *r, int op, int prev, ib_mode m, uint32_t w, uint32_t h,
                        int sub) {
  unsigned bands = ib_mode_bands(m);
  Imgbatch__V1__Node *n = NULL;
  switch (op) {
    case JG_COPY:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_COPY, prev, -1);
      n->copy = jg_alloc(j->a, sizeof *n->copy);
      imgbatch__v1__copy_op__init(n->copy);
      break;
    case JG_POINT: {
      n = jg_node(j, IMGBATCH__V1__NODE__OP_POINT, prev, -1);
      n->point = jg_alloc(j->a, sizeof *n->point);
      imgbatch__v1__point_op__init(n->point);
      n->point->n_lut = 256u * bands;
      n->point->lut = jg_alloc(j->a, 256u * bands * sizeof(int32_t));
      for (unsigned i = 0; i < 256u * bands; i++) n->point->lut[i] = (int32_t)jg_below(r, 300) - 20;
      break;
    }
    case JG_INVERT:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_INVERT, prev, -1);
      n->invert = jg_alloc(j->a, sizeof *n->invert);
      imgbatch__v1__invert_op__init(n->invert);
      break;
    case JG_SOLARIZE:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_SOLARIZE, prev, -1);
      n->solarize = jg_alloc(j->a, sizeof *n->solarize);
      imgbatch__v1__solarize_op__init(n->solarize);
      n->solarize->threshold = jg_below(r, 300);
      break;
    case JG_POSTERIZE:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_POSTERIZE, prev, -1);
      n->posterize = jg_alloc(j->a, sizeof *n->posterize);
      imgbatch__v1__posterize_op__init(n->posterize);
      n->posterize->bits = 1 + jg_below(r, 8);
      break;
    case JG_GETCHANNEL:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_GETCHANNEL, prev, -1);
      n->getchannel = jg_alloc(j->a, sizeof *n->getchannel);
      imgbatch__v1__get_channel_op__init(n->getchannel);
      n->getchannel->band = jg_below(r, bands);
      break;
    case JG_CONSTANT:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_CONSTANT, prev, -1);
      n->constant = jg_alloc(j->a, sizeof *n->constant);
      imgbatch__v1__constant_op__init(n->constant);
      n->constant->value = (int32_t)jg_below(r, 320) - 30;
      break;
    case JG_CONVERT:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_CONVERT, prev, -1);
      n->convert = jg_alloc(j->a, sizeof *n->convert);
      imgbatch__v1__convert_op__init(n->convert);
      n->convert->mode =
          (char *)ib_mode_name((ib_mode)(sub >= 0 ? 1 + sub % 6 : 1 + (int)jg_below(r, 6)));
      break;
    case JG_BRIGHTNESS:
    case JG_COLOR:
    case JG_CONTRAST:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_ENHANCE, prev, -1);
      n->enhance = jg_alloc(j->a, sizeof *n->enhance);
      imgbatch__v1__enhance_op__init(n->enhance);
      n->enhance->kind = (Imgbatch__V1__EnhanceKind)(op - JG_BRIGHTNESS);
      {
        /* The edges of kernels/blend.h's contract: Pillow's copy shortcuts
         * (0, 1), factors that are infinite as float32 (alpha * 0 is NaN),
         * a subnormal and a large one. */
        static const double edge[8] = {0, 1, 0, 1, 1e39, -1e39, 1e-40, 1e3};
        n->enhance->factor = jg_below(r, 8) == 0 ? edge[jg_below(r, 8)] : jg_unit(r) * 3.0 - 0.5;
      }
      break;
    case JG_TONE:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_TONE, prev, -1);
      n->tone = jg_alloc(j->a, sizeof *n->tone);
      imgbatch__v1__tone_op__init(n->tone);
      n->tone->exposure_ev = jg_unit(r) * 4 - 2;
      n->tone->contrast = jg_unit(r) * 2 - 1;
      n->tone->highlights = jg_unit(r) * 2 - 1;
      n->tone->shadows = jg_unit(r) * 2 - 1;
      n->tone->whites = jg_unit(r) * 2 - 1;
      n->tone->blacks = jg_unit(r) * 2 - 1;
      break;
    case JG_CHOPS: {
      /* Second image: same bands, sometimes another size (intersection). */
      uint32_t w2 = jg_below(r, 3) == 0 ? 1 + jg_below(r, w + 8) : w;
      uint32_t h2 = jg_below(r, 3) == 0 ? 1 + jg_below(r, h + 8) : h;
      ib_mode m2 = m;
      if (bands == 4) m2 = (ib_mode[]){IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGBX}[jg_below(r, 3)];
      int src2 = jg_extra(j, r, m2, w2, h2);
      n = jg_node(j, IMGBATCH__V1__NODE__OP_CHOPS, prev, src2);
      n->chops = jg_alloc(j->a, sizeof *n->chops);
      imgbatch__v1__chops_op__init(n->chops);
      n->chops->function =
          (Imgbatch__V1__ChopsFunction)(sub >= 0 ? sub % 12 : (int)jg_below(r, 12));
      n->chops->scale = 0.25 + jg_unit(r) * 3;
      n->chops->offset = (double)((int)jg_below(r, 200) - 100);
      break;
    }
    case JG_BLEND: {
      ib_mode m2 = m;
      if (bands == 4) m2 = (ib_mode[]){IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGBX}[jg_below(r, 3)];
      int src2 = jg_extra(j, r, m2, w, h);
      n = jg_node(j, IMGBATCH__V1__NODE__OP_BLEND, prev, src2);
      n->blend = jg_alloc(j->a, sizeof *n->blend);
      imgbatch__v1__blend_op__init(n->blend);
      n->blend->alpha = jg_below(r, 6) == 0 ? (double)jg_below(r, 2) : jg_unit(r) * 3 - 1;
      break;
    }
    case JG_EXIF_TRANSPOSE:
      /* Only right after a source (the op reads that source's metadata);
       * the generator's raw sources have none, so this is the copy step.
       * Orientations 2..8 run from encoded files in
       * tests/py/parity/test_exif_transpose.py. */
      if (j->nodes[prev]->op_case != IMGBATCH__V1__NODE__OP_SOURCE) return prev;
      n = jg_node(j, IMGBATCH__V1__NODE__OP_EXIF_TRANSPOSE, prev, -1);
      n->exif_transpose = jg_alloc(j->a, sizeof *n->exif_transpose);
      imgbatch__v1__exif_transpose_op__init(n->exif_transpose);
      break;
    case JG_TRANSPOSE:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_TRANSPOSE, prev, -1);
      n->transpose = jg_alloc(j->a, sizeof *n->transpose);
      imgbatch__v1__transpose_op__init(n->transpose);
      n->transpose->method =
          (Imgbatch__V1__TransposeMethod)(sub >= 0 ? sub % 7 : (int)jg_below(r, 7));
      break;
    case JG_CROP: {
      n = jg_node(j, IMGBATCH__V1__NODE__OP_CROP, prev, -1);
      n->crop = jg_alloc(j->a, sizeof *n->crop);
      imgbatch__v1__crop_op__init(n->crop);
      n->crop->left = (int32_t)jg_below(r, w + w / 2 + 1) - (int32_t)(w / 2);
      n->crop->top = (int32_t)jg_below(r, h + h / 2 + 1) - (int32_t)(h / 2);
      n->crop->right = n->crop->left + 1 + (int32_t)jg_below(r, w + 4);
      n->crop->bottom = n->crop->top + 1 + (int32_t)jg_below(r, h + 4);
      break;
    }
    case JG_EXPAND: {
      n = jg_node(j, IMGBATCH__V1__NODE__OP_EXPAND, prev, -1);
      n->expand = jg_alloc(j->a, sizeof *n->expand);
      imgbatch__v1__expand_op__init(n->expand);
      n->expand->left = jg_below(r, 6);
      n->expand->top = jg_below(r, 6);
      n->expand->right = jg_below(r, 6);
      n->expand->bottom = jg_below(r, 6);
      if (jg_below(r, 3)) {
        n->expand->fill.len = bands;
        n->expand->fill.data = jg_alloc(j->a, 4);
        for (unsigned b = 0; b < bands; b++) n->expand->fill.data[b] = (uint8_t)jg_u32(r);
      }
      break;
    }
    case JG_RESIZE: {
      n = jg_node(j, IMGBATCH__V1__NODE__OP_RESIZE, prev, -1);
      n->resize = jg_alloc(j->a, sizeof *n->resize);
      imgbatch__v1__resize_op__init(n->resize);
      n->resize->width = 1 + jg_below(r, 2 * w + 2);
      n->resize->height = 1 + jg_below(r, 2 * h + 2);
      if (n->resize->width > 1024) n->resize->width = 1024;
      if (n->resize->height > 1024) n->resize->height = 1024;
      if (jg_below(r, 3) == 0) {
        n->resize->box_present_case = IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX;
        n->resize->box = jg_alloc(j->a, sizeof *n->resize->box);
        imgbatch__v1__box__init(n->resize->box);
        n->resize->box->left = jg_unit(r) * w / 2;
        n->resize->box->top = jg_unit(r) * h / 2;
        n->resize->box->right = n->resize->box->left + jg_unit(r) * (w - n->resize->box->left);
        n->resize->box->bottom = n->resize->box->top + jg_unit(r) * (h - n->resize->box->top);
      }
      break;
    }
    case JG_REDUCE: {
      /* Factors past the side (one block) and boxes with odd remainders. */
      n = jg_node(j, IMGBATCH__V1__NODE__OP_REDUCE, prev, -1);
      n->reduce = jg_alloc(j->a, sizeof *n->reduce);
      imgbatch__v1__reduce_op__init(n->reduce);
      n->reduce->factor_x = 1 + jg_below(r, jg_below(r, 4) == 0 ? w + 2 : 6);
      n->reduce->factor_y = 1 + jg_below(r, jg_below(r, 4) == 0 ? h + 2 : 6);
      if (jg_below(r, 3) == 0) {
        n->reduce->box_present_case = IMGBATCH__V1__REDUCE_OP__BOX_PRESENT_BOX;
        n->reduce->box = jg_alloc(j->a, sizeof *n->reduce->box);
        imgbatch__v1__box__init(n->reduce->box);
        uint32_t l = jg_below(r, w), t = jg_below(r, h);
        n->reduce->box->left = l;
        n->reduce->box->top = t;
        n->reduce->box->right = l + 1 + jg_below(r, w - l);
        n->reduce->box->bottom = t + 1 + jg_below(r, h - t);
      }
      break;
    }
    case JG_PASTE: {
      ib_mode m2 = m == IB_MODE_RGB && jg_below(r, 3) == 0 ? IB_MODE_RGBA : m;
      uint32_t w2 = 1 + jg_below(r, w + 4), h2 = 1 + jg_below(r, h + 4);
      int src2 = jg_extra(j, r, m2, w2, h2);
      n = jg_node(j, IMGBATCH__V1__NODE__OP_PASTE, prev, src2);
      n->paste = jg_alloc(j->a, sizeof *n->paste);
      imgbatch__v1__paste_op__init(n->paste);
      n->paste->left = (int32_t)jg_below(r, w + w2) - (int32_t)w2 + 1;
      n->paste->top = (int32_t)jg_below(r, h + h2) - (int32_t)h2 + 1;
      break;
    }
    case JG_RANK: {
      n = jg_node(j, IMGBATCH__V1__NODE__OP_RANK_FILTER, prev, -1);
      n->rank_filter = jg_alloc(j->a, sizeof *n->rank_filter);
      imgbatch__v1__rank_filter_op__init(n->rank_filter);
      uint32_t size = sub >= 0 ? 3 + 2 * (uint32_t)(sub % 4) : 3 + 2 * jg_below(r, 4);
      n->rank_filter->size = size;
      n->rank_filter->rank = jg_below(r, 3) == 0 ? size * size / 2 : jg_below(r, size * size);
      break;
    }
    case JG_KERNEL: {
      n = jg_node(j, IMGBATCH__V1__NODE__OP_KERNEL, prev, -1);
      n->kernel = jg_alloc(j->a, sizeof *n->kernel);
      imgbatch__v1__kernel_op__init(n->kernel);
      uint32_t size = (sub >= 0 ? sub % 2 : (int)jg_below(r, 2)) ? 5 : 3;
      n->kernel->size = size;
      n->kernel->n_kernel = size * size;
      n->kernel->kernel = jg_alloc(j->a, size * size * sizeof(double));
      double sum = 0;
      for (uint32_t i = 0; i < size * size; i++)
        sum += n->kernel->kernel[i] = (double)((int)jg_below(r, 9) - 2);
      n->kernel->scale = sum != 0 && jg_below(r, 2) ? sum : 1.0 + jg_unit(r) * 8;
      n->kernel->offset = jg_below(r, 2) ? 0.0 : (double)((int)jg_below(r, 64) - 32);
      break;
    }
    case JG_BOXBLUR:
    case JG_GAUSS: {
      double rx = jg_below(r, 4) == 0 ? 0.0 : jg_unit(r) * 12,
             ry = jg_below(r, 4) == 0 ? 0.0 : jg_unit(r) * 12;
      if (jg_below(r, 3) == 0) rx = (double)jg_below(r, 6); /* integral radii too */
      if (op == JG_BOXBLUR) {
        n = jg_node(j, IMGBATCH__V1__NODE__OP_BOX_BLUR, prev, -1);
        n->box_blur = jg_alloc(j->a, sizeof *n->box_blur);
        imgbatch__v1__box_blur_op__init(n->box_blur);
        n->box_blur->radius_x = rx;
        n->box_blur->radius_y = ry;
      } else {
        n = jg_node(j, IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR, prev, -1);
        n->gaussian_blur = jg_alloc(j->a, sizeof *n->gaussian_blur);
        imgbatch__v1__gaussian_blur_op__init(n->gaussian_blur);
        n->gaussian_blur->radius_x = jg_below(r, 5) == 0 ? -rx : rx;
        n->gaussian_blur->radius_y = ry;
      }
      break;
    }
    case JG_TRANSFORM:
      n = jg_node(j, IMGBATCH__V1__NODE__OP_TRANSFORM, prev, -1);
      jg_transform(j, r, n, bands, w, h, sub);
      break;
    default: return prev;
  }
  return (int)j->job.n_nodes - 1;
}

/* Whether validation admits op on mode m: its row's modes (ops/ops.def). */
static inline int jg_admitted(int op, ib_mode m) {
  const ib_op_desc *d = op >= 0 && op < JG_COUNT ? ib_op_for_case(jg_cases[op]) : NULL;
  return d && m > IB_MODE_NONE && m < IB_MODE_COUNT && (d->modes & IB_MODE_BIT(m)) != 0;
}

static inline void jg_size_after(const Imgbatch__V1__Node *n, int op, uint32_t *w, uint32_t *h);

/* Appends op (a random variant) to the chain whose last node is prev, of
 * mode *m and size *w x *h, and moves those to the new node's output, as
 * validation infers them (chops and blend read the job's newest extra
 * source). Returns the new node's index. */
static inline int jg_chain_op(jg_job *j, jg_rng *r, int op, int prev, ib_mode *m, uint32_t *w,
                              uint32_t *h) {
  prev = jg_op(j, r, op, prev, *m, *w, *h, -1);
  const Imgbatch__V1__Node *n = j->nodes[prev];
  ib_mode m2 = *m;
  if (op == JG_CHOPS || op == JG_BLEND) {
    const Imgbatch__V1__Source *src2 = j->extra[j->job.n_extra_sources - 1];
    m2 = ib_mode_parse(src2->raw->mode);
    if (op == JG_CHOPS) {
      *w = *w < src2->raw->width ? *w : src2->raw->width;
      *h = *h < src2->raw->height ? *h : src2->raw->height;
    }
  }
  if (op == JG_GETCHANNEL || op == JG_CONSTANT)
    *m = IB_MODE_L;
  else if (op == JG_CONVERT)
    *m = ib_mode_parse(n->convert->mode);
  else if (op == JG_BLEND && (float)n->blend->alpha == 1.0f)
    *m = m2;
  jg_size_after(n, op, w, h);
  return prev;
}

/* Output size after op node `n` (mode handled by the caller). */
static inline void jg_size_after(const Imgbatch__V1__Node *n, int op, uint32_t *w, uint32_t *h) {
  uint32_t t;
  switch (op) {
    case JG_TRANSPOSE:
      if (n->transpose->method >= 2 && n->transpose->method != 3) t = *w, *w = *h, *h = t;
      break;
    case JG_CROP:
      *w = (uint32_t)(n->crop->right - n->crop->left);
      *h = (uint32_t)(n->crop->bottom - n->crop->top);
      break;
    case JG_EXPAND:
      *w += n->expand->left + n->expand->right;
      *h += n->expand->top + n->expand->bottom;
      break;
    case JG_RESIZE:
      *w = n->resize->width;
      *h = n->resize->height;
      break;
    case JG_REDUCE: {
      uint32_t bw = *w, bh = *h;
      if (n->reduce->box) {
        bw = (uint32_t)(n->reduce->box->right - n->reduce->box->left);
        bh = (uint32_t)(n->reduce->box->bottom - n->reduce->box->top);
      }
      *w = (bw + n->reduce->factor_x - 1) / n->reduce->factor_x;
      *h = (bh + n->reduce->factor_y - 1) / n->reduce->factor_y;
      break;
    }
    case JG_TRANSFORM:
      *w = n->transform->width;
      *h = n->transform->height;
      break;
    default: break;
  }
}

#endif
