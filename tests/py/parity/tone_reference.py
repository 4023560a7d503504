"""The Oklab tone op's float64 specification (kernels/tone.h, `_f64`) in numpy,
on Pillow images: the replay for imgbatch.tone (register_tone_reference)."""
import numpy as np
from PIL import Image

BANDS = {"RGB": 3, "RGBA": 4}
PARAMS = ("exposure_ev", "contrast", "highlights", "shadows", "whites", "blacks")
M1 = np.array([[0.4122214708, 0.5363325363, 0.0514459929],
               [0.2119034982, 0.6806995451, 0.1073969566],
               [0.0883024619, 0.2817188376, 0.6299787005]])
M2 = np.array([[0.2104542553, 0.7936177850, -0.0040720468],
               [1.9779984951, -2.4285922050, 0.4505937099],
               [0.0259040371, 0.7827717662, -0.8086757660]])
M2_INV = np.array([[1.0, 0.3963377774, 0.2158037573],
                   [1.0, -0.1055613458, -0.0638541728],
                   [1.0, -0.0894841775, -1.2914855480]])
M1_INV = np.array([[4.0767416621, -3.3077115913, 0.2309699292],
                   [-1.2684380046, 2.6097574011, -0.3413193965],
                   [-0.0041960863, -0.7034186147, 1.7076147010]])


def _smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def adjust_l(L, p):
    """Step 3 of kernels/tone.h on Oklab L (parameters already float32-rounded)."""
    L = L * 2.0 ** (p["exposure_ev"] / 3.0)
    L = 0.5 + (L - 0.5) * (1.0 + p["contrast"])
    return (L + 0.25 * (p["shadows"] * (1 - _smoothstep(0, 0.5, L))
                        + p["highlights"] * _smoothstep(0.5, 1, L))
            + 0.125 * (p["blacks"] * (1 - _smoothstep(0, 0.25, L))
                       + p["whites"] * _smoothstep(0.75, 1, L)))


def tone_reference(im, params):
    """imgbatch.tone(im, **params) in float64; parameters pass through float32
    first, as the worker narrows them."""
    if im.mode not in BANDS:
        raise ValueError(f"tone: mode {im.mode} not supported")
    for k in PARAMS:
        limit = 8.0 if k == "exposure_ev" else 1.0
        if not -limit <= params.get(k, 0.0) <= limit:
            raise ValueError(f"tone: {k}={params[k]} out of range [{-limit}, {limit}]")
    p = {k: float(np.float32(params.get(k, 0.0))) for k in PARAMS}
    px = np.frombuffer(im.tobytes(), np.uint8).reshape(-1, BANDS[im.mode]).astype(np.float64)
    c = px[:, :3] / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    lab = np.cbrt(lin @ M1.T) @ M2.T
    lab[:, 0] = adjust_l(lab[:, 0], p)
    lin = ((lab @ M2_INV.T) ** 3) @ M1_INV.T
    enc = np.where(lin <= 0.0031308, 12.92 * lin,
                   1.055 * np.maximum(lin, 0.0031308) ** (1 / 2.4) - 0.055)
    px[:, :3] = np.floor(np.clip(enc, 0.0, 1.0) * 255.0 + 0.5)
    return Image.frombytes(im.mode, im.size, px.astype(np.uint8).tobytes())
