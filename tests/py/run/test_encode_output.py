"""Encoded output as Pillow 12.3's save() writes it, through `imgbatch run`
on the CPU backend: JPEG bytes equal to Image.save() for the same pixels and
options (libjpeg-turbo 2.1.5 here, 3.1 in Pillow's wheel: the same bytes);
quality as Pillow treats it, out-of-range refused by name; the modes each
format refuses, refused as Pillow refuses them; the Result's mode is the
encoded file's mode; PNG decodes to exactly the image."""
import io
import random

import pytest
from PIL import Image, ImageChops

from ibtest import bands_of, raw_job, run
from imgbatch import imgbatch_pb2 as pb

MODES = ["L", "RGB", "CMYK", "RGBX"]
SUBSAMPLING = {pb.SUBSAMPLING_DEFAULT: None, pb.SUBSAMPLING_444: "4:4:4",
               pb.SUBSAMPLING_422: "4:2:2", pb.SUBSAMPLING_420: "4:2:0"}
FORMATS = {pb.PNG: "PNG", pb.JPEG: "JPEG", pb.WEBP: "WEBP", pb.TIFF: "TIFF"}


def noise(rng, w, h, mode):
    return rng.randbytes(w * h * bands_of(mode))


def jpeg_case(key, rng, w, h, mode, quality=None, subsampling=pb.SUBSAMPLING_DEFAULT,
              progressive=False, optimize=False):
    """(Job, Pillow's bytes, description) for one image and option set."""
    data = noise(rng, w, h, mode)
    job = raw_job(key, w, h, mode, data=data)
    cpu = job.output.cpu
    cpu.format = pb.JPEG
    kw = {}
    if quality is not None:
        cpu.quality = kw["quality"] = quality
    cpu.subsampling = subsampling
    if SUBSAMPLING[subsampling]:
        kw["subsampling"] = SUBSAMPLING[subsampling]
    if progressive:
        cpu.progressive = kw["progressive"] = True
    if optimize:
        cpu.optimize = kw["optimize"] = True
    buf = io.BytesIO()
    Image.frombytes(mode, (w, h), data).save(buf, "JPEG", **kw)
    return job, buf.getvalue(), f"{mode} {w}x{h} {kw}"


def assert_same_bytes(cases):
    p, results = run([c[0] for c in cases], "--backend", "cpu", timeout=300)
    assert p.returncode == 0, p.stderr
    assert len(results) == len(cases)
    for r in results:
        _, want, what = cases[r.key_u64]
        assert r.WhichOneof("outcome") == "image", (what, r.error.message)
        assert r.image.format == pb.JPEG
        got = r.image.data
        assert got == want, (what, len(got), len(want))
        assert r.image.mode == Image.open(io.BytesIO(want)).mode, what


def test_every_quality_0_to_100_gives_pillows_bytes():
    rng = random.Random(1)
    cases = [jpeg_case(q, rng, 37, 23, "RGB", quality=q) for q in range(101)]
    # And none given: Pillow's (libjpeg's) default, 75.
    cases.append(jpeg_case(101, rng, 37, 23, "RGB"))
    assert_same_bytes(cases)


@pytest.mark.parametrize("mode", MODES)
def test_random_images_and_options_give_pillows_bytes(mode):
    rng = random.Random(f"jpeg-{mode}")
    sizes = [(1, 1), (1, 7), (9, 1), (15, 17), (16, 16), (33, 64), (257, 131)]
    cases = []
    for k in range(48):
        w, h = sizes[k % len(sizes)]
        cases.append(jpeg_case(k, rng, w, h, mode,
                               quality=rng.choice([None, 0, 1, rng.randint(2, 100), 90, 95, 100]),
                               subsampling=rng.choice(list(SUBSAMPLING)),
                               progressive=rng.random() < 0.4, optimize=rng.random() < 0.4))
    assert_same_bytes(cases)


