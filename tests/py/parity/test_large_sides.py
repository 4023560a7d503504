"""Every op family past the old 4096 bound: thin strips with a side of 4097,
8192 and 16384 (the default --max-side), byte-equal to live Pillow. Strips
keep the CI cost small while each kernel still walks a full long row or
column (row offsets, span splits, line caches, tables sized by the side)."""

import pytest

import parity
from parity import Case
from imgbatch import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps

SIDES = [(4097, 3), (3, 4097), (8192, 3), (5, 8192), (16384, 3), (3, 16384)]
R = Image.Resampling
MAX = 16384  # the default --max-side


def _grow(n, k):
    """n * k when that stays within the default max side, else n // k."""
    return n * k if n * k <= MAX else max(1, n // k)


def _families(r, im, mode):
    w, h = im.size
    other = parity.random_image(r, mode, im.size)
    out = {
        "copy": im.copy(),
        "crop": im.crop((1, 1, w - 1, h)) if w > 3 else im.crop((0, 1, w, h - 1)),
        "expand": ImageOps.expand(im, (2 * (w < MAX), 1 * (h < MAX), 3 * (w < MAX),
                                       2 * (h < MAX))),
        "paste": _paste(im, other),
        "getchannel": im.getchannel(0),
        "point": im.point([(i * 7 + 3) % 256 for i in range(256)] * parity.BANDS[mode]),
        "rank_filter 3x3": im.filter(ImageFilter.MedianFilter(3)),
        "rank_filter 5x5": im.filter(ImageFilter.RankFilter(5, 7)),
        "box_blur": im.filter(ImageFilter.BoxBlur(3)),
        "box_blur wide": im.filter(ImageFilter.BoxBlur(5000)),
        "gaussian_blur": im.filter(ImageFilter.GaussianBlur(2.5)),
        "kernel 3x3": im.filter(ImageFilter.SHARPEN),
        "kernel 5x5": im.filter(ImageFilter.Kernel((5, 5), list(range(1, 26)), None, 3)),
        "chops": ImageChops.soft_light(im, other),
        "blend": Image.blend(im, other, 0.3),
        "constant": ImageChops.constant(im, 77),
        "enhance": ImageEnhance.Brightness(im).enhance(1.7),
        "resize nearest": im.resize((max(1, w // 3), _grow(h, 2)), R.NEAREST),
        "resize bicubic": im.resize((max(1, w // 7), _grow(h, 3)), R.BICUBIC),
        "resize lanczos up": im.resize((_grow(w, 3), _grow(h, 3)), R.LANCZOS),
        "resize hamming to max": im.resize((MAX if w > h else w, MAX if h > w else h), R.HAMMING),
        "resize gap": im.resize((max(1, w // 5), max(1, h // 2)), R.BILINEAR, None, 2.0),
    }
    for t in Image.Transpose:
        out[f"transpose {t.name}"] = im.transpose(t)
    if mode in ("L", "RGB"):
        out["invert"] = ImageOps.invert(im)
        out["solarize"] = ImageOps.solarize(im, 99)
        out["posterize"] = ImageOps.posterize(im, 3)
    if mode != "L":
        out["convert L"] = im.convert("L")
    if mode in ("RGB", "RGBA"):
        out["enhance contrast"] = ImageEnhance.Contrast(im).enhance(0.6)
        out["enhance color"] = ImageEnhance.Color(im).enhance(1.4)
    return out


def _paste(base, im):
    base = base.copy()
    w, h = im.size
    base.paste(im.crop((0, 0, max(1, w // 2), max(1, h // 2))), (w // 3, h // 3))
    return base


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA", "CMYK"])
def test_every_family_past_4096_on_a_side_equals_pillow(mode):
    r = parity.rng("large-sides", mode)
    cases = []
    for size in SIDES:
        im = parity.random_image(r, mode, size)
        for fam, out in _families(r, im, mode).items():
            cases.append(Case(f"{fam}-{mode}-{size[0]}x{size[1]}", fam, mode, out))
    parity.assert_exact(cases)


def _camera_jpeg(w=6000, h=4000):
    """A camera-sized photo stand-in (24 MP): gradients with some texture."""
    import io

    from PIL import Image as PILImage

    x = PILImage.linear_gradient("L").resize((w, h))
    y = x.transpose(PILImage.Transpose.ROTATE_90).resize((w, h))
    im = PILImage.merge("RGB", (x, y, PILImage.effect_noise((w, h), 40)))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=85)
    return buf.getvalue()


def test_a_6000x4000_jpeg_decodes_and_resizes_as_pillow_does():
    """The size a 24 MP camera writes, past the old 4096 bound, at the default caps."""
    src = Image.open(_camera_jpeg())
    parity.assert_exact([
        Case("jpeg-6000x4000-thumb", "source jpeg + resize", "RGB",
             src.resize((1500, 1000), R.BICUBIC)),
        Case("jpeg-6000x4000-crop-blur", "source jpeg + crop + blur", "RGB",
             src.crop((4000, 2000, 6000, 4000)).filter(ImageFilter.GaussianBlur(3))),
    ])
