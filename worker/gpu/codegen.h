/*
 * codegen.h - fused chunky kernels for chains of per-pixel ops.
 *
 * A chain is what one kernel does to one pixel: read it from input 0 (and
 * input 1 when the head is a two-input op), run the steps in registers, write
 * the output pixel once. Its *signature* (the step tags, their static
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
#include "model/graph.h"
#include "ops/op.h"

#define IB_CHAIN_MAX_STEPS 16
#define IB_CHAIN_MAX_PARAMS 8192 /* shared-memory bytes per block */

/* Steps are the op rows' (ops/op_dev.h: ib_gstep, ib_dev_op). A run of
 * per-band tables becomes one step of this generic table. */
extern const ib_dev_op ib_gdev_table;

typedef struct ib_gchain {
  int n_inputs; /* 1, or 2 when steps[0] reads input 1 (IB_DEV_IN1) */
  int mode_in1; /* input 1's mode (two-input heads) */
  int n_steps;
  ib_gstep steps[IB_CHAIN_MAX_STEPS];
  uint32_t param_bytes; /* total, multiple of 16 */
  int reduce_luma;      /* steps[0] has IB_DEV_LUMA: an ib_lsum pre-pass fills its u64 */
} ib_gchain;

/* Host mirror of struct ib_desc (kernels/gpu_io.h). */
typedef struct ib_gdesc {
  uint64_t in0, in1, out, params;
  uint32_t width, height, stride0, stride1, contig, job, height0, height1;
} ib_gdesc;

/* True when the chain's head has its own kernels and launch plan
 * (IB_DEV_PASSES, ops/op_dev.h ib_dev_passes): a chain of that one step. */
static inline int ib_gchain_passes(const ib_gchain *c) {
  return c->steps[0].dev->role == IB_DEV_PASSES;
}

/* Bytes the head needs after the chain's shared parameter block
 * (ib_dev_op.extra_bytes). */
size_t ib_gstep_extra_bytes(const ib_gstep *s, const ib_node *node);
/* Writes them (block + chain param_bytes). `in` is the node's input shape. */
void ib_gstep_fill_extra(const ib_gstep *s, const ib_node *node, const ib_shape *in,
                         uint8_t *extra);
/* Bytes of the head's device scratch (ib_dev_passes.scratch_bytes; 0:
 * none). `in` is the node's input 0 shape. */
size_t ib_gstep_scratch_bytes(const ib_gstep *s, const ib_node *node, const ib_shape *in);

/* The input mode of the chain and its output mode. */
static inline int ib_gchain_mode_in(const ib_gchain *c) { return c->steps[0].mode_in; }
static inline int ib_gchain_mode_out(const ib_gchain *c) {
  return c->steps[c->n_steps - 1].mode_out;
}

/* The step a node becomes on the device, from its op row's `dev` (its
 * description, static param and modes; param_len set, param_off not; a
 * table step is ib_gdev_table). IB_UNSUPPORTED (naming op and mode) when
 * the op has no device step. `in_modes` are the node's input modes. */
ib_status ib_gstep_for_node(const ib_node *node, const int *in_modes, ib_gstep *step,
                            ib_error *err);
/* True when the step may follow others inside a chain (a PIXEL or TABLE
 * step without IB_DEV_HEAD). */
int ib_gstep_fusable(const ib_gstep *s);

/* Appends a step (assigns its param offset). false when the chain is full. */
int ib_gchain_push(ib_gchain *c, const ib_gstep *s);

/* Writes the node's per-job values for step `s` into block + s->param_off. */
void ib_gstep_fill(const ib_gstep *s, const ib_node *node, uint8_t *block);

/* The table of a table step that stands for the table nodes
 * `nodes[0..n)` applied in order: each row's own table (ib_dev_op.table)
 * for the step's mode, composed: entry [b*256+v] is where band value v of
 * band b ends up. Valid because every band's result depends on that band
 * alone. */
void ib_gtable_fold(const ib_gstep *s, const ib_node *const *nodes, int n, uint8_t *table);

/* Canonical signature text ("in=3|P0:3>3|G1:3>1|in1=0": each step's tag,
 * static param and modes): equal signatures generate equal sources.
 * Returns the length (snprintf semantics). */
int ib_gchain_signature(const ib_gchain *c, char *buf, size_t n);

/* Generated CUDA source for the chain: the configuration and the steps as
 * template instances over kernels/chain_kernels.cuh (`extern "C"
 * __global__ ib_chain`, and `ib_lsum` when reduce_luma), or a PASSES head's
 * own kernels file after the defines ops/op_dev.h promises it. Caller frees; NULL when out of
 * memory. */
char *ib_gchain_source(const ib_gchain *c);

/* Pixels per thread of the wide path. */
int ib_gchain_ppt(const ib_gchain *c);

#endif
