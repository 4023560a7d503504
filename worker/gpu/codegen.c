/* Fused chain codegen (see codegen.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/codegen.h"
#include "kernels/boxblur.h"
#include "kernels/chops.h"
#include "kernels/enhance.h"
#include "kernels/convolve.h"
#include "kernels/geometry.h"
#include "kernels/point.h"
#include "kernels/tone.h"
#include "ops/op_point.h"

/* ------------------------------------------------------------ steps from nodes */

static ib_status no_step(const ib_node *node, int mode, const char *why, ib_error *err) {
  err->status = IB_UNSUPPORTED;
  err->stage = IB_STAGE_ADMIT;
  snprintf(err->message, sizeof err->message, "backend cuda: op %s (mode %s) %s",
           node->op ? node->op->name : "?", ib_mode_name((ib_mode)mode), why);
  return IB_UNSUPPORTED;
}

ib_status ib_gstep_for_node(const ib_node *node, const int *in_modes, ib_gstep *s,
                            ib_error *err) {
  const Imgbatch__V1__Node *pb = node->pb;
  memset(s, 0, sizeof *s);
  s->mode_in = in_modes[0];
  s->mode_out = (int)node->shape.mode;
  unsigned bands = ib_mode_bands((ib_mode)s->mode_in);
  switch (pb->op_case) {
    case IMGBATCH__V1__NODE__OP_COPY: s->kind = IB_GS_COPY; break;
    case IMGBATCH__V1__NODE__OP_POINT:
    case IMGBATCH__V1__NODE__OP_INVERT:
    case IMGBATCH__V1__NODE__OP_SOLARIZE:
    case IMGBATCH__V1__NODE__OP_POSTERIZE:
      s->kind = IB_GS_POINT;
      s->param_len = 256u * bands;
      break;
    case IMGBATCH__V1__NODE__OP_CONVERT:
      s->kind = IB_GS_CONVERT;
      s->a = s->mode_in;
      break;
    case IMGBATCH__V1__NODE__OP_GETCHANNEL:
      s->kind = IB_GS_GETCHANNEL;
      s->a = (int)pb->getchannel->band;
      break;
    case IMGBATCH__V1__NODE__OP_CONSTANT:
      s->kind = IB_GS_CONSTANT;
      s->param_len = 4;
      break;
    case IMGBATCH__V1__NODE__OP_ENHANCE:
      s->kind = IB_GS_ENHANCE;
      s->a = (int)pb->enhance->kind;
      s->param_len = 16; /* float alpha, int pad, u64 luma sum */
      break;
    case IMGBATCH__V1__NODE__OP_TONE:
      s->kind = IB_GS_TONE;
      s->param_len = sizeof(ib_tone_f32);
      break;
    case IMGBATCH__V1__NODE__OP_CHOPS:
      s->kind = IB_GS_CHOPS;
      s->a = (int)pb->chops->function;
      s->param_len = 8;
      break;
    case IMGBATCH__V1__NODE__OP_BLEND:
      s->kind = IB_GS_BLEND;
      s->param_len = 4;
      break;
    case IMGBATCH__V1__NODE__OP_TRANSPOSE:
      s->kind = IB_GS_TRANSPOSE;
      s->a = (int)pb->transpose->method;
      break;
    case IMGBATCH__V1__NODE__OP_CROP:
    case IMGBATCH__V1__NODE__OP_EXPAND:
      s->kind = IB_GS_WINDOW;
      s->param_len = 24;
      break;
    case IMGBATCH__V1__NODE__OP_PASTE:
      s->kind = IB_GS_PASTE;
      s->param_len = 16;
      break;
    case IMGBATCH__V1__NODE__OP_RESIZE:
      s->kind = IB_GS_RESIZE;
      break;
    case IMGBATCH__V1__NODE__OP_RANK_FILTER:
      s->kind = IB_GS_RANK;
      s->a = (int)pb->rank_filter->size;
      s->param_len = 4;
      break;
    case IMGBATCH__V1__NODE__OP_BOX_BLUR:
    case IMGBATCH__V1__NODE__OP_GAUSSIAN_BLUR:
      s->kind = IB_GS_BLUR;
      s->a = pb->op_case == IMGBATCH__V1__NODE__OP_BOX_BLUR ? 1 : 3;
      s->param_len = 32;
      break;
    case IMGBATCH__V1__NODE__OP_KERNEL:
      s->kind = IB_GS_KERNEL;
      s->a = (int)pb->kernel->size;
      s->param_len = 4u * (pb->kernel->size * pb->kernel->size + 1u);
      break;
    default: return no_step(node, s->mode_in, "has no device kernel yet", err);
  }
  return IB_OK;
}

