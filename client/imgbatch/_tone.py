"""imgbatch.tone: the Oklab tone op (SPEC section 5), which Pillow lacks.

Replay needs a reference implementation; the op's owner registers one with
register_tone_reference(fn), fn(pil_image, params_dict) -> pil_image.
"""

from ._methods import ensure_lazy, lazy

_PARAMS = ("exposure_ev", "contrast", "highlights", "shadows", "whites", "blacks")
_reference = None


def register_tone_reference(fn):
    """Install the float64 reference used by replay() for tone nodes."""
    global _reference
    _reference = fn


def tone(img, exposure_ev=0.0, contrast=0.0, highlights=0.0, shadows=0.0, whites=0.0, blacks=0.0):
    """ToneOp on img (RGB, RGBA); all parameters 0 = identity."""
    img = ensure_lazy(img)
    values = (exposure_ev, contrast, highlights, shadows, whites, blacks)
    params = {k: float(v) for k, v in zip(_PARAMS, values)}

    def replay(im):
        if _reference is None:
            raise NotImplementedError("imgbatch: tone has no Pillow equivalent and no reference "
                                      "is registered (imgbatch.register_tone_reference)")
        return _reference(im, dict(params))

    return lazy("tone", params, [img], img.mode, img.size, replay)
