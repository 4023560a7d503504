"""bench/tone_bench.py - the tone chain kernel alone, 4096^2 RGBA: the kernel
gpu_bench section 1 times (kernels/chain_kernels.cuh with one tone step,
gpu_bench's parameters), once on gpu_bench's constant input (every byte
0x5a: every lane of a warp takes the same path through the encode
thresholds) and once on random bytes (the worst case for that search), so
the cost of divergent table reads is measured, not guessed. CUDA events,
median of 30 launches after a warm-up; the parameter block is made on the
device by ib_tone_prepare_f32 (IEEE operations only: the host's values).

    python3 bench/tone_bench.py [--kernels DIR]     (needs cupy and a GPU)
"""
import argparse
import pathlib
import struct
import sys

SRC = r"""
#define IB_B0 4
#define IB_B1 1
#define IB_BO 4
#define IB_PPT 4
#define IB_NIN 1
#define IB_PBYTES %(pbytes)d
#define IB_GATHER 0
#include "tone.cuh"
#define IB_HEAD ib_head_none
#define IB_STEPS ib_steps<ib_step_tone<0, 3, 3, 4, 4, 0u> >
#include "chain_kernels.cuh"
extern "C" __global__ void tone_prep(ib_tone_f32 *o, unsigned *size) {
  *o = ib_tone_prepare_f32(3.0f, 0.2f, 0.1f, -0.2f, 0.05f, 0.1f);
  *size = sizeof(ib_tone_f32);
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default=str(pathlib.Path(__file__).resolve().parents[1] / "kernels"))
    args = ap.parse_args()
    try:
        import cupy as cp
        import numpy as np
    except ImportError as e:
        print(f"tone_bench: skipped: {e}")
        return 2
    side, bands = 4096, 4
    n = side * side * bands
    opts = ("--fmad=false", "-I" + args.kernels)
    mod = cp.RawModule(code=SRC % {"pbytes": 1056}, options=opts, name_expressions=None)
    prep, chain = mod.get_function("tone_prep"), mod.get_function("ib_chain")
    params = cp.zeros(4096, dtype=cp.uint8)
    size = cp.zeros(1, dtype=cp.uint32)
    prep((1,), (1,), (params, size))
    if int(size[0]) > 1056:
        print(f"tone_bench: ib_tone_f32 is {int(size[0])} bytes, more than the 1056 staged")
        return 1
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid = min((side * side // 4 + 255) // 256, sms * 8)  # gpu_bench's launch
    rng = np.random.default_rng(20261203)
    inputs = {"constant 0x5a": cp.full(n, 0x5A, dtype=cp.uint8),
              "random bytes": cp.asarray(rng.integers(0, 256, n, dtype=np.uint8))}
    out = cp.empty(n, dtype=cp.uint8)
    for label, src in inputs.items():
        desc = struct.pack("<4Q8I", src.data.ptr, src.data.ptr, out.data.ptr, params.data.ptr,
                           side, side, side, side, 1, 0, side, side)
        d = cp.asarray(np.frombuffer(desc, dtype=np.uint8))
        chain((grid, 1), (256,), (d,))
        times = []
        for _ in range(30):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            chain((grid, 1), (256,), (d,))
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b))
        times.sort()
        alpha_ok = bool((out[3::4] == src[3::4]).all())
        print(f"tone kernel 4096^2 RGBA, {label:14s}: {times[len(times) // 2]:.3f} ms "
              f"(min {times[0]:.3f}); alpha copied: {alpha_ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
