"""Image.transform(AFFINE | EXTENT) and Image.rotate vs Pillow 12.3, live:
every admitted mode x NEAREST / BILINEAR / BICUBIC; rotations by the fixed
angles 0, 90, 180, 270, 45, -30.5, 359.99 and random ones, expand on and
off, center and translate, fillcolor (LA / RGBA with a filter take the
premultiplied path, fill included); affine matrices of each of Pillow's
NEAREST paths (scale-only tables, 16.16 fixed point, and the double running
sum when a corner lies 32768 pixels away); odd sizes, 1x1 and strips near
the 4096 bound - bytes equal; and the refusals."""
import pytest

import parity
from parity import Case
import imgbatch
from imgbatch import Image

FILTERS = [Image.Resampling.NEAREST, Image.Resampling.BILINEAR, Image.Resampling.BICUBIC]
ANGLES = [0, 90, 180, 270, 45, -30.5, 359.99]
N = parity.scale(24)


def fillcolor(r, mode):
    k = r.random()
    if k < 0.4:
        return None
    if k < 0.5 and mode in ("L", "RGB", "RGBA", "LA"):
        return r.choice(("red", "#80ff0040", "white"))
    c = tuple(r.randrange(256) for _ in range(parity.BANDS[mode]))
    return c[0] if mode == "L" else c


def rotate_args(r, i, im):
    angle = ANGLES[i] if i < len(ANGLES) else r.choice(
        (r.uniform(-720, 720), r.randrange(-4, 5) * 90, round(r.uniform(0, 360), 1)))
    big = max(im.size) > 64
    expand = not big and r.random() < 0.5
    center = (r.uniform(-5, im.width + 5), r.uniform(-5, im.height + 5)) if r.random() < 0.25 else None
    translate = (r.randint(-6, 6), r.randint(-6, 6)) if r.random() < 0.25 else None
    return angle, expand, center, translate


@pytest.mark.parametrize("resample", FILTERS, ids=lambda f: f.name)
@pytest.mark.parametrize("mode", parity.MODES)
def test_rotate_matches_pillow(mode, resample):
    r = parity.rng("rotate", mode, resample.name)
    cases = []
    for i, size in enumerate(parity.sizes(r, N)):
        im = parity.random_image(r, mode, size)
        angle, expand, center, translate = rotate_args(r, i, im)
        fc = fillcolor(r, mode)
        cases.append(Case(f"rotate-{mode}-{resample.name}-{i}-{angle}-{expand}", "rotate", mode,
                          im.rotate(angle, resample, expand, center, translate, fc)))
    parity.assert_exact(cases)


def random_matrix(r, w, h, kind):
    """(output size, matrix) landing on the source for some pixels: kind
    'scale' (b = d = 0), 'affine' (any), 'far' (a corner 32768+ pixels away:
    Pillow's double running sum)."""
    if kind == "scale":
        a, e = r.choice((-1, 1)) * r.uniform(0.05, 3), r.choice((-1, 1)) * r.uniform(0.05, 3)
        c = r.uniform(-w, 2 * w) if a > 0 else r.uniform(0, 3 * w)
        f = r.uniform(-h, 2 * h) if e > 0 else r.uniform(0, 3 * h)
        return (r.randint(1, 40), r.randint(1, 40)), [a, 0, c, 0, e, f]
    if kind == "far" and r.random() < 0.5:
        # Column 0 on the source, column 23+ past 32768.
        a = r.choice((-1, 1)) * r.uniform(1500, 3000)
        return (r.randint(23, 40), r.randint(1, 30)), [
            a, r.uniform(-0.5, 0.5), r.uniform(0, w) - a / 2, r.uniform(-0.01, 0.01),
            r.uniform(0.2, 2), r.uniform(0, h / 2)]
    if kind == "far":
        # A strip whose left end starts 33000+ pixels away and walks back
        # onto the source after thousands of additions of a.
        a = r.uniform(4, 9)
        c = r.uniform(33000, 36000)
        return (min(4096, int(c / a) + w + 5), r.randint(1, 3)), [
            -a, r.uniform(-1, 1), c, r.uniform(-1e-4, 1e-4), r.uniform(0.5, 1.5), r.uniform(0, h / 2)]
    m = [r.uniform(-2, 2) for _ in range(6)]
    m[2], m[5] = r.uniform(-w, 2 * w), r.uniform(-h, 2 * h)
    if r.random() < 0.2:
        m[r.choice((0, 1, 3, 4))] = float(r.randint(-2, 2))
    return (r.randint(1, 40), r.randint(1, 40)), m


@pytest.mark.parametrize("resample", FILTERS, ids=lambda f: f.name)
@pytest.mark.parametrize("mode", parity.MODES)
def test_affine_transform_matches_pillow_on_every_path(mode, resample):
    r = parity.rng("affine", mode, resample.name)
    cases = []
    for i, size in enumerate(parity.sizes(r, N, big=0)):
        im = parity.random_image(r, mode, size)
        kind = ("scale", "affine", "far")[i % 3]
        out, m = random_matrix(r, im.width, im.height, kind)
        cases.append(Case(f"affine-{mode}-{resample.name}-{kind}-{i}", f"transform {kind}", mode,
                          im.transform(out, Image.Transform.AFFINE, m, resample,
                                       fillcolor=fillcolor(r, mode))))
    parity.assert_exact(cases)


@pytest.mark.parametrize("mode", parity.MODES)
def test_extent_transform_matches_pillow(mode):
    r = parity.rng("extent", mode)
    cases = []
    for i, size in enumerate(parity.sizes(r, parity.scale(8), big=0)):
        im = parity.random_image(r, mode, size)
        x0, y0 = r.uniform(-3, im.width), r.uniform(-3, im.height)
        box = (x0, y0, x0 + r.uniform(0.5, 2 * im.width), y0 + r.uniform(0.5, 2 * im.height))
        cases.append(Case(f"extent-{mode}-{i}", "transform extent", mode,
                          im.transform((r.randint(1, 30), r.randint(1, 30)), Image.Transform.EXTENT,
                                       box, FILTERS[i % 3])))
    parity.assert_exact(cases)


def test_rotate_refusals_match_pillow():
    r = parity.rng("rotate-reject")
    im = parity.random_image(r, "RGBA", (5, 3))
    cases = []
    with imgbatch.unchecked():
        for f in (Image.Resampling.BOX, Image.Resampling.HAMMING, Image.Resampling.LANCZOS):
            cases.append(Case(f"rotate-{f.name}", "rotate", "RGBA", im.rotate(30, f),
                              expect_kind="invalid"))
        cases.append(Case("affine-5-entries", "transform", "RGBA",
                          im.transform((4, 4), Image.Transform.AFFINE, [1, 0, 0, 0, 1]),
                          expect_kind="invalid"))
    parity.assert_rejected(cases)


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA"])
def test_rotate_of_a_photo_sized_image_matches_pillow(mode):
    r = parity.rng("rotate-large", mode)
    im = parity.random_image(r, mode, (r.randint(500, 700) | 1, r.randint(300, 500)), kind="smooth")
    cases = [Case(f"rotate-large-{mode}-{f.name}", "rotate large", mode,
                  im.rotate(r.uniform(-180, 180), f, expand=True, fillcolor=fillcolor(r, mode)))
             for f in FILTERS]
    parity.assert_exact(cases)
