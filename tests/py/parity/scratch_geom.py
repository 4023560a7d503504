"""Scratch parity for the geometric ops (until the Python client lands):
builds Job protobufs directly, runs them through `imgbatch run --backend cpu`
and compares with Pillow 12.3 on the same raw image.

usage: PYTHONPATH=client python tests/py/parity/scratch_geom.py BIN [N_PER_OP] [SEED]
"""
import random
import subprocess
import sys

from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes
from PIL import Image, ImageOps

from imgbatch import imgbatch_pb2 as pb

MODES = ["L", "LA", "RGB", "RGBA", "CMYK", "RGBX"]
BANDS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4, "RGBX": 4}
K = pb.ErrorKind


def rand_size(rng, cap=40):
    r = rng.random()
    if r < 0.1:
        return 1, 1
    if r < 0.2:
        return 1, rng.randint(1, cap)
    if r < 0.3:
        return rng.randint(1, cap), 1
    if r < 0.35:  # tall: Image.resize's two-pass path (h > 100 w)
        return rng.randint(1, 3), rng.randint(301, 700)
    return rng.randint(1, cap), rng.randint(1, cap)


def rand_image(rng, mode, size=None):
    w, h = size or rand_size(rng)
    data = rng.randbytes(w * h * BANDS[mode])
    return Image.frombytes(mode, (w, h), data), data


def raw_source(mode, im, data):
    s = pb.Source()
    s.raw.mode, s.raw.width, s.raw.height, s.raw.data = mode, im.width, im.height, data
    return s


def job_for(mode, im, data, op_node, extra=None):
    job = pb.Job()
    job.source.CopyFrom(raw_source(mode, im, data))
    n = job.nodes.add()
    n.source.index = 0
    if extra is not None:
        job.extra_sources.add().CopyFrom(raw_source(extra[0].mode, extra[0], extra[1]))
        n2 = job.nodes.add()
        n2.source.index = 1
    op_node.inputs.extend([0] if extra is None else [0, 1])
    job.nodes.add().CopyFrom(op_node)
    return job


