/*
 * gpu_nodes.h - nodes and chains for the GPU unit tests (no GPU needed):
 * nodes as the parser leaves them, one per op variant (sample_node), and
 * random valid chains built by the real step builder (random_chain).
 * Header-only; Criterion tests only.
 */
#ifndef IB_TESTS_GPU_NODES_H
#define IB_TESTS_GPU_NODES_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <string.h>

#include "gpu/codegen.h"
#include "kernels/chops.h"
#include "kernels/enhance.h"
#include "ops/op.h"

static inline unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffff;
}

/* A node as the parser leaves it: its wire message (one op message of each
 * kind, only the chosen one linked) and its output shape. Chains are built
 * by the real step builder, ib_gstep_for_node, from these. */
typedef struct tnode {
  Imgbatch__V1__Node pb;
  Imgbatch__V1__CopyOp copy;
  Imgbatch__V1__PointOp point;
  Imgbatch__V1__InvertOp invert;
  Imgbatch__V1__SolarizeOp solarize;
  Imgbatch__V1__PosterizeOp posterize;
  Imgbatch__V1__ConvertOp convert;
  Imgbatch__V1__GetChannelOp getchannel;
  Imgbatch__V1__ConstantOp constant;
  Imgbatch__V1__EnhanceOp enhance;
  Imgbatch__V1__ToneOp tone;
  Imgbatch__V1__ChopsOp chops;
  Imgbatch__V1__BlendOp blend;
  Imgbatch__V1__TransposeOp transpose;
  Imgbatch__V1__CropOp crop;
  Imgbatch__V1__ExpandOp expand;
  Imgbatch__V1__PasteOp paste;
  Imgbatch__V1__ResizeOp resize;
  Imgbatch__V1__RankFilterOp rank_filter;
  Imgbatch__V1__KernelOp kernel;
  Imgbatch__V1__BoxBlurOp box_blur;
  Imgbatch__V1__GaussianBlurOp gaussian_blur;
  Imgbatch__V1__TransformOp transform;
  Imgbatch__V1__ExifTransposeOp exif_transpose;
  /* exif_transpose reads a source node's orientation: the graph it sits in. */
  Imgbatch__V1__SourceOp source_op;
  Imgbatch__V1__Node source_pb;
  ib_node source_node;
  ib_source source;
  ib_graph graph;
  double weights[25];
  uint64_t table_msg[32]; /* the op message of a table sample (tn_table_sample) */
  char table_str[16];     /* its one string field's value */
  ib_node node;
} tnode;

#define TN_SET(t, field, OPCASE)                       \
  do {                                                 \
    (t)->pb.op_case = IMGBATCH__V1__NODE__OP_##OPCASE; \
    (t)->pb.field = &(t)->field;                       \
  } while (0)

static inline void tnode_init(tnode *t) {
  memset(t, 0, sizeof *t);
  t->pb = (Imgbatch__V1__Node)IMGBATCH__V1__NODE__INIT;
  t->copy = (Imgbatch__V1__CopyOp)IMGBATCH__V1__COPY_OP__INIT;
  t->point = (Imgbatch__V1__PointOp)IMGBATCH__V1__POINT_OP__INIT;
  t->invert = (Imgbatch__V1__InvertOp)IMGBATCH__V1__INVERT_OP__INIT;
  t->solarize = (Imgbatch__V1__SolarizeOp)IMGBATCH__V1__SOLARIZE_OP__INIT;
  t->posterize = (Imgbatch__V1__PosterizeOp)IMGBATCH__V1__POSTERIZE_OP__INIT;
  t->convert = (Imgbatch__V1__ConvertOp)IMGBATCH__V1__CONVERT_OP__INIT;
  t->getchannel = (Imgbatch__V1__GetChannelOp)IMGBATCH__V1__GET_CHANNEL_OP__INIT;
  t->constant = (Imgbatch__V1__ConstantOp)IMGBATCH__V1__CONSTANT_OP__INIT;
  t->enhance = (Imgbatch__V1__EnhanceOp)IMGBATCH__V1__ENHANCE_OP__INIT;
  t->tone = (Imgbatch__V1__ToneOp)IMGBATCH__V1__TONE_OP__INIT;
  t->chops = (Imgbatch__V1__ChopsOp)IMGBATCH__V1__CHOPS_OP__INIT;
  t->blend = (Imgbatch__V1__BlendOp)IMGBATCH__V1__BLEND_OP__INIT;
  t->transpose = (Imgbatch__V1__TransposeOp)IMGBATCH__V1__TRANSPOSE_OP__INIT;
  t->crop = (Imgbatch__V1__CropOp)IMGBATCH__V1__CROP_OP__INIT;
  t->expand = (Imgbatch__V1__ExpandOp)IMGBATCH__V1__EXPAND_OP__INIT;
  t->paste = (Imgbatch__V1__PasteOp)IMGBATCH__V1__PASTE_OP__INIT;
  t->resize = (Imgbatch__V1__ResizeOp)IMGBATCH__V1__RESIZE_OP__INIT;
  t->rank_filter = (Imgbatch__V1__RankFilterOp)IMGBATCH__V1__RANK_FILTER_OP__INIT;
  t->kernel = (Imgbatch__V1__KernelOp)IMGBATCH__V1__KERNEL_OP__INIT;
  t->box_blur = (Imgbatch__V1__BoxBlurOp)IMGBATCH__V1__BOX_BLUR_OP__INIT;
  t->gaussian_blur = (Imgbatch__V1__GaussianBlurOp)IMGBATCH__V1__GAUSSIAN_BLUR_OP__INIT;
  t->transform = (Imgbatch__V1__TransformOp)IMGBATCH__V1__TRANSFORM_OP__INIT;
  t->exif_transpose = (Imgbatch__V1__ExifTransposeOp)IMGBATCH__V1__EXIF_TRANSPOSE_OP__INIT;
}

