"""A one-line graph language for `python -m imgbatch produce`.

    invert|gaussian_blur(2)|convert(L)
    crop(0, 0, 64, 64)|resize(32, 32)|filter(SHARPEN)|tone(exposure_ev=0.5)

Steps run left to right on the opened file; each is `name` or
`name(arg, ..., key=value, ...)`. Arguments are integers, floats or bare
words (taken as strings: modes, filter and transpose names). Steps and the
Pillow call each records:

    copy                         im.copy()
    invert | grayscale | flip | mirror        ImageOps.<name>(im)
    solarize(threshold=128)      ImageOps.solarize(im, threshold)
    posterize(bits)              ImageOps.posterize(im, bits)
    transpose(METHOD)            im.transpose(Image.Transpose.METHOD), e.g. ROTATE_90
    crop(left, top, right, bottom)            im.crop(box)
    expand(border, fill=0)       ImageOps.expand(im, border, fill); border: 1 or 2 or 4 ints
    resize(width, height[, FILTER], reducing_gap=g)
                                 im.resize((width, height), Image.Resampling.FILTER,
                                 reducing_gap=g); FILTER defaults to BICUBIC, as in Pillow
    convert(MODE)                im.convert(MODE)
    getchannel(BAND)             im.getchannel(BAND), a name (R) or an index
    gaussian_blur(r) / gaussian_blur(rx, ry)  im.filter(ImageFilter.GaussianBlur(r))
    box_blur(r) / box_blur(rx, ry)            im.filter(ImageFilter.BoxBlur(r))
    median(size=3) | min(size=3) | max(size=3)  MedianFilter / MinFilter / MaxFilter
    rank(size, rank)             im.filter(ImageFilter.RankFilter(size, rank))
    filter(NAME)                 im.filter(ImageFilter.NAME): BLUR, SHARPEN, SMOOTH, ...
    brightness(f) | color(f) | contrast(f)    ImageEnhance.<Kind>(im).enhance(f)
    tone(exposure_ev=, contrast=, highlights=, shadows=, whites=, blacks=)   imgbatch.tone
"""

import re
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

_STEP = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)
_KW = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$", re.S)


