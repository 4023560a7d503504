"""Geometric ops vs Pillow 12.3: Image.transpose (all 7), ImageOps.flip/mirror,
Image.crop (boxes partly or wholly outside), ImageOps.expand, Image.resize
NEAREST (with and without box, incl. the tall-image two-pass path) and
unmasked Image.paste, in every admitted mode; and the refusals, kind by kind,
against Pillow's own."""
import pytest

import parity
from parity import Case
from imgbatch import Image, ImageOps

N = parity.scale(200)
# Tall images take Image.resize's two-pass path (height > 100 * width).
TALL = [(1, 101), (1, 257), (2, 333), (3, 420), (1, 1000)]


def images(r, mode, n, tall=False):
    sizes = parity.sizes(r, n - (len(TALL) if tall else 0)) + (TALL if tall else [])
    return [parity.random_image(r, mode, s) for s in sizes]


def fill_for(r, mode):
    c = tuple(r.randrange(256) for _ in range(parity.BANDS[mode]))
    return c[0] if mode == "L" else c


@pytest.mark.parametrize("mode", parity.MODES)
def test_transpose_matches_pillow(mode):
    r = parity.rng("transpose", mode)
    cases = [Case(f"transpose-{mode}-{i}", "transpose", mode, im.transpose(Image.Transpose(i % 7)))
             for i, im in enumerate(images(r, mode, N))]
    parity.assert_exact(cases)


@pytest.mark.parametrize("mode", parity.MODES)
def test_flip_and_mirror_match_pillow(mode):
    r = parity.rng("flipmirror", mode)
    cases = [Case(f"flipmirror-{mode}-{i}", "flip/mirror", mode,
                  (ImageOps.flip if i % 2 else ImageOps.mirror)(im))
             for i, im in enumerate(images(r, mode, N))]
    parity.assert_exact(cases)


def crop_box(r, w, h):
    """A box of sides 1..~2w+6 anywhere from fully inside to fully outside."""
    def axis(n):
        if r.random() < 0.5:
            lo = r.randint(0, n - 1)
            return lo, r.randint(lo + 1, n)
        lo = r.randint(-n - 3, n + 3)
        return lo, lo + r.randint(1, min(2 * n + 6, 4096))
    (x0, x1), (y0, y1) = axis(w), axis(h)
    return x0, y0, x1, y1


@pytest.mark.parametrize("mode", parity.MODES)
def test_crop_matches_pillow_inside_and_outside_the_image(mode):
    r = parity.rng("crop", mode)
    cases = [Case(f"crop-{mode}-{i}", "crop", mode, im.crop(crop_box(r, *im.size)))
             for i, im in enumerate(images(r, mode, N))]
    parity.assert_exact(cases)


