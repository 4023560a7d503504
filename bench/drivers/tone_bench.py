"""bench/drivers/tone_bench.py - the tone chain kernel alone, 4096^2 RGBA: the kernel
gpu_bench section 1 times (kernels/chain_kernels.cuh with one tone step,
gpu_bench's parameters), on gpu_bench's constant input (every byte 0x5a:
every lane of a warp takes the same path through the encode tables) and on
random bytes (the worst case for them), so the cost of divergent table reads
is measured, not guessed. Variants of kernels/tone.h's pixel, made by text
substitution in a copy of kernels/: `tree` (as committed) and `former`
(double cube roots and the encode function: the kernel before the tables,
its time and its bytes); every variant's bytes are compared with the
first's. CUDA events, median of 30 launches after a warm-up; the parameter
block is made on the device by ib_tone_prepare_f32 (IEEE operations only:
the host's values).

    python3 bench/drivers/tone_bench.py [--kernels DIR]     (needs cupy and a GPU)
"""
import argparse
import pathlib
import shutil
import struct
import sys
import tempfile

VARIANTS = {
    "tree": [],
    "former": [("= ib_tone_encode_fast_f32(", "= ib_tone_encode_f32("),
               ("ib_tone_cbrt_f32(lms[", "(float)ib_cbrt_d((double)lms[")],
}

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
    ap.add_argument("--kernels", default=str(pathlib.Path(__file__).resolve().parents[2] / "kernels"))
    args = ap.parse_args()
    try:
        import cupy as cp
        import numpy as np
    except ImportError as e:
        print(f"tone_bench: skipped: {e}")
        return 2
    side, bands = 4096, 4
    n = side * side * bands
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid = min((side * side // 4 + 255) // 256, sms * 8)  # gpu_bench's launch
    rng = np.random.default_rng(20261203)
    inputs = {"constant 0x5a": cp.full(n, 0x5A, dtype=cp.uint8),
              "random bytes": cp.asarray(rng.integers(0, 256, n, dtype=np.uint8))}
    first = {}
    status = 0
    for name, subs in VARIANTS.items():
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="tone_bench_"))
        for f in pathlib.Path(args.kernels).iterdir():
            if f.suffix in (".h", ".cuh"):
                shutil.copy(f, tmp / f.name)
        tone = (tmp / "tone.h").read_text()
        for old, new in subs:
            if old not in tone:
                print(f"tone_bench: variant {name}: {old!r} not in tone.h")
                return 1
            tone = tone.replace(old, new)
        (tmp / "tone.h").write_text(tone)
        mod = cp.RawModule(code=SRC % {"pbytes": 1056}, options=("--fmad=false", "-I" + str(tmp)))
        prep, chain = mod.get_function("tone_prep"), mod.get_function("ib_chain")
        params = cp.zeros(4096, dtype=cp.uint8)
        size = cp.zeros(1, dtype=cp.uint32)
        prep((1,), (1,), (params, size))
        if int(size[0]) > 1056:
            print(f"tone_bench: ib_tone_f32 is {int(size[0])} bytes, more than the 1056 staged")
            return 1
        for label, src in inputs.items():
            out = cp.empty(n, dtype=cp.uint8)
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
            if label not in first:
                first[label] = (name, out)
                same = "reference"
            else:
                ref_name, ref = first[label]
                diff = int((out != ref).sum())
                same = f"bytes equal to {ref_name}" if diff == 0 else f"{diff} BYTES DIFFER from {ref_name}"
                status |= diff != 0
            print(f"tone 4096^2 RGBA {name:7s} {label:14s}: {times[len(times) // 2]:.3f} ms "
                  f"(min {times[0]:.3f}); {same}")
        shutil.rmtree(tmp)
    return status


if __name__ == "__main__":
    sys.exit(main())
