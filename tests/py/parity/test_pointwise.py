"""Parity of the pointwise ops with Pillow 12.3: Image.point, ImageOps
invert / solarize / posterize / grayscale, Image.getchannel, Image.convert,
ImageChops.constant and ImageEnhance Brightness / Color / Contrast, bytes
compared live; refusals compared with Pillow's own."""

import parity
import pytest
from parity import Case

from imgbatch import ImageChops, ImageEnhance, ImageOps

MODES = parity.MODES
LUT_MODES = ("L", "RGB")  # ImageOps._lut
N = 200


def _images(label, mode, n=N):
    r = parity.rng(label, mode)
    return r, [parity.random_image(r, mode, size) for size in parity.sizes(r, parity.scale(n))]


def _lut(r, bands):
    """A table Image.point takes: a list of 256 * bands ints / floats, or a callable."""
    kind = r.choice(("ints", "wild", "floats", "callable"))
    if kind == "callable":
        g = r.uniform(0.2, 3.0)
        return lambda i: 255.0 * (i / 255.0) ** g
    n = 256 * bands
    if kind == "ints":
        return [r.randrange(256) for _ in range(n)]
    if kind == "wild":  # clamped by CLIP8
        return [r.randint(-1000, 1000) for _ in range(n)]
    return [r.uniform(-10.0, 270.0) for _ in range(n)]  # rounded with round()


@pytest.mark.parametrize("mode", MODES)
def test_point_matches_pillow(mode):
    r, ims = _images("point", mode)
    parity.assert_exact([Case(f"point-{mode}-{i}", "point", mode, im.point(_lut(r, parity.BANDS[mode])))
                         for i, im in enumerate(ims)])


def test_point_rejects_a_table_of_the_wrong_length_as_pillow_does():
    r = parity.rng("point-len")
    cases = []
    for mode in MODES:
        bands = parity.BANDS[mode]
        for n in sorted({0, 255, 257, 256 * bands - 1, 256 * bands + 1, 256 * (bands % 4 + 1)}):
            im = parity.random_image(r, mode, (3, 2))
            cases.append(Case(f"len-{mode}-{n}", "point", mode, im.point([7] * n), "invalid"))
    parity.assert_rejected(cases)


@pytest.mark.parametrize("mode", LUT_MODES)
def test_imageops_tables_match_pillow(mode):
    cases = []
    for op in ("invert", "solarize", "posterize"):
        r, ims = _images(op, mode)
        for i, im in enumerate(ims):
            if op == "invert":
                out = ImageOps.invert(im)
            elif op == "solarize":
                t = r.choice((0, 1, 127, 128, 255, 256, 1000, -3, 12.5, r.randrange(256)))
                out = ImageOps.solarize(im, t)
            else:
                out = ImageOps.posterize(im, r.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, -2)))
            cases.append(Case(f"{op}-{mode}-{i}", op, mode, out))
    parity.assert_exact(cases)


def test_imageops_tables_reject_modes_pillow_refuses():
    r = parity.rng("imageops-modes")
    cases = []
    for mode in set(MODES) - set(LUT_MODES):
        im = parity.random_image(r, mode, (4, 3))
        cases += [Case(f"invert-{mode}", "invert", mode, ImageOps.invert(im), "unsupported"),
                  Case(f"solarize-{mode}", "solarize", mode, ImageOps.solarize(im, 99), "unsupported"),
                  Case(f"posterize-{mode}", "posterize", mode, ImageOps.posterize(im, 3), "unsupported")]
    parity.assert_rejected(cases)


def test_posterize_rejects_more_than_8_bits_as_pillow_does():
    im = parity.random_image(parity.rng("posterize-9"), "L", (4, 3))
    parity.assert_rejected([Case(f"bits-{b}", "posterize", "L", ImageOps.posterize(im, b), "invalid")
                            for b in (9, 12)])


@pytest.mark.parametrize("mode", MODES)
def test_getchannel_matches_pillow(mode):
    r, ims = _images("getchannel", mode)
    bands = list(parity.random_image(r, mode, (1, 1)).getbands())
    cases = []
    for i, im in enumerate(ims):
        band = r.randrange(len(bands))
        channel = bands[band] if r.random() < 0.3 else band
        cases.append(Case(f"getchannel-{mode}-{i}", "getchannel", mode, im.getchannel(channel)))
    parity.assert_exact(cases)


def test_getchannel_rejects_a_band_past_the_last_as_pillow_does():
    r = parity.rng("getchannel-range")
    parity.assert_rejected([
        Case(f"band-{mode}-{k}", "getchannel", mode,
             parity.random_image(r, mode, (2, 2)).getchannel(parity.BANDS[mode] + k), "invalid")
        for mode in MODES for k in (0, 3)])


@pytest.mark.parametrize("mode", MODES)
def test_convert_matches_pillow(mode):
    r, ims = _images("convert", mode)
    cases = []
    for i, im in enumerate(ims):
        to = MODES[i % len(MODES)] if i < 4 * len(MODES) else r.choice(MODES)
        out = ImageOps.grayscale(im) if to == "L" and r.random() < 0.3 else im.convert(to)
        cases.append(Case(f"convert-{mode}-{to}-{i}", f"convert->{to}", mode, out))
    parity.assert_exact(cases)


def test_convert_to_modes_we_do_not_admit_is_unsupported():
    r = parity.rng("convert-unadmitted")
    cases = [Case(f"{mode}-{to}", "convert", mode,
                  parity.random_image(r, mode, (3, 3)).convert(to), "unsupported")
             for mode in ("L", "RGB", "RGBA") for to in ("1", "I", "F", "HSV", "YCbCr")]
    parity.assert_rejected(cases, pillow_raises=False)


def test_convert_to_a_mode_pillow_does_not_know_is_invalid():
    im = parity.random_image(parity.rng("convert-bogus"), "RGB", (3, 3))
    parity.assert_rejected([Case("bogus", "convert", "RGB", im.convert("XYZ"), "invalid")])


@pytest.mark.parametrize("mode", MODES)
def test_constant_matches_pillow(mode):
    r, ims = _images("constant", mode)
    cases = []
    for i, im in enumerate(ims):
        v = r.choice((0, 255, -7, 256, 1000, r.randrange(256), r.randint(-2**40, 2**40)))
        cases.append(Case(f"constant-{mode}-{i}", "constant", mode, ImageChops.constant(im, v)))
    parity.assert_exact(cases)


def _factor(r):
    p = r.random()
    if p < 0.08:
        # NaN and infinities are refused (one rule for every float parameter:
        # tests/py/hostile); finite stand-ins keep the draws of the rng stream.
        return r.choice((0.0, 1.0, 0.5, 2.0, -1.0, 3.0, 1e30, -1e30, 1e-50, 1e300))
    if p < 0.3:
        return round(r.uniform(-2.0, 3.0), 1)
    return r.uniform(-3.0, 4.0)


ENHANCERS = {"brightness": ImageEnhance.Brightness, "color": ImageEnhance.Color,
             "contrast": ImageEnhance.Contrast}


@pytest.mark.parametrize("kind", sorted(ENHANCERS))
@pytest.mark.parametrize("mode", MODES)
def test_enhance_matches_pillow(kind, mode):
    r, ims = _images(f"enhance-{kind}", mode)
    cases = [Case(f"{kind}-{mode}-{i}", f"enhance {kind}", mode, ENHANCERS[kind](im).enhance(_factor(r)))
             for i, im in enumerate(ims)]
    parity.assert_exact(cases)
