/*
 * interp_kernels.cuh - the pointwise interpreter (device only; NVRTC),
 * compiled once per process: it runs any chain of PIXEL / TABLE steps (a
 * plain-load head, as fused chains have: one or two inputs read at the
 * output pixel) from a step table, so a new signature runs at once while
 * its specialised kernel compiles. Each step calls its template's runtime
 * twin (chain.cuh), the very body the specialised kernel inlines with
 * constants, so both write the same bytes.
 *
 * worker/gpu/interp.c generates the source: an #include of every step's
 * kernels/ file, IB_INTERP_OPS(X) with one X(tag, twin) per PIXEL / TABLE
 * step of the op table (the dispatch; nothing here names an op), then this
 * file. The defaults run copies and tables so the file compiles alone.
 *
 * The step table is a kernel parameter (__grid_constant__: read in place
 * from the constant bank, where every thread of a warp reading one step is
 * a broadcast), so the host uploads and frees nothing per signature. Its
 * host mirror is ib_iprog in worker/gpu/interp.h: same layout.
 *
 * ib_interp: one thread per pixel, grid-stride, the chain's parameter
 * block (the very block the specialised kernel gets) staged into shared
 * memory once per block; ib_px's register discipline (p, q, q -> p).
 * ib_interp_lsum: ib_lsum for a LUMA head (prog.luma), launched first.
 */
#ifndef IB_INTERP_KERNELS_CUH
#define IB_INTERP_KERNELS_CUH

#include "chain.cuh"
#include "convert.h"
#include "luma_sum.cuh"

#ifndef IB_INTERP_OPS
#define IB_INTERP_OPS(X) X('Y', ib_step_copy_rt) X('P', ib_step_table_rt)
#endif

#define IB_INTERP_MAX_STEPS 16    /* IB_CHAIN_MAX_STEPS */
#define IB_INTERP_MAX_PARAMS 8192 /* IB_CHAIN_MAX_PARAMS */

struct ib_istep {
  int tag, a, mi, mo, ni, no;
  unsigned off, pad;
};
struct ib_iprog {
  int n_steps, nin, b0, b1, bo, luma; /* luma: steps[0] reads the ib_interp_lsum sum */
  unsigned pbytes, pad;
  ib_istep steps[IB_INTERP_MAX_STEPS];
};
static_assert(sizeof(ib_istep) == 32 && sizeof(ib_iprog) == 544, "ib_iprog: host mirror layout");

/* What the chain's first step's prep returns (ib_steps::prep). */
static __device__ __forceinline__ int ib_interp_prep(const ib_istep &s, const uint8_t *sp,
                                                     unsigned long long n) {
#define IB_INTERP_PREP(t, fn) \
  case t: return fn::prep(s.a, s.mi, s.off, sp, n);
  switch (s.tag) {
    IB_INTERP_OPS(IB_INTERP_PREP)
    default: return 0;
  }
#undef IB_INTERP_PREP
}

static __device__ void ib_interp_step(const ib_istep &s, const uint8_t *sp, const uint8_t *p,
                                      const uint8_t *b2, uint8_t *q, int ctx) {
#define IB_INTERP_RUN(t, fn) \
  case t: fn::run(s.a, s.mi, s.mo, s.ni, s.no, s.off, sp, p, b2, q, ctx); break;
  switch (s.tag) {
    IB_INTERP_OPS(IB_INTERP_RUN)
    default: break; /* never: the host builds tables from dispatched tags only */
  }
#undef IB_INTERP_RUN
}

extern "C" __global__ void __launch_bounds__(256)
    ib_interp(const ib_desc *descs, const __grid_constant__ ib_iprog prog) {
  const ib_desc d = descs[blockIdx.y];
  __shared__ __align__(16) uint8_t sp[IB_INTERP_MAX_PARAMS];
  for (unsigned i = threadIdx.x; i < prog.pbytes / 4; i += blockDim.x)
    ((uint32_t *)sp)[i] = ((const uint32_t *)d.params)[i];
  __syncthreads();
  const unsigned long long n = (unsigned long long)d.width * d.height;
  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  const int ctx = ib_interp_prep(prog.steps[0], sp, n);
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += step) {
    /* The strided index is the contiguous one when the strides are the
     * width (d.contig), so one path serves both. */
    const unsigned long long y = i / d.width, x = i - y * d.width;
    const uint8_t *a = d.in0 + (y * d.stride0 + x) * prog.b0;
    const uint8_t *b2 = prog.nin == 2 ? d.in1 + (y * d.stride1 + x) * prog.b1 : a;
    uint8_t p[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
    for (int k = 0; k < prog.b0; k++) p[k] = a[k];
    for (int s = 0; s < prog.n_steps; s++) {
      ib_interp_step(prog.steps[s], sp, p, b2, q, ctx);
      for (int k = 0; k < 4; k++) p[k] = q[k];
    }
    uint8_t *o = d.out + i * prog.bo;
    for (int k = 0; k < prog.bo; k++) o[k] = p[k];
  }
}

/* ib_lsum (chain_kernels.cuh) with the head's mode and offset from the
 * table (luma_sum.cuh): into the u64 at steps[0].off + 8 of the global
 * parameter block. */
extern "C" __global__ void __launch_bounds__(256)
    ib_interp_lsum(const ib_desc *descs, const __grid_constant__ ib_iprog prog) {
  const ib_desc d = descs[blockIdx.y];
  ib_luma_sum(d, prog.steps[0].mi, prog.b0,
              (unsigned long long *)(d.params + prog.steps[0].off + 8));
}

#endif