def sampling_factors(jpeg):
    """Component 0's (h, v) sampling factors from the SOF marker."""
    i = 2
    while i < len(jpeg):
        marker, size = jpeg[i + 1], int.from_bytes(jpeg[i + 2:i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            f = jpeg[i + 11]
            return f >> 4, f & 15
        i += 2 + size
    raise AssertionError("no SOF marker")


@pytest.mark.parametrize("quality", [None, 75, 90, 95, 100])
def test_default_subsampling_is_4_2_0_at_every_quality(quality):
    # Pillow leaves libjpeg's default, 4:2:0 for RGB, at every quality
    # (libvips' jpegsave switches to 4:4:4 from 90).
    rng = random.Random(2)
    case = jpeg_case(0, rng, 32, 32, "RGB", quality=quality)
    assert_same_bytes([case])
    assert sampling_factors(case[1]) == (2, 2)


def result_of(job):
    p, results = run([job], "--backend", "cpu")
    assert p.returncode == 0, p.stderr
    (r,) = results
    return r


@pytest.mark.parametrize("quality", [101, 150, 2 ** 31, 2 ** 32 - 1])
def test_quality_over_100_is_invalid_naming_quality(quality):
    job = raw_job(1, 8, 8, "RGB")
    job.output.cpu.format = pb.JPEG
    job.output.cpu.quality = quality
    r = result_of(job)
    assert r.WhichOneof("outcome") == "error"
    assert r.error.kind == pb.INVALID and r.error.stage == pb.VALIDATE
    assert f"quality {quality} is out of range 0..100" in r.error.message


@pytest.mark.parametrize("field", ["subsampling", "progressive", "optimize"])
def test_jpeg_only_options_on_png_are_invalid_naming_the_option(field):
    job = raw_job(1, 8, 8, "RGB")
    job.output.cpu.format = pb.PNG
    setattr(job.output.cpu, field, pb.SUBSAMPLING_444 if field == "subsampling" else True)
    r = result_of(job)
    assert r.error.kind == pb.INVALID and r.error.stage == pb.VALIDATE
    assert f"{field} applies to JPEG only, not PNG" in r.error.message


def pillow_save(im, fmt):
    """(bytes, None) as Pillow writes im as fmt, or (None, its error)."""
    buf = io.BytesIO()
    try:
        im.save(buf, fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    except OSError as e:
        return None, str(e)
    return buf.getvalue(), None


ALL_MODES = ["L", "LA", "RGB", "RGBA", "CMYK", "RGBX"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_mode_is_written_or_refused_as_pillow_does(fmt):
    # For every mode: Pillow refuses -> Unsupported naming the mode and the
    # format, before any work (validation); Pillow writes -> the Result's
    # mode is the mode Pillow opens the written file in, and lossless
    # formats (PNG, TIFF, lossless WebP) decode to the pixels Pillow's own
    # file decodes to.
    rng = random.Random(f"modes-{fmt}")
    jobs, expect = [], []
    for k, mode in enumerate(ALL_MODES):
        data = noise(rng, 13, 7, mode)
        if mode in ("LA", "RGBA"):  # no fully transparent pixels: WebP may rewrite those
            step = 2 if mode == "LA" else 4
            data = bytearray(data)
            data[step - 1::step] = bytes(max(1, b) for b in data[step - 1::step])
            data = bytes(data)
        job = raw_job(k, 13, 7, mode, data=data)
        job.output.cpu.format = fmt
        job.output.cpu.lossless = fmt == pb.WEBP
        jobs.append(job)
        expect.append(pillow_save(Image.frombytes(mode, (13, 7), data), FORMATS[fmt]))
    p, results = run(jobs, "--backend", "cpu")
    assert p.returncode == 0, p.stderr
    assert len(results) == len(jobs)
    for r in results:
        mode = ALL_MODES[r.key_u64]
        want, refusal = expect[r.key_u64]
        if refusal:
            assert r.WhichOneof("outcome") == "error", (mode, refusal)
            assert r.error.kind == pb.UNSUPPORTED and r.error.stage == pb.VALIDATE
            assert f"cannot write mode {mode} as {FORMATS[fmt]}" in r.error.message
            assert refusal == f"cannot write mode {mode} as {FORMATS[fmt]}"
            continue
        assert r.WhichOneof("outcome") == "image", (mode, r.error.message)
        ours, theirs = Image.open(io.BytesIO(r.image.data)), Image.open(io.BytesIO(want))
        assert r.image.mode == ours.mode == theirs.mode, mode
        if fmt != pb.JPEG:
            assert ours.tobytes() == theirs.tobytes(), mode


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA"])
@pytest.mark.parametrize("size", [(1, 1), (31, 7), (128, 65)])
def test_png_decodes_to_exactly_the_image(mode, size):
    rng = random.Random(f"png-{mode}-{size}")
    data = noise(rng, *size, mode)
    job = raw_job(0, *size, mode, data=data)
    job.output.cpu.format = pb.PNG
    r = result_of(job)
    assert r.WhichOneof("outcome") == "image", r.error.message
    im = Image.open(io.BytesIO(r.image.data))
    assert (r.image.mode, im.mode, im.size) == (mode, mode, size)
    assert im.tobytes() == data


def photo(w, h, mode, seed):
    """Smooth gradients under light grain, as a camera image compresses
    (noise alone makes every block busy)."""
    rng = random.Random(seed)
    ramp = Image.linear_gradient("L").resize((w, h))
    rgb = Image.merge("RGB", (ramp, ramp.transpose(Image.Transpose.ROTATE_90).resize((w, h)),
                              Image.radial_gradient("L").resize((w, h))))
    grain = Image.frombytes("L", (w, h), bytes(rng.randrange(24) for _ in range(w * h)))
    return ImageChops.add(rgb, Image.merge("RGB", (grain, grain, grain))).convert(mode)


@pytest.mark.parametrize("mode,opts", [
    ("RGB", {}),
    ("RGB", {"quality": 95, "subsampling": pb.SUBSAMPLING_444, "progressive": True, "optimize": True}),
    ("L", {"quality": 90, "progressive": True}),
    ("CMYK", {"optimize": True}),
])
def test_large_photo_sized_images_give_pillows_bytes(mode, opts):
    im = photo(1531, 1001, mode, seed=len(opts))
    job = raw_job(0, *im.size, mode, data=im.tobytes())
    cpu = job.output.cpu
    cpu.format = pb.JPEG
    kw = {}
    for k, v in opts.items():
        setattr(cpu, k, v)
        kw[k] = SUBSAMPLING[v] if k == "subsampling" else v
    buf = io.BytesIO()
    im.save(buf, "JPEG", **kw)
    assert_same_bytes([(job, buf.getvalue(), f"{mode} {im.size} {kw}")])


def test_webp_quality_defaults_to_pillows_80():
    rng = random.Random(7)
    data = noise(rng, 40, 30, "RGB")
    jobs = []
    for k, q in enumerate([None, 80, 75]):
        job = raw_job(k, 40, 30, "RGB", data=data)
        job.output.cpu.format = pb.WEBP
        if q is not None:
            job.output.cpu.quality = q
        jobs.append(job)
    p, results = run(jobs, "--backend", "cpu")
    assert p.returncode == 0, p.stderr
    data = {r.key_u64: r.image.data for r in results}
    assert data[0] == data[1] != data[2]
