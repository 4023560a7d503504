"""Scratch parity for the pointwise ops (point, invert, solarize, posterize,
getchannel, constant, convert, enhance): builds Job protobufs directly, runs
them through `imgbatch run --backend cpu`, compares bytes with Pillow 12.3.
Temporary: replaced by test_pointwise.py once the Python client lands.

Run: PYTHONPATH=client IB_BIN=build/imgbatch python tests/py/parity/scratch_pointwise.py [n]
"""
import math
import os
import random
import subprocess
import sys

from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes
from PIL import Image, ImageChops, ImageEnhance, ImageOps

from imgbatch import imgbatch_pb2 as pb

MODES = ["L", "LA", "RGB", "RGBA", "CMYK", "RGBX"]
ENHANCERS = [ImageEnhance.Brightness, ImageEnhance.Color, ImageEnhance.Contrast]


def rand_image(rng, mode):
    w = rng.choice([1, 2, 3, 5, 7, 17, 31, 64, 101, rng.randint(1, 300)])
    h = rng.choice([1, 2, 3, 9, rng.randint(1, 200)])
    data = rng.randbytes(w * h * len(mode))
    if rng.random() < 0.2:  # few distinct values: stresses means and thresholds
        vals = [rng.randrange(256) for _ in range(rng.randint(1, 3))]
        data = bytes(rng.choice(vals) for _ in range(w * h * len(mode)))
    return Image.frombytes(mode, (w, h), data)


def rand_factor(rng):
    r = rng.random()
    if r < 0.1:
        return rng.choice([0.0, 1.0, 0.5, 2.0, -1.0, math.nan, math.inf, -math.inf, 1e-50, 1e300])
    if r < 0.3:
        return round(rng.uniform(-2, 3), 1)
    return rng.uniform(-3, 4)


def case_point(rng, mode):
    bands = len(mode)
    n = 256 * bands
    if rng.random() < 0.1:  # wrong length: Pillow refuses
        n = rng.choice([0, 256, 512, 768, 1024, 255, 1025])
    lut = [rng.randint(-300, 600) if rng.random() < 0.2 else rng.randrange(256) for _ in range(n)]

    def node(nd):
        nd.point.lut.extend(lut)
    return node, lambda im: im.point(lut)


def case_invert(rng, mode):
    def node(nd):
        nd.invert.SetInParent()
    return node, ImageOps.invert


def case_solarize(rng, mode):
    t = rng.choice([0, 1, 127, 128, 255, 256, 1000, rng.randrange(256)])

    def node(nd):
        nd.solarize.threshold = t
    return node, lambda im: ImageOps.solarize(im, t)


def case_posterize(rng, mode):
    bits = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, rng.randint(1, 8), 0, 9])

    def node(nd):
        nd.posterize.bits = bits

    def ref(im):
        if im.mode not in ("L", "RGB"):
            raise OSError(f"not supported for mode {im.mode}")  # we check the mode first
        return ImageOps.posterize(im, bits)
    return node, ref


def case_getchannel(rng, mode):
    band = rng.randrange(len(mode) + 1)

    def node(nd):
        nd.getchannel.band = band
    return node, lambda im: im.getchannel(band)


def case_constant(rng, mode):
    v = rng.choice([0, 255, -5, 300, rng.randrange(256), rng.randint(-2**31, 2**31 - 1)])

    def node(nd):
        nd.constant.value = v
    return node, lambda im: ImageChops.constant(im, v)


def case_convert(rng, mode):
    to = rng.choice(MODES + ["", "P", "1", "I", "F", "HSV", "bogus"])

    def node(nd):
        nd.convert.mode = to

    def ref(im):
        if to == "bogus":
            raise ValueError("unknown mode")  # Pillow: ValueError; ours: Invalid
        if to in ("P", "1", "I", "F", "HSV"):
            raise NotImplementedError("Pillow converts; we do not admit the mode")
        return im.convert(to)
    return node, ref


def case_enhance(rng, mode):
    kind = rng.randrange(3)
    f = rand_factor(rng)

    def node(nd):
        nd.enhance.kind = kind
        nd.enhance.factor = f
    return node, lambda im: ENHANCERS[kind](im).enhance(f)


OPS = {
    "point": case_point, "invert": case_invert, "solarize": case_solarize,
    "posterize": case_posterize, "getchannel": case_getchannel, "constant": case_constant,
    "convert": case_convert, "enhance": case_enhance,
}


def expected_kind(exc):
    """Pillow's refusals as our error kinds: ImageOps._lut's OSError and modes
    we do not admit are Unsupported; out-of-range parameters are Invalid."""
    if isinstance(exc, (OSError, NotImplementedError)):
        return "UNSUPPORTED"
    return "INVALID"


def build_job(key, im, set_op):
    job = pb.Job()
    job.key_u64 = key
    job.source.raw.mode = im.mode
    job.source.raw.width, job.source.raw.height = im.size
    job.source.raw.data = im.tobytes()
    src = job.nodes.add()
    src.source.index = 0
    op = job.nodes.add()
    op.inputs.append(0)
    set_op(op)
    job.output.cpu.format = pb.RAW
    return job


def run_jobs(jobs):
    stdin = b"".join(_VarintBytes(j.ByteSize()) + j.SerializeToString() for j in jobs)
    bin_ = os.environ.get("IB_BIN", "build/imgbatch")
    out = subprocess.run([bin_, "run", "--backend", "cpu"], input=stdin, capture_output=True,
                         check=True).stdout
    results, pos = {}, 0
    while pos < len(out):
        n, pos = _DecodeVarint32(out, pos)
        r = pb.Result()
        r.ParseFromString(out[pos:pos + n])
        pos += n
        results[r.key_u64] = r
    return results


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(OPS)
    rng = random.Random(int(os.environ.get("SEED", "12345")))
    cases, jobs = [], []
    for name in only:
        for mode in MODES:
            for _ in range(n):
                im = rand_image(rng, mode)
                set_op, ref = OPS[name](rng, mode)
                try:
                    want = ref(im)
                    want = (want.mode, want.size, want.tobytes())
                except Exception as e:  # Pillow refuses
                    want = e
                key = len(jobs)
                cases.append((name, mode, im.size, want))
                jobs.append(build_job(key, im, set_op))
    results = run_jobs(jobs)
    fails = {}
    for key, (name, mode, size, want) in enumerate(cases):
        r = results.get(key)
        if r is None:
            got = "missing"
        elif r.WhichOneof("outcome") == "error":
            got = ("error", pb.ErrorKind.Name(r.error.kind), r.error.message)
        else:
            got = (r.image.mode, (r.image.width, r.image.height), r.image.data)
        if isinstance(want, Exception):
            ok = got[0] == "error" and got[1] == expected_kind(want)
        else:
            ok = got == want
        if not ok:
            fails.setdefault((name, mode), []).append((size, repr(want)[:80], repr(got)[:120]))
    total = len(cases)
    for k, v in sorted(fails.items()):
        print("FAIL", k, len(v), v[0])
    print(f"{total - sum(len(v) for v in fails.values())}/{total} cases match")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
