"""A one-line graph language for `python -m imgbatch produce`.

    invert|gaussian_blur(2)|convert(L)
    crop(0, 0, 64, 64)|resize(32, 32)|filter(SHARPEN)|tone(exposure_ev=0.5)

Steps run left to right on the opened file; each is `name` or
`name(arg, ..., key=value, ...)`. Arguments are integers, floats or bare
words (taken as strings: modes, filter and transpose names). The steps, and
the Pillow call each records, are the op table's (worker/ops/ops.def, the
README's "Steps" table): each names its call there as ImageOps.f
(f(im, ...)), .m (im.m(...)), ImageEnhance.K (K(im).enhance(f)),
ImageFilter.F (im.filter(F(...))) or an adapter of this module (_name).
"""

import re
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

from ._optable import OPS

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


def _method(name: str) -> Callable[..., Any]:
    def step(im: Any, *args: Any, **kw: Any) -> Any:
        return getattr(im, name)(*args, **kw)

    return step


def _crop(im: Any, *box: Any) -> Any:
    return im.crop(box)


def _resize(im: Any, w: int, h: int) -> Any:
    return im.resize((w, h), 0)


def _convert(im: Any, mode: Any) -> Any:
    return im.convert(str(mode))


def _getchannel(im: Any, band: Any) -> Any:
    return im.getchannel(band)


_gaussian_blur = _radius("GaussianBlur")
_box_blur = _radius("BoxBlur")


def _call(spec: str) -> Callable[..., Any]:
    """The step function an ops.def step's call names."""
    module, _, name = spec.partition(".")
    if module == "ImageOps":
        return _ops(name)
    if module == "ImageEnhance":
        return _enhance(name)
    if module == "ImageFilter":
        return _filter(_pil_filter(name))
    if module == "":
        return _method(name)
    fn: Callable[..., Any] = globals()[spec]
    return fn


_STEPS: Dict[str, Callable[..., Any]] = {step.name: _call(step.call) for op in OPS for step in op.steps}


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