int ib_gstep_fusable(const ib_gstep *s) {
  if (s->kind == IB_GS_CHOPS || s->kind == IB_GS_BLEND || ib_gstep_gather(s->kind)) return 0;
  if (s->kind == IB_GS_ENHANCE && s->a == IB_ENHANCE_CONTRAST) return 0;
  return 1;
}

int ib_gchain_push(ib_gchain *c, const ib_gstep *s) {
  if (c->n_steps >= IB_CHAIN_MAX_STEPS) return 0;
  uint32_t len = (s->param_len + 15u) & ~15u;
  if (c->param_bytes + len > IB_CHAIN_MAX_PARAMS) return 0;
  ib_gstep *d = &c->steps[c->n_steps++];
  *d = *s;
  d->param_off = c->param_bytes;
  c->param_bytes += len;
  if (c->n_steps == 1) {
    c->n_inputs = (s->kind == IB_GS_CHOPS || s->kind == IB_GS_BLEND || s->kind == IB_GS_PASTE) ? 2 : 1;
    c->reduce_luma = s->kind == IB_GS_ENHANCE && s->a == IB_ENHANCE_CONTRAST;
  }
  return 1;
}

void ib_gpoint_fold(const ib_gstep *s, const ib_node *const *nodes, int n, uint8_t *table) {
  int mode = s->mode_in;
  unsigned bands = ib_mode_bands((ib_mode)mode);
  if (bands > 4) return; /* never (modes have 1-4 bands); lets -O3 bound px/out below */
  for (unsigned b = 0; b < bands; b++)
    for (int v = 0; v < 256; v++) table[b * 256u + (unsigned)v] = (uint8_t)v;
  uint8_t t[256 * 4];
  for (int f = 0; f < n; f++) {
    const Imgbatch__V1__Node *pb = nodes[f]->pb;
    int enhance = pb->op_case == IMGBATCH__V1__NODE__OP_ENHANCE;
    float alpha = enhance ? (float)pb->enhance->factor : 0.0f;
    if (!enhance) ib_point_table(pb, bands, t);
    for (int v = 0; v < 256; v++) {
      uint8_t px[4], out[4];
      for (unsigned b = 0; b < bands; b++) px[b] = table[b * 256u + (unsigned)v];
      if (enhance)
        ib_enhance_px(IB_ENHANCE_BRIGHTNESS, mode, 0, alpha, px, out);
      else
        ib_point_px(t, bands, px, out);
      for (unsigned b = 0; b < bands; b++) table[b * 256u + (unsigned)v] = out[b];
    }
  }
}

