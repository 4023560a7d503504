/*
 * codegen.h - fused chunky kernels for chains of per-pixel ops.
 *
 * A chain is what one kernel does to one pixel: read it from input 0 (and
 * input 1 when the head is a two-input op), run the steps in registers, write
 * the output pixel once. Its *signature* (the step kinds, their static
 * parameters and the modes between them) fully determines the generated
 * source; per-job values (LUTs, alpha, tone factors, chops scale/offset)
 * live in a per-job parameter block that the kernel stages into shared
 * memory, so one compiled kernel serves every job of that signature and one
 * launch can serve many jobs through a descriptor table (blockIdx.y).
 *
 * Each step calls the same kernels/<family>.h function the CPU row calls.
 */
#ifndef IB_GPU_CODEGEN_H
#define IB_GPU_CODEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"
#include "plan/graph.h"

#define IB_CHAIN_MAX_STEPS 16
#define IB_CHAIN_MAX_PARAMS 8192 /* shared-memory bytes per block */
/* Blur kernels: pixels per thread span in the shared-memory row pass (odd:
 * fewer bank conflicts), samples per span in the global passes. */
#define IB_BLUR_SEG 15
#define IB_BLUR_CSEG 32

typedef enum ib_gstep_kind {
  IB_GS_COPY = 0,
  IB_GS_POINT,      /* table (256 * bands) */
  IB_GS_CONVERT,    /* a = from kmode, b = to kmode */
  IB_GS_GETCHANNEL, /* a = band */
  IB_GS_CONSTANT,   /* param: value byte */
  IB_GS_ENHANCE,    /* a = kind; params: float alpha, int mean | u64 luma sum (contrast) */
  IB_GS_TONE,       /* param: ib_tone_f32 */
  IB_GS_CHOPS,      /* two-input head; a = function; params: float scale, int offset */
  IB_GS_BLEND,      /* two-input head; params: float alpha */
  /* Gather heads (kernels/geometry.h index maps): the output pixel (x, y)
   * reads the source pixel the map names, or a fill. */
  IB_GS_TRANSPOSE,  /* a = method */
  IB_GS_WINDOW,     /* crop / expand; params: int64 dx, dy, fill[4] */
  IB_GS_PASTE,      /* two-input head (base, im); params: int64 dx, dy */
  IB_GS_RESIZE,     /* NEAREST; axis tables after the shared block (extra bytes) */
  /* Window heads (neighbourhood ops reading a window of input 0). */
  IB_GS_RANK,       /* a = size; param: int rank */
  IB_GS_KERNEL,     /* a = size; params: size*size divided weights, then the bias */
  /* BoxBlur / GaussianBlur: a = passes (1 or 3); params ib_blurp; its own
   * kernels (ib_chain: all row passes in shared memory; ib_post(dir, k):
   * one pass over rows or columns in global memory), a scratch image (in1). */
  IB_GS_BLUR,
  IB_GS_KIND_COUNT
} ib_gstep_kind;

typedef struct ib_gstep {
  ib_gstep_kind kind;
  int a;              /* static parameter (see kinds) */
  int mode_in, mode_out; /* ib_mode values (== IB_KMODE_*) */
  uint32_t param_off; /* offset in the block (16-byte aligned) */
  uint32_t param_len;
} ib_gstep;

typedef struct ib_gchain {
  int n_inputs;         /* 1, or 2 when steps[0] is CHOPS/BLEND */
  int mode_in1;         /* input 1's mode (two-input heads) */
  int n_steps;
  ib_gstep steps[IB_CHAIN_MAX_STEPS];
  uint32_t param_bytes; /* total, multiple of 16 */
  int reduce_luma;      /* steps[0] is ENHANCE CONTRAST: a luma-sum pre-pass fills its u64 */
} ib_gchain;

/* Host mirror of struct ib_desc (kernels/gpu_io.h). */
typedef struct ib_gdesc {
  uint64_t in0, in1, out, params;
  uint32_t width, height, stride0, stride1, contig, job, height0, height1;
} ib_gdesc;

/* True for the index-map heads (their kernel walks output coordinates). */
static inline int ib_gstep_gather(int kind) {
  return kind == IB_GS_TRANSPOSE || kind == IB_GS_WINDOW || kind == IB_GS_PASTE ||
         kind == IB_GS_RESIZE || kind == IB_GS_RANK || kind == IB_GS_KERNEL || kind == IB_GS_BLUR;
}

/* Bytes a head needs after the chain's shared parameter block (resize axis
 * tables: (out_w + out_h) int32). */
size_t ib_gstep_extra_bytes(const ib_gstep *s, const ib_node *node);
/* Writes them (block + chain param_bytes). `in` is the node's input shape. */
void ib_gstep_fill_extra(const ib_gstep *s, const ib_node *node, const ib_shape *in,
                         uint8_t *extra);

/* The input mode of the chain and its output mode. */
static inline int ib_gchain_mode_in(const ib_gchain *c) { return c->steps[0].mode_in; }
static inline int ib_gchain_mode_out(const ib_gchain *c) {
  return c->steps[c->n_steps - 1].mode_out;
}

/* The step a node becomes on the device (its kind, static params and modes;
 * param_len set, param_off not). IB_UNSUPPORTED (naming op and mode) when
 * the op has no device step. `in_modes` are the node's input modes. */
ib_status ib_gstep_for_node(const ib_node *node, const int *in_modes, ib_gstep *step,
                            ib_error *err);
/* True when the step may follow others inside a chain (not a head-only op). */
int ib_gstep_fusable(const ib_gstep *s);

/* Appends a step (assigns its param offset). false when the chain is full. */
int ib_gchain_push(ib_gchain *c, const ib_gstep *s);

/* Writes the node's per-job values for step `s` into block + s->param_off. */
void ib_gstep_fill(const ib_gstep *s, const ib_node *node, uint8_t *block);

/* The table of a POINT step that stands for the per-band table ops
 * `nodes[0..n)` applied in order (point/invert/solarize/posterize tables,
 * Brightness): entry [b*256+v] is where band value v of band b ends up.
 * Each op runs its own math (ib_point_px / ib_enhance_px) on the 256
 * pixels (v, v, v, v); valid because every band's result depends on that
 * band alone. */
void ib_gpoint_fold(const ib_gstep *s, const ib_node *const *nodes, int n, uint8_t *table);

/* Canonical signature text ("in=3|P3>3|C3>1|out=1"): equal signatures
 * generate equal sources. Returns the length (snprintf semantics). */
int ib_gchain_signature(const ib_gchain *c, char *buf, size_t n);

/* Generated CUDA source for the chain: `extern "C" __global__ ib_chain`
 * (and `ib_lsum` when reduce_luma). Caller frees. */
char *ib_gchain_source(const ib_gchain *c);

/* Pixels per thread of the wide path. */
int ib_gchain_ppt(const ib_gchain *c);

#endif