/* Node 0 of t's graph: a source whose orientation is `orientation`, read
 * by t's node (input 0). */
static inline void tn_source_input(tnode *t, int orientation) {
  t->source_op = (Imgbatch__V1__SourceOp)IMGBATCH__V1__SOURCE_OP__INIT;
  t->source_pb = (Imgbatch__V1__Node)IMGBATCH__V1__NODE__INIT;
  t->source_pb.op_case = IMGBATCH__V1__NODE__OP_SOURCE;
  t->source_pb.source = &t->source_op;
  t->source_node = (ib_node){
      .pb = &t->source_pb, .op = ib_op_for_case(IMGBATCH__V1__NODE__OP_SOURCE), .graph = &t->graph};
  t->source.orientation = orientation;
  t->graph.nodes = &t->source_node;
  t->graph.n_nodes = 1;
  t->graph.sources = &t->source;
  t->graph.n_sources = 1;
  t->node.graph = &t->graph;
  t->node.inputs[0] = 0;
  t->node.n_inputs = 1;
}

/* The op table's sample parameters (ops/ops.def), per op case. */
static const struct {
  Imgbatch__V1__Node__OpCase op_case;
  const char *sample;
} tn_samples[] = {
#define IB_OP(field, CASE, inputs, modes, pillow, note, steps, sample, ...) \
  {IMGBATCH__V1__NODE__OP_##CASE, sample},
#include "ops/ops.def"
#undef IB_OP
};

/* Sets `name` of message m (descriptor d) from the text-format `value`:
 * numbers, enum names and quoted strings; false for anything else. */
static inline bool tn_set_field(tnode *t, const ProtobufCMessageDescriptor *d, void *m,
                                const char *name, const char *value) {
  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
  if (!f || f->label == PROTOBUF_C_LABEL_REPEATED) return false;
  char *at = (char *)m + f->offset;
  char *end = NULL;
  switch (f->type) {
    case PROTOBUF_C_TYPE_INT32: *(int32_t *)at = (int32_t)strtol(value, &end, 10); break;
    case PROTOBUF_C_TYPE_UINT32: *(uint32_t *)at = (uint32_t)strtoul(value, &end, 10); break;
    case PROTOBUF_C_TYPE_DOUBLE: *(double *)at = strtod(value, &end); break;
    case PROTOBUF_C_TYPE_ENUM: {
      const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value_by_name(
          (const ProtobufCEnumDescriptor *)f->descriptor, value);
      if (!e) return false;
      *(int *)at = e->value;
      return true;
    }
    case PROTOBUF_C_TYPE_STRING: {
      size_t n = strlen(value);
      if (n < 2 || n - 2 >= sizeof t->table_str || value[0] != '"' || value[n - 1] != '"')
        return false;
      memcpy(t->table_str, value + 1, n - 2);
      t->table_str[n - 2] = 0;
      *(char **)at = t->table_str;
      return true;
    }
    default: return false;
  }
  return end && *end == 0 && end != value;
}

/* A node of op `c` with its table sample: false when the table has none or
 * it is not `name: value ...` of scalars (then sample_node has the op's own
 * case). */
static inline bool tn_table_sample(tnode *t, Imgbatch__V1__Node__OpCase c) {
  const char *sample = NULL;
  for (size_t i = 0; i < sizeof tn_samples / sizeof tn_samples[0]; i++)
    if (tn_samples[i].op_case == c) sample = tn_samples[i].sample;
  const ProtobufCFieldDescriptor *f =
      protobuf_c_message_descriptor_get_field(&imgbatch__v1__node__descriptor, (unsigned)c);
  if (!sample || !f || f->type != PROTOBUF_C_TYPE_MESSAGE) return false;
  const ProtobufCMessageDescriptor *d = f->descriptor;
  cr_assert_leq(d->sizeof_message, sizeof t->table_msg, "%s", d->name);
  protobuf_c_message_init(d, t->table_msg);
  char buf[256];
  cr_assert_lt(strlen(sample), sizeof buf);
  strcpy(buf, sample);
  char *save = NULL;
  for (char *name = strtok_r(buf, " :", &save); name; name = strtok_r(NULL, " :", &save)) {
    char *value = strtok_r(NULL, " ", &save);
    if (!value || !tn_set_field(t, d, t->table_msg, name, value)) return false;
  }
  t->pb.op_case = c;
  *(void **)((char *)&t->pb + f->offset) = t->table_msg;
  return true;
}

/* A random valid chain: a head (maybe two-input or contrast) then fusable
 * steps whose modes connect. `seed` draws its structure (ops, static
 * parameters, modes); `vseed` the per-job values (LUT, factors, boxes,
 * weights, image size), which must never change the generated source. */
static inline void random_chain(unsigned *seed, unsigned vseed, ib_gchain *c) {
  memset(c, 0, sizeof *c);
  int m = 1 + (int)(rnd(seed) % 6);
  int n = 1 + (int)(rnd(seed) % 6);
  static int32_t lut[1024];
  for (int i = 0; i < n; i++) {
    tnode t;
    tnode_init(&t);
    int out = m, in1 = m;
    unsigned bands = ib_mode_bands((ib_mode)m);
    unsigned pick = rnd(seed) % (i == 0 ? 17 : 7);
    switch (pick) {
      case 0: TN_SET(&t, copy, COPY); break;
      case 1:
        switch (rnd(seed) % 4) {
          case 0:
            TN_SET(&t, point, POINT);
            t.point.n_lut = 256u * bands;
            t.point.lut = lut;
            break;
          case 1: TN_SET(&t, invert, INVERT); break;
          case 2:
            TN_SET(&t, solarize, SOLARIZE);
            t.solarize.threshold = rnd(&vseed) % 256;
            break;
          default:
            TN_SET(&t, posterize, POSTERIZE);
            t.posterize.bits = 1 + rnd(&vseed) % 8;
            break;
        }
        break;
      case 2:
        TN_SET(&t, convert, CONVERT);
        out = 1 + (int)(rnd(seed) % 6);
        t.convert.mode = (char *)ib_mode_name((ib_mode)out);
        break;
      case 3:
        TN_SET(&t, getchannel, GETCHANNEL);
        t.getchannel.band = rnd(seed) % bands;
        out = IB_MODE_L;
        break;
      case 4:
        TN_SET(&t, constant, CONSTANT);
        t.constant.value = (int32_t)(rnd(&vseed) % 256);
        out = IB_MODE_L;
        break;
      case 5:
      case 9:
        TN_SET(&t, enhance, ENHANCE);
        t.enhance.kind = pick == 9 ? IMGBATCH__V1__ENHANCE_KIND__CONTRAST
                                   : (Imgbatch__V1__EnhanceKind)(rnd(seed) % 2);
        t.enhance.factor = (double)(rnd(&vseed) % 400) / 100.0;
        break;
      case 6:
        if (m == IB_MODE_RGB || m == IB_MODE_RGBA) {
          TN_SET(&t, tone, TONE);
          t.tone.exposure_ev = (double)(rnd(&vseed) % 200) / 100.0 - 1.0;
          t.tone.shadows = (double)(rnd(&vseed) % 100) / 100.0;
        } else {
          TN_SET(&t, copy, COPY);
        }
        break;
      case 7:
        TN_SET(&t, chops, CHOPS);
        t.chops.function = (Imgbatch__V1__ChopsFunction)(rnd(seed) % IB_CHOP_COUNT);
        t.chops.scale = 1.0 + (double)(rnd(&vseed) % 4);
        t.chops.offset = (double)(rnd(&vseed) % 64);
        break;
      case 8:
        TN_SET(&t, blend, BLEND);
        t.blend.alpha = (double)(rnd(&vseed) % 100) / 100.0;
        break;
      case 10:
        TN_SET(&t, transpose, TRANSPOSE);
        t.transpose.method = (Imgbatch__V1__TransposeMethod)(rnd(seed) % 7);
        break;
      case 11:
        if (rnd(seed) & 1) {
          TN_SET(&t, crop, CROP);
          t.crop.left = -(int32_t)(rnd(&vseed) % 5);
          t.crop.right = 1 + (int32_t)(rnd(&vseed) % 40);
          t.crop.bottom = 1 + (int32_t)(rnd(&vseed) % 40);
        } else {
          TN_SET(&t, expand, EXPAND);
          t.expand.left = rnd(&vseed) % 5;
          t.expand.bottom = rnd(&vseed) % 5;
        }
        break;
      case 12:
        TN_SET(&t, paste, PASTE);
        t.paste.left = (int32_t)(rnd(&vseed) % 9) - 4;
        t.paste.top = (int32_t)(rnd(&vseed) % 9) - 4;
        if (m == IB_MODE_RGB && (rnd(seed) & 1)) in1 = IB_MODE_RGBA;
        break;
      case 13:
        TN_SET(&t, resize, RESIZE);
        t.resize.width = 1 + rnd(&vseed) % 64;
        t.resize.height = 1 + rnd(&vseed) % 64;
        break;
      case 14: {
        TN_SET(&t, rank_filter, RANK_FILTER);
        uint32_t size = 3 + 2 * (rnd(seed) % 4);
        t.rank_filter.size = size;
        t.rank_filter.rank = rnd(&vseed) % (size * size);
        break;
      }
      case 15: {
        TN_SET(&t, kernel, KERNEL);
        uint32_t size = (rnd(seed) & 1) ? 5 : 3;
        t.kernel.size = size;
        t.kernel.n_kernel = size * size;
        t.kernel.kernel = t.weights;
        for (uint32_t k = 0; k < size * size; k++) t.weights[k] = (double)(rnd(&vseed) % 9) - 4.0;
        t.kernel.scale = 1.0 + (double)(rnd(&vseed) % 8);
        break;
      }
      default:
        if (rnd(seed) & 1) {
          TN_SET(&t, box_blur, BOX_BLUR);
          t.box_blur.radius_x = t.box_blur.radius_y = (double)(rnd(&vseed) % 50) / 10.0;
        } else {
          TN_SET(&t, gaussian_blur, GAUSSIAN_BLUR);
          t.gaussian_blur.radius_x = t.gaussian_blur.radius_y = (double)(rnd(&vseed) % 50) / 10.0;
        }
        n = 1; /* blur has its own kernels: a chain of one */
        break;
    }
    if (t.pb.op_case == IMGBATCH__V1__NODE__OP_CHOPS ||
        t.pb.op_case == IMGBATCH__V1__NODE__OP_BLEND) {
      /* Same band count, mode may differ (RGBA with CMYK). */
      in1 = bands == 4 ? (int[]){IB_MODE_RGBA, IB_MODE_CMYK, IB_MODE_RGBX}[rnd(seed) % 3] : m;
    }
    t.node.pb = &t.pb;
    t.node.op = ib_op_for_case(t.pb.op_case);
    t.node.shape = (ib_shape){(ib_mode)out, 1 + rnd(&vseed) % 4096, 1 + rnd(&vseed) % 4096};
    int in_modes[2] = {m, in1};
    ib_gstep s;
    ib_error err = {0};
    cr_assert_eq(ib_gstep_for_node(&t.node, in_modes, &s, &err), IB_OK, "%s", err.message);
    cr_assert_eq(s.mode_in, m);
    cr_assert_eq(s.mode_out, out);
    cr_assert(ib_gchain_push(c, &s), "step %d (op %s) fits the chain", i, t.node.op->name);
    if (i == 0 && c->n_inputs == 2) c->mode_in1 = in1;
    m = out;
  }
}

/* Variant `v` of a node of op `c` on a `mode` input: each static parameter
 * that changes the generated source (kinds, sizes, methods, functions,
 * target modes) gets a variant. false past the op's last one. An op without
 * a case here has one variant, its sample in the op table (ops/ops.def);
 * tools/optable.py checks that every op has one or the other. */
static inline bool sample_node(tnode *t, Imgbatch__V1__Node__OpCase c, int v, int mode) {
  static int32_t lut[1024];
  static double weights[25];
  const unsigned bands = ib_mode_bands((ib_mode)mode);
  switch (c) {
    case IMGBATCH__V1__NODE__OP_POINT:
      TN_SET(t, point, POINT);
      t->point.n_lut = 256u * bands;
      t->point.lut = lut;
      return v < 1;
    case IMGBATCH__V1__NODE__OP_CONVERT:
      TN_SET(t, convert, CONVERT);
      t->convert.mode = (char *)ib_mode_name((ib_mode)(1 + v));
      return v < 6;
    case IMGBATCH__V1__NODE__OP_GETCHANNEL:
      TN_SET(t, getchannel, GETCHANNEL);
      t->getchannel.band = (uint32_t)v;
      return v < (int)bands;
    case IMGBATCH__V1__NODE__OP_ENHANCE:
      TN_SET(t, enhance, ENHANCE);
      t->enhance.kind = (Imgbatch__V1__EnhanceKind)v;
      t->enhance.factor = 1.5;
      return v < 3;
    case IMGBATCH__V1__NODE__OP_CHOPS:
      TN_SET(t, chops, CHOPS);
      t->chops.function = (Imgbatch__V1__ChopsFunction)v;
      t->chops.scale = 2.0;
      t->chops.offset = 3.0;
      return v < IB_CHOP_COUNT;
    case IMGBATCH__V1__NODE__OP_TRANSPOSE:
      TN_SET(t, transpose, TRANSPOSE);
      t->transpose.method = (Imgbatch__V1__TransposeMethod)v;
      return v < 7;
    case IMGBATCH__V1__NODE__OP_EXIF_TRANSPOSE:
      /* Orientations 1..8: the copy step and each transpose. */
      TN_SET(t, exif_transpose, EXIF_TRANSPOSE);
      tn_source_input(t, v + 1);
      return v < 8;
    case IMGBATCH__V1__NODE__OP_RANK_FILTER:
      TN_SET(t, rank_filter, RANK_FILTER);
      t->rank_filter.size = 3u + 2u * (uint32_t)v;
      t->rank_filter.rank = t->rank_filter.size;
      return v < 4;
    case IMGBATCH__V1__NODE__OP_KERNEL:
      TN_SET(t, kernel, KERNEL);
      t->kernel.size = v ? 5 : 3;
      t->kernel.n_kernel = t->kernel.size * t->kernel.size;
      t->kernel.kernel = weights;
      t->kernel.scale = 1.0;
      return v < 2;
    case IMGBATCH__V1__NODE__OP_BOX_BLUR:
      TN_SET(t, box_blur, BOX_BLUR);
      t->box_blur.radius_x = t->box_blur.radius_y = 2.0;
      return v < 1;
    case IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR:
      TN_SET(t, gaussian_blur, GAUSSIAN_BLUR);
      t->gaussian_blur.radius_x = t->gaussian_blur.radius_y = 2.0;
      return v < 1;
    case IMGBATCH__V1__NODE__OP_TRANSFORM: {
      /* Each of affine.h's paths: SCALE, FIXED, FLOAT (a corner 40000
       * away), BILINEAR and BICUBIC (premultiplied on LA / RGBA). */
      static double m[5][6] = {{1.5, 0, 2, 0, -0.5, 9},
                               {0.8, 0.6, -1.5, -0.6, 0.8, 2.25},
                               {-9, 0.5, 40000, 0.1, 1, 3},
                               {0.8, 0.6, -1.5, -0.6, 0.8, 2.25},
                               {0.8, 0.6, -1.5, -0.6, 0.8, 2.25}};
      static const Imgbatch__V1__Resample f[5] = {
          IMGBATCH__V1__RESAMPLE__NEAREST, IMGBATCH__V1__RESAMPLE__NEAREST,
          IMGBATCH__V1__RESAMPLE__NEAREST, IMGBATCH__V1__RESAMPLE__BILINEAR,
          IMGBATCH__V1__RESAMPLE__BICUBIC};
      if (v >= 5) return false;
      TN_SET(t, transform, TRANSFORM);
      t->transform.width = 7;
      t->transform.height = 5;
      t->transform.n_matrix = 6;
      t->transform.matrix = m[v];
      t->transform.resample = f[v];
      return true;
    }
    default: return v < 1 && tn_table_sample(t, c);
  }
}

#endif
