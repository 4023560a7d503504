"""Scratch parity driver for the neighbourhood ops (rank filters, box and
Gaussian blur, 3x3/5x5 kernels) until the Python client lands: builds Job
protobufs by hand, pipes them through `imgbatch run --backend cpu` and
compares the bytes with Pillow 12.3. Not collected by pytest (no test_ prefix).

usage: PYTHONPATH=client python tests/py/parity/scratch_nbhd.py [--n N] [--seed S]
"""
import argparse
import math
import os
import random
import subprocess
import sys

from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes
from PIL import Image, ImageFilter

from imgbatch import imgbatch_pb2 as pb

MODES = ["L", "LA", "RGB", "RGBA", "CMYK", "RGBX"]
BANDS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4, "RGBX": 4}


def rand_size(rng):
    r = rng.random()
    if r < 0.08:
        return 1, 1
    if r < 0.16:
        return 1, rng.randint(1, 40)
    if r < 0.24:
        return rng.randint(1, 40), 1
    if r < 0.34:
        return rng.randint(2, 6), rng.randint(2, 6)
    return rng.randint(1, 67), rng.randint(1, 53)


def rand_image(rng, mode):
    w, h = rand_size(rng)
    kind = rng.random()
    n = w * h * BANDS[mode]
    if kind < 0.7:
        data = rng.randbytes(n)
    elif kind < 0.85:  # few distinct values: many ties for the rank filters
        data = bytes(rng.choice((0, 1, 128, 254, 255)) for _ in range(n))
    else:  # smooth ramp
        data = bytes(((i * 7) // BANDS[mode] + rng.randint(0, 3)) & 255 for i in range(n))
    return w, h, data


def rand_radius(rng):
    r = rng.random()
    if r < 0.1:
        return 0.0
    if r < 0.3:
        return float(rng.randint(0, 6))
    if r < 0.5:
        return rng.uniform(0, 1.5)
    if r < 0.6:
        return rng.choice((0.5, 1.5, 2.5, 1e-7, 0.3333333, 1.0000001, 100.0, 1000.5))
    return rng.uniform(0, 40)


def case_rank(rng):
    size = rng.choice((3, 3, 3, 5, 5, 7, 9))
    n = size * size
    rank = rng.choice((0, n // 2, n - 1, rng.randrange(n)))
    op = pb.Node(rank_filter=pb.RankFilterOp(size=size, rank=rank))
    return op, lambda im: im.filter(ImageFilter.RankFilter(size, rank))


def case_box(rng):
    rx = rand_radius(rng)
    ry = rx if rng.random() < 0.4 else rand_radius(rng)
    op = pb.Node(box_blur=pb.BoxBlurOp(radius_x=rx, radius_y=ry))
    arg = rx if rx == ry and rng.random() < 0.5 else (rx, ry)
    return op, lambda im: im.filter(ImageFilter.BoxBlur(arg))


def case_gaussian(rng):
    rx = rand_radius(rng) * rng.choice((1, 1, 1, -1))
    ry = rx if rng.random() < 0.4 else rand_radius(rng)
    op = pb.Node(gaussian_blur=pb.GaussianBlurOp(radius_x=rx, radius_y=ry))
    arg = rx if rx == ry and rng.random() < 0.5 else (rx, ry)
    return op, lambda im: im.filter(ImageFilter.GaussianBlur(arg))


def rand_weight(rng):
    r = rng.random()
    if r < 0.5:
        return float(rng.randint(-4, 8))
    if r < 0.8:
        return rng.uniform(-2, 2)
    return rng.choice((0.1, 1 / 3, 0.0, -1.0, 1e-3))


def case_kernel(rng):
    size = rng.choice((3, 5))
    k = [rand_weight(rng) for _ in range(size * size)]
    r = rng.random()
    if r < 0.5:
        scale = sum(k)  # Kernel's default (functools.reduce left to right)
    elif r < 0.6:
        scale = 0.0
    else:
        scale = rng.choice((1.0, 9.0, 16.0, 0.5, -3.0, rng.uniform(-20, 20)))
    offset = rng.choice((0.0, 0.0, 128.0, -50.0, rng.uniform(-300, 300), 0.5))
    op = pb.Node(kernel=pb.KernelOp(size=size, kernel=k, scale=scale, offset=offset))
    return op, lambda im: im.filter(ImageFilter.Kernel((size, size), k, scale, offset))


REJECTS = [
    # (node, pillow call, expected kind) - Pillow refuses or we bound
    (pb.Node(rank_filter=pb.RankFilterOp(size=4, rank=1)),
     lambda im: im.filter(ImageFilter.RankFilter(4, 1)), "INVALID"),
    (pb.Node(rank_filter=pb.RankFilterOp(size=0, rank=0)),
     lambda im: im.filter(ImageFilter.RankFilter(0, 0)), "INVALID"),
    (pb.Node(rank_filter=pb.RankFilterOp(size=3, rank=9)),
     lambda im: im.filter(ImageFilter.RankFilter(3, 9)), "INVALID"),
    (pb.Node(rank_filter=pb.RankFilterOp(size=11, rank=5)), None, "LIMIT"),
    # Pillow 12.3 crashes (SIGFPE in ImagingExpand(margin 0)) on size 1
    (pb.Node(rank_filter=pb.RankFilterOp(size=1, rank=0)), None, "UNSUPPORTED"),
    (pb.Node(box_blur=pb.BoxBlurOp(radius_x=-1, radius_y=1)),
     lambda im: im.filter(ImageFilter.BoxBlur((-1, 1))), "INVALID"),
    (pb.Node(box_blur=pb.BoxBlurOp(radius_x=2, radius_y=-0.5)),
     lambda im: im.filter(ImageFilter.BoxBlur((2, -0.5))), "INVALID"),
    (pb.Node(box_blur=pb.BoxBlurOp(radius_x=math.nan, radius_y=1)), None, "INVALID"),
    (pb.Node(gaussian_blur=pb.GaussianBlurOp(radius_x=math.inf, radius_y=1)), None, "INVALID"),
    (pb.Node(gaussian_blur=pb.GaussianBlurOp(radius_x=1e7, radius_y=1)), None, "LIMIT"),
    (pb.Node(kernel=pb.KernelOp(size=3, kernel=[1] * 8, scale=1)),
     lambda im: im.filter(ImageFilter.Kernel((3, 3), [1] * 8, 1)), "INVALID"),
    (pb.Node(kernel=pb.KernelOp(size=7, kernel=[1] * 49, scale=1)),
     lambda im: im.filter(ImageFilter.Kernel((7, 7), [1] * 49, 1)), "INVALID"),
]

GEN = {"rank": case_rank, "box": case_box, "gaussian": case_gaussian, "kernel": case_kernel}


def job(key, mode, w, h, data, node):
    j = pb.Job(key_u64=key)
    j.source.raw.mode, j.source.raw.width, j.source.raw.height = mode, w, h
    j.source.raw.data = data
    j.nodes.add().source.index = 0
    n = j.nodes.add()
    n.CopyFrom(node)
    n.inputs.append(0)
    j.output.cpu.format = pb.RAW
    return j


def run(binary, jobs):
    stream = b"".join(_VarintBytes(j.ByteSize()) + j.SerializeToString() for j in jobs)
    out = subprocess.run([binary, "run", "--backend", "cpu"], input=stream,
                         capture_output=True, check=True).stdout
    res, pos = {}, 0
    while pos < len(out):
        n, pos = _DecodeVarint32(out, pos)
        r = pb.Result.FromString(out[pos:pos + n])
        pos += n
        res[r.key_u64] = r
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("IB_BIN", "build/imgbatch"))
    ap.add_argument("--n", type=int, default=200, help="cases per op x mode")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", default="rank,box,gaussian,kernel")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases, jobs = [], []
    for opname in args.ops.split(","):
        for mode in MODES:
            for _ in range(args.n):
                w, h, data = rand_image(rng, mode)
                node, ref = GEN[opname](rng)
                cases.append((opname, mode, w, h, data, node, ref, None))
    for node, ref, kind in REJECTS:
        for mode in ("L", "RGB"):
            w, h, data = rand_image(rng, mode)
            w, h = max(w, 8), max(h, 8)
            data = rng.randbytes(w * h * BANDS[mode])
            cases.append(("reject", mode, w, h, data, node, ref, kind))
    for i, (_, mode, w, h, data, node, _, _) in enumerate(cases):
        jobs.append(job(i, mode, w, h, data, node))
    res = run(args.bin, jobs)
    fails, counts = 0, {}
    for i, (opname, mode, w, h, data, node, ref, kind) in enumerate(cases):
        r = res.get(i)
        counts[(opname, mode)] = counts.get((opname, mode), 0) + 1
        what = f"#{i} {opname} {mode} {w}x{h} {node}".replace("\n", " ")
        if kind is not None:
            if ref is not None:
                try:
                    ref(Image.frombytes(mode, (w, h), data))
                    print("PILLOW ACCEPTS", what)
                    fails += 1
                except ValueError:
                    pass
            got = pb.ErrorKind.Name(r.error.kind) if r.HasField("error") else "image"
            if got != kind:
                print("REJECT MISMATCH", what, got, kind, r.error.message)
                fails += 1
            continue
        want = ref(Image.frombytes(mode, (w, h), data)).tobytes()
        if r is None or not r.HasField("image"):
            print("ERROR", what, r.error.message if r is not None else "no result")
            fails += 1
        elif r.image.data != want:
            diff = sum(a != b for a, b in zip(r.image.data, want))
            print("MISMATCH", what, f"{diff} bytes differ")
            fails += 1
    print(f"{len(cases)} cases, {fails} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