@pytest.mark.parametrize("mode", parity.MODES)
def test_expand_matches_pillow(mode):
    r = parity.rng("expand", mode)
    cases = []
    for i, im in enumerate(images(r, mode, N)):
        w, h = im.size
        room_x, room_y = min(20, 4096 - w), min(20, 4096 - h)
        left, top = r.randint(0, room_x), r.randint(0, room_y)
        border = (left, top, r.randint(0, room_x - left), r.randint(0, room_y - top))
        if i % 9 == 0:
            out = ImageOps.expand(im, border)  # default fill=0
        elif i % 9 == 1:
            out = ImageOps.expand(im, min(room_x, room_y) // 2, fill_for(r, mode))  # int border
        else:
            out = ImageOps.expand(im, border, fill_for(r, mode))
        cases.append(Case(f"expand-{mode}-{i}", "expand", mode, out))
    parity.assert_exact(cases)


@pytest.mark.parametrize("mode", parity.MODES)
def test_expand_negative_border_matches_pillow(mode):
    """A negative border crops; one that crops the whole image (or past it)
    leaves Pillow's fill alone on the canvas (found by the random graphs: a
    1-wide image with border right=-1)."""
    r = parity.rng("expand-neg", mode)
    cases = []
    for i, im in enumerate(images(r, mode, N)):
        w, h = im.size
        kind = i % 4
        if kind == 0:  # a partial crop on every side that has room
            border = (-(w // 3), -(h // 3), r.randint(-(w // 3), 4), r.randint(-(h // 3), 4))
        elif kind == 1:  # the whole width cropped from the left
            border = (-w, r.randint(0, 3), r.randint(1, 5), 0)
        elif kind == 2:  # past the image from the top: x1 < x0 in the crop
            border = (r.randint(0, 2), -h - 1, 1, h + 2)
        else:  # the whole width cropped from the right, as the random graph did
            border = (r.randint(1, 4), 0, -w, r.randint(0, 3))
        out = ImageOps.expand(im, border, fill_for(r, mode))
        cases.append(Case(f"expand-neg-{mode}-{i}-{border}", "expand", mode, out))
    parity.assert_exact(cases)


def box_edges(r, n):
    def edge():
        k = r.random()
        if k < 0.3:
            return float(r.randint(0, n))
        if k < 0.5:
            return r.randint(0, 2 * n) / 2
        return r.uniform(0, n)
    a, b = sorted((edge(), edge()))
    if r.random() < 0.05:
        b = a  # an empty box side is legal for NEAREST
    return a, b


@pytest.mark.parametrize("mode", parity.MODES)
def test_resize_nearest_matches_pillow_with_and_without_box(mode):
    r = parity.rng("resize", mode)
    cases = []
    for i, im in enumerate(images(r, mode, N, tall=True)):
        w, h = im.size
        k = r.random()
        if k < 0.1:
            size = (r.randint(1, 3), r.randint(1, 3))
        elif k < 0.15:
            size = (w, h)
        else:
            size = (r.randint(1, min(3 * w + 2, 4096)), r.randint(1, min(3 * h + 2, 600)))
        box = None
        if r.random() < 0.7:
            (x0, x1), (y0, y1) = box_edges(r, w), box_edges(r, h)
            box = (x0, y0, x1, y1)
        cases.append(Case(f"resize-{mode}-{i}", "resize nearest", mode,
                          im.resize(size, Image.Resampling.NEAREST, box=box)))
    parity.assert_exact(cases)


@pytest.mark.parametrize("mode", parity.MODES)
def test_paste_matches_pillow_clipped_to_the_base(mode):
    r = parity.rng("paste", mode)
    cases = []
    for i, base in enumerate(images(r, mode, N)):
        bw, bh = base.size
        pmode = "RGBA" if mode == "RGB" and i % 5 == 0 else mode  # Pillow copies RGBA's RGB
        im = parity.random_image(r, pmode, (r.randint(1, 40), r.randint(1, 40)))
        left, top = r.randint(-im.width - 2, bw + 2), r.randint(-im.height - 2, bh + 2)
        box = (left, top) if i % 2 else (left, top, left + im.width, top + im.height)
        base.paste(im, box)
        cases.append(Case(f"paste-{mode}-{i}", "paste", mode, base))
    parity.assert_exact(cases)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("mode", parity.MODES)
def test_refusals_match_pillows_own(mode):
    """Each case raises in Pillow; imgbatch answers Invalid."""
    r = parity.rng("refuse", mode)
    cases = []
    for i in range(20):
        im = parity.random_image(r, mode, (r.randint(2, 30), r.randint(2, 30)))
        w, h = im.size
        x0, y0 = r.randint(1, w), r.randint(1, h)
        cases += [
            Case(f"crop-right<left-{i}", "crop", mode, im.crop((x0, 0, x0 - r.randint(1, 5), h)),
                 "invalid"),
            Case(f"crop-bottom<top-{i}", "crop", mode, im.crop((0, y0, w, y0 - 1)), "invalid"),
            Case(f"resize-zero-{i}", "resize nearest", mode,
                 im.resize((0, h) if i % 2 else (w, 0), Image.Resampling.NEAREST), "invalid"),
            Case(f"resize-box-negative-{i}", "resize nearest", mode,
                 im.resize((3, 3), Image.Resampling.NEAREST, box=(-0.5, 0, w, h)), "invalid"),
            Case(f"resize-box-outside-{i}", "resize nearest", mode,
                 im.resize((3, 3), Image.Resampling.NEAREST, box=(0, 0, w, h + 0.25)), "invalid"),
            Case(f"resize-box-inverted-{i}", "resize nearest", mode,
                 im.resize((3, 3), Image.Resampling.NEAREST, box=(1.5, 0, 1.25, h)), "invalid"),
        ]
        base = parity.random_image(r, mode, (w, h))
        small = parity.random_image(r, mode, (r.randint(1, 5), r.randint(1, 5)))
        base.paste(small, (1, 1, 1 + small.width + 1, 1 + small.height))  # box size != image
        cases.append(Case(f"paste-size-mismatch-{i}", "paste", mode, base, "invalid"))
        base = parity.random_image(r, mode, (w, h))
        base.paste(small, (2**31 - 1, 0))  # right overflows a C int: OverflowError
        cases.append(Case(f"paste-overflow-{i}", "paste", mode, base, "invalid"))
    parity.assert_rejected(cases)


@pytest.mark.parametrize("mode", parity.MODES)
def test_contexts_pillow_takes_but_imgbatch_refuses(mode):
    """Empty crops, outputs past the default max side (16384) and an RGB <- LA paste
    (Pillow copies an LA pixel word's hidden bytes) are refused by kind."""
    r = parity.rng("refuse-ours", mode)
    cases = []
    for i in range(20):
        im = parity.random_image(r, mode, (r.randint(2, 30), r.randint(2, 30)))
        w, h = im.size
        x0 = r.randint(-5, w + 5)
        cases += [
            Case(f"crop-empty-{i}", "crop", mode, im.crop((x0, 0, x0, h)), "unsupported"),
            Case(f"crop-16385-{i}", "crop", mode, im.crop((x0, 0, x0 + 16385, h)), "limit"),
            Case(f"expand-16385-{i}", "expand", mode,
                 ImageOps.expand(im, (16385 - w - i, 0, i + 1, 0)), "limit"),
            Case(f"resize-16385-{i}", "resize nearest", mode,
                 im.resize((16385, 1), Image.Resampling.NEAREST), "limit"),
        ]
        if mode == "RGB":
            base = parity.random_image(r, "RGB", (w, h))
            base.paste(parity.random_image(r, "LA", (2, 2)), (0, 0))
            cases.append(Case(f"paste-rgb-la-{i}", "paste", mode, base, "unsupported"))
    parity.assert_rejected(cases, pillow_raises=False)


def test_transpose_rejects_a_method_outside_image_transpose():
    # A value this contract lacks may be a newer worker's: Unsupported, never Invalid.
    im = parity.random_image(parity.rng("transpose-7"), "RGB", (3, 2))
    parity.assert_rejected([Case("method-7", "transpose", "RGB", im.transpose(7), "unsupported")])