void ib_gstep_fill(const ib_gstep *s, const ib_node *node, uint8_t *block) {
  uint8_t *p = block + s->param_off;
  const Imgbatch__V1__Node *pb = node->pb;
  switch (s->kind) {
    case IB_GS_POINT: ib_point_table(pb, ib_mode_bands((ib_mode)s->mode_in), p); break;
    case IB_GS_CONSTANT: {
      int32_t v = pb->constant ? ib_clip8(pb->constant->value) : 0;
      memcpy(p, &v, 4);
      break;
    }
    case IB_GS_ENHANCE: {
      float alpha = (float)pb->enhance->factor; /* as _imaging.c _blend narrows it */
      memcpy(p, &alpha, 4);
      memset(p + 4, 0, 12); /* contrast: the luma sum, accumulated on the device */
      break;
    }
    case IB_GS_TONE: {
      const Imgbatch__V1__ToneOp *t = pb->tone;
      ib_tone_f32 f = ib_tone_prepare_f32((float)t->exposure_ev, (float)t->contrast,
                                          (float)t->highlights, (float)t->shadows,
                                          (float)t->whites, (float)t->blacks);
      memcpy(p, &f, sizeof f);
      break;
    }
    case IB_GS_CHOPS: {
      float scale = 1.0f;
      int32_t offset = 0;
      if (s->a == IB_CHOP_ADD || s->a == IB_CHOP_SUBTRACT) {
        scale = (float)pb->chops->scale;
        offset = (int32_t)pb->chops->offset;
      }
      memcpy(p, &scale, 4);
      memcpy(p + 4, &offset, 4);
      break;
    }
    case IB_GS_BLEND: {
      float alpha = (float)pb->blend->alpha;
      memcpy(p, &alpha, 4);
      break;
    }
    case IB_GS_WINDOW: {
      /* crop: source (x + left, y + top), zeros outside (ImagingCrop);
       * expand: source (x - left, y - top), the border colour outside. */
      int64_t d[2];
      memset(p + 16, 0, 8);
      if (pb->op_case == IMGBATCH__V1__NODE__OP_CROP) {
        d[0] = pb->crop->left;
        d[1] = pb->crop->top;
      } else {
        d[0] = -(int64_t)pb->expand->left;
        d[1] = -(int64_t)pb->expand->top;
        if (pb->expand->fill.len == ib_mode_bands((ib_mode)s->mode_in))
          memcpy(p + 16, pb->expand->fill.data, pb->expand->fill.len);
      }
      memcpy(p, d, 16);
      break;
    }
    case IB_GS_PASTE: {
      int64_t d[2] = {-(int64_t)pb->paste->left, -(int64_t)pb->paste->top};
      memcpy(p, d, 16);
      break;
    }
    case IB_GS_RANK: {
      int32_t rank = (int32_t)pb->rank_filter->rank;
      memcpy(p, &rank, 4);
      break;
    }
    case IB_GS_BLUR: {
      /* op_blur.c: radii as C floats; GaussianBlur = 3 box passes of
       * ib_gaussian_box_radius(r, 3); a zero radius skips its direction. */
      float rx, ry;
      if (pb->op_case == IMGBATCH__V1__NODE__OP_BOX_BLUR) {
        rx = (float)pb->box_blur->radius_x;
        ry = (float)pb->box_blur->radius_y;
      } else {
        rx = ib_gaussian_box_radius((float)pb->gaussian_blur->radius_x, 3);
        ry = ib_gaussian_box_radius((float)pb->gaussian_blur->radius_y, 3);
      }
      int32_t hv[2] = {rx != 0 ? s->a : 0, ry != 0 ? s->a : 0};
      ib_box_pass ph = ib_box_pass_for(rx != 0 ? rx : 1.0f), pv = ib_box_pass_for(ry != 0 ? ry : 1.0f);
      memcpy(p, hv, 8);
      memcpy(p + 8, &ph, sizeof ph);
      memcpy(p + 20, &pv, sizeof pv);
      break;
    }
    case IB_GS_KERNEL: {
      /* op_kernel.c's weights and bias, from kernels/convolve.h. */
      const Imgbatch__V1__KernelOp *k = pb->kernel;
      size_t n = (size_t)k->size * k->size;
      for (size_t i = 0; i < n && i < k->n_kernel; i++) {
        float w = ib_convolve_weight(k->kernel[i], k->scale);
        memcpy(p + 4 * i, &w, 4);
      }
      float bias = ib_convolve_bias(k->offset);
      memcpy(p + 4 * n, &bias, 4);
      break;
    }
    default: break;
  }
}

size_t ib_gstep_extra_bytes(const ib_gstep *s, const ib_node *node) {
  if (s->kind != IB_GS_RESIZE) return 0;
  return ((size_t)node->shape.width + node->shape.height) * sizeof(int32_t);
}

/* The box as op_resize.c's resize_box resolves it (PyArg "f"; none =
 * the whole image), then the two axis tables by kernels/geometry.h. */
void ib_gstep_fill_extra(const ib_gstep *s, const ib_node *node, const ib_shape *in,
                         uint8_t *extra) {
  if (s->kind != IB_GS_RESIZE) return;
  const Imgbatch__V1__ResizeOp *r = node->pb->resize;
  float box[4] = {0.0f, 0.0f, (float)in->width, (float)in->height};
  if (r->box_present_case == IMGBATCH__V1__RESIZE_OP__BOX_PRESENT_BOX && r->box) {
    box[0] = (float)r->box->left;
    box[1] = (float)r->box->top;
    box[2] = (float)r->box->right;
    box[3] = (float)r->box->bottom;
  }
  int32_t *xtab = (int32_t *)(void *)extra, *ytab = xtab + node->shape.width;
  double scale, offset;
  ib_resize_axis_coeffs(box[0], box[2], node->shape.width, &scale, &offset);
  ib_resize_axis_table(scale, offset, node->shape.width, (int)in->width, xtab);
  ib_resize_axis_coeffs(box[1], box[3], node->shape.height, &scale, &offset);
  ib_resize_axis_table(scale, offset, node->shape.height, (int)in->height, ytab);
}

/* ------------------------------------------------------------ signature + source */

static const char step_letter[IB_GS_KIND_COUNT] = {'Y', 'P', 'V', 'G', 'K', 'E', 'T', 'C',
                                                    'B', 'R', 'W', 'S', 'N', 'M', 'F', 'X'};

int ib_gchain_signature(const ib_gchain *c, char *buf, size_t n) {
  size_t k = 0;
  int w = snprintf(buf, n, "in=%d", ib_gchain_mode_in(c));
  for (int i = 0; w >= 0 && i < c->n_steps; i++) {
    k += (size_t)w;
    const ib_gstep *s = &c->steps[i];
    w = snprintf(k < n ? buf + k : NULL, k < n ? n - k : 0, "|%c%d:%d>%d", step_letter[s->kind],
                 s->a, s->mode_in, s->mode_out);
  }
  k += (size_t)w;
  w = snprintf(k < n ? buf + k : NULL, k < n ? n - k : 0, "|in1=%d", c->n_inputs == 2 ? c->mode_in1 : 0);
  return (int)(k + (size_t)w);
}

