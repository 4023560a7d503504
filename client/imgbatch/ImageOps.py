"""imgbatch.ImageOps: the PIL.ImageOps functions the wire format carries.

invert, solarize(threshold), posterize(bits) -> InvertOp, SolarizeOp, PosterizeOp;
grayscale -> ConvertOp "L"; flip, mirror -> TransposeOp; expand(border, fill) ->
ExpandOp (a negative border crops first: CropOp then ExpandOp); contain, cover,
fit, scale -> ResizeOp (scale(1): CopyOp); pad -> ResizeOp pasted onto a
Source.fill canvas (PasteOp).
"""

from __future__ import annotations

import operator
from typing import Any, Tuple, Union

import PIL.ImageOps

from . import Image
from ._methods import LazyImage, ceil_threshold, ensure_lazy, lazy
from ._record import checking, pillow_check, resolve_color


def invert(image: Any) -> LazyImage:
    """ImageOps.invert(image) -> InvertOp."""
    image = ensure_lazy(image)
    pillow_check(PIL.ImageOps.invert, image)
    return lazy("invert", {}, [image], image.mode, image.size, PIL.ImageOps.invert)


def solarize(image: Any, threshold: Any = 128) -> LazyImage:
    """ImageOps.solarize(image, threshold) -> SolarizeOp (threshold as the 0..256 cut)."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.solarize(im, threshold), image)
    t = ceil_threshold(threshold)
    return lazy("solarize", {"threshold": t}, [image], image.mode, image.size,
                lambda im: PIL.ImageOps.solarize(im, threshold))


def posterize(image: Any, bits: int) -> LazyImage:
    """ImageOps.posterize(image, bits) -> PosterizeOp."""
    # ImageOps.posterize: mask = ~(2 ** (8 - bits) - 1); any bits <= 0 keeps
    # no bit, the same table as bits = 0. bits > 8 is sent as is (Pillow
    # raises TypeError; the worker rejects it).
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.posterize(im, bits), image)
    b = max(0, operator.index(bits))
    return lazy("posterize", {"bits": b}, [image], image.mode, image.size,
                lambda im: PIL.ImageOps.posterize(im, bits))


def grayscale(image: Any) -> LazyImage:
    """ImageOps.grayscale(image) -> ConvertOp "L"."""
    image = ensure_lazy(image)
    pillow_check(PIL.ImageOps.grayscale, image)
    out = image.convert("L")
    out._node.replay_fn = PIL.ImageOps.grayscale
    return out


def flip(image: Any) -> LazyImage:
    """ImageOps.flip(image) -> TransposeOp FLIP_TOP_BOTTOM."""
    image = ensure_lazy(image)
    pillow_check(PIL.ImageOps.flip, image)
    return lazy("transpose", {"method": 1}, [image], image.mode, image.size, PIL.ImageOps.flip)


def mirror(image: Any) -> LazyImage:
    """ImageOps.mirror(image) -> TransposeOp FLIP_LEFT_RIGHT."""
    image = ensure_lazy(image)
    pillow_check(PIL.ImageOps.mirror, image)
    return lazy("transpose", {"method": 0}, [image], image.mode, image.size, PIL.ImageOps.mirror)


def _border(border: Union[int, Tuple[int, ...]]) -> Tuple[int, int, int, int]:
    if isinstance(border, tuple):
        if len(border) == 2:
            left, top = right, bottom = border
        elif len(border) == 4:
            left, top, right, bottom = border
        else:
            raise ValueError("border must be an integer, or a tuple of two or four elements")
    else:
        left = top = right = bottom = border
    return (operator.index(left), operator.index(top), operator.index(right), operator.index(bottom))


def expand(image: Any, border: Union[int, Tuple[int, ...]] = 0, fill: Any = 0) -> LazyImage:
    """ImageOps.expand -> ExpandOp (fill resolved by Pillow, one byte per band).

    Pillow pastes the image at (left, top) into a new filled canvas, so a
    negative border crops; that is recorded as crop, then expand."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.expand(im, border, fill), image, exact=True)
    left, top, right, bottom = _border(border)
    fill_bytes = resolve_color(image.mode, fill)
    w, h = image.size

    def replay(im: Any) -> Any:
        return PIL.ImageOps.expand(im, border, fill)

    src = image
    if min(left, top, right, bottom) < 0:
        x0, y0 = max(0, -left), max(0, -top)
        x1, y1 = w - max(0, -right), h - max(0, -bottom)
        if x1 <= x0 or y1 <= y0:
            # Nothing of the image is left on the canvas: Pillow returns the
            # fill alone (an empty crop would be rejected by the worker).
            return Image.new(image.mode, (w + left + right, h + top + bottom), fill)
        crop = {"left": x0, "top": y0, "right": x1, "bottom": y1}
        # Internal node: its replay passes the input through, so the expand
        # node below replays Pillow's expand on the original image.
        src = lazy("crop", crop, [image], image.mode, (x1 - x0, y1 - y0), lambda im: im)
        left, top, right, bottom = (max(0, v) for v in (left, top, right, bottom))
    params = {"left": left, "top": top, "right": right, "bottom": bottom, "fill": fill_bytes}
    size = (left + src.width + right, top + src.height + bottom)
    return lazy("expand", params, [src], image.mode, size, replay)


