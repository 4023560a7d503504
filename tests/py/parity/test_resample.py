"""Image.resize with a convolution filter vs Pillow 12.3, live: every filter
(BOX, BILINEAR, HAMMING, BICUBIC, LANCZOS) x every admitted mode, up- and
downscaling, odd sizes, 1x1, thin strips near the 4096 bound, tall images
(Image.resize's two-call path), fractional boxes (empty sides too), integral
boxes of the target size (_resize's crop), the copy shortcut, and
reducing_gap (Image.reduce first, then the rescaled box) - bytes equal, or
both refusing."""
import pytest

import parity
from parity import Case
from imgbatch import Image
from test_geometry import box_edges  # a box side: integers, halves, floats, now and then empty

FILTERS = [Image.Resampling.BOX, Image.Resampling.BILINEAR, Image.Resampling.HAMMING,
           Image.Resampling.BICUBIC, Image.Resampling.LANCZOS]
N = parity.scale(60)
# height > 100 * width: Image.resize resizes vertically first, in its own call.
TALL = [(1, 101), (2, 333), (3, 420)]
GAPS = [1.0, 1.5, 2.0, 2.5, 3.0]


def target(r, w, h):
    k = r.random()
    if k < 0.08:
        return 1, 1
    if k < 0.15:
        return w, h
    if k < 0.55:  # downscale, often by a lot (reducing_gap then reduces)
        return r.randint(1, max(1, w // r.choice((1, 2, 3, 5)))), \
            r.randint(1, max(1, h // r.choice((1, 2, 3, 5))))
    return r.randint(1, min(3 * w + 2, 600)), r.randint(1, min(3 * h + 2, 600))


def one_call(r, im):
    """(size, box, reducing_gap) for one random resize of im."""
    w, h = im.size
    size = target(r, w, h)
    box = None
    k = r.random()
    if k < 0.45:
        (x0, x1), (y0, y1) = box_edges(r, w), box_edges(r, h)
        box = (x0, y0, x1, y1)
    elif k < 0.55 and size[0] <= w and size[1] <= h:  # integral, of the target size
        x0, y0 = r.randint(0, w - size[0]), r.randint(0, h - size[1])
        box = (x0, y0, x0 + size[0], y0 + size[1])
    gap = r.choice(GAPS) if r.random() < 0.5 else None
    if gap is not None and r.random() < 0.3:
        gap = r.uniform(1.0, 4.0)
    return size, box, gap


def assert_exact_or_both_refuse(cases):
    """Bytes equal where Pillow resizes; where Pillow raises ValueError (a
    reducing_gap whose reduce box is empty, a box past the image), an
    Invalid error. Both backends run every plan Image.resize makes (the
    CUDA backend's multi-pass head in op_resize.c / kernels/resample.cuh,
    reduce step and tall two-call sequence included)."""
    wrong = []
    for o in parity.run_cases(cases):
        try:
            o.case.image.replay()
            refused = None
        except ValueError as e:
            refused = e
        err = o.result.error if o.result is not None else None
        if refused is not None:
            ok = o.status == "error" and err.kind == "invalid"
        else:
            ok = o.status == "exact"
        if not ok:
            wrong.append(f"{o.case.case_id}: Pillow {'raises ' + str(refused) if refused else 'resizes'}; "
                         f"imgbatch {o.status}: {o.detail}")
    assert not wrong, (f"{len(wrong)} of {len(cases)} wrong (IB_PARITY_SEED={parity.SEED}, "
                       f"backend {parity.backend()}):\n" + "\n".join(wrong[:25]))


def sources(r, mode, n):
    sizes = parity.sizes(r, n - len(TALL), max_side=64) + TALL
    return [parity.random_image(r, mode, s) for s in sizes]


@pytest.mark.parametrize("mode", parity.MODES)
@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: f.name)
def test_resize_filter_matches_pillow(flt, mode):
    r = parity.rng("resample", flt.name, mode)
    cases = []
    for i, im in enumerate(sources(r, mode, N)):
        size, box, gap = one_call(r, im)
        cases.append(Case(f"{flt.name}-{mode}-{i}-{im.size}->{size}-{box}-{gap}",
                          f"resize {flt.name}", mode, im.resize(size, flt, box, gap)))
    assert_exact_or_both_refuse(cases)


@pytest.mark.parametrize("mode", parity.MODES)
def test_reducing_gap_reduces_as_pillow_does(mode):
    """Large shrink factors, so reduce() runs with every kind of factor pair
    (1xN, Nx1, 2x2 ... 5x5, NxM) and partial last blocks."""
    r = parity.rng("reducing-gap", mode)
    cases = []
    for i in range(parity.scale(50)):
        w, h = r.randint(1, 90), r.randint(1, 90)
        im = parity.random_image(r, mode, (w, h))
        size = (max(1, w // r.randint(1, 12)), max(1, h // r.randint(1, 12)))
        box = None
        if i % 3 == 0:
            (x0, x1), (y0, y1) = box_edges(r, w), box_edges(r, h)
            box = (x0, y0, x1, y1)
        flt = r.choice(FILTERS + [Image.Resampling.NEAREST])  # NEAREST ignores the gap
        gap = r.choice(GAPS + [r.uniform(1.0, 3.0)])
        cases.append(Case(f"gap-{mode}-{i}-{im.size}->{size}-{box}-{gap}-{flt.name}",
                          "resize reducing_gap", mode, im.resize(size, flt, box, gap)))
    assert_exact_or_both_refuse(cases)


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: f.name)
def test_photo_sized_thumbnails_match_pillow(flt):
    """Photo-like sizes shrunk to thumbnails, as Image.thumbnail calls
    resize (reducing_gap 2.0), and without the gap."""
    r = parity.rng("thumbs", flt.name)
    cases = []
    for i in range(parity.scale(4)):
        mode = r.choice(parity.MODES)
        w, h = r.randint(300, 640), r.randint(200, 480)
        im = parity.random_image(r, mode, (w, h), kind=r.choice(("smooth", "noise")))
        size = (r.randint(16, 128), r.randint(16, 128))
        gap = r.choice((None, 2.0, 3.0))
        cases.append(Case(f"thumb-{flt.name}-{i}-{im.size}->{size}-{gap}", f"resize {flt.name}",
                          mode, im.resize(size, flt, None, gap)))
    assert_exact_or_both_refuse(cases)


def test_a_box_past_the_image_follows_pillow_with_and_without_reducing_gap():
    """Pillow checks the box against the image it finally resamples: after
    reduce() a box slightly past the original can pass. Either both refuse
    (kind invalid) or the bytes are equal."""
    r = parity.rng("box-past")
    cases = []
    for i in range(parity.scale(40)):
        mode = r.choice(parity.MODES)
        w, h = r.randint(4, 60), r.randint(4, 60)
        im = parity.random_image(r, mode, (w, h))
        box = (r.uniform(0, 1), r.uniform(0, 1), w + r.uniform(0, 1.5), h + r.uniform(0, 1.5))
        size = (max(1, w // r.randint(2, 8)), max(1, h // r.randint(2, 8)))
        gap = r.choice([None, 1.0, 1.5, 2.0])
        cases.append(Case(f"past-{i}", "resize box past", mode,
                          im.resize(size, r.choice(FILTERS), box, gap)))
    assert_exact_or_both_refuse(cases)


@pytest.mark.parametrize("mode", ["L", "RGBA"])
def test_resize_refusals_match_pillows_own(mode):
    r = parity.rng("resample-refuse", mode)
    cases = []
    for i, flt in enumerate(FILTERS):
        w, h = r.randint(2, 30), r.randint(2, 30)
        im = parity.random_image(r, mode, (w, h))
        cases += [
            Case(f"gap-below-1-{i}", "resize", mode, im.resize((3, 3), flt, None, 0.99), "invalid"),
            Case(f"zero-{i}", "resize", mode, im.resize((0, 3), flt), "invalid"),
            Case(f"box-negative-{i}", "resize", mode, im.resize((3, 3), flt, (-0.5, 0, w, h)),
                 "invalid"),
            Case(f"box-inverted-{i}", "resize", mode, im.resize((3, 3), flt, (2, 0, 1, h)),
                 "invalid"),
            Case(f"box-outside-{i}", "resize", mode, im.resize((3, 3), flt, (0, 0, w + 1, h)),
                 "invalid"),
        ]
    # Pillow checks the gap before its same-size shortcut (a draw of a 3x3
    # image above once found the client recording a copy here).
    same = parity.random_image(r, mode, (3, 3))
    cases.append(Case("gap-below-1-same-size", "resize", mode,
                      same.resize((3, 3), FILTERS[1], None, 0.99), "invalid"))
    parity.assert_rejected(cases)
