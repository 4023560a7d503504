"""The harness itself: sources and copy through the worker, and that a
mismatch is reported as one (so a green table means something)."""
import io

import parity
from parity import Case
from PIL import Image as PILImage

import imgbatch
from imgbatch import Image


def test_copy_of_raw_sources_matches_pillow_in_every_mode():
    cases = []
    for mode in parity.MODES:
        r = parity.rng("harness-copy", mode)
        for i, size in enumerate(parity.sizes(r, 14)):
            cases.append(Case(f"copy-{mode}-{i}", "copy", mode, parity.random_image(r, mode, size).copy()))
    parity.assert_exact(cases)


def test_fill_and_encoded_sources_match_pillow():
    r = parity.rng("harness-sources")
    cases = []
    for mode, color in [("L", 7), ("LA", (1, 2)), ("RGB", "red"), ("RGBA", (1, 2, 3)),
                        ("CMYK", (9, 8, 7, 6)), ("RGBX", 300)]:
        cases.append(Case(f"fill-{mode}", "source fill", mode, Image.new(mode, (5, 3), color)))
    for mode in ("L", "LA", "RGB", "RGBA"):
        buf = io.BytesIO()
        w, h = r.randint(1, 40), r.randint(1, 40)
        PILImage.frombytes(mode, (w, h), r.randbytes(w * h * parity.BANDS[mode])).save(buf, "PNG")
        cases.append(Case(f"png-{mode}", "source png", mode, Image.open(buf.getvalue())))
    parity.assert_exact(cases)


def test_a_wrong_byte_is_reported_with_its_pixel():
    im = Image.frombytes("RGB", (3, 2), bytes(range(18)))
    good = im.replay().tobytes()
    bad = bytearray(good)
    bad[13] ^= 1
    res = imgbatch.Result(input_key=0, job_id=1,
                          image=imgbatch.ImageData("RGB", 3, 2, bytes(bad), "raw"))
    out = parity._compare(Case("x", "copy", "RGB", im), res)
    assert out.status == "mismatch"
    assert "x=1 y=1 band=1" in out.detail and "1 of 18 bytes differ" in out.detail


def test_a_size_mismatch_is_reported():
    im = Image.frombytes("L", (3, 2), bytes(6))
    res = imgbatch.Result(input_key=0, job_id=1, image=imgbatch.ImageData("L", 2, 3, bytes(6), "raw"))
    assert parity._compare(Case("x", "copy", "L", im), res).status == "mismatch"


def test_rejection_helper_accepts_worker_refusal_of_unadmitted_mode():
    im = Image.frombytes("I", (2, 2), bytes(16)).copy()
    parity.assert_rejected([Case("mode-I", "copy", "I", im, expect_kind="unsupported")],
                           pillow_raises=False)


def test_plain_tuples_are_cases_too():
    im = Image.new("L", (3, 3), 5).copy()
    (out,) = parity.assert_exact([("tuple-0", "copy", "L", im)])
    assert out.status == "exact" and out.case.case_id == "tuple-0"
