"""Parity of the composition family (ImageChops two-image functions, blend) with
Pillow 12.3, and of the Oklab tone op with its float64 specification.

Jobs are built as protobufs directly (Job.source + Job.extra_sources[0], nodes
[SourceOp 0, SourceOp 1, op]) and run in one `imgbatch run --backend cpu`
process per test. Chops and blend must equal Pillow's bytes, mode and size;
Pillow's refusals must come back as the matching error kind. Tone must be
within 1 LSB of a numpy float64 transcription of kernels/tone.h, alpha equal.
"""
import math
import os
import random
import subprocess

import numpy as np
import pytest
from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes
from PIL import Image, ImageChops

from imgbatch import imgbatch_pb2 as pb

BIN = os.environ.get("IB_BIN", "build/imgbatch")
BANDS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4, "RGBX": 4}
FUNCS = ["multiply", "screen", "overlay", "hard_light", "soft_light", "difference", "darker",
         "lighter", "add", "subtract", "add_modulo", "subtract_modulo"]
# Mode classes: (mode1 choices, mode2 choices); the 4-band mixed class pairs
# different modes of one band count, which Pillow accepts (image1's mode out).
MODE_CLASSES = {
    "L": ["L"], "LA": ["LA"], "RGB": ["RGB"], "RGBA": ["RGBA"], "CMYK": ["CMYK"],
    "RGBX": ["RGBX"], "mixed4": ["RGBA", "CMYK", "RGBX"],
}
CASES = 200


# ---------------------------------------------------------------- jobs

def rand_size(rng):
    r = rng.random()
    if r < 0.1:
        return (1, 1)
    if r < 0.25:
        return (rng.randint(1, 3), rng.randint(1, 3))
    if r < 0.95:
        return (rng.randint(1, 33), rng.randint(1, 17))
    return (rng.randint(100, 400), rng.randint(1, 9))


def rand_image(rng, mode, size):
    return Image.frombytes(mode, size, rng.randbytes(size[0] * size[1] * BANDS[mode]))


def modes_for(rng, cls):
    choices = MODE_CLASSES[cls]
    return (rng.choice(choices), rng.choice(choices)) if cls == "mixed4" else (cls, cls)


def raw_source(msg, im):
    msg.raw.mode, msg.raw.width, msg.raw.height = im.mode, im.width, im.height
    msg.raw.data = im.tobytes()


def make_job(key, images, fill_op, inputs=None):
    job = pb.Job(key_u64=key)
    raw_source(job.source, images[0])
    for im in images[1:]:
        raw_source(job.extra_sources.add(), im)
    for i in range(len(images)):
        job.nodes.add().source.index = i
    node = job.nodes.add()
    node.inputs.extend(inputs if inputs is not None else range(len(images)))
    fill_op(node)
    job.output.cpu.format = pb.RAW
    return job


def chops_op(fn, scale=1.0, offset=0.0):
    def fill(node):
        node.chops.function, node.chops.scale, node.chops.offset = fn, scale, offset
    return fill


def blend_op(alpha):
    def fill(node):
        node.blend.alpha = alpha
    return fill


def tone_op(params):
    def fill(node):
        node.tone.SetInParent()
        for k, v in params.items():
            setattr(node.tone, k, v)
    return fill


