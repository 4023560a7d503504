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
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

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


def _resize(im: Any, w: int, h: int, resample: Any = "BICUBIC", reducing_gap: Any = None) -> Any:
    from . import Image

    rs = Image.Resampling[resample] if isinstance(resample, str) else Image.Resampling(resample)
    return im.resize((w, h), rs, reducing_gap=reducing_gap)


def _thumbnail(im: Any, w: int, h: Any = None) -> Any:
    """Image.thumbnail((w, h)) (h defaults to w), Pillow's defaults (BICUBIC,
    reducing_gap 2.0): on a JPEG source, the draft decode and the resize
    Pillow makes (Source.draft_scale)."""
    im.thumbnail((w, w if h is None else h))
    return im
def _resampling(resample: Any) -> Any:
    from . import Image

    return Image.Resampling[resample] if isinstance(resample, str) else Image.Resampling(resample)


def _rotate(im: Any, angle: float, resample: Any = "NEAREST", expand: Any = 0) -> Any:
    return im.rotate(angle, _resampling(resample), expand=expand)


def _transform(im: Any, w: int, h: int, a: float, b: float, c: float, d: float, e: float, f: float,
               resample: Any = "NEAREST") -> Any:
    from . import Image

    return im.transform((w, h), Image.Transform.AFFINE, (a, b, c, d, e, f), _resampling(resample))


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


def _usage(name: str) -> str:
    """How the step is written, in the op table's words (the README's
    "Steps" table, the user's reference), else from its function's signature."""
    forms: List[str] = []
    for op in OPS:
        for step in op.steps:
            if step.name == name:
                form = step.syntax
                forms.append(form if "(" in form else f"{form} (no arguments)")
    if forms:
        return " or ".join(forms)
    import inspect

    try:
        params = list(inspect.signature(_STEPS[name]).parameters.values())[1:]
    except (KeyError, TypeError, ValueError):
        return name
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return f"{name}(...)"
    return f"{name}({', '.join(str(p) for p in params)})"


# Python's words for arguments that do not fit a call (a call's and
# inspect.Signature.bind's), in the graph's.
_BINDING = (
    (re.compile(r"unexpected keyword argument '(\w+)'"), "no argument named {0}"),
    (re.compile(r"takes (?:from \d+ to )?\d+ positional arguments? but \d+ (?:was|were) given"
                r"|too many positional arguments"), "too many arguments"),
    (re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?|missing a required argument"),
     "too few arguments"),
    (re.compile(r"multiple values for argument '(\w+)'"), "argument {0} given twice"),
)


def _in_graph_terms(message: str) -> str:
    for pattern, words in _BINDING:
        m = pattern.search(message)
        if m:
            return words.format(*m.groups())
    return "arguments do not fit"


def _misfit(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Optional[str]:
    """Why the arguments do not fit the step's function (None: they do, or
    its signature says nothing, as *args does)."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = sig.parameters.values()
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        unknown = [k for k in kwargs if k not in named]
        if unknown:  # before what is missing: the user's word for it is the news
            return f"no argument named {unknown[0]}"
    try:
        sig.bind(None, *args, **kwargs)
    except TypeError as e:
        return _in_graph_terms(str(e))
    return None


def _binding_error(e: TypeError) -> Optional[str]:
    """Python's message for a call the step's arguments do not fit, in the
    graph's terms (None: the TypeError came from inside the call, Pillow's)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_code.co_filename != __file__:
        return None
    return _in_graph_terms(str(e))


def apply_graph(steps: List[Step], image: Any) -> Any:
    """Record the steps on a LazyImage (imgbatch.Image.open(...) for a file).
    A failing step raises TypeError (arguments that do not fit the step,
    named with how the step is written) or ValueError (a value Pillow
    rejects, with Pillow's message), each naming the step by number."""
    im = image
    for i, step in enumerate(steps):
        where = f"imgbatch graph: step {i + 1} {step}"
        fn = _STEPS[step.name]
        misfit = _misfit(fn, step.args, step.kwargs)
        if misfit:
            raise TypeError(f"{where}: {misfit}; expected {_usage(step.name)}")
        try:
            im = fn(im, *step.args, **step.kwargs)
        except TypeError as e:
            words = _binding_error(e)
            raise TypeError(f"{where}: {words or e}; expected {_usage(step.name)}") from None
        except KeyError as e:
            raise ValueError(f"{where}: unknown value {e}; expected {_usage(step.name)}") from None
        except IndexError:
            raise ValueError(f"{where}: wrong number of values; expected {_usage(step.name)}") from None
        except ValueError as e:
            raise ValueError(f"{where}: {e}; expected {_usage(step.name)}") from None
    return im
