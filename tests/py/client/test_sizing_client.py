"""ImageOps.contain / cover / fit / pad / scale and Image.thumbnail, recorded
as the resize / new / paste calls Pillow makes: on random sizes and modes
the worker's bytes (CPU backend, through `imgbatch run`) and replay() equal
Pillow's; record-time errors are Pillow's; thumbnail is in place and, on a
JPEG source, records the draft() Pillow makes first (tests/py/parity/test_draft.py
covers its bytes)."""
import io
import os
import random

import PIL.Image
import PIL.ImageOps
import pytest

import imgbatch
from imgbatch import Image, ImageOps

MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "RGBX")
R = PIL.Image.Resampling


def binary():
    path = os.environ.get("IB_BIN")
    assert path, "IB_BIN must name the imgbatch binary (ctest sets it)"
    return path


def pair(r, mode, w, h):
    pil = PIL.Image.frombytes(mode, (w, h), r.randbytes(w * h * len(mode)))
    return pil, Image.frombytes(mode, (w, h), pil.tobytes())


def calls(r):
    size = (r.randint(1, 60), r.randint(1, 60))
    method = r.choice(list(R))
    centering = (r.choice((0, 0.5, 1, r.random(), -0.5, 1.5)), r.choice((0, 0.5, r.random())))
    return r.choice([
        ("contain", lambda L, im: L.contain(im, size, method)),
        ("cover", lambda L, im: L.cover(im, size, method)),
        ("fit", lambda L, im: L.fit(im, size, method, r.choice((0, 0.1, 0.3, 0.5, -0.2)), centering)),
        ("pad", lambda L, im: L.pad(im, size, method, r.choice((None, 7, "red")), centering)),
        ("scale", lambda L, im: L.scale(im, r.choice((1, 0.5, 0.37, 1.6, 2)), method)),
    ])


@pytest.mark.parametrize("mode", MODES)
def test_imageops_sizing_equals_pillow(mode):
    r = random.Random(f"sizing-{mode}")
    jobs, wants = [], []
    for i in range(25):
        pil, lazy = pair(r, mode, r.randint(1, 90), r.randint(1, 90))
        name, call = calls(r)
        state = r.getstate()
        try:
            want = call(PIL.ImageOps, pil)
        except ValueError:
            continue  # e.g. pad's "red" on L: covered by the error test
        r.setstate(state)
        got = call(ImageOps, lazy)
        assert (got.mode, got.size) == (want.mode, want.size), f"{i} {name}"
        assert got.replay().tobytes() == want.tobytes(), f"{i} {name} replay"
        jobs.append(got.to_job(key=i))
        wants.append((i, name, want))
    assert len(jobs) > 15
    results = {res.input_key: res for res in imgbatch.run_local(iter(jobs), binary=binary())}
    for i, name, want in wants:
        res = results[i]
        assert res.error is None, (i, name, res.error)
        assert (res.image.mode, res.image.size) == (want.mode, want.size), (i, name)
        assert res.image.data == want.tobytes(), (i, name)


@pytest.mark.parametrize("mode", MODES)
def test_thumbnail_is_in_place_and_equals_pillow(mode):
    r = random.Random(f"thumb-{mode}")
    jobs, wants = [], []
    for i in range(20):
        pil, lazy = pair(r, mode, r.randint(1, 300), r.randint(1, 300))
        size = (r.randint(1, 120) + r.choice((0, 0.5)), r.randint(1, 120))
        method = r.choice(list(R))
        gap = r.choice((2.0, None, 1.0, 3.0))
        assert pil.thumbnail(size, method, gap) is None
        assert lazy.thumbnail(size, method, gap) is None
        assert (lazy.mode, lazy.size) == (pil.mode, pil.size)
        assert lazy.replay().tobytes() == pil.tobytes(), i
        jobs.append(lazy.to_job(key=i))
        wants.append(pil)
    results = {res.input_key: res for res in imgbatch.run_local(iter(jobs), binary=binary())}
    for i, want in enumerate(wants):
        res = results[i]
        assert res.error is None, (i, res.error)
        assert (res.image.size, res.image.data) == (want.size, want.tobytes()), i


def encoded(fmt, size):
    buf = io.BytesIO()
    PIL.Image.radial_gradient("L").resize(size).convert("RGB").save(buf, fmt)
    return buf.getvalue()


def test_thumbnail_of_a_jpeg_source_records_pillows_draft_and_box():
    data = encoded("JPEG", (400, 300))
    lazy = Image.open(data)
    lazy.thumbnail((64, 64))
    pil = PIL.Image.open(io.BytesIO(data))
    pil.thumbnail((64, 64))
    job = imgbatch.pb().Job.FromString(lazy.to_job(key=1))
    # draft(None, (128, 128)): min(400 // 128, 300 // 128) = 2 -> 1/2, 200x150.
    assert job.contract_version == 3 and job.source.draft_scale == 2
    resize = job.nodes[-1].resize
    assert (resize.width, resize.height) == pil.size == (64, 48)
    assert (resize.box.right, resize.box.bottom, resize.reducing_gap) == (200.0, 150.0, 2.0)
    (res,) = imgbatch.run_local([job.SerializeToString()], binary=binary())
    assert res.error is None, res.error
    assert (res.image.size, res.image.data) == (pil.size, pil.tobytes())