# ------------------------------------------------ sizing: recorded as resize (+ new, paste)
#
# Each is the calls Pillow's ImageOps makes, with its own arithmetic (Python
# round(), floats): the recorded resize / new / paste replay as those calls,
# so replay() equals Pillow's function.

_BICUBIC = PIL.Image.Resampling.BICUBIC


def _aspect_size(image: LazyImage, size: Tuple[int, int], cover: bool) -> Tuple[int, int]:
    """ImageOps.contain's (cover=False) or cover's target size."""
    im_ratio = image.width / image.height
    dest_ratio = size[0] / size[1]
    if im_ratio != dest_ratio:
        if (im_ratio > dest_ratio) != cover:
            new_height = round(image.height / image.width * size[0])
            if new_height != size[1]:
                size = (size[0], new_height)
        else:
            new_width = round(image.width / image.height * size[1])
            if new_width != size[0]:
                size = (new_width, size[1])
    return size


def contain(image: Any, size: Tuple[int, int], method: int = _BICUBIC) -> LazyImage:
    """ImageOps.contain -> ResizeOp to the largest size of the image's aspect within size."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.contain(im, size, method), image, exact=True)
    return image.resize(_aspect_size(image, (size[0], size[1]), False), method)


def cover(image: Any, size: Tuple[int, int], method: int = _BICUBIC) -> LazyImage:
    """ImageOps.cover -> ResizeOp to the smallest size of the image's aspect covering size."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.cover(im, size, method), image, exact=True)
    return image.resize(_aspect_size(image, (size[0], size[1]), True), method)


def pad(image: Any, size: Tuple[int, int], method: int = _BICUBIC, color: Any = None,
        centering: Tuple[float, float] = (0.5, 0.5)) -> LazyImage:
    """ImageOps.pad -> contain's ResizeOp, pasted (PasteOp) at Pillow's rounded
    offset onto a Source.fill canvas of size and color."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.pad(im, size, method, color, centering), image, exact=True)
    size = (size[0], size[1])
    resized = contain(image, size, method)
    if resized.size == size:
        return resized
    out = Image.new(image.mode, size, color)
    if resized.width != size[0]:
        out.paste(resized, (round((size[0] - resized.width) * max(0, min(centering[0], 1))), 0))
    else:
        out.paste(resized, (0, round((size[1] - resized.height) * max(0, min(centering[1], 1)))))
    return out


def fit(image: Any, size: Tuple[int, int], method: int = _BICUBIC, bleed: float = 0.0,
        centering: Tuple[float, float] = (0.5, 0.5)) -> LazyImage:
    """ImageOps.fit -> ResizeOp with Pillow's fractional crop box."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.fit(im, size, method, bleed, centering), image, exact=True)
    cx, cy = centering
    # Pillow replaces out-of-range values with the defaults rather than raising.
    cx = cx if 0.0 <= cx <= 1.0 else 0.5
    cy = cy if 0.0 <= cy <= 1.0 else 0.5
    bleed = bleed if 0.0 <= bleed < 0.5 else 0.0
    bleed_pixels = (bleed * image.size[0], bleed * image.size[1])
    live = (image.size[0] - bleed_pixels[0] * 2, image.size[1] - bleed_pixels[1] * 2)
    live_ratio = live[0] / live[1]
    out_ratio = size[0] / size[1]
    if live_ratio == out_ratio:
        cw, ch = live
    elif live_ratio >= out_ratio:
        cw, ch = out_ratio * live[1], live[1]
    else:
        cw, ch = live[0], live[0] / out_ratio
    left = bleed_pixels[0] + (live[0] - cw) * cx
    top = bleed_pixels[1] + (live[1] - ch) * cy
    return image.resize(size, method, box=(left, top, left + cw, top + ch))


def scale(image: Any, factor: float, resample: int = _BICUBIC) -> LazyImage:
    """ImageOps.scale -> copy (factor 1) or ResizeOp to the rounded size."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageOps.scale(im, factor, resample), image, exact=True)
    if factor == 1:
        return image.copy()
    return image.resize((round(factor * image.width), round(factor * image.height)), resample)


# ------------------------------------------------ orientation


def exif_transpose(image: Any, *, in_place: bool = False) -> LazyImage:
    """ImageOps.exif_transpose(image) -> ExifTransposeOp.

    The worker reads the orientation of the source node `image` is (EXIF
    IFD0 Orientation, else XMP tiff:Orientation, as Image.getexif() reads
    them) and transposes as Pillow does, or copies. The source is opened
    here with Pillow for the output size, so Pillow's errors on its EXIF are
    raised at record time. `image` must be a source (Image.open, open_path,
    frombytes, new): the worker's other nodes carry no metadata.
    """
    image = ensure_lazy(image)
    if in_place:
        raise NotImplementedError("imgbatch: exif_transpose(in_place=True): recorded images are not "
                                  "modified in place; use the returned image")
    node = image._node
    size = image.size
    if node.op == "source":
        try:
            size = PIL.ImageOps.exif_transpose(node.replay_fn()).size
        except Exception:
            if checking():
                raise
    elif checking():
        raise NotImplementedError("imgbatch: exif_transpose reads the orientation of a source image; "
                                  "call it on Image.open(...) before other operations")
    return lazy("exif_transpose", {}, [image], image.mode, size, PIL.ImageOps.exif_transpose)
