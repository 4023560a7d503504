/*
 * chain.cuh - the building blocks of a fused chain (device only; NVRTC).
 *
 * worker/gpu/codegen.c writes a few lines per chain: the configuration
 * (IB_B0 ... IB_GATHER), an #include of every step's kernels/ file, the
 * head (IB_HEAD) and the steps (IB_STEPS) as template instances, and then
 * #include "chain_kernels.cuh", which holds the kernels. Each step is a
 * template of one uniform shape (worker/ops/op_dev.h), so the generator
 * composes steps without knowing any op:
 *
 *   template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
 *   struct ib_step_x : ib_step_base {
 *     static void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
 *                     uint8_t *q, int ctx);
 *   };
 *
 * A: the step's static parameter; MI/MO its modes and NI/NO their bands;
 * OFF its offset in the shared parameter block sp. run reads p[0..NI) (and
 * b2, input 1's pixel, for a two-input head) and writes q[0..NO). ctx is
 * what the first step's prep(sp, n) returned for the image of n pixels.
 *
 * Every PIXEL step's run() only calls its runtime twin, a struct of the
 * same name with "_rt" whose run takes the template's constants as
 * arguments (and whose prep, when the step has one, too):
 *
 *   struct ib_step_x_rt : ib_step_rt_base {
 *     static void run(int a, int mi, int mo, int ni, int no, unsigned off,
 *                     const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
 *                     uint8_t *q, int ctx);
 *   };
 *
 * Inlined with constants, the specialised chain folds it to the code the
 * template would have held; the interpreter (interp_kernels.cuh) calls it
 * with a step table's values. One body, so both give the same bytes.
 *
 * A gather head loads the pixel (x, y) of its output into a0:
 *
 *   template <int A, int MI, int N0, int N1, unsigned OFF, unsigned PB>
 *   struct ib_head_x { static void load(const ib_desc &d, const uint8_t *sp,
 *                                        int x, int y, uint8_t *a0); };
 *
 * N0/N1: bands of inputs 0 and 1; PB: the shared block's size (per-job
 * tables may follow it in d.params). A head whose neighbouring outputs
 * share work may load a run of GX of them along x at once:
 *
 *   static const int GX;  (> 1: the kernel calls load_gx instead of load)
 *   static void load_gx(const ib_desc &d, const uint8_t *sp, int x, int y,
 *                       uint8_t (*a)[4]);  (outputs x .. x+GX-1 into a[k])
 */
#ifndef IB_CHAIN_CUH
#define IB_CHAIN_CUH

#include "gpu_io.h"
#include "point.h"

struct ib_step_base {
  static __device__ __forceinline__ int prep(const uint8_t *sp, unsigned long long n) {
    (void)sp, (void)n;
    return 0;
  }
};

/* The runtime twins' default prep (ctx = 0). */
struct ib_step_rt_base {
  static __device__ __forceinline__ int prep(int a, int mi, unsigned off, const uint8_t *sp,
                                             unsigned long long n) {
    (void)a, (void)mi, (void)off, (void)sp, (void)n;
    return 0;
  }
};

/* The steps in order: each reads p, writes q, and q becomes the next p. */
template <class... S>
struct ib_steps;
template <>
struct ib_steps<> {
  static __device__ __forceinline__ void run(const uint8_t *, uint8_t *, uint8_t *, const uint8_t *,
                                             int) {}
};
template <class S, class... R>
struct ib_steps<S, R...> {
  static __device__ __forceinline__ int prep(const uint8_t *sp, unsigned long long n) {
    return S::prep(sp, n);
  }
  static __device__ __forceinline__ void run(const uint8_t *sp, uint8_t *p, uint8_t *q,
                                             const uint8_t *b2, int ctx) {
    S::run(sp, p, b2, q, ctx);
    for (int k = 0; k < 4; k++) p[k] = q[k];
    ib_steps<R...>::run(sp, p, q, b2, ctx);
  }
};

/* The identity (CopyOp; the pixel a gather head already loaded). */
struct ib_step_copy_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    for (int k = 0; k < ni; k++) q[k] = p[k];
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_copy : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_copy_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

/* A per-band table, 256 * NI bytes at OFF: the folded run of table steps.
 * ib_point_px's lookups, as 32-bit shared-window loads: sp is always the
 * kernel's staged __shared__ block, and with the generic 64-bit address
 * ptxas spent two more integer ops per byte forming it (a window base and
 * an OR of the band offset) on top of the load. */
static __device__ __forceinline__ uint8_t ib_lds_u8(uint32_t addr) {
  uint32_t v;
  /* volatile: a lookup of a constant index (constant > point) must not be
   * hoisted above the __syncthreads() that ends the staging. */
  asm volatile("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(addr));
  return (uint8_t)v;
}
struct ib_step_table_rt : ib_step_rt_base {
  static __device__ __forceinline__ void run(int a, int mi, int mo, int ni, int no, unsigned off,
                                             const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    const uint32_t t = (uint32_t)__cvta_generic_to_shared(sp + off);
    for (int b = 0; b < ni; b++) q[b] = ib_lds_u8(t + (uint32_t)b * 256u + p[b]);
  }
};
template <int A, int MI, int MO, int NI, int NO, unsigned OFF>
struct ib_step_table : ib_step_base {
  static __device__ __forceinline__ void run(const uint8_t *sp, const uint8_t *p, const uint8_t *b2,
                                             uint8_t *q, int ctx) {
    ib_step_table_rt::run(A, MI, MO, NI, NO, OFF, sp, p, b2, q, ctx);
  }
};

/* No gather head: the kernel reads input 0 (and 1) at the output pixel. */
struct ib_head_none {
  static __device__ __forceinline__ void load(const ib_desc &, const uint8_t *, int, int,
                                              uint8_t *) {}
};

/* A head's GX (1 when it has none) and the call that loads its run. */
template <class H, class = void>
struct ib_head_run {
  static const int GX = 1;
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t (*a)[4]) {
    H::load(d, sp, x, y, a[0]);
  }
};
template <class H>
struct ib_head_run<H, decltype((void)H::GX)> {
  static const int GX = H::GX;
  static __device__ __forceinline__ void load(const ib_desc &d, const uint8_t *sp, int x, int y,
                                              uint8_t (*a)[4]) {
    H::load_gx(d, sp, x, y, a);
  }
};

#endif