def test_draft_is_pillows_no_op_after_a_read_a_draft_or_on_other_formats():
    """Pillow's JpegImageFile.draft needs the file's tile still pending and
    no earlier draft; other formats and decoded images return None."""
    data = encoded("JPEG", (400, 300))
    cases = {
        "read": lambda m: (lambda im: (im.copy(), im)[1])(m.open(io.BytesIO(data)) if m is PIL.Image
                                                            else m.open(data)),
        "twice": lambda m: (lambda im: (im.draft(None, (100, 100)), im)[1])(
            m.open(io.BytesIO(data)) if m is PIL.Image else m.open(data)),
        "png": lambda m: m.open(io.BytesIO(encoded("PNG", (400, 300)))) if m is PIL.Image
        else m.open(encoded("PNG", (400, 300))),
        "copy": lambda m: (m.open(io.BytesIO(data)) if m is PIL.Image else m.open(data)).copy(),
    }
    for name, make in cases.items():
        pil, lazy = make(PIL.Image), make(Image)
        assert pil.draft(None, (50, 50)) is None and lazy.draft(None, (50, 50)) is None, name
        assert lazy.size == pil.size, name
        pil.thumbnail((50, 50))
        lazy.thumbnail((50, 50))
        job = imgbatch.pb().Job.FromString(lazy.to_job(key=1))
        # "twice": the first draft's 1/2 (min(400 // 100, 300 // 100) = 3) stays.
        assert job.source.draft_scale == (2 if name == "twice" else 0), name
        assert job.contract_version == (3 if name == "twice" else 2), name
        assert lazy.replay().tobytes() == pil.tobytes(), name


def test_draft_returns_pillows_mode_and_box_and_refuses_a_mode_change():
    data = encoded("JPEG", (401, 299))
    for request in [(50, 50), (200, 100), (401, 299), (1, 1), None]:
        pil, lazy = PIL.Image.open(io.BytesIO(data)), Image.open(data)
        assert lazy.draft(None, request) == pil.draft(None, request), request
        assert lazy.size == pil.size, request
    with pytest.raises(NotImplementedError, match="wire format"):
        Image.open(data).draft("L", (50, 50))


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_thumbnail_without_draft_equals_pillow(fmt):
    """A PNG always; a JPEG where draft would not scale (reducing_gap None, or
    the image within 2x the requested size) or after a copy (no longer a
    JpegImageFile in Pillow)."""
    data = encoded(fmt, (300, 200))
    for size, gap, copy in [((64, 64), None, False), ((200, 150), 2.0, False), ((50, 50), 2.0, True)]:
        if fmt == "PNG":
            gap = 2.0
        pil = PIL.Image.open(io.BytesIO(data))
        lazy = Image.open(data)
        if copy:
            pil, lazy = pil.copy(), lazy.copy()
        pil.thumbnail(size, reducing_gap=gap)
        lazy.thumbnail(size, reducing_gap=gap)
        (res,) = imgbatch.run_local([lazy.to_job(key=1)], binary=binary())
        assert res.error is None, res.error
        assert (res.image.size, res.image.data) == (pil.size, pil.tobytes()), (size, gap, copy)


@pytest.mark.parametrize("call", [
    lambda L, im: L.ImageOps.contain(im, (0, 5)),
    lambda L, im: L.ImageOps.cover(im, (5, 0)),
    lambda L, im: L.ImageOps.fit(im, (0, 5)),
    lambda L, im: L.ImageOps.pad(im, (5, 9), color="nocolour"),
    lambda L, im: L.ImageOps.scale(im, 0),
    lambda L, im: L.ImageOps.scale(im, -1.5),
    lambda L, im: im.thumbnail((0, 5)),
    lambda L, im: im.thumbnail((5, 5), reducing_gap=0.5),
], ids=["contain-0", "cover-0", "fit-0", "pad-colour", "scale-0", "scale-neg",
        "thumb-0", "thumb-gap"])
def test_record_time_errors_are_pillows(call):
    import imgbatch as ib

    with pytest.raises(Exception) as pillows:
        call(PIL, PIL.Image.new("RGB", (9, 7)))
    with pytest.raises(Exception) as ours:
        call(ib, ib.Image.new("RGB", (9, 7)))
    assert (type(ours.value), str(ours.value)) == (type(pillows.value), str(pillows.value))


def test_the_graph_languages_thumbnail_step_is_pillows_thumbnail():
    data = encoded("JPEG", (400, 300))
    for text, size in [("thumbnail(64)", (64, 64)), ("thumbnail(90, 30)", (90, 30))]:
        got = imgbatch.apply_graph(imgbatch.parse_graph(text), Image.open(data))
        pil = PIL.Image.open(io.BytesIO(data))
        pil.thumbnail(size)
        assert got.size == pil.size and got.replay().tobytes() == pil.tobytes(), text
        assert imgbatch.pb().Job.FromString(got.to_job()).source.draft_scale > 1, text
