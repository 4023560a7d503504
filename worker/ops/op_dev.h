/*
 * op_dev.h - an op's device side, as its row describes it. The CUDA backend
 * (worker/gpu) composes these descriptions into kernels and never names an
 * op: a row's `dev` builder turns a node into a step (ib_gstep) that points
 * at one of the op's ib_dev_op descriptions, and the description says how
 * the step runs, what it uploads and where its device code lives.
 *
 * Device code is never a C string: a step is a template in a kernels/ .cuh
 * file with one of two uniform shapes (kernels/chain.cuh), instantiated by
 * the generator with the step's static values:
 *   PIXEL / TABLE   template <int A, int MI, int MO, int BI, int BO, unsigned OFF>
 *                   struct FN : ib_step_base { static void run(sp, p, b2, q, ctx); };
 *   GATHER          template <int A, int MI, int B0, int B1, unsigned OFF, unsigned PB>
 *                   struct FN { static void load(d, sp, x, y, a0); };
 * A PASSES head's header holds whole kernels (ib_chain, ib_post).
 */
#ifndef IB_OPS_OP_DEV_H
#define IB_OPS_OP_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "imgbatch.h"

struct ib_node;
struct ib_shape;

typedef enum ib_dev_role {
  /* out(x, y) from in0(x, y) (and in1(x, y) with IB_DEV_IN1): one call in
   * the fused chain's per-pixel function. */
  IB_DEV_PIXEL,
  /* A per-band table (out[b] = t[b][in[b]]): runs of tables fold into one
   * lookup on the host (`table`), so the device code is the chain's own. */
  IB_DEV_TABLE,
  /* A head that loads the pixel (x, y) of its output from wherever its map
   * or window says (`FN::load`); per-pixel steps may follow it. */
  IB_DEV_GATHER,
  /* A head with its own kernels: ib_chain runs the row passes with two
   * rows in shared memory, ib_post(dir, k) one pass over rows (dir 0) or
   * columns (dir 1) in global memory; `a` is the pass count per direction.
   * Nothing fuses after it. */
  IB_DEV_PASSES,
} ib_dev_role;

enum {
  IB_DEV_HEAD = 1u << 0,    /* starts a stage: never fused after another step */
  IB_DEV_IN1 = 1u << 1,     /* reads input 1 (two-input head) */
  IB_DEV_LUMA = 1u << 2,    /* needs input 0's luma sum first: an ib_lsum pre-pass adds
                               it into the u64 at param offset 8; FN::prep reads it */
  IB_DEV_SCRATCH = 1u << 3, /* one image-sized device scratch, passed as in1 */
};

struct ib_gstep;

typedef struct ib_dev_op {
  char tag; /* signature letter: unique over all device steps */
  ib_dev_role role;
  unsigned flags;     /* IB_DEV_* */
  const char *header; /* kernels/ file that defines fn ("rank.cuh") */
  const char *fn;     /* the step's template (PIXEL, GATHER) */
  /* PIXEL: the template's runtime twin (fn + "_rt", kernels/chain.cuh),
   * which the interpreter (worker/gpu/interp.h) dispatches to by tag. NULL:
   * the interpreter cannot run the step. */
  const char *rt;
  /* Writes the node's per-job values (s->param_len bytes at p). NULL: none. */
  void (*fill)(const struct ib_gstep *s, const struct ib_node *node, uint8_t *p);
  /* TABLE: the node's table for s->mode_in, band-major [b * 256 + v]. */
  void (*table)(const struct ib_gstep *s, const struct ib_node *node, uint8_t *t);
  /* Bytes after the chain's shared block (device-only tables, e.g. resize
   * axis maps) and their fill; `in` is the node's input shape. NULL: none. */
  size_t (*extra_bytes)(const struct ib_node *node);
  void (*fill_extra)(const struct ib_node *node, const struct ib_shape *in, uint8_t *extra);
} ib_dev_op;

/* One step of a fused chain: what runs (dev), its static parameter `a`
 * (baked into the kernel: part of the signature), the modes around it, and
 * where its per-job values lie in the chain's parameter block. */
typedef struct ib_gstep {
  const ib_dev_op *dev;
  int a;
  int mode_in, mode_out; /* ib_mode values (== IB_KMODE_*) */
  uint32_t param_off;    /* offset in the block (16-byte aligned) */
  uint32_t param_len;
} ib_gstep;

/* The identity step (a chain that only copies: a lone source, CopyOp). */
extern const ib_dev_op ib_dev_copy;

#endif
