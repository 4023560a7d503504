"""Encoded sources report the mode the worker decodes them to:
libvips expands palettes (RGB, or RGBA with transparency), tRNS chunks and
1-bit images, and the pixels equal Pillow's convert() to that mode, which
is what replay() does."""
import io
import os

import pytest
from PIL import Image as PILImage

import imgbatch
from imgbatch import Image


def encode(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def palette():
    return PILImage.radial_gradient("L").resize((11, 7)).convert("RGB").quantize(8)


def gray():
    return PILImage.radial_gradient("L").resize((11, 7))


CASES = [
    ("png-P", lambda: encode(palette(), "PNG"), "RGB"),
    ("png-P-tRNS", lambda: encode(palette(), "PNG", transparency=2), "RGBA"),
    ("gif-P", lambda: encode(palette(), "GIF"), "RGB"),
    pytest.param("gif-P-transparency", lambda: encode(palette(), "GIF", transparency=2), "RGBA",
                 marks=pytest.mark.xfail(strict=True, reason=(
                     "worker decode zeroes the colour of transparent GIF pixels; Pillow's "
                     "convert('RGBA') keeps the palette colour (worker/codec)"))),
    ("png-L-tRNS", lambda: encode(gray(), "PNG", transparency=7), "LA"),
    ("png-RGB-tRNS", lambda: encode(gray().convert("RGB"), "PNG", transparency=(7, 7, 7)), "RGBA"),
    ("png-1", lambda: encode(gray().convert("1"), "PNG"), "L"),
    ("png-LA", lambda: encode(gray().convert("LA"), "PNG"), "LA"),
    ("jpeg-L", lambda: encode(gray(), "JPEG"), "L"),
]


@pytest.mark.parametrize("name,make,mode", CASES)
def test_source_mode_and_pixels_equal_the_workers(name, make, mode):
    binary = os.environ.get("IB_BIN") or pytest.skip("IB_BIN is not set")
    lazy = Image.open(make())
    assert lazy.mode == mode
    ref = lazy.replay()
    assert (ref.mode, ref.size) == (mode, lazy.size)
    (r,) = imgbatch.run_local([lazy.to_job(key=name)], binary=binary)
    assert r.error is None, r.error
    assert (r.image.mode, r.image.size) == (lazy.mode, lazy.size)
    assert r.image.data == ref.tobytes()


def test_chained_calls_see_the_decoded_mode():
    lazy = Image.open(encode(palette(), "PNG", transparency=2)).getchannel("A")
    assert lazy.mode == "L" and lazy.replay().tobytes() == \
        PILImage.open(io.BytesIO(encode(palette(), "PNG", transparency=2))).convert("RGBA").getchannel("A").tobytes()
