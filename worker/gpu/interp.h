/*
 * interp.h - the pointwise interpreter tier (kernels/interp_kernels.cuh):
 * one module, compiled once per process, that runs any chain of PIXEL /
 * TABLE steps from a step table, with the bytes of the chain's specialised
 * kernel (both call the steps' runtime twins). It serves a new signature at
 * once while the specialised kernel compiles (compile_pool.h).
 *
 * The module's source is generated from the op table (every row's
 * dev_ops: one dispatch case per PIXEL / TABLE tag), so nothing here names
 * an op. A launch is the specialised chain's with one more argument: the
 * same descriptor table (ib_gdesc, one per job, blockIdx.y) and the same
 * per-job parameter blocks (ib_gstage_fill), plus the step table by value:
 *
 *   ib_interp_lsum(descs, prog)   first, when prog.luma (like ib_lsum)
 *   ib_interp(descs, prog)        256 threads per block, any grid
 *
 * What it cannot run: chains whose head is a GATHER or PASSES step
 * (ops/op_dev.h; ib_interp_can_run is false): those wait for their
 * compile.
 */
#ifndef IB_GPU_INTERP_H
#define IB_GPU_INTERP_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/codegen.h"

#define IB_INTERP_KERNEL "ib_interp"
#define IB_INTERP_LSUM_KERNEL "ib_interp_lsum"

/* Host mirror of struct ib_istep / ib_iprog (kernels/interp_kernels.cuh). */
typedef struct ib_istep {
  int32_t tag, a, mi, mo, ni, no; /* the template's <A, MI, MO, NI, NO> */
  uint32_t off, pad;              /* OFF */
} ib_istep;

typedef struct ib_iprog {
  int32_t n_steps, nin, b0, b1, bo; /* the chain's IB_NIN, IB_B0, IB_B1, IB_BO */
  int32_t luma;                     /* launch ib_interp_lsum first */
  uint32_t pbytes, pad;             /* the shared parameter block (IB_PBYTES) */
  ib_istep steps[IB_CHAIN_MAX_STEPS];
} ib_iprog;

/* True when the interpreter runs the chain: every step is a PIXEL or TABLE
 * step with a runtime twin (so the head loads plainly). */
bool ib_interp_can_run(const ib_gchain *c);

/* The step table of a chain (ib_interp_can_run; else IB_UNSUPPORTED naming
 * the step). Its values are exactly the template arguments codegen.c writes
 * for the specialised kernel. */
ib_status ib_interp_prog(const ib_gchain *c, ib_iprog *prog, ib_error *err);

/* The interpreter module's source, generated from the op table: compile it
 * with the chains' options (--fmad=false). Caller frees; NULL when out of
 * memory or when two device steps share a tag but not a twin. */
char *ib_interp_source(void);

#endif
