"""Image.transform(AFFINE | EXTENT) and Image.rotate, recorded as Pillow makes them.

Pillow 12.3's Image.rotate is Python over Image.transform: it returns copy()
or a transpose for its fast paths, and otherwise computes an affine matrix
in double and calls transform(). These recorders do exactly the same, so
the worker needs only TransformOp (kernels/affine.h), and replay() makes the
original call on real Pillow. They return the node; LazyImage.transform and
.rotate (_methods.py) wrap it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Sequence, Tuple

import PIL.Image

from ._graph import GraphImage, Node
from ._record import node, pillow_check, resolve_color

_Transform = PIL.Image.Transform
_NEAREST = PIL.Image.Resampling.NEAREST


def _fill(mode: str, resample: int, fillcolor: Any) -> bytes:
    """TransformOp.fill: the pixel Image.new gives the image Pillow transforms
    into, La / RGBa for LA / RGBA with a filter (Image.transform converts
    there first); empty for fillcolor None."""
    if fillcolor is None:
        return b""
    if mode in ("LA", "RGBA") and resample != _NEAREST:
        mode = {"LA": "La", "RGBA": "RGBa"}[mode]
    return resolve_color(mode, fillcolor)


def _affine(im: GraphImage, size: Tuple[int, int], matrix: Sequence[float], resample: int,
            fillcolor: Any, replay: Callable[[Any], Any]) -> Node:
    params = {
        "width": size[0],
        "height": size[1],
        "matrix": [float(v) for v in matrix],
        "resample": int(resample),
        "fill": _fill(im.mode, resample, fillcolor),
    }
    return node("transform", params, [im], im.mode, size, replay)


def transform_node(im: GraphImage, size: Sequence[int], method: Any,
                   data: Optional[Sequence[Any]] = None, resample: int = _NEAREST, fill: int = 1,
                   fillcolor: Any = None) -> Node:
    """Image.transform(size, AFFINE | EXTENT, data, resample, fill, fillcolor) -> TransformOp.

    EXTENT becomes the AFFINE matrix Pillow computes for it; PERSPECTIVE,
    QUAD, MESH and transform handlers are not in the wire format."""
    pillow_check(lambda i: i.transform(size, method, data, resample, fill, fillcolor), im)

    def replay(i: Any) -> Any:
        return i.transform(size, method, data, resample, fill, fillcolor)

    if isinstance(method, PIL.Image.ImageTransformHandler):
        raise NotImplementedError("imgbatch: transform handlers are not in the wire format")
    if hasattr(method, "getdata"):  # old-style transform objects, as Image.transform
        method, data = method.getdata()
    w, h = int(size[0]), int(size[1])
    if method == _Transform.AFFINE:
        matrix: List[Any] = list(data)[:6] if data is not None else []
    elif method == _Transform.EXTENT:
        # Image.__transformer: the extent as an affine transform.
        x0, y0, x1, y1 = data  # type: ignore[misc]
        matrix = [(x1 - x0) / w, 0, x0, 0, (y1 - y0) / h, y0]
    else:
        raise NotImplementedError(f"imgbatch: transform method {method!r} is not in the wire format "
                                  "(AFFINE and EXTENT are)")
    return _affine(im, (w, h), matrix, int(resample), fillcolor, replay)


def rotate_node(im: GraphImage, angle: float, resample: int = _NEAREST, expand: Any = False,
                center: Optional[Sequence[float]] = None, translate: Optional[Sequence[float]] = None,
                fillcolor: Any = None) -> Node:
    """Image.rotate(angle, resample, expand, center, translate, fillcolor) ->
    CopyOp, TransposeOp or TransformOp, as Pillow 12.3 computes it."""
    pillow_check(lambda i: i.rotate(angle, resample, expand, center, translate, fillcolor), im)

    args = (angle, resample, expand, center, translate, fillcolor)

    def replay(i: Any) -> Any:  # the call as made (angle and center are rebound below)
        return i.rotate(*args)

    angle = angle % 360.0
    w, h = im.size
    if not (center or translate):
        if angle == 0:
            return node("copy", {}, [im], im.mode, im.size, replay)
        if angle == 180:
            return node("transpose", {"method": int(PIL.Image.Transpose.ROTATE_180)}, [im],
                        im.mode, im.size, replay)
        if angle in (90, 270) and (expand or w == h):
            t = PIL.Image.Transpose.ROTATE_90 if angle == 90 else PIL.Image.Transpose.ROTATE_270
            return node("transpose", {"method": int(t)}, [im], im.mode, (h, w), replay)

    # Image.rotate's matrix, operation for operation (the reverse mapping,
    # destination to source, rounded to 15 digits, then the translations).
    post_trans = (0, 0) if translate is None else translate
    if center is None:
        center = (w / 2, h / 2)
    angle = -math.radians(angle)
    matrix = [
        round(math.cos(angle), 15),
        round(math.sin(angle), 15),
        0.0,
        round(-math.sin(angle), 15),
        round(math.cos(angle), 15),
        0.0,
    ]

    def apply(x: float, y: float, m: List[float]) -> Tuple[float, float]:
        a, b, c, d, e, f = m
        return a * x + b * y + c, d * x + e * y + f

    matrix[2], matrix[5] = apply(-center[0] - post_trans[0], -center[1] - post_trans[1], matrix)
    matrix[2] += center[0]
    matrix[5] += center[1]
    if expand:
        xx, yy = [], []
        for x, y in ((0, 0), (w, 0), (w, h), (0, h)):
            tx, ty = apply(x, y, matrix)
            xx.append(tx)
            yy.append(ty)
        nw = math.ceil(max(xx)) - math.floor(min(xx))
        nh = math.ceil(max(yy)) - math.floor(min(yy))
        matrix[2], matrix[5] = apply(-(nw - w) / 2.0, -(nh - h) / 2.0, matrix)
        w, h = nw, nh
    return _affine(im, (w, h), matrix, int(resample), fillcolor, replay)
