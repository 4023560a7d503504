"""imgbatch.ImageChops: the PIL.ImageChops functions the wire format carries.

Two-input functions record inputs = [image1, image2]; the output has
image1's mode and the smaller of both sizes, as Pillow's chops do.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import PIL.ImageChops

from ._methods import LazyImage, ensure_lazy, lazy
from ._record import pillow_check, resolve_color

# proto ChopsFunction values (checked against imgbatch_pb2 by the client tests).
FUNCTIONS = {
    "multiply": 0, "screen": 1, "overlay": 2, "hard_light": 3, "soft_light": 4,
    "difference": 5, "darker": 6, "lighter": 7, "add": 8, "subtract": 9,
    "add_modulo": 10, "subtract_modulo": 11,
}


def _chop(name: str, image1: Any, image2: Any, params: Dict[str, Any],
          replay: Callable[[Any, Any], Any]) -> LazyImage:
    a, b = ensure_lazy(image1), ensure_lazy(image2)
    pillow_check(replay, a, b)
    size = (min(a.width, b.width), min(a.height, b.height))
    params = dict(params, function=FUNCTIONS[name])
    return lazy("chops", params, [a, b], a.mode, size, replay)


def _simple(name: str) -> Callable[[Any, Any], LazyImage]:
    pil = getattr(PIL.ImageChops, name)

    def chop(image1: Any, image2: Any) -> LazyImage:
        return _chop(name, image1, image2, {}, pil)

    chop.__name__ = name
    chop.__doc__ = f"ImageChops.{name}(image1, image2) -> ChopsOp {name.upper()}"
    return chop


multiply = _simple("multiply")
screen = _simple("screen")
overlay = _simple("overlay")
hard_light = _simple("hard_light")
soft_light = _simple("soft_light")
difference = _simple("difference")
darker = _simple("darker")
lighter = _simple("lighter")
add_modulo = _simple("add_modulo")
subtract_modulo = _simple("subtract_modulo")


def add(image1: Any, image2: Any, scale: float = 1.0, offset: float = 0) -> LazyImage:
    """ImageChops.add(image1, image2, scale, offset) -> ChopsOp ADD."""
    return _chop("add", image1, image2, {"scale": float(scale), "offset": float(offset)},
                 lambda a, b: PIL.ImageChops.add(a, b, scale, offset))


def subtract(image1: Any, image2: Any, scale: float = 1.0, offset: float = 0) -> LazyImage:
    """ImageChops.subtract(image1, image2, scale, offset) -> ChopsOp SUBTRACT."""
    return _chop("subtract", image1, image2, {"scale": float(scale), "offset": float(offset)},
                 lambda a, b: PIL.ImageChops.subtract(a, b, scale, offset))


def blend(image1: Any, image2: Any, alpha: float) -> LazyImage:
    """ImageChops.blend(image1, image2, alpha) -> BlendOp (= Image.blend)."""
    from . import Image

    pillow_check(lambda a, b: PIL.ImageChops.blend(a, b, alpha), ensure_lazy(image1), ensure_lazy(image2),
                 exact=True)
    out = Image.blend(image1, image2, alpha)
    out._node.replay_fn = lambda a, b: PIL.ImageChops.blend(a, b, alpha)
    return out


def constant(image: Any, value: Any) -> LazyImage:
    """ImageChops.constant -> ConstantOp; value resolved as Image.new("L", ..., value)."""
    image = ensure_lazy(image)
    pillow_check(lambda im: PIL.ImageChops.constant(im, value), image)
    v = resolve_color("L", value)[0]
    return lazy("constant", {"value": v}, [image], "L", image.size,
                lambda im: PIL.ImageChops.constant(im, value))


def duplicate(image: Any) -> LazyImage:
    """ImageChops.duplicate(image) -> CopyOp."""
    return ensure_lazy(image).copy()
