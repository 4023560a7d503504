"""Image.reduce(factor | (fx, fy), box) vs Pillow 12.3, live: every admitted
mode (LA and RGBA premultiplied, as Image.reduce does), factors 1..N past
the image's side, non-square factors, integer boxes with partial last
blocks, odd sizes and 1x1, the copy shortcut - bytes equal; and Pillow's
refusals (factor 0, boxes negative, past the image or empty) as Invalid."""
import pytest

import parity
from parity import Case


def factor(r, side):
    k = r.random()
    if k < 0.1:
        return 1
    if k < 0.2:
        return side + r.randint(0, 3)  # one block (or fewer pixels than the factor)
    return r.randint(1, 9)


def box(r, w, h):
    x0, y0 = r.randint(0, w - 1), r.randint(0, h - 1)
    return (x0, y0, r.randint(x0 + 1, w), r.randint(y0 + 1, h))


@pytest.mark.parametrize("mode", parity.MODES)
def test_reduce_matches_pillow(mode):
    r = parity.rng("reduce", mode)
    cases = []
    for i, size in enumerate(parity.sizes(r, parity.scale(60), max_side=80) + [(1, 1), (1, 37), (53, 1)]):
        im = parity.random_image(r, mode, size)
        w, h = size
        fx = factor(r, w)
        f = fx if r.random() < 0.4 else (fx, factor(r, h))
        b = box(r, w, h) if r.random() < 0.4 else None
        if r.random() < 0.05:
            f, b = 1, (0, 0, w, h)  # Pillow's copy
        cases.append(Case(f"reduce-{mode}-{i}-{size}-{f}-{b}", "reduce", mode, im.reduce(f, b)))
    parity.assert_exact(cases)


@pytest.mark.parametrize("mode", ["L", "RGBA"])
def test_reduce_refusals_match_pillows_own(mode):
    r = parity.rng("reduce-refuse", mode)
    cases = []
    for i in range(4):
        w, h = r.randint(2, 30), r.randint(2, 30)
        im = parity.random_image(r, mode, (w, h))
        cases += [
            Case(f"zero-{i}", "reduce", mode, im.reduce(0), "invalid"),
            Case(f"zero-y-{i}", "reduce", mode, im.reduce((2, 0)), "invalid"),
            Case(f"box-negative-{i}", "reduce", mode, im.reduce(2, (-1, 0, w, h)), "invalid"),
            Case(f"box-outside-{i}", "reduce", mode, im.reduce(2, (0, 0, w + 1, h)), "invalid"),
            Case(f"box-empty-{i}", "reduce", mode, im.reduce(2, (1, 0, 1, h)), "invalid"),
            Case(f"box-inverted-{i}", "reduce", mode, im.reduce(2, (2, 0, 1, h)), "invalid"),
        ]
    parity.assert_rejected(cases)
