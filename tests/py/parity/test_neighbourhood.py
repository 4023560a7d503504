"""Neighbourhood ops against Pillow 12.3, live: RankFilter (Median/Min/Max),
BoxBlur, GaussianBlur (x/y radii, fractional, zero, negative) and Kernel
3x3/5x5 (scale 0 included), in every admitted mode, plus the refusals.

Each op x mode draws parity.scale(200) random sizes (edge sizes first) and
one strip near the 4096 bound."""
import math

import parity
import pytest
from parity import Case
from PIL import ImageFilter as PILFilter

from imgbatch import ImageFilter

N = parity.scale(200)


def cases_for(op, mode, make_filter):
    r = parity.rng(op, mode)
    out = []
    for i, size in enumerate(parity.sizes(r, N)):
        im = parity.random_image(r, mode, size)
        out.append(Case(f"{op}-{mode}-{i}", op, mode, im.filter(make_filter(r))))
    return out


# ---------------------------------------------------------------- rank filters


def rank_filter(r):
    size = r.choice((3, 3, 3, 5, 5, 7, 9))
    n = size * size
    pick = r.random()
    if pick < 0.2:
        return ImageFilter.MedianFilter(size)
    if pick < 0.3:
        return ImageFilter.MinFilter(size)
    if pick < 0.4:
        return ImageFilter.MaxFilter(size)
    return ImageFilter.RankFilter(size, r.choice((0, n // 2, n - 1, r.randrange(n))))


@pytest.mark.parametrize("mode", parity.MODES)
def test_rank_filters_match_pillow_per_band_with_replicated_edges(mode):
    parity.assert_exact(cases_for("rank_filter", mode, rank_filter))


# ---------------------------------------------------------------- blurs


def radius(r):
    pick = r.random()
    if pick < 0.1:
        return 0.0
    if pick < 0.3:
        return float(r.randint(0, 6))
    if pick < 0.5:
        return r.uniform(0, 1.5)
    if pick < 0.6:
        return r.choice((0.5, 1.5, 2.5, 1e-7, 0.3333333, 1.0000001, 100.0, 1000.5, 5000.0))
    return r.uniform(0, 40)


def radius_arg(r, rx, ry):
    """A single number when the radii agree (half the time), else a tuple."""
    return rx if rx == ry and r.random() < 0.5 else (rx, ry)


def box_blur(r):
    rx = radius(r)
    ry = rx if r.random() < 0.4 else radius(r)
    return ImageFilter.BoxBlur(radius_arg(r, rx, ry))


def gaussian_blur(r):
    rx = radius(r) * r.choice((1, 1, 1, -1))  # GaussianBlur squares the radius
    ry = rx if r.random() < 0.4 else radius(r)
    return ImageFilter.GaussianBlur(radius_arg(r, rx, ry))


@pytest.mark.parametrize("mode", parity.MODES)
def test_box_blur_matches_pillow_for_fractional_and_axis_radii(mode):
    parity.assert_exact(cases_for("box_blur", mode, box_blur))


@pytest.mark.parametrize("mode", parity.MODES)
def test_gaussian_blur_matches_pillow_extended_box_passes(mode):
    parity.assert_exact(cases_for("gaussian_blur", mode, gaussian_blur))


# ---------------------------------------------------------------- kernels


def weight(r):
    pick = r.random()
    if pick < 0.5:
        return float(r.randint(-4, 8))
    if pick < 0.8:
        return r.uniform(-2, 2)
    return r.choice((0.1, 1 / 3, 0.0, -1.0, 1e-3))


def kernel(r):
    pick = r.random()
    if pick < 0.1:  # the predefined kernels (BuiltinFilter filterargs)
        return r.choice((ImageFilter.BLUR, ImageFilter.CONTOUR, ImageFilter.DETAIL,
                         ImageFilter.EDGE_ENHANCE, ImageFilter.EDGE_ENHANCE_MORE,
                         ImageFilter.EMBOSS, ImageFilter.FIND_EDGES, ImageFilter.SHARPEN,
                         ImageFilter.SMOOTH, ImageFilter.SMOOTH_MORE))()
    size = r.choice((3, 5))
    k = [weight(r) for _ in range(size * size)]
    pick = r.random()
    if pick < 0.4:
        scale = None  # Kernel's default: the weights' sum, maybe 0 (Pillow divides by it)
    elif pick < 0.5:
        scale = 0.0
    else:
        scale = r.choice((1.0, 9.0, 16.0, 0.5, -3.0, r.uniform(-20, 20)))
    offset = r.choice((0.0, 0.0, 128.0, -50.0, r.uniform(-300, 300), 0.5))
    return ImageFilter.Kernel((size, size), k, scale, offset)


@pytest.mark.parametrize("mode", parity.MODES)
def test_kernel_matches_pillow_float_sums_and_unfiltered_border(mode):
    parity.assert_exact(cases_for("kernel", mode, kernel))


def test_kernel_larger_than_the_image_copies_it_as_pillow_does():
    r = parity.rng("kernel-small-image")
    cases = []
    for i, (size, w, h) in enumerate([(5, 4, 9), (5, 9, 4), (3, 2, 2), (7, 6, 30), (9, 1, 1)]):
        im = parity.random_image(r, "RGB", (w, h))
        f = ImageFilter.Kernel((size, size), [1.0] * (size * size))
        cases.append(Case(f"kernel{size}-{w}x{h}", "kernel", "RGB", im.filter(f)))
    parity.assert_exact(cases)


# ---------------------------------------------------------------- refusals


def unchecked(cls, **attrs):
    """A Pillow filter with attributes its __init__ would refuse: Pillow's
    C layer then raises on replay, as for a hand-built job."""
    f = cls.__new__(cls)
    for k, v in attrs.items():
        setattr(f, k, v)
    return f


def test_pillow_constructors_refuse_what_the_worker_rejects():
    with pytest.raises(ValueError):
        PILFilter.RankFilter(4, 1)
    with pytest.raises(ValueError):
        PILFilter.RankFilter(3, 9)
    with pytest.raises(ValueError):
        PILFilter.BoxBlur((-1, 1))
    with pytest.raises(ValueError):
        PILFilter.Kernel((3, 3), [1] * 8)


def test_bad_params_are_rejected_as_pillow_refuses_them():
    r = parity.rng("nbhd-reject")
    bad = [
        ("rank_filter", unchecked(ImageFilter.RankFilter, size=4, rank=1)),
        ("rank_filter", unchecked(ImageFilter.RankFilter, size=3, rank=9)),
        ("rank_filter", unchecked(ImageFilter.RankFilter, size=5, rank=25)),
        ("box_blur", unchecked(ImageFilter.BoxBlur, radius=(-1.0, 1.0))),
        ("box_blur", unchecked(ImageFilter.BoxBlur, radius=(2.0, -0.5))),
        ("kernel", unchecked(ImageFilter.Kernel, filterargs=((3, 3), 1.0, 0.0, [1.0] * 8))),
        ("kernel", unchecked(ImageFilter.Kernel, filterargs=((7, 7), 1.0, 0.0, [1.0] * 49))),
        ("kernel", unchecked(ImageFilter.Kernel, filterargs=((1, 1), 1.0, 0.0, [1.0]))),
    ]
    cases = []
    for mode in ("L", "RGB", "RGBA"):
        for i, (op, f) in enumerate(bad):
            im = parity.random_image(r, mode, (r.randint(8, 20), r.randint(8, 20)))
            cases.append(Case(f"{op}-{mode}-{i}", op, mode, im.filter(f), expect_kind="invalid"))
    parity.assert_rejected(cases)


def test_contexts_pillow_takes_but_imgbatch_bounds_are_refused():
    r = parity.rng("nbhd-bound")
    bounded = [
        # Pillow takes any odd size; the worker bounds the window at 9x9.
        ("rank_filter", ImageFilter.RankFilter(11, 60), "limit"),
        # Pillow 12.3 dies with SIGFPE on size 1 (ImagingExpand(0) divides
        # by zero), so there is no result to match: never replayed here.
        ("rank_filter", unchecked(ImageFilter.RankFilter, size=1, rank=0), "unsupported"),
        ("box_blur", ImageFilter.BoxBlur((math.nan, 1.0)), "invalid"),
        ("box_blur", ImageFilter.BoxBlur(math.inf), "invalid"),
        ("box_blur", ImageFilter.BoxBlur(2.0e6), "limit"),
        ("gaussian_blur", ImageFilter.GaussianBlur((1.0, -math.inf)), "invalid"),
        ("gaussian_blur", ImageFilter.GaussianBlur(1.0e7), "limit"),
    ]
    cases = []
    for i, (op, f, kind) in enumerate(bounded):
        im = parity.random_image(r, "RGB", (r.randint(8, 20), r.randint(8, 20)))
        cases.append(Case(f"{op}-{i}", op, "RGB", im.filter(f), expect_kind=kind))
    parity.assert_rejected(cases, pillow_raises=False)
