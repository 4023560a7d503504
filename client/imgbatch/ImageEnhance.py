"""imgbatch.ImageEnhance: Brightness, Color, Contrast -> EnhanceOp."""

import PIL.ImageEnhance

from ._methods import ensure_lazy, lazy


class _Enhance:
    _kind = None
    _pil = None

    def __init__(self, image):
        self.image = ensure_lazy(image)

    def enhance(self, factor):
        pil = self._pil
        im = self.image
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