def run_jobs(binary, jobs):
    stdin = b"".join(_VarintBytes(len(b)) + b for b in (j.SerializeToString() for j in jobs))
    p = subprocess.run([binary, "run", "--backend", "cpu"], input=stdin, capture_output=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr.decode()
    out, pos, res = p.stdout, 0, []
    while pos < len(out):
        n, pos = _DecodeVarint32(out, pos)
        r = pb.Result()
        r.ParseFromString(out[pos:pos + n])
        pos += n
        res.append(r)
    assert len(res) == len(jobs)
    return res


def pillow(fn):
    """(bytes, size) of Pillow's output or the exception it raised."""
    try:
        o = fn()
        return ("ok", o.tobytes(), o.size, o.mode)
    except (ValueError, OverflowError, SystemError) as e:
        return ("raise", type(e).__name__, str(e))


# ---------------------------------------------------------------- cases
# Each case: (job, expect) with expect ("ok", bytes, size, mode) or ("kind", K).

def case_transpose(rng, mode):
    im, data = rand_image(rng, mode)
    m = rng.randrange(7)
    node = pb.Node()
    node.transpose.method = m
    return job_for(mode, im, data, node), pillow(lambda: im.transpose(Image.Transpose(m)))


def case_flipmirror(rng, mode):
    im, data = rand_image(rng, mode)
    node = pb.Node()
    if rng.random() < 0.5:
        node.transpose.method = pb.FLIP_TOP_BOTTOM
        return job_for(mode, im, data, node), pillow(lambda: ImageOps.flip(im))
    node.transpose.method = pb.FLIP_LEFT_RIGHT
    return job_for(mode, im, data, node), pillow(lambda: ImageOps.mirror(im))


def case_crop(rng, mode):
    im, data = rand_image(rng, mode)
    w, h = im.size

    def coord(n):
        r = rng.random()
        if r < 0.6:
            return rng.randint(0, n)
        if r < 0.9:
            return rng.randint(-n - 5, 2 * n + 5)
        return rng.choice([-2**31, 2**31 - 1, -5000, 5000])

    box = [coord(w), coord(h), coord(w), coord(h)]
    if rng.random() < 0.75:
        box = [min(box[0], box[2]), min(box[1], box[3]), max(box[0], box[2]), max(box[1], box[3])]
    node = pb.Node()
    node.crop.left, node.crop.top, node.crop.right, node.crop.bottom = box
    if box[2] < box[0] or box[3] < box[1]:
        exp = ("kind", K.INVALID)
    elif box[2] == box[0] or box[3] == box[1]:
        exp = ("kind", K.UNSUPPORTED)  # Pillow: empty image; ours: no empty images
    elif box[2] - box[0] > 4096 or box[3] - box[1] > 4096:
        exp = ("kind", K.LIMIT)
    else:
        exp = pillow(lambda: im.crop(tuple(box)))
    return job_for(mode, im, data, node), exp


def case_expand(rng, mode):
    im, data = rand_image(rng, mode)
    border = [rng.choice([0, 0, 1, rng.randint(0, 20)]) for _ in range(4)]
    if rng.random() < 0.03:
        border[rng.randrange(4)] = rng.choice([4096, 5000, 2**32 - 1])
    fill = tuple(rng.randrange(256) for _ in range(BANDS[mode]))
    node = pb.Node()
    (node.expand.left, node.expand.top, node.expand.right, node.expand.bottom) = border
    r = rng.random()
    if r < 0.1:
        node.expand.fill = b""  # Pillow's default fill=0
        fn = lambda: ImageOps.expand(im, border=tuple(border))  # noqa: E731
    elif r < 0.15:
        node.expand.fill = bytes(fill) + b"\x00"
        return job_for(mode, im, data, node), ("kind", K.INVALID)
    else:
        node.expand.fill = bytes(fill)
        f = fill[0] if mode == "L" else fill
        fn = lambda: ImageOps.expand(im, border=tuple(border), fill=f)  # noqa: E731
    if border[0] + border[2] + im.width > 4096 or border[1] + border[3] + im.height > 4096:
        return job_for(mode, im, data, node), ("kind", K.LIMIT)
    return job_for(mode, im, data, node), pillow(fn)


def rand_box_edge(rng, n):
    r = rng.random()
    if r < 0.3:
        return float(rng.randint(0, n))
    if r < 0.5:
        return rng.randint(0, 2 * n) / 2
    if r < 0.9:
        return rng.uniform(0, n)
    return rng.choice([-0.5, -1e-9, n + 1e-6, n + 1, 0.0, float(n), n - 1e-7])


def case_resize(rng, mode, big=False):
    im, data = rand_image(rng, mode, rand_size(rng, 300) if big else None)
    w, h = im.size
    r = rng.random()
    if r < 0.1:
        size = (rng.randint(1, 3), rng.randint(1, 3))
    elif r < 0.2:
        size = (w, h)
    else:
        size = (rng.randint(1, 3 * w + 2), rng.randint(1, min(3 * h + 2, 900)))
    if big and rng.random() < 0.2:
        size = rng.choice([(4096, rng.randint(1, 3)), (rng.randint(1, 3), 4096), (4095, 2)])
    if rng.random() < 0.03:
        size = rng.choice([(0, 5), (5, 0), (4097, 3), (3, 5000)])
    node = pb.Node()
    node.resize.width, node.resize.height = size
    box = None
    if rng.random() < 0.7:
        x0, x1 = sorted((rand_box_edge(rng, w), rand_box_edge(rng, w)))
        y0, y1 = sorted((rand_box_edge(rng, h), rand_box_edge(rng, h)))
        if rng.random() < 0.1:
            x0, x1 = x1, x0
        if rng.random() < 0.05:
            x1 = x0
        box = (x0, y0, x1, y1)
        node.resize.box.left, node.resize.box.top, node.resize.box.right, node.resize.box.bottom = box
    resample = Image.Resampling.NEAREST
    if rng.random() < 0.05:
        resample = rng.choice([1, 2, 3, 4, 5])
        node.resize.resample = resample
        return job_for(mode, im, data, node), ("kind", K.UNSUPPORTED)
    if size[0] > 4096 or size[1] > 4096:
        return job_for(mode, im, data, node), ("kind", K.LIMIT)
    return job_for(mode, im, data, node), pillow(lambda: im.resize(size, resample, box=box))


def case_paste(rng, mode):
    base, bdata = rand_image(rng, mode)
    pmode = mode if rng.random() < 0.85 else rng.choice(MODES)
    im, idata = rand_image(rng, pmode)
    bw, bh = base.size
    node = pb.Node()
    left = rng.randint(-im.width - 3, bw + 3)
    top = rng.randint(-im.height - 3, bh + 3)
    if rng.random() < 0.03:
        left = rng.choice([2**31 - 1, -2**31, 2**31 - 1 - im.width])
    node.paste.left, node.paste.top = left, top
    size = None
    if rng.random() < 0.4:
        size = (im.width, im.height)
        if rng.random() < 0.2:
            size = (im.width + rng.choice([-1, 1]), im.height)
            size = (max(size[0], 0), size[1])
        node.paste.size.width, node.paste.size.height = size
    job = job_for(mode, base, bdata, node, extra=(im, idata))
    if pmode != mode and not (mode == "RGB" and pmode == "RGBA"):
        return job, ("kind", K.UNSUPPORTED)

    def fn():
        out = base.copy()
        box = (left, top) if size is None else (left, top, left + size[0], top + size[1])
        out.paste(im, box)
        return out
    return job, pillow(fn)


def case_resize_big(rng, mode):
    return case_resize(rng, mode, big=True)


def case_bounds(rng, mode):
    """Outputs at the 4096 side bound."""
    op = rng.choice(["transpose", "expand", "crop", "paste"])
    im, data = rand_image(rng, mode, rng.choice([(4096, 2), (3, 4096), (4095, 1), (1, 4093)]))
    node = pb.Node()
    if op == "transpose":
        m = rng.randrange(7)
        node.transpose.method = m
        return job_for(mode, im, data, node), pillow(lambda: im.transpose(Image.Transpose(m)))
    if op == "expand":
        b = [rng.randint(0, 2) for _ in range(4)]
        b[0] = max(0, 4096 - im.width - b[2]) if rng.random() < 0.5 else b[0]
        node.expand.left, node.expand.top, node.expand.right, node.expand.bottom = b
        if b[0] + b[2] + im.width > 4096 or b[1] + b[3] + im.height > 4096:
            return job_for(mode, im, data, node), ("kind", K.LIMIT)
        return job_for(mode, im, data, node), pillow(lambda: ImageOps.expand(im, tuple(b)))
    if op == "crop":
        box = (-2, -1, min(im.width + 1, 4094), min(im.height + 1, 4095))
        node.crop.left, node.crop.top, node.crop.right, node.crop.bottom = box
        return job_for(mode, im, data, node), pillow(lambda: im.crop(box))
    small, sdata = rand_image(rng, mode, (rng.randint(1, 9), rng.randint(1, 9)))
    node.paste.left, node.paste.top = rng.randint(-5, im.width), rng.randint(-5, im.height)

    def fn():
        out = im.copy()
        out.paste(small, (node.paste.left, node.paste.top))
        return out
    return job_for(mode, im, data, node, extra=(small, sdata)), pillow(fn)


CASES = {"transpose": case_transpose, "flipmirror": case_flipmirror, "crop": case_crop,
         "expand": case_expand, "resize": case_resize, "paste": case_paste,
         "resize_big": case_resize_big, "bounds": case_bounds}


def check(res, exp):
    if exp[0] == "kind" or exp[0] == "raise":
        want = exp[1] if exp[0] == "kind" else K.INVALID
        if res.WhichOneof("outcome") != "error":
            return f"expected error {K.Name(want)} ({exp}), got an image"
        if res.error.kind != want:
            return f"expected {K.Name(want)} ({exp}), got {K.Name(res.error.kind)}: {res.error.message}"
        return None
    if res.WhichOneof("outcome") != "image":
        return f"expected image, got error {K.Name(res.error.kind)}: {res.error.message}"
    _, data, size, mode = exp
    img = res.image
    if (img.width, img.height) != size or img.mode != mode:
        return f"shape {img.mode} {img.width}x{img.height} != {mode} {size}"
    if img.data != data:
        diff = sum(a != b for a, b in zip(img.data, data))
        return f"bytes differ ({diff} of {len(data)})"
    return None


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rng = random.Random(seed)
    fails = 0
    only = sys.argv[4].split(",") if len(sys.argv) > 4 else list(CASES)
    for name, fn in CASES.items():
        if name not in only:
            continue
        for mode in MODES:
            cases = [fn(rng, mode) for _ in range(n)]
            results = run_jobs(binary, [c[0] for c in cases])
            bad = [(i, m) for i, (c, r) in enumerate(zip(cases, results)) if (m := check(r, c[1]))]
            kinds = {}
            for c in cases:
                k = c[1][0] if c[1][0] != "kind" else K.Name(c[1][1])
                kinds[k] = kinds.get(k, 0) + 1
            print(f"{name:10s} {mode:5s} {n - len(bad)}/{n} ok  {kinds}")
            for i, m in bad[:5]:
                print("   FAIL", i, m, cases[i][0].nodes[-1])
            fails += len(bad)
    print("FAILURES", fails)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