class Step(NamedTuple):
    name: str
    args: Tuple[Any, ...]
    kwargs: Dict[str, Any]

    def __str__(self) -> str:
        parts = [repr(a) if isinstance(a, str) else str(a) for a in self.args]
        parts += [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"


def _literal(text: str) -> Any:
    text = text.strip()
    if not text:
        raise ValueError("empty argument")
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if not re.fullmatch(r"[A-Za-z0-9_;]+", text):
        raise ValueError(f"bad argument {text!r}")
    return text


def parse_graph(text: str) -> List[Step]:
    """Parse `step|step|...` into Steps; ValueError names the bad step."""
    steps = []
    for i, part in enumerate(text.split("|")):
        m = _STEP.match(part)
        if not m:
            raise ValueError(f"imgbatch graph: step {i + 1} {part.strip()!r} is not name or name(args)")
        name, body = m.group(1), m.group(2)
        if name not in _STEPS:
            raise ValueError(f"imgbatch graph: unknown step {name!r} (known: {', '.join(sorted(_STEPS))})")
        args: List[Any] = []
        kwargs: Dict[str, Any] = {}
        if body is not None and body.strip():
            for raw in body.split(","):
                try:
                    kw = _KW.match(raw)
                    if kw:
                        kwargs[kw.group(1)] = _literal(kw.group(2))
                    elif kwargs:
                        raise ValueError("positional argument after keyword")
                    else:
                        args.append(_literal(raw))
                except ValueError as e:
                    raise ValueError(f"imgbatch graph: step {i + 1} {name}: {e}") from None
        steps.append(Step(name, tuple(args), kwargs))
    return steps


def _filter(make: Callable[..., Any]) -> Callable[..., Any]:
    def step(im: Any, *args: Any, **kw: Any) -> Any:
        return im.filter(make(*args, **kw))

    return step


def _radius(cls_name: str) -> Callable[..., Any]:
    def step(im: Any, rx: float, ry: Any = None) -> Any:
        from . import ImageFilter

        return im.filter(getattr(ImageFilter, cls_name)(rx if ry is None else (rx, ry)))

    return step


def _ops(name: str) -> Callable[..., Any]:
    def step(im: Any, *args: Any, **kw: Any) -> Any:
        from . import ImageOps

        return getattr(ImageOps, name)(im, *args, **kw)

    return step


def _enhance(kind: str) -> Callable[..., Any]:
    def step(im: Any, factor: float) -> Any:
        from . import ImageEnhance

        return getattr(ImageEnhance, kind)(im).enhance(factor)

    return step


def _transpose(im: Any, method: Any) -> Any:
    from . import Image

    return im.transpose(Image.Transpose[method] if isinstance(method, str) else Image.Transpose(method))


def _resize(im: Any, w: int, h: int, resample: Any = "BICUBIC", reducing_gap: Any = None) -> Any:
    from . import Image

    rs = Image.Resampling[resample] if isinstance(resample, str) else Image.Resampling(resample)
    return im.resize((w, h), rs, reducing_gap=reducing_gap)


def _expand(im: Any, *border: int, fill: Any = 0) -> Any:
    from . import ImageOps

    if len(border) not in (1, 2, 4):
        raise ValueError("expand takes 1, 2 or 4 border values")
    return ImageOps.expand(im, border[0] if len(border) == 1 else tuple(border), fill)


def _named_filter(im: Any, name: str) -> Any:
    from PIL import ImageFilter

    f = getattr(ImageFilter, str(name).upper(), None)
    if not isinstance(f, type) or not issubclass(f, ImageFilter.BuiltinFilter):
        raise ValueError(f"filter({name}): not one of Pillow's predefined kernels (BLUR, SHARPEN, ...)")
    return im.filter(f)


def _tone(im: Any, **kw: float) -> Any:
    from ._tone import tone

    return tone(im, **kw)


def _pil_filter(cls_name: str) -> Callable[..., Any]:
    def make(*args: Any, **kw: Any) -> Any:
        from PIL import ImageFilter

        return getattr(ImageFilter, cls_name)(*args, **kw)

    return make


_STEPS: Dict[str, Callable[..., Any]] = {
    "copy": lambda im: im.copy(),
    "invert": _ops("invert"),
    "grayscale": _ops("grayscale"),
    "flip": _ops("flip"),
    "mirror": _ops("mirror"),
    "solarize": _ops("solarize"),
    "posterize": _ops("posterize"),
    "transpose": _transpose,
    "crop": lambda im, *box: im.crop(box),
    "expand": _expand,
    "resize": _resize,
    "convert": lambda im, mode: im.convert(str(mode)),
    "getchannel": lambda im, band: im.getchannel(band),
    "gaussian_blur": _radius("GaussianBlur"),
    "box_blur": _radius("BoxBlur"),
    "median": _filter(_pil_filter("MedianFilter")),
    "min": _filter(_pil_filter("MinFilter")),
    "max": _filter(_pil_filter("MaxFilter")),
    "rank": _filter(_pil_filter("RankFilter")),
    "filter": _named_filter,
    "brightness": _enhance("Brightness"),
    "color": _enhance("Color"),
    "contrast": _enhance("Contrast"),
    "tone": _tone,
}


def apply_graph(steps: List[Step], image: Any) -> Any:
    """Record the steps on a LazyImage (imgbatch.Image.open(...) for a file).
    A failing step raises TypeError or ValueError naming the step and the
    underlying message (Pillow's, for a call Pillow rejects)."""
    im = image
    for i, step in enumerate(steps):
        try:
            im = _STEPS[step.name](im, *step.args, **step.kwargs)
        except TypeError as e:
            raise TypeError(f"imgbatch graph: step {i + 1} {step}: {e}") from None
        except (ValueError, KeyError) as e:
            raise ValueError(f"imgbatch graph: step {i + 1} {step}: {e}") from None
    return im
