"""imgbatch.tone: the Oklab tone op (kernels/tone.h), which Pillow lacks.

Replay needs a reference implementation; the op's owner registers one with
register_tone_reference(fn), fn(pil_image, params_dict) -> pil_image.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from ._methods import LazyImage, ensure_lazy, lazy

_PARAMS = ("exposure_ev", "contrast", "highlights", "shadows", "whites", "blacks")
_reference: Optional[Callable[[Any, Dict[str, float]], Any]] = None


def register_tone_reference(fn: Callable[[Any, Dict[str, float]], Any]) -> None:
    """Install the float64 reference used by replay() for tone nodes."""
    global _reference
    _reference = fn


def tone(img: Any, exposure_ev: float = 0.0, contrast: float = 0.0, highlights: float = 0.0,
         shadows: float = 0.0, whites: float = 0.0, blacks: float = 0.0) -> LazyImage:
    """ToneOp on img (RGB, RGBA); all parameters 0 = identity."""
    img = ensure_lazy(img)
    values = (exposure_ev, contrast, highlights, shadows, whites, blacks)
    params = {k: float(v) for k, v in zip(_PARAMS, values)}

    def replay(im: Any) -> Any:
        if _reference is None:
            raise NotImplementedError("imgbatch: tone has no Pillow equivalent and no reference "
                                      "is registered (imgbatch.register_tone_reference)")
        return _reference(im, dict(params))

    return lazy("tone", params, [img], img.mode, img.size, replay)
