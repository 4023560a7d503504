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
 * A PASSES head's header holds whole kernels instead, which its row names
 * and plans (ib_dev_passes below; docs/device-steps.md walks through one).
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
  /* A head with its own kernels and its own launch plan (`passes`): one or
   * more launches per job, e.g. a separable filter's row and column
   * passes. Nothing fuses after it. */
  IB_DEV_PASSES,
} ib_dev_role;

enum {
  IB_DEV_HEAD = 1u << 0, /* starts a stage: never fused after another step */
  IB_DEV_IN1 = 1u << 1,  /* reads input 1 (two-input head) */
  IB_DEV_LUMA = 1u << 2, /* needs input 0's luma sum first: an ib_lsum pre-pass adds
                            it into the u64 at param offset 8; FN::prep reads it */
};

struct ib_gstep;

/* ------------------------------------------------------------ multi-pass heads
 *
 * The contract of an IB_DEV_PASSES head (docs/device-steps.md). Its row
 * owns everything op-specific; the CUDA backend only follows it:
 *  - kernels: `header` (kernels/) defines each of `passes->kernels` as
 *      extern "C" __global__ void NAME(const ib_desc *descs, int...)
 *    one job per blockIdx.y (descs[blockIdx.y], kernels/gpu_io.h), grid
 *    stride over blockIdx.x. The generator compiles the header after
 *      #define IB_B0 <bands of input 0>, IB_A <the step's a>,
 *      IB_PBYTES <bytes of the parameter block>
 *    (the head's extra tables, ib_dev_op.extra_bytes, start at
 *    d.params + IB_PBYTES).
 *  - parameters: ONE struct in a kernels/ header that the row's `fill`
 *    writes, the kernels read at d.params and `plan` reads back from the
 *    job's staged block (ib_dev_job.params): no offsets anywhere else.
 *  - scratch: scratch_bytes(node, in) > 0 gives the job one device buffer
 *    of that many bytes, passed as d.in1 (an intermediate image).
 *  - plan: per launch group (jobs of one signature, one stage level), the
 *    launches in stream order: which kernel, blocks in x, dynamic shared
 *    memory, int arguments. What it chooses may depend on every job's
 *    shape and parameters, on the threads per block and on the shared
 *    memory the backend allows (0: none, a tuning knob forces the global
 *    memory paths); a launch marked `slow` (a fallback taken because
 *    shared memory would not fit) is counted by the backend.
 */
enum {
  IB_DEV_MAX_KERNELS = 4,   /* kernels of one head */
  IB_DEV_MAX_LAUNCHES = 16, /* launches of one group */
  IB_DEV_MAX_ARGS = 3,      /* int arguments of a launch, after the descriptor table */
};

typedef struct ib_dev_kernel {
  const char *name; /* the extern "C" name in the head's header */
  /* May take dynamic shared memory past 48 KiB, up to the device's
   * opt-in limit (ib_dev_group.smem_max); others take at most 48 KiB, and
   * none when smem_max is 0. */
  int big_smem;
} ib_dev_kernel;

/* One job of a launch group, as its head's plan sees it. */
typedef struct ib_dev_job {
  uint32_t width, height;       /* the head's output */
  uint32_t in_width, in_height; /* its input 0 */
  const uint8_t *params;        /* its parameter block as uploaded (fill's bytes first) */
} ib_dev_job;

typedef struct ib_dev_group {
  const struct ib_gstep *head; /* the signature's step (a, modes) */
  size_t n_jobs;
  void (*job)(const struct ib_dev_group *g, size_t i, ib_dev_job *out);
  const void *src;  /* the backend's, for job() */
  unsigned threads; /* per block (blockDim.x) */
  /* Dynamic shared bytes a big_smem kernel may take; 0: shared memory is
   * off for this head (plan its global-memory launches). */
  uint32_t smem_max;
} ib_dev_group;

typedef struct ib_dev_launch {
  int kernel;      /* index in ib_dev_passes.kernels */
  uint64_t blocks; /* grid x wanted: the backend keeps it within 1 .. 32 per SM */
  uint32_t smem;   /* dynamic shared bytes */
  int n_args;
  int32_t args[IB_DEV_MAX_ARGS]; /* after the descriptor table, in order */
  int slow;                      /* a fallback for too little shared memory: counted */
} ib_dev_launch;

typedef struct ib_dev_passes {
  ib_dev_kernel kernels[IB_DEV_MAX_KERNELS];
  int n_kernels;
  /* Writes the group's launches to out[0 ..) and returns how many
   * (at most IB_DEV_MAX_LAUNCHES). */
  int (*plan)(const ib_dev_group *g, ib_dev_launch *out);
  /* Bytes of the job's scratch buffer (d.in1); NULL or 0: none. `in` is
   * input 0's shape, node->shape the output's. */
  size_t (*scratch_bytes)(const struct ib_node *node, const struct ib_shape *in);
} ib_dev_passes;

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
  /* PASSES: its kernels, launch plan and scratch (above). */
  const ib_dev_passes *passes;
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
