"""imgbatch.ImageEnhance: Brightness, Color, Contrast(image).enhance(factor) -> EnhanceOp."""

from __future__ import annotations

from typing import Any, Callable

import PIL.ImageEnhance

from ._methods import LazyImage, ensure_lazy, lazy
from ._record import pillow_check


class _Enhance:
    _kind: int = -1
    _pil: Callable[[Any], Any]

    def __init__(self, image: Any):
        self.image = ensure_lazy(image)
        pillow_check(self._pil, self.image)

    def enhance(self, factor: float) -> LazyImage:
        """<Kind>(image).enhance(factor) -> EnhanceOp."""
        pil = self._pil
        im = self.image
        pillow_check(lambda real: pil(real).enhance(factor), im)
        return lazy("enhance", {"kind": self._kind, "factor": float(factor)}, [im], im.mode, im.size,
                    lambda real: pil(real).enhance(factor))


class Brightness(_Enhance):
    _kind = 0
    _pil = PIL.ImageEnhance.Brightness


class Color(_Enhance):
    _kind = 1
    _pil = PIL.ImageEnhance.Color


class Contrast(_Enhance):
    _kind = 2
    _pil = PIL.ImageEnhance.Contrast