static unsigned bands_of(int mode) { return ib_mode_bands((ib_mode)mode); }

int ib_gchain_ppt(const ib_gchain *c) {
  unsigned m = bands_of(ib_gchain_mode_in(c));
  for (int i = 0; i < c->n_steps; i++)
    if (bands_of(c->steps[i].mode_out) > m) m = bands_of(c->steps[i].mode_out);
  if (c->n_inputs == 2 && bands_of(c->mode_in1) > m) m = bands_of(c->mode_in1);
  return m >= 3 ? 4 : m == 2 ? 8 : 16;
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void put(sbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = 1;
      return;
    }
    if (b->p && b->len + (size_t)w < b->cap) {
      b->len += (size_t)w;
      return;
    }
    size_t ncap = (b->cap + (size_t)w + 1) * 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

/* Emits the per-pixel body: `a` (input 0 pixel), `b2` (input 1), result in `o`. */
static void emit_pixel_fn(sbuf *b, const ib_gchain *c) {
  put(b, "static __device__ __forceinline__ void ib_px(const uint8_t *sp, const uint8_t *a, "
         "const uint8_t *b2, uint8_t *o, int cmean) {\n  (void)sp; (void)b2; (void)cmean;\n");
  put(b, "  uint8_t p[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};\n");
  put(b, "  for (int i = 0; i < %u; i++) p[i] = a[i];\n", bands_of(ib_gchain_mode_in(c)));
  for (int i = 0; i < c->n_steps; i++) {
    const ib_gstep *s = &c->steps[i];
    unsigned bi = bands_of(s->mode_in), bo = bands_of(s->mode_out);
    put(b, "  { /* step %d */\n", i);
    switch (s->kind) {
      case IB_GS_COPY:
      case IB_GS_TRANSPOSE:
      case IB_GS_WINDOW:
      case IB_GS_PASTE:
      case IB_GS_RESIZE: /* gather heads: the load already did the work */
      case IB_GS_RANK:
      case IB_GS_KERNEL:
        put(b, "    for (int k = 0; k < %u; k++) q[k] = p[k];\n", bi);
        break;
      case IB_GS_POINT: put(b, "    ib_point_px(sp + %u, %u, p, q);\n", s->param_off, bi); break;
      case IB_GS_CONVERT: put(b, "    ib_convert_px(%d, %d, p, q);\n", s->mode_in, s->mode_out); break;
      case IB_GS_GETCHANNEL: put(b, "    q[0] = p[%d];\n", s->a); break;
      case IB_GS_CONSTANT:
        put(b, "    q[0] = (uint8_t)*(const int32_t *)(sp + %u);\n", s->param_off);
        break;
      case IB_GS_ENHANCE:
        put(b, "    ib_enhance_px(%d, %d, %s, *(const float *)(sp + %u), p, q);\n", s->a,
            s->mode_in, s->a == IB_ENHANCE_CONTRAST ? "cmean" : "0", s->param_off);
        break;
      case IB_GS_TONE:
        put(b, "    ib_tone_row_f32((const ib_tone_f32 *)(sp + %u), p, q, 1, %u);\n", s->param_off,
            bi);
        break;
      case IB_GS_CHOPS:
        put(b,
            "    for (int k = 0; k < %u; k++) q[k] = ib_chops_px(%d, p[k], b2[k], "
            "*(const float *)(sp + %u), *(const int32_t *)(sp + %u));\n",
            bi, s->a, s->param_off, s->param_off + 4);
        break;
      case IB_GS_BLEND:
        put(b, "    for (int k = 0; k < %u; k++) q[k] = ib_blend_px(p[k], b2[k], *(const float *)(sp + %u));\n",
            bi, s->param_off);
        break;
      default: break;
    }
    put(b, "    for (int k = 0; k < 4; k++) p[k] = q[k];\n  }\n");
    (void)bo;
  }
  put(b, "  for (int i = 0; i < %u; i++) o[i] = p[i];\n}\n\n",
      bands_of(ib_gchain_mode_out(c)));
}

/* BoxBlur / GaussianBlur (kernels/boxblur.h, as op_blur.c runs it): hp
 * passes over rows, then vp passes over columns (per-job counts in the
 * parameters; 0 for a zero radius). in1 is a scratch image S1. The T =
 * hp + vp passes alternate between S1 and the output so the last one lands
 * in the output (pass k writes the output when T-1-k is even), never
 * reading and writing one buffer in the same pass; T == 0 copies.
 * Each thread computes a span of one line with ib_box_blur_span (the same
 * bytes as ib_box_blur_line, tests/unit/test_gpu_math.c):
 *  - ib_chain: every row pass at once, one row per block in shared memory
 *    (dynamic, 2 row buffers), threads over (band, span of IB_BLUR_SEG
 *    pixels); coalesced row loads and stores. Used when two rows fit.
 *  - ib_post(dir, k): pass k over rows (dir 0, the fallback for rows too
 *    wide for shared memory) or columns (dir 1) in global memory, threads
 *    over (line, span of IB_BLUR_CSEG samples), line index fastest so a
 *    warp reads 32 adjacent bytes of a row in the column passes. */
static char *blur_source(const ib_gchain *c, const char *sig) {
  sbuf b = {0};
  unsigned bands = bands_of(ib_gchain_mode_in(c));
  put(&b, "/* generated by worker/gpu/codegen.c: blur %s */\n", sig);
  put(&b, "#include \"gpu_io.h\"\n#include \"boxblur.h\"\n#define B0 %u\n#define SEG %d\n#define CSEG %d\n",
      bands, IB_BLUR_SEG, IB_BLUR_CSEG);
  put(&b,
      "struct ib_blurp { int hp, vp; ib_box_pass ph, pv; };\n"
      "static __device__ __forceinline__ uint8_t *ib_pass_dst(const ib_desc &d, int k, int T) {\n"
      "  return ((T - 1 - k) & 1) == 0 ? d.out : (uint8_t *)d.in1;\n"
      "}\n"
      "extern \"C\" __global__ void __launch_bounds__(256) ib_chain(const ib_desc *descs) {\n"
      "  extern __shared__ __align__(16) uint8_t sm[];\n"
      "  const ib_desc d = descs[blockIdx.y];\n"
      "  const ib_blurp q = *(const ib_blurp *)d.params;\n"
      "  const int T = q.hp + q.vp, W = (int)d.width;\n"
      "  if (q.hp == 0 && T != 0) return;\n"
      "  uint8_t *dst = T == 0 ? d.out : ib_pass_dst(d, q.hp - 1, T);\n"
      "  const unsigned rb = d.width * B0, rb16 = (rb + 15u) & ~15u;\n"
      "  const int segs = (W + SEG - 1) / SEG;\n"
      "  const bool wide = (rb & 15u) == 0;\n"
      "  for (unsigned y = blockIdx.x; y < d.height; y += gridDim.x) {\n"
      "    uint8_t *A = sm, *Bf = sm + rb16;\n"
      "    const uint8_t *src = d.in0 + (unsigned long long)y * rb;\n"
      "    if (wide) for (unsigned i = threadIdx.x; i < rb / 16; i += blockDim.x)\n"
      "      ((uint4 *)A)[i] = __ldg((const uint4 *)src + i);\n"
      "    else for (unsigned i = threadIdx.x; i < rb; i += blockDim.x) A[i] = src[i];\n"
      "    __syncthreads();\n"
      "    for (int k = 0; k < q.hp; k++) {\n"
      "      for (int t = threadIdx.x; t < segs * B0; t += blockDim.x) {\n"
      "        const int bd = t %% B0, x0 = (t / B0) * SEG, x1 = x0 + SEG < W ? x0 + SEG : W;\n"
      "        ib_box_blur_span(Bf + bd, B0, A + bd, B0, W, x0, x1, q.ph);\n"
      "      }\n"
      "      __syncthreads();\n"
      "      uint8_t *t = A; A = Bf; Bf = t;\n"
      "    }\n"
      "    uint8_t *o = dst + (unsigned long long)y * rb;\n"
      "    if (wide) for (unsigned i = threadIdx.x; i < rb / 16; i += blockDim.x)\n"
      "      ((uint4 *)o)[i] = ((const uint4 *)A)[i];\n"
      "    else for (unsigned i = threadIdx.x; i < rb; i += blockDim.x) o[i] = A[i];\n"
      "    __syncthreads();\n"
      "  }\n"
      "}\n"
      "extern \"C\" __global__ void __launch_bounds__(256) ib_post(const ib_desc *descs, int dir, int k) {\n"
      "  const ib_desc d = descs[blockIdx.y];\n"
      "  const ib_blurp q = *(const ib_blurp *)d.params;\n"
      "  const int T = q.hp + q.vp;\n"
      "  int kk;\n"
      "  if (dir == 0) {\n"
      "    if (k >= q.hp && !(T == 0 && k == 0)) return;\n"
      "    kk = k;\n"
      "  } else {\n"
      "    if (k >= q.vp) return;\n"
      "    kk = q.hp + k;\n"
      "  }\n"
      "  const uint8_t *src = kk == 0 ? d.in0 : ib_pass_dst(d, kk - 1, T);\n"
      "  uint8_t *dst = T == 0 ? d.out : ib_pass_dst(d, kk, T);\n"
      "  const unsigned long long W = d.width, H = d.height;\n"
      "  const unsigned long long lines = dir == 0 ? H * B0 : W * B0;\n"
      "  const int n = dir == 0 ? (int)W : (int)H;\n"
      "  const long long step = dir == 0 ? B0 : (long long)(W * B0);\n"
      "  const ib_box_pass p = dir == 0 ? q.ph : q.pv;\n"
      "  const unsigned long long items = lines * (unsigned long long)((n + CSEG - 1) / CSEG);\n"
      "  for (unsigned long long it = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; it < items;\n"
      "       it += (unsigned long long)gridDim.x * blockDim.x) {\n"
      "    const unsigned long long l = it %% lines;\n"
      "    const int x0 = (int)(it / lines) * CSEG, x1 = x0 + CSEG < n ? x0 + CSEG : n;\n"
      "    const unsigned long long off = dir == 0 ? (l / B0) * W * B0 + l %% B0 : l;\n"
      "    if (T == 0) {\n"
      "      for (int x = x0; x < x1; x++) dst[off + (long long)x * step] = src[off + (long long)x * step];\n"
      "    } else {\n"
      "      ib_box_blur_span(dst + off, step, src + off, step, n, x0, x1, p);\n"
      "    }\n"
      "  }\n"
      "}\n");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

char *ib_gchain_source(const ib_gchain *c) {
  sbuf b = {0};
  char sig[512];
  ib_gchain_signature(c, sig, sizeof sig);
  if (c->steps[0].kind == IB_GS_BLUR) return blur_source(c, sig);
  put(&b, "/* generated by worker/gpu/codegen.c: chain %s */\n", sig);
  put(&b, "#include \"gpu_io.h\"\n");
  int has[IB_GS_KIND_COUNT] = {0};
  for (int i = 0; i < c->n_steps; i++) has[c->steps[i].kind] = 1;
  if (has[IB_GS_POINT]) put(&b, "#include \"point.h\"\n");
  if (has[IB_GS_CONVERT] || c->reduce_luma) put(&b, "#include \"convert.h\"\n");
  if (has[IB_GS_ENHANCE]) put(&b, "#include \"enhance.h\"\n");
  if (has[IB_GS_TONE]) put(&b, "#include \"tone.h\"\n");
  if (has[IB_GS_CHOPS]) put(&b, "#include \"chops.h\"\n");
  if (has[IB_GS_BLEND]) put(&b, "#include \"blend.h\"\n");
  int gather = ib_gstep_gather(c->steps[0].kind);
  if (gather) put(&b, "#include \"geometry.h\"\n");
  if (has[IB_GS_RANK]) put(&b, "#include \"rank.h\"\n");
  if (has[IB_GS_KERNEL]) put(&b, "#include \"convolve.h\"\n");
  unsigned b0 = bands_of(ib_gchain_mode_in(c)), b1 = c->n_inputs == 2 ? bands_of(c->mode_in1) : 1,
           bo = bands_of(ib_gchain_mode_out(c));
  int ppt = ib_gchain_ppt(c);
  put(&b, "#define B0 %u\n#define B1 %u\n#define BO %u\n#define PPT %d\n#define NIN %d\n", b0, b1,
      bo, ppt, c->n_inputs);
  put(&b, "#define PBYTES %u\n", c->param_bytes);
  put(&b, "#define GATHER %d\n", gather);
  /* The head's load of pixel (x, y) into a0 (kernels/geometry.h maps). */
  const ib_gstep *h = &c->steps[0];
  switch (gather ? h->kind : IB_GS_COPY) {
    case IB_GS_TRANSPOSE:
      put(&b,
          "#define HEAD_LOAD { int sx, sy; ib_transpose_src(%d, x, y, (int)d.stride0, (int)d.height0, &sx, &sy);"
          " ib_pixel_copy(a0, d.in0 + ((unsigned long long)sy * d.stride0 + sx) * B0, B0); }\n",
          h->a);
      break;
    case IB_GS_WINDOW:
      put(&b,
          "#define HEAD_LOAD { int sx, sy; const long long *dd = (const long long *)(sp + %u);"
          " if (ib_window_src(x, y, dd[0], dd[1], (int)d.stride0, (int)d.height0, &sx, &sy))"
          " ib_pixel_copy(a0, d.in0 + ((unsigned long long)sy * d.stride0 + sx) * B0, B0);"
          " else ib_pixel_copy(a0, sp + %u + 16, B0); }\n",
          h->param_off, h->param_off);
      break;
    case IB_GS_PASTE:
      /* ImagingPaste copies the first bands(base) bytes of each im pixel. */
      put(&b,
          "#define HEAD_LOAD { int sx, sy; const long long *dd = (const long long *)(sp + %u);"
          " if (ib_window_src(x, y, dd[0], dd[1], (int)d.stride1, (int)d.height1, &sx, &sy))"
          " ib_pixel_copy(a0, d.in1 + ((unsigned long long)sy * d.stride1 + sx) * B1, B0);"
          " else ib_pixel_copy(a0, d.in0 + ((unsigned long long)y * d.stride0 + x) * B0, B0); }\n",
          h->param_off);
      break;
    case IB_GS_RESIZE:
      put(&b,
          "#define HEAD_LOAD { const int32_t *xt = (const int32_t *)(d.params + PBYTES);"
          " const int32_t *yt = xt + d.width; int sx = xt[x], sy = yt[y];"
          " if (sx >= 0 && sy >= 0) ib_pixel_copy(a0, d.in0 + ((unsigned long long)sy * d.stride0 + sx) * B0, B0); }\n");
      break;
    case IB_GS_RANK:
      if (h->a == 3) {
        /* Nine neighbour pixels, edges replicated, each packed into one
         * 32-bit word (a band per byte), through rank.h's networks with
         * per-byte min/max: every band in one pass. */
        put(&b,
            "#define LDPX(p) (B0 == 4 ? *(const uint32_t *)(p) : B0 == 1 ? (uint32_t)(p)[0] :"
            " B0 == 2 ? (uint32_t)(p)[0] | (uint32_t)(p)[1] << 8 :"
            " (uint32_t)(p)[0] | (uint32_t)(p)[1] << 8 | (uint32_t)(p)[2] << 16)\n"
            "#define HEAD_LOAD { const int rk = *(const int *)(sp + %u);"
            " const long long rs = (long long)d.stride0 * B0;"
            " const uint8_t *c = d.in0 + ((unsigned long long)y * d.stride0 + x) * B0;"
            " const long long dl = x > 0 ? -B0 : 0, dr = x < (int)d.stride0 - 1 ? B0 : 0;"
            " const uint8_t *u = c + (y > 0 ? -rs : 0), *w = c + (y < (int)d.height0 - 1 ? rs : 0);"
            " uint32_t v[9] = {LDPX(u + dl), LDPX(u), LDPX(u + dr), LDPX(c + dl), LDPX(c), LDPX(c + dr),"
            " LDPX(w + dl), LDPX(w), LDPX(w + dr)};"
            " const uint32_t r = ib_rank_select9x4(v, rk);"
            " for (int b = 0; b < B0; b++) a0[b] = (uint8_t)(r >> (8 * b)); }\n",
            h->param_off);
        break;
      }
      /* ImageFilter.RankFilter: each band's window, edges replicated (rank.h). */
      put(&b,
          "#define HEAD_LOAD { const int rk = *(const int *)(sp + %u);"
          " const uint8_t *c = d.in0 + ((unsigned long long)y * d.stride0 + x) * B0;"
          " for (int b = 0; b < B0; b++) a0[b] = ib_rank_sample(c + b, (long long)d.stride0 * B0, B0,"
          " x, y, (int)d.stride0, (int)d.height0, %d, rk); }\n",
          h->param_off, h->a);
      break;
    case IB_GS_KERNEL:
      /* ImageFilter.Kernel: interior samples convolve (convolve.h); the
       * border, and every pixel of an image smaller than the kernel, is
       * copied (op_kernel.c). */
      put(&b,
          "#define HEAD_LOAD { const float *kw = (const float *)(sp + %u); const int m = %d / 2;"
          " const uint8_t *c = d.in0 + ((unsigned long long)y * d.stride0 + x) * B0;"
          " if ((int)d.stride0 >= %d && (int)d.height0 >= %d && x >= m && x < (int)d.stride0 - m &&"
          " y >= m && y < (int)d.height0 - m) {"
          " for (int b = 0; b < B0; b++) a0[b] = ib_convolve_sample(c + b, (long long)d.stride0 * B0, B0,"
          " %d, kw, kw[%d]); } else ib_pixel_copy(a0, c, B0); }\n",
          h->param_off, h->a, h->a, h->a, h->a, h->a * h->a);
      break;
    default: put(&b, "#define HEAD_LOAD\n"); break;
  }
  put(&b, "\n");
  emit_pixel_fn(&b, c);
  /* ImageEnhance.Contrast's mean, from the luma sum the ib_lsum pre-pass
   * left in the step's parameters (ImageStat: int(sum / count + 0.5)). */
  if (c->reduce_luma)
    put(&b, "#define CMEAN(n) ib_enhance_contrast_mean(*(const unsigned long long *)(sp + %u), (n))\n",
        c->steps[0].param_off + 8);
  else
    put(&b, "#define CMEAN(n) 0\n");
  put(&b,
      "extern \"C\" __global__ void __launch_bounds__(256) ib_chain(const ib_desc *descs) {\n"
      "  const ib_desc d = descs[blockIdx.y];\n"
      "  __shared__ __align__(16) uint8_t sp[PBYTES > 0 ? PBYTES : 16];\n"
      "  for (unsigned i = threadIdx.x; i < PBYTES / 4; i += blockDim.x)\n"
      "    ((uint32_t *)sp)[i] = ((const uint32_t *)d.params)[i];\n"
      "  __syncthreads();\n"
      "  const unsigned long long n = (unsigned long long)d.width * d.height;\n"
      "  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;\n"
      "  const unsigned long long t0 = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  const int cmean = CMEAN(n);\n"
      "  if (GATHER) {\n"
      "    for (unsigned long long i = t0; i < n; i += step) {\n"
      "      const int y = (int)(i / d.width), x = (int)(i - (unsigned long long)y * d.width);\n"
      "      uint8_t a0[4] = {0, 0, 0, 0};\n"
      "      HEAD_LOAD\n"
      "      ib_px(sp, a0, a0, d.out + i * BO, cmean);\n"
      "    }\n"
      "  } else if (d.contig) {\n"
      "    const unsigned long long groups = n / PPT;\n"
      "    for (unsigned long long g = t0; g < groups; g += step) {\n"
      "      ib_vec<PPT * B0> va; ib_ld<PPT * B0>(d.in0 + g * (PPT * B0), va);\n"
      "      ib_vec<(NIN == 2 ? PPT * B1 : 4)> vb;\n"
      "      if (NIN == 2) ib_ld<(NIN == 2 ? PPT * B1 : 4)>(d.in1 + g * (PPT * B1), vb);\n"
      "      ib_vec<PPT * BO> vo;\n"
      "#pragma unroll\n"
      "      for (int k = 0; k < PPT; k++) ib_px(sp, va.b + k * B0, NIN == 2 ? vb.b + k * B1 : va.b, vo.b + k * BO, cmean);\n"
      "      ib_st<PPT * BO>(d.out + g * (PPT * BO), vo);\n"
      "    }\n"
      "    for (unsigned long long i = groups * PPT + t0; i < n; i += step)\n"
      "      ib_px(sp, d.in0 + i * B0, NIN == 2 ? d.in1 + i * B1 : d.in0, d.out + i * BO, cmean);\n"
      "  } else {\n"
      "    for (unsigned long long i = t0; i < n; i += step) {\n"
      "      unsigned long long y = i / d.width, x = i - y * d.width;\n"
      "      ib_px(sp, d.in0 + (y * d.stride0 + x) * B0,\n"
      "            NIN == 2 ? d.in1 + (y * d.stride1 + x) * B1 : d.in0, d.out + i * BO, cmean);\n"
      "    }\n"
      "  }\n"
      "}\n");
  if (c->reduce_luma) {
    /* Luma sum of input 0 for ImageEnhance.Contrast (ImageStat over
     * convert("L")), added into the step's u64 in the global param block. */
    put(&b,
        "extern \"C\" __global__ void __launch_bounds__(256) ib_lsum(const ib_desc *descs) {\n"
        "  const ib_desc d = descs[blockIdx.y];\n"
        "  const unsigned long long n = (unsigned long long)d.width * d.height;\n"
        "  unsigned long long s = 0;\n"
        "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
        "       i += (unsigned long long)gridDim.x * blockDim.x) {\n"
        "    unsigned long long y = i / d.width, x = i - y * d.width;\n"
        "    uint8_t l; ib_convert_px(%d, 1, d.in0 + (y * d.stride0 + x) * B0, &l); s += l;\n"
        "  }\n"
        "  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);\n"
        "  __shared__ unsigned long long ws[8];\n"
        "  if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = s;\n"
        "  __syncthreads();\n"
        "  if (threadIdx.x == 0) {\n"
        "    unsigned long long t = 0;\n"
        "    for (int w = 0; w < (int)(blockDim.x >> 5); w++) t += ws[w];\n"
        "    atomicAdd((unsigned long long *)(d.params + %u + 8), t);\n"
        "  }\n"
        "}\n",
        ib_gchain_mode_in(c), c->steps[0].param_off);
  }
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}
