"""LazyImage: PIL.Image.Image's methods, recorded as graph nodes.

Each method computes the wire params (resolved exactly as Pillow resolves
them), the output mode and size (as Pillow computes them) and a replay
closure that makes the same call on real Pillow.

Errors mirror Pillow's at record time: before recording, every call is made
on real Pillow over stand-in images of the inputs' modes and sizes
(pillow_check), so a call Pillow rejects (bad mode, bad parameter) raises
Pillow's own exception, type and message, here rather than on the worker.
Stand-ins larger than 65,536 pixels are cut to 32x32 for the calls whose
errors do not depend on size. `with imgbatch.unchecked():` records without
the check (to test the worker's own rejections); what the wire cannot carry
raises NotImplementedError either way.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import PIL.Image
from PIL import ImageFilter as _PILFilter

from ._graph import GraphImage, Node, SourceSpec, source_node
from ._record import checking, mark_loaded, node, pillow_check, resolve_color
from ._transform import rotate_node, transform_node

# Pillow formats whose images have JpegImageFile.draft (MPO's first frame).
_DRAFTABLE = ("JPEG", "MPO")

# Image.Transpose values that swap width and height.
_SWAPS = {2, 4, 5, 6}

def lazy(op: str, params: Dict[str, Any], inputs: Sequence[GraphImage], mode: str,
         size: Tuple[int, int], replay_fn: Callable[..., Any]) -> LazyImage:
    """New LazyImage for op over input LazyImages."""
    return LazyImage(node(op, params, inputs, mode, size, replay_fn))


def _check_size(size: Any) -> Tuple[int, int]:
    size = tuple(size)
    if len(size) != 2 or not all(isinstance(v, int) for v in size):
        raise ValueError("Size must be a list or tuple of two integers")
    if size[0] < 0 or size[1] < 0:
        raise ValueError("Width and height must be >= 0")
    return size


def new_source(mode: str, size: Tuple[int, int], color: Any = 0) -> LazyImage:
    """Image.new (imgbatch.Image.new, and a colour that paste() fills with)."""
    if checking():
        PIL.Image._check_size(size)
    size = _check_size(size)
    fill = resolve_color(mode, color)
    spec = SourceSpec("fill", mode, size, fill)
    return LazyImage(source_node(spec, lambda: PIL.Image.new(mode, size, color), mode, size))


def frombytes_source(mode: str, size: Tuple[int, int], data: Any, decoder_name: str = "raw",
                     *args: Any) -> LazyImage:
    """Image.frombytes (imgbatch.Image.frombytes, and a real Pillow image that
    an op takes as an input)."""
    if checking():
        PIL.Image.frombytes(mode, size, data, decoder_name, *args)
    if decoder_name != "raw" or (args and args not in ((mode,), (mode, 0, 1))):
        raise NotImplementedError("imgbatch: frombytes supports the raw decoder without stride")
    size = _check_size(size)
    data = bytes(data)
    spec = SourceSpec("raw", mode, size, data)
    return LazyImage(source_node(spec, lambda: PIL.Image.frombytes(mode, size, data), mode, size))


def ensure_lazy(im: Any, what: str = "image") -> LazyImage:
    """A LazyImage as is; a real PIL image recorded as a raw source."""
    if isinstance(im, LazyImage):
        return im
    if isinstance(im, PIL.Image.Image):
        return frombytes_source(im.mode, im.size, im.tobytes())
    raise TypeError(f"imgbatch: {what} must be an image, not {type(im).__name__}")


def _clip_lut_value(v: Any) -> int:
    # Image.point rounds with Python's round(); _imaging.c getlist() reads a
    # C long (OverflowError beyond 64 bits) into an int (wraps at 32 bits);
    # _point() then applies CLIP8.
    v = int(round(v))
    if not -(1 << 63) <= v < (1 << 63):
        raise OverflowError("Python int too large to convert to C long")
    v = ((v + (1 << 31)) % (1 << 32)) - (1 << 31)
    return 0 if v < 0 else 255 if v > 255 else v


def point_lut(lut: Any, bands: int) -> List[int]:
    """The final 0..255 table Pillow's Image.point applies to an 8-bit image.

    A callable is evaluated on 0..255 and repeated once per band (Pillow's
    Image.point); a sequence is taken as given, so a wrong length reaches
    the worker (which rejects it, as Pillow's _point does).
    """
    flat = [lut(i) for i in range(256)] * bands if callable(lut) else list(lut)
    return [_clip_lut_value(v) for v in flat]


def _radius_xy(radius: Any) -> Tuple[float, float]:
    if isinstance(radius, (int, float)):
        return float(radius), float(radius)
    rx, ry = radius
    return float(rx), float(ry)


def filter_params(f: Any) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(op, params) for a Pillow ImageFilter instance; None for a Pillow no-op copy."""
    if isinstance(f, _PILFilter.RankFilter):
        return "rank_filter", {"size": f.size, "rank": f.rank}
    if isinstance(f, (_PILFilter.GaussianBlur, _PILFilter.BoxBlur)):
        # Both return image.copy() for radius 0 or (0, 0) (ImageFilter.py).
        if f.radius == 0 or f.radius == (0, 0):
            return None
        rx, ry = _radius_xy(f.radius)
        op = "gaussian_blur" if isinstance(f, _PILFilter.GaussianBlur) else "box_blur"
        return op, {"radius_x": rx, "radius_y": ry}
    if isinstance(f, _PILFilter.BuiltinFilter) and hasattr(f, "filterargs"):
        # Kernel and the predefined BLUR, SHARPEN, ...: (size, scale, offset,
        # kernel), scale already defaulted to the kernel sum by Kernel(). A
        # zero scale stays zero: Pillow divides by it (_imaging.c _filter).
        (xs, ys), scale, offset, kernel = f.filterargs
        if xs != ys:  # the wire has one side; Pillow refuses these too (Filter.c)
            raise ValueError("bad kernel size")
        return "kernel", {
            "size": int(xs),
            "kernel": [float(k) for k in kernel],
            "scale": float(scale),
            "offset": float(offset),
        }
    raise NotImplementedError(f"imgbatch: filter {type(f).__name__} is not in the wire format")


class LazyImage(GraphImage):
    """A recorded Pillow image: PIL.Image.Image's calls, evaluated later by the
    worker (to_job) or by real Pillow (replay). paste() rebinds this handle,
    as Pillow mutates in place; every other method returns a new image."""

    __slots__ = ()

    def copy(self) -> LazyImage:
        """Image.copy() -> CopyOp."""
        return lazy("copy", {}, [self], self.mode, self.size, lambda im: im.copy())

    __copy__ = copy

    def transpose(self, method: Union[int, PIL.Image.Transpose]) -> LazyImage:
        """Image.transpose(method) -> TransposeOp (all 7 Image.Transpose values)."""
        pillow_check(lambda im: im.transpose(method), self)
        m = int(method)
        w, h = self.size
        size = (h, w) if m in _SWAPS else (w, h)
        return lazy("transpose", {"method": m}, [self], self.mode, size,
                    lambda im: im.transpose(method))

    def crop(self, box: Optional[Sequence[float]] = None) -> LazyImage:
        """Image.crop(box) -> CropOp; box rounded as Pillow rounds it, outside = 0."""
        pillow_check(lambda im: im.crop(box), self, exact=True)
        if box is None:
            return lazy("copy", {}, [self], self.mode, self.size, lambda im: im.crop(None))
        # Image._crop: map(int, map(round, box)); Python's round (half to even).
        x0, y0, x1, y1 = (int(round(v)) for v in box)
        params = {"left": x0, "top": y0, "right": x1, "bottom": y1}
        return lazy("crop", params, [self], self.mode, (x1 - x0, y1 - y0),
                    lambda im: im.crop(box))

    def draft(self, mode: Optional[str], size: Optional[Sequence[int]]
              ) -> Optional[Tuple[str, Tuple[int, int, float, float]]]:
        """Image.draft(mode, size) -> Source.draft_scale, as JpegImageFile.draft
        does it: a JPEG opened from bytes or a path, its pixels not read yet
        and not drafted before, will be decoded by libjpeg scaled by 1/s
        (s = 8, 4, 2 or 1, the largest not over min(width // size[0],
        height // size[1])), to ceil(width / s) x ceil(height / s). Returns
        Pillow's (mode, (0, 0, width / s, height / s)); anything else returns
        None and records nothing, as in Pillow. Changing the decode's mode
        (draft("L") of an RGB JPEG) is not in the wire format."""
        src = self._node.source
        if (src is None or src.format not in _DRAFTABLE or src.opener is None or src.loaded
                or src.draft is not None):
            return None
        if self.mode == "RGB" and mode in ("L", "YCbCr"):
            raise NotImplementedError(f"imgbatch: draft({mode!r}) of an RGB JPEG (libjpeg's own colour "
                                      "conversion) is not in the wire format")
        w, h = self.size
        scale = 1
        if size:
            scale = min(w // size[0], h // size[1])
            for s in (8, 4, 2, 1):
                if scale >= s:
                    break
            scale = s
        drafted = ((w + scale - 1) // scale, (h + scale - 1) // scale)
        opener, want = src.opener, size

        def replay() -> Any:
            im = opener()
            im.draft(mode, want)
            if im.decoderconfig[0] != scale:  # the recording's arithmetic is Pillow's
                raise AssertionError(f"imgbatch: Pillow drafted 1/{im.decoderconfig[0]}, recorded 1/{scale}")
            im.load()
            return im

        spec = SourceSpec(src.kind, src.mode, src.size, src.data, src.format, opener, draft=scale)
        self._node = source_node(spec, replay, self.mode, drafted)
        return self.mode, (0, 0, w / scale, h / scale)

    def thumbnail(self, size: Sequence[float], resample: int = PIL.Image.Resampling.BICUBIC,
                  reducing_gap: Optional[float] = 2.0) -> None:
        """Image.thumbnail(size, resample, reducing_gap), in place like Pillow
        (returns None, rebinds this handle), recorded as the calls Pillow
        makes: the aspect-rounded size; with a reducing_gap, draft(None,
        (int(size[0] * gap), int(size[1] * gap))), which for a JPEG source
        records the libjpeg scale on the source (Source.draft_scale, contract
        3) and gives the box; then resize(size, resample, box, reducing_gap)
        unless the (drafted) size already is the thumbnail's."""
        src = self._node.source
        if (checking() and reducing_gap is not None and src is not None and src.opener is not None
                and src.format in _DRAFTABLE and not src.loaded and src.draft is None):
            # Pillow's errors on the file itself (draft's arithmetic raises
            # before resize's checks); cheap, as the file is drafted.
            src.opener().thumbnail(size, resample, reducing_gap)
        else:
            pillow_check(lambda im: im.thumbnail(size, resample, reducing_gap), self, exact=True)
        x, y = (math.floor(v) for v in size)
        if x >= self.width and y >= self.height:
            return
        aspect = self.width / self.height

        def round_aspect(number: float, key: Callable[[int], float]) -> int:
            return max(min(math.floor(number), math.ceil(number), key=key), 1)

        if x / y >= aspect:
            x = round_aspect(y * aspect, key=lambda n: abs(aspect - n / y))
        else:
            y = round_aspect(x / aspect, key=lambda n: 0 if n == 0 else abs(aspect - x / n))
        box = None
        if reducing_gap is not None:
            res = self.draft(None, (int(size[0] * reducing_gap), int(size[1] * reducing_gap)))
            if res is not None:
                box = res[1]
        if self.size != (x, y):
            self._node = self.resize((x, y), resample, box, reducing_gap)._node

    def reduce(self, factor: Any, box: Optional[Sequence[int]] = None) -> LazyImage:
        """Image.reduce(factor | (fx, fy), box) -> ReduceOp; factor (1, 1) over
        the whole image = copy, as Pillow."""
        pillow_check(lambda im: im.reduce(factor, box), self, exact=True)

        def replay(im: Any) -> Any:
            return im.reduce(factor, box)

        fx, fy = (factor, factor) if not isinstance(factor, (list, tuple)) else factor
        fx, fy = int(fx), int(fy)
        b = (0, 0) + self.size if box is None else tuple(int(v) for v in box)
        if (fx, fy) == (1, 1) and b == (0, 0) + self.size:
            return lazy("copy", {}, [self], self.mode, self.size, replay)
        params: Dict[str, Any] = {"factor_x": fx, "factor_y": fy}
        if box is not None:
            params["box"] = {"left": b[0], "top": b[1], "right": b[2], "bottom": b[3]}
        # max(.., 1): unchecked recordings (parity refusals) may carry a factor 0.
        size = (-(-(b[2] - b[0]) // max(fx, 1)), -(-(b[3] - b[1]) // max(fy, 1)))
        return lazy("reduce", params, [self], self.mode, size, replay)

    def resize(self, size: Sequence[int], resample: Optional[int] = None,
               box: Optional[Sequence[float]] = None, reducing_gap: Optional[float] = None) -> LazyImage:
        """Image.resize(size, resample, box, reducing_gap) -> ResizeOp, every filter
        (default BICUBIC, as Pillow); same size and whole box = copy, as Pillow."""
        pillow_check(lambda im: im.resize(size, resample, box, reducing_gap), self,
                     exact=box is not None or reducing_gap is not None)
        size = tuple(size)
        rs = PIL.Image.Resampling.BICUBIC if resample is None else resample

        def replay(im: Any) -> Any:
            return im.resize(size, resample, box, reducing_gap)

        # Pillow refuses a bad filter or gap before its same-size shortcut:
        # such a call is recorded as a resize, for the worker to refuse too.
        valid = rs in tuple(PIL.Image.Resampling) and (reducing_gap is None or reducing_gap >= 1.0)
        if valid and self.size == size and (box is None or tuple(box) == (0, 0) + self.size):
            return lazy("copy", {}, [self], self.mode, self.size, replay)
        if self.mode in ("1", "P"):
            rs = PIL.Image.Resampling.NEAREST
        params: Dict[str, Any] = {"width": int(size[0]), "height": int(size[1]), "resample": int(rs)}
        if box is not None:
            left, top, right, bottom = (float(v) for v in box)
            params["box"] = {"left": left, "top": top, "right": right, "bottom": bottom}
        if reducing_gap is not None:
            params["reducing_gap"] = float(reducing_gap)
        return lazy("resize", params, [self], self.mode, (int(size[0]), int(size[1])), replay)

    def transform(self, size: Sequence[int], method: Any, data: Optional[Sequence[Any]] = None,
                  resample: int = PIL.Image.Resampling.NEAREST, fill: int = 1,
                  fillcolor: Any = None) -> LazyImage:
        """Image.transform(size, AFFINE | EXTENT, data, resample, fill, fillcolor) -> TransformOp."""
        return LazyImage(transform_node(self, size, method, data, resample, fill, fillcolor))

    def rotate(self, angle: float, resample: int = PIL.Image.Resampling.NEAREST, expand: Any = False,
               center: Optional[Sequence[float]] = None, translate: Optional[Sequence[float]] = None,
               fillcolor: Any = None) -> LazyImage:
        """Image.rotate(angle, resample, expand, center, translate, fillcolor) -> CopyOp,
        TransposeOp (Pillow's fast paths) or TransformOp with Pillow's matrix."""
        return LazyImage(rotate_node(self, angle, resample, expand, center, translate, fillcolor))

    def paste(self, im: Any, box: Optional[Sequence[int]] = None, mask: Any = None) -> None:
        """Image.paste(im, box) -> PasteOp over [self, im], rebinding this handle
        (Pillow pastes in place). Unmasked only; im may be a colour with a 4-tuple box."""
        pillow_check(lambda base, src, m: base.paste(src, box, m), self, im, mask, exact=True)
        if mask is not None or isinstance(box, (GraphImage, PIL.Image.Image)):
            raise NotImplementedError("imgbatch: masked paste is not in the wire format")
        box = (0, 0) if box is None else tuple(operator.index(v) for v in box)
        if len(box) not in (2, 4):
            raise TypeError("imgbatch: paste box must be a 2- or 4-tuple of ints")
        if not isinstance(im, (GraphImage, PIL.Image.Image)):
            if len(box) != 4:
                raise ValueError("cannot determine region size; use 4-item box")
            im = new_source(self.mode, (box[2] - box[0], box[3] - box[1]), im)
        im = ensure_lazy(im, "paste source")
        if im.mode != self.mode and not (self.mode == "RGB" and im.mode in ("LA", "RGBA", "RGBa")):
            im = im.convert(self.mode)  # Image.paste converts exactly so
        params: Dict[str, Any] = {"left": box[0], "top": box[1]}
        if len(box) == 4:
            params["size"] = {"width": box[2] - box[0], "height": box[3] - box[1]}

        def replay(base: Any, src: Any) -> Any:
            out = base.copy()
            out.paste(src, box)
            return out

        mark_loaded([self._node, im._node])
        self._node = Node("paste", params, [self._node, im._node], self.mode, self.size, replay)

    def getchannel(self, channel: Union[int, str]) -> LazyImage:
        """Image.getchannel(channel) -> GetChannelOp (band index or name) -> L."""
        pillow_check(lambda im: im.getchannel(channel), self)
        if isinstance(channel, str):
            try:
                band = self.getbands().index(channel)
            except ValueError as e:
                raise ValueError(f'The image has no channel "{channel}"') from e
        else:
            band = operator.index(channel)
        if band < 0:
            raise ValueError("band index out of range")
        return lazy("getchannel", {"band": band}, [self], "L", self.size,
                    lambda im: im.getchannel(channel))

    def convert(self, mode: Optional[str] = None, matrix: Any = None, dither: Any = None,
                palette: PIL.Image.Palette = PIL.Image.Palette.WEB, colors: int = 256) -> LazyImage:
        """Image.convert(mode) -> ConvertOp (no matrix or dither); same mode = copy."""
        pillow_check(lambda im: im.convert(mode, matrix, dither, palette, colors), self)
        if matrix is not None:
            raise NotImplementedError("imgbatch: convert(matrix=...) is not in the wire format")
        if not mode and self.mode == "P":
            raise NotImplementedError("imgbatch: convert() of a P image is not in the wire format")

        def replay(im: Any) -> Any:
            return im.convert(mode, None, dither, palette, colors)

        if not mode or mode == self.mode:
            return lazy("copy", {}, [self], self.mode, self.size, replay)  # Pillow returns copy()
        return lazy("convert", {"mode": mode}, [self], mode, self.size, replay)

    def point(self, lut: Any, mode: Optional[str] = None) -> LazyImage:
        """Image.point(lut) -> PointOp holding the final 0..255 table per band."""
        pillow_check(lambda im: im.point(lut, mode), self)
        if isinstance(lut, PIL.Image.ImagePointHandler):
            raise NotImplementedError("imgbatch: ImagePointHandler is not in the wire format")
        if mode is not None and mode != self.mode:
            raise NotImplementedError("imgbatch: point(mode=...) is not in the wire format")
        table = point_lut(lut, len(self.getbands()))
        return lazy("point", {"lut": table}, [self], self.mode, self.size,
                    lambda im: im.point(lut, mode))

    def filter(self, filter: Any) -> LazyImage:
        """Image.filter(f): RankFilter/Median/Min/Max -> RankFilterOp, GaussianBlur,
        BoxBlur -> GaussianBlurOp/BoxBlurOp, Kernel and BLUR, SHARPEN, ... -> KernelOp."""
        pillow_check(lambda im: im.filter(filter), self)
        f = filter() if isinstance(filter, type) else filter
        if not hasattr(f, "filter"):
            raise TypeError("filter argument should be ImageFilter.Filter instance or class")
        spec = filter_params(f)
        op, params = spec if spec else ("copy", {})
        return lazy(op, params, [self], self.mode, self.size, lambda im: im.filter(f))


def ceil_threshold(threshold: float) -> int:
    """solarize's `i < threshold` over i in 0..255 depends only on this 0..256 value."""
    return min(256, max(0, math.ceil(threshold)))