def run_jobs(jobs):
    stream = b"".join(_VarintBytes(j.ByteSize()) + j.SerializeToString() for j in jobs)
    proc = subprocess.run([BIN, "run", "--backend", "cpu"], input=stream, capture_output=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    out, pos, results = proc.stdout, 0, {}
    while pos < len(out):
        n, pos = _DecodeVarint32(out, pos)
        r = pb.Result()
        r.ParseFromString(out[pos:pos + n])
        pos += n
        results[r.key_u64] = r
    assert len(results) == len(jobs)
    return results


class Batch:
    """Jobs with their expectations: a Pillow image, or an error kind."""

    def __init__(self):
        self.jobs, self.expect = [], []

    def add(self, images, fill_op, expect, what, inputs=None):
        self.jobs.append(make_job(len(self.jobs), images, fill_op, inputs))
        self.expect.append((expect, what))

    def check(self, compare=None):
        results = run_jobs(self.jobs)
        failures = []
        for key, (expect, what) in enumerate(self.expect):
            r = results[key]
            outcome = r.WhichOneof("outcome")
            if isinstance(expect, int):
                if outcome != "error" or r.error.kind != expect:
                    failures.append(f"{what}: want error kind {expect}, got {outcome} {r}")
                continue
            if outcome != "image":
                failures.append(f"{what}: {r.error.message}")
                continue
            msg = (compare or compare_exact)(r.image, expect)
            if msg:
                failures.append(f"{what}: {msg}")
        assert not failures, f"{len(failures)} of {len(self.jobs)} failed:\n" + \
            "\n".join(failures[:20])
        return len(self.jobs)


def compare_exact(got, ref):
    if (got.mode, got.width, got.height) != (ref.mode, ref.width, ref.height):
        return f"shape {got.mode} {got.width}x{got.height} != {ref.mode} {ref.size}"
    want = ref.tobytes()
    if got.data != want:
        bad = sum(a != b for a, b in zip(got.data, want))
        return f"{bad} of {len(want)} bytes differ"
    return None


# ---------------------------------------------------------------- chops

def pillow_chops(fn, im1, im2, scale, offset):
    f = getattr(ImageChops, FUNCS[fn])
    return f(im1, im2, scale, offset) if FUNCS[fn] in ("add", "subtract") else f(im1, im2)


def rand_scale_offset(rng):
    scale = rng.choice([1.0, 2.0, 0.5, -1.0, -3.0, rng.uniform(-5, 5), rng.uniform(0.01, 1),
                        rng.uniform(1, 300)])
    scale = float(np.float32(scale)) or 1.0  # Pillow parses scale as a C float
    offset = rng.choice([0, 128, rng.randint(-300, 300), rng.randint(-10**6, 10**6),
                         rng.randint(-(2**31) + 10**7, 2**31 - 10**7)])
    return scale, offset


def may_overflow(scale, offset):
    """The row's rule: |a +- b| / |scale| + |offset| could leave int32 in Pillow."""
    return 510.0 / abs(scale) + abs(offset) >= 2147483392.0


@pytest.mark.parametrize("cls", list(MODE_CLASSES))
@pytest.mark.parametrize("fn", range(len(FUNCS)), ids=FUNCS)
def test_chops_equals_pillow(fn, cls):
    rng = random.Random(f"chops-{fn}-{cls}")
    batch = Batch()
    for i in range(CASES):
        m1, m2 = modes_for(rng, cls)
        s1 = rand_size(rng)
        s2 = s1 if rng.random() < 0.6 else rand_size(rng)  # else: the intersection
        im1, im2 = rand_image(rng, m1, s1), rand_image(rng, m2, s2)
        scale, offset = rand_scale_offset(rng) if FUNCS[fn] in ("add", "subtract") else (1.0, 0)
        ref = pillow_chops(fn, im1, im2, scale, offset)
        what = f"{FUNCS[fn]} {m1}{s1} {m2}{s2} scale={scale} offset={offset}"
        if FUNCS[fn] in ("add", "subtract") and may_overflow(scale, offset):
            batch.add([im1, im2], chops_op(fn, scale, offset), pb.UNSUPPORTED, what)
        elif i % 50 == 0:  # both inputs the same node
            batch.add([im1], chops_op(fn, scale, offset), pillow_chops(fn, im1, im1, scale, offset),
                      what + " [same node]", inputs=[0, 0])
        else:
            batch.add([im1, im2], chops_op(fn, scale, offset), ref, what)
    batch.check()


def test_chops_at_the_4096_bound():
    rng = random.Random("chops-4096")
    batch = Batch()
    a, b = rand_image(rng, "L", (4096, 4096)), rand_image(rng, "L", (4096, 4096))
    batch.add([a, b], chops_op(FUNCS.index("soft_light")), ImageChops.soft_light(a, b), "4096^2")
    a, b = rand_image(rng, "RGBA", (4096, 3)), rand_image(rng, "CMYK", (4095, 5))
    batch.add([a, b], chops_op(FUNCS.index("add"), 0.75, 7), ImageChops.add(a, b, 0.75, 7),
              "4096x3 RGBA + 4095x5 CMYK")
    batch.check()


def test_chops_rejects_what_pillow_refuses():
    rng = random.Random("chops-reject")
    batch = Batch()
    modes = list(BANDS)
    for fn in range(len(FUNCS)):
        for _ in range(20):
            m1, m2 = rng.sample(modes, 2)
            if BANDS[m1] == BANDS[m2]:
                continue
            im1, im2 = rand_image(rng, m1, rand_size(rng)), rand_image(rng, m2, rand_size(rng))
            with pytest.raises(ValueError, match="images do not match"):
                pillow_chops(fn, im1, im2, 1.0, 0)
            batch.add([im1, im2], chops_op(fn), pb.INVALID, f"{FUNCS[fn]} {m1} vs {m2}")
    im = rand_image(rng, "RGB", (5, 4))
    for fn in (FUNCS.index("add"), FUNCS.index("subtract")):
        # Pillow: TypeError (non-integer offset), OverflowError (offset beyond int32).
        for offset in (0.5, -1.25, 2.0**31, -(2.0**31) - 1, math.inf, math.nan):
            batch.add([im, im], chops_op(fn, 1.0, offset), pb.INVALID, f"offset={offset}")
        # Pillow divides by a zero / non-finite float scale and converts inf or NaN
        # to int (undefined); a double below float32 range is 0 once narrowed.
        for scale in (0.0, -0.0, 1e-50, math.inf, -math.inf, math.nan, 1e39):
            batch.add([im, im], chops_op(fn, scale, 0), pb.INVALID, f"scale={scale}")
        # Past 2^31 Pillow's float->int conversion is undefined.
        for scale, offset in ((1e-8, 0), (1.0, 2**31 - 1), (1e-3, -(2**31))):
            batch.add([im, im], chops_op(fn, scale, offset), pb.UNSUPPORTED,
                      f"scale={scale} offset={offset}")
    batch.add([im, im], chops_op(12), pb.INVALID, "function 12")
    batch.add([im, im], chops_op(-1), pb.INVALID, "function -1")
    batch.check()


def test_chops_scale_offset_only_read_by_add_and_subtract():
    rng = random.Random("chops-unused-params")
    batch = Batch()
    im1, im2 = rand_image(rng, "RGB", (9, 7)), rand_image(rng, "RGB", (9, 7))
    for fn in range(len(FUNCS)):
        if FUNCS[fn] not in ("add", "subtract"):
            batch.add([im1, im2], chops_op(fn, 0.0, 0.5), pillow_chops(fn, im1, im2, 1, 0),
                      FUNCS[fn])
    batch.check()


# ---------------------------------------------------------------- blend

@pytest.mark.parametrize("cls", list(MODE_CLASSES))
def test_blend_equals_pillow(cls):
    rng = random.Random(f"blend-{cls}")
    batch = Batch()
    for i in range(CASES):
        m1, m2 = modes_for(rng, cls)
        size = rand_size(rng)
        im1, im2 = rand_image(rng, m1, size), rand_image(rng, m2, size)
        alpha = rng.choice([0.0, 1.0, 0.5, rng.random(), rng.random(), rng.random(),
                            rng.uniform(-3, 4), rng.uniform(-100, 100), 1.0 + 1e-12])
        what = f"blend {m1} {m2} {size} alpha={alpha!r}"
        if i % 50 == 0:
            batch.add([im1], blend_op(alpha), Image.blend(im1, im1, alpha), what + " [same node]",
                      inputs=[0, 0])
        else:
            batch.add([im1, im2], blend_op(alpha), Image.blend(im1, im2, alpha), what)
    batch.check()


def test_blend_rejects_what_pillow_refuses():
    rng = random.Random("blend-reject")
    batch = Batch()
    modes = list(BANDS)
    for _ in range(60):
        m1, m2 = rng.choice(modes), rng.choice(modes)
        s1, s2 = rand_size(rng), rand_size(rng)
        if BANDS[m1] == BANDS[m2] and s1 == s2:
            continue
        im1, im2 = rand_image(rng, m1, s1), rand_image(rng, m2, s2)
        with pytest.raises(ValueError, match="images do not match"):
            Image.blend(im1, im2, 0.5)
        batch.add([im1, im2], blend_op(0.5), pb.INVALID, f"{m1}{s1} vs {m2}{s2}")
    im = rand_image(rng, "RGBA", (4, 4))
    for alpha in (math.inf, -math.inf, math.nan, 1e39):
        batch.add([im, im], blend_op(alpha), pb.INVALID, f"alpha={alpha}")
    batch.check()


# ---------------------------------------------------------------- tone

M1 = np.array([[0.4122214708, 0.5363325363, 0.0514459929],
               [0.2119034982, 0.6806995451, 0.1073969566],
               [0.0883024619, 0.2817188376, 0.6299787005]])
M2 = np.array([[0.2104542553, 0.7936177850, -0.0040720468],
               [1.9779984951, -2.4285922050, 0.4505937099],
               [0.0259040371, 0.7827717662, -0.8086757660]])
M2_INV = np.array([[1.0, 0.3963377774, 0.2158037573],
                   [1.0, -0.1055613458, -0.0638541728],
                   [1.0, -0.0894841775, -1.2914855480]])
M1_INV = np.array([[4.0767416621, -3.3077115913, 0.2309699292],
                   [-1.2684380046, 2.6097574011, -0.3413193965],
                   [-0.0041960863, -0.7034186147, 1.7076147010]])
TONE_PARAMS = ("exposure_ev", "contrast", "highlights", "shadows", "whites", "blacks")


def smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def tone_reference(im, params):
    """kernels/tone.h in float64 (its specification), on a Pillow image."""
    px = np.frombuffer(im.tobytes(), np.uint8).reshape(-1, BANDS[im.mode]).astype(np.float64)
    c = px[:, :3] / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    lab = np.cbrt(lin @ M1.T) @ M2.T
    p = {k: float(np.float32(params.get(k, 0.0))) for k in TONE_PARAMS}
    L = lab[:, 0] * 2.0 ** (p["exposure_ev"] / 3.0)
    L = 0.5 + (L - 0.5) * (1.0 + p["contrast"])
    L = (L + 0.25 * (p["shadows"] * (1 - smoothstep(0, 0.5, L))
                     + p["highlights"] * smoothstep(0.5, 1, L))
         + 0.125 * (p["blacks"] * (1 - smoothstep(0, 0.25, L))
                    + p["whites"] * smoothstep(0.75, 1, L)))
    lab[:, 0] = L
    lin = ((lab @ M2_INV.T) ** 3) @ M1_INV.T
    enc = np.where(lin <= 0.0031308, 12.92 * lin,
                   1.055 * np.maximum(lin, 0.0031308) ** (1 / 2.4) - 0.055)
    px[:, :3] = np.floor(np.clip(enc, 0.0, 1.0) * 255.0 + 0.5)
    return Image.frombytes(im.mode, im.size, px.astype(np.uint8).tobytes())


def within_one_lsb(got, ref):
    if (got.mode, got.width, got.height) != (ref.mode, ref.width, ref.height):
        return f"shape {got.mode} {got.width}x{got.height} != {ref.mode} {ref.size}"
    g = np.frombuffer(got.data, np.uint8).reshape(-1, BANDS[ref.mode]).astype(int)
    w = np.frombuffer(ref.tobytes(), np.uint8).reshape(-1, BANDS[ref.mode]).astype(int)
    worst = int(np.abs(g[:, :3] - w[:, :3]).max())
    if worst > 1:
        return f"off by {worst} LSB"
    if ref.mode == "RGBA" and not np.array_equal(g[:, 3], w[:, 3]):
        return "alpha changed"
    return None


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_tone_within_one_lsb_of_float64_reference(mode):
    rng = random.Random(f"tone-{mode}")
    batch = Batch()
    for i in range(CASES):
        im = rand_image(rng, mode, rand_size(rng))
        params = {"exposure_ev": rng.choice([0.0, rng.uniform(-8, 8), rng.uniform(-2, 2)])}
        for k in TONE_PARAMS[1:]:
            params[k] = rng.choice([0.0, rng.uniform(-1, 1), rng.choice([-1.0, 1.0])])
        if i == 0:
            params = {k: 0.0 for k in TONE_PARAMS}
        ref = tone_reference(im, params)
        if i == 0:
            assert ref.tobytes() == im.tobytes()  # all zero: identity
        batch.add([im], tone_op(params), ref, f"tone {mode} {im.size} {params}")
    batch.check(within_one_lsb)


def test_tone_rejects_out_of_range_params_and_other_modes():
    rng = random.Random("tone-reject")
    batch = Batch()
    im = rand_image(rng, "RGB", (3, 2))
    for k in TONE_PARAMS:
        limit = 8.0 if k == "exposure_ev" else 1.0
        for v in (limit * 1.001, -limit * 1.001, math.inf, math.nan):
            batch.add([im], tone_op({k: v}), pb.INVALID, f"{k}={v}")
    for mode in ("L", "LA", "CMYK", "RGBX"):
        batch.add([rand_image(rng, mode, (3, 2))], tone_op({}), pb.UNSUPPORTED, f"tone {mode}")
    batch.check()
    results = run_jobs(batch.jobs[:1])
    assert "exposure_ev" in results[0].error.message
