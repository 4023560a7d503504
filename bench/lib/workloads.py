"""The benchmark's workloads, written once against a Pillow-shaped namespace:
the same function builds an imgbatch graph (client modules) and runs real
Pillow 12.3 (PIL modules), so the baseline does exactly the graph measured.
Ids match bench/harness/api_bench.h's ab_ids (gpu_bench's CSV rows)."""
import numpy as np

LUT = [(i * 7 + 13) % 256 for i in range(256)]
LUT2 = [255 - i for i in range(256)]
KERNEL3 = [1, 2, 1, 2, 4, 2, 1, 2, 1]


def _lut(im, lut):
    return im.point(lut * len(im.mode))


def _chain5(ns, a, b):
    im = ns.ImageEnhance.Brightness(_lut(a, LUT)).enhance(1.2)
    im = ns.ImageEnhance.Color(im).enhance(0.8).filter(ns.ImageFilter.GaussianBlur(2))
    return ns.ImageOps.mirror(im)


def _chain_pw(ns, a, b):
    return _lut(ns.ImageEnhance.Brightness(_lut(a, LUT)).enhance(1.2), LUT2)


# id -> (description, modes, two inputs?, graph(ns, a, b))
WORKLOADS = {
    "copy": ("copy", "L RGB RGBA", False, lambda ns, a, b: a.copy()),
    "point": ("point(LUT)", "L RGB RGBA", False, lambda ns, a, b: _lut(a, LUT)),
    "invert": ("ImageOps.invert", "L RGB", False, lambda ns, a, b: ns.ImageOps.invert(a)),
    "convert_l": ("convert('L')", "L RGB RGBA", False, lambda ns, a, b: a.convert("L")),
    "tone": ("imgbatch.tone (no Pillow equivalent)", "RGB RGBA", False,
             lambda ns, a, b: ns.tone(a, exposure_ev=0.5, contrast=0.2)),
    "median3": ("MedianFilter(3)", "L RGB RGBA", False,
                lambda ns, a, b: a.filter(ns.ImageFilter.MedianFilter(3))),
    "kernel3": ("Kernel 3x3", "L RGB RGBA", False,
                lambda ns, a, b: a.filter(ns.ImageFilter.Kernel((3, 3), KERNEL3, 16))),
    "gauss2": ("GaussianBlur(2)", "L RGB RGBA", False,
               lambda ns, a, b: a.filter(ns.ImageFilter.GaussianBlur(2))),
    "gauss8": ("GaussianBlur(8)", "L RGB RGBA", False,
               lambda ns, a, b: a.filter(ns.ImageFilter.GaussianBlur(8))),
    "box5": ("BoxBlur(5)", "L RGB RGBA", False, lambda ns, a, b: a.filter(ns.ImageFilter.BoxBlur(5))),
    "resize_half": ("resize(1/2, NEAREST)", "L RGB RGBA", False,
                    lambda ns, a, b: a.resize((a.size[0] // 2, a.size[1] // 2),
                                              ns.Image.Resampling.NEAREST)),
    "transpose": ("transpose(TRANSPOSE)", "L RGB RGBA", False,
                  lambda ns, a, b: a.transpose(ns.Image.Transpose.TRANSPOSE)),
    "add": ("ImageChops.add", "L RGB RGBA", True, lambda ns, a, b: ns.ImageChops.add(a, b)),
    "blend": ("Image.blend(0.5)", "L RGB RGBA", True, lambda ns, a, b: ns.Image.blend(a, b, 0.5)),
    "chain5": ("point > Brightness > Color > GaussianBlur(2) > mirror", "L RGB RGBA", False, _chain5),
    "chain_pw": ("point > Brightness > point (folds)", "L RGB RGBA", False, _chain_pw),
}
# The API matrix's op families (gpu_bench --families all) and its chains.
FAMILIES = ["point", "convert_l", "tone", "median3", "kernel3", "gauss2", "gauss8", "box5",
            "resize_half", "transpose", "add", "blend"]
CHAINS = ["chain5", "chain_pw"]
BANDS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}


class Namespace:
    """Image, ImageOps, ImageFilter, ImageChops, ImageEnhance (+ tone) of PIL or imgbatch."""

    def __init__(self, which):
        if which == "pillow":
            from PIL import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps
            self.tone = None
        else:
            import imgbatch
            from imgbatch import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps
            self.tone = imgbatch.tone
        self.Image, self.ImageOps, self.ImageFilter = Image, ImageOps, ImageFilter
        self.ImageChops, self.ImageEnhance = ImageChops, ImageEnhance


def admits(wid, mode):
    return mode in WORKLOADS[wid][1].split()


def has_pillow(wid):
    return wid != "tone"


def sample(mode, side, seed, smooth=False):
    """Raw pixels: noise (raw workloads; content does not change their cost),
    or a gradient with mild noise (smooth: codec workloads, so PNG and JPEG
    sizes are those of photographs rather than of noise)."""
    rng = np.random.default_rng(seed)
    shape = (side, side, BANDS[mode])
    if not smooth:
        return rng.integers(0, 256, shape, dtype=np.uint8).tobytes()
    ramp = (np.arange(side, dtype=np.uint16) * 255 // max(side - 1, 1)).astype(np.uint16)
    img = (ramp[None, :, None] + ramp[:, None, None]) // 2 + np.arange(BANDS[mode], dtype=np.uint16) * 40
    img = img + rng.integers(0, 24, shape, dtype=np.uint16)
    return (img % 256).astype(np.uint8).tobytes()


def bytes_moved(wid, mode, side):
    """Bytes a kernel of the workload must read and write at least (the
    device-memory floor is this over the copy bandwidth, read + write)."""
    b = BANDS[mode]
    n_in = side * side * b * (2 if WORKLOADS[wid][2] else 1)
    out = side * side * (1 if wid == "convert_l" else b)
    return n_in + (out // 4 if wid == "resize_half" else out)


def parse_grid(spec):
    """"gauss8:RGB:2048,median3:L:256" or "FAMILY|all:MODES:SIDES" with '/'-separated
    lists ("all:L/RGB/RGBA:256/1024") -> [(id, mode, side)], skipping what a mode
    does not admit."""
    out = []
    for item in spec.split(","):
        wids, modes, sides = item.split(":")
        wl = FAMILIES + CHAINS if wids == "all" else wids.split("/")
        for side in sides.split("/"):
            for mode in modes.split("/"):
                for w in wl:
                    if w not in WORKLOADS:
                        raise SystemExit(f"unknown workload {w}")
                    if admits(w, mode):
                        out.append((w, mode, int(side)))
    return out
