"""Random multi-op graphs as JSON recipes, and their lazy builds.

A recipe is plain JSON, so a failing graph can be pasted into
graphs_regression.json as is:

    {"steps": [{"op": "source", "in": [], "args": {"mode": "RGB", "size": [13, 7],
                                                   "seed": 5, "kind": "noise"}},
               {"op": "transpose", "in": [0], "args": {"method": 2}}, ...]}

Each step is a value; "in" names earlier steps; the last step is the
output. A "source" step is random pixels from its own seed. Only contexts the README lists are
generated (and Pillow must accept the whole graph), so once every op row is
on main each graph must be exact.
"""

import random

import PIL.Image

import parity
from imgbatch import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps, LazyImage
from imgbatch._optable import OPS

# The modes each op admits (the op table, worker/ops/ops.def).
ADMITS = {op.field: op.modes for op in OPS}
# Ops the generator never writes, and why; test_graphgen_ops checks that
# every other op of the table appears in generated graphs.
NOT_GENERATED = {"tone": "no Pillow call to compare with (test_chops checks it against tone_reference.py)",
                 "exif_transpose": "reads an encoded source's metadata, and the generator's sources are "
                                   "raw (test_exif_transpose.py covers it)"}

ALL = parity.MODES
FOUR = ("L", "LA", "RGB", "RGBA")
MAX_SIDE = 72
CHOPS = ("multiply", "screen", "overlay", "hard_light", "soft_light", "difference", "darker",
         "lighter", "add", "subtract", "add_modulo", "subtract_modulo")
BUILTIN_KERNELS = ("BLUR", "CONTOUR", "DETAIL", "EDGE_ENHANCE", "EDGE_ENHANCE_MORE", "EMBOSS",
                   "FIND_EDGES", "SHARPEN", "SMOOTH", "SMOOTH_MORE")


# ---------------------------------------------------------------- building


def _tup(v):
    return tuple(v) if isinstance(v, list) else v


def _point_fn(a):
    if "lut" in a:
        return a["lut"]
    k, p, q = a["fn"], a["p"], a["q"]
    if k == "linear":
        return lambda i: i * p + q
    if k == "gamma":
        return lambda i: 255.0 * (i / 255.0) ** p + q
    return lambda i: (i * 7 + int(q)) % 256  # "scramble"


def _kernel(a):
    if "builtin" in a:
        return getattr(ImageFilter, a["builtin"])
    s = a["size"]
    return ImageFilter.Kernel((s, s), a["kernel"], a.get("scale"), a.get("offset", 0))


def _paste(a, x, y):
    out = LazyImage(x._node)  # a new handle: paste rebinds it, x stays as it was
    out.paste(y, tuple(a["box"]))
    return out


def _chop(a, x, y):
    fn = getattr(ImageChops, a["fn"])
    if a["fn"] in ("add", "subtract"):
        return fn(x, y, a["scale"], a["offset"])
    return fn(x, y)


def _source(a):
    r = random.Random(a["seed"])
    return parity.random_image(r, a["mode"], tuple(a["size"]), a.get("kind", "noise"))


APPLY = {
    "source": _source,
    "copy": lambda a, x: x.copy(),
    "transpose": lambda a, x: x.transpose(a["method"]),
    "flip": lambda a, x: ImageOps.flip(x),
    "mirror": lambda a, x: ImageOps.mirror(x),
    "crop": lambda a, x: x.crop(tuple(a["box"])),
    "expand": lambda a, x: ImageOps.expand(x, _tup(a["border"]), _tup(a["fill"])),
    "resize": lambda a, x: x.resize(tuple(a["size"]), Image.Resampling.NEAREST,
                                    tuple(a["box"]) if a.get("box") else None),
    "reduce": lambda a, x: x.reduce(_tup(a["factor"]), tuple(a["box"]) if a.get("box") else None),
    "rotate": lambda a, x: x.rotate(a["angle"], Image.Resampling(a["resample"]), a["expand"],
                                    _tup(a.get("center")), None, _tup(a.get("fill"))),
    "paste": _paste,
    "getchannel": lambda a, x: x.getchannel(a["band"]),
    "convert": lambda a, x: x.convert(a["mode"]),
    "grayscale": lambda a, x: ImageOps.grayscale(x),
    "point": lambda a, x: x.point(_point_fn(a)),
    "invert": lambda a, x: ImageOps.invert(x),
    "solarize": lambda a, x: ImageOps.solarize(x, a["threshold"]),
    "posterize": lambda a, x: ImageOps.posterize(x, a["bits"]),
    "rank": lambda a, x: x.filter(ImageFilter.RankFilter(a["size"], a["rank"])),
    "gaussian": lambda a, x: x.filter(ImageFilter.GaussianBlur(_tup(a["radius"]))),
    "boxblur": lambda a, x: x.filter(ImageFilter.BoxBlur(_tup(a["radius"]))),
    "kernel": lambda a, x: x.filter(_kernel(a)),
    "chops": _chop,
    "blend": lambda a, x, y: Image.blend(x, y, a["alpha"]),
    "constant": lambda a, x: ImageChops.constant(x, a["value"]),
    "enhance": lambda a, x: getattr(ImageEnhance, a["kind"])(x).enhance(a["factor"]),
}


def build(recipe):
    """The lazy image a recipe describes."""
    values = []
    for step in recipe["steps"]:
        values.append(APPLY[step["op"]](step.get("args", {}), *[values[i] for i in step["in"]]))
    return values[-1]


def ops_of(recipe):
    return [s["op"] for s in recipe["steps"] if s["op"] != "source"]


# ---------------------------------------------------------------- generating


class _State:
    def __init__(self, r):
        self.r = r
        self.recipe = {"steps": []}
        self.shapes = []  # (mode, (w, h)) per value
        self.n_ops = 0

    def add_source(self, mode, size):
        args = {"mode": mode, "size": list(size), "seed": self.r.randrange(1 << 30),
                "kind": self.r.choice(("noise", "noise", "extremes", "smooth"))}
        self.recipe["steps"].append({"op": "source", "in": [], "args": args})
        self.shapes.append((mode, tuple(size)))
        return len(self.shapes) - 1

    def add_step(self, op, ins, args, mode, size):
        self.recipe["steps"].append({"op": op, "in": list(ins), "args": args})
        self.shapes.append((mode, tuple(size)))
        self.n_ops += 1
        return len(self.shapes) - 1

    def partner(self, cur, same_size=True):
        """A second operand of cur's mode: an existing value, a view of cur, or a new source."""
        r, (mode, size) = self.r, self.shapes[cur]
        pool = [i for i, (m, s) in enumerate(self.shapes)
                if i != cur and m == mode and (s == size or not same_size)]
        roll = r.random()
        if pool and roll < 0.4:
            return r.choice(pool)
        if roll < 0.65:  # a diamond: op(x, view of x)
            w, h = size
            methods = [0, 1, 3] + ([2, 4, 5, 6] if w == h or not same_size else [])
            m = r.choice(methods)
            out = (h, w) if m in (2, 4, 5, 6) else (w, h)
            return self.add_step("transpose", [cur], {"method": m}, mode, out)
        if same_size:
            return self.add_source(mode, size)
        return self.add_source(mode, (r.randint(1, MAX_SIDE // 2), r.randint(1, MAX_SIDE // 2)))


def _color(r, mode):
    n = parity.BANDS[mode]
    roll = r.random()
    if roll < 0.3:
        return r.randrange(256)
    if roll < 0.45:
        return r.choice(("red", "#123456", "white"))
    return [r.randrange(256) for _ in range(n)] if n > 1 else r.randrange(256)


def _g_geometry(st, cur, r):
    mode, (w, h) = st.shapes[cur]
    kind = r.choice(("transpose", "transpose", "flip", "mirror", "crop", "crop", "expand",
                     "resize", "reduce", "copy", "rotate"))
    if kind == "rotate":
        args = {"angle": r.choice((r.uniform(-360, 360), r.randrange(4) * 90, 45)),
                "resample": r.choice((0, 2, 3)), "expand": r.random() < 0.4}
        if r.random() < 0.2:
            args["center"] = [r.randint(0, w), r.randint(0, h)]
        if r.random() < 0.5:
            args["fill"] = _color(r, mode)
        size = APPLY["rotate"](args, PIL.Image.new(mode, (w, h))).size
        if max(size) > MAX_SIDE + 32:
            return cur
        return st.add_step("rotate", [cur], args, mode, size)
    if kind == "transpose":
        m = r.randrange(7)
        return st.add_step("transpose", [cur], {"method": m}, mode,
                           (h, w) if m in (2, 4, 5, 6) else (w, h))
    if kind in ("flip", "mirror", "copy"):
        return st.add_step(kind, [cur], {}, mode, (w, h))
    if kind == "crop":
        far = 12 if r.random() < 0.2 else 3  # sometimes wholly outside: zeros
        x0, y0 = r.randint(-far, w - 1 + far), r.randint(-far, h - 1 + far)
        x1, y1 = x0 + r.randint(1, min(MAX_SIDE, w + 3)), y0 + r.randint(1, min(MAX_SIDE, h + 3))
        return st.add_step("crop", [cur], {"box": [x0, y0, x1, y1]}, mode, (x1 - x0, y1 - y0))
    if kind == "expand":
        lo = -min(w, h) // 2 if r.random() < 0.2 else 0  # a negative border crops
        b = [r.randint(lo, 4) for _ in range(4)]
        border = r.choice((b[0], b[:2], b))
        lt = (border,) * 4 if isinstance(border, int) else (tuple(border) * 2 if len(border) == 2 else tuple(border))
        size = (w + lt[0] + lt[2], h + lt[1] + lt[3])
        if max(size) > MAX_SIDE + 8 or min(size) < 1:
            return cur
        return st.add_step("expand", [cur], {"border": border, "fill": _color(r, mode)}, mode, size)
    if kind == "reduce":
        f = [r.randint(1, 6), r.randint(1, 6)]
        x0, y0 = r.randint(0, w - 1), r.randint(0, h - 1)
        b = [x0, y0, r.randint(x0 + 1, w), r.randint(y0 + 1, h)] if r.random() < 0.4 else [0, 0, w, h]
        args = {"factor": f[0] if r.random() < 0.4 else f}
        if b != [0, 0, w, h]:
            args["box"] = b
        fx, fy = (args["factor"],) * 2 if isinstance(args["factor"], int) else f
        return st.add_step("reduce", [cur], args, mode,
                           (-(-(b[2] - b[0]) // fx), -(-(b[3] - b[1]) // fy)))
    tw, th = r.randint(1, MAX_SIDE), r.randint(1, MAX_SIDE)
    args = {"size": [tw, th]}
    if r.random() < 0.4:
        bx0, by0 = r.uniform(0, w - 0.5), r.uniform(0, h - 0.5)
        args["box"] = [round(bx0, 2), round(by0, 2), round(r.uniform(bx0 + 0.25, w), 2),
                       round(r.uniform(by0 + 0.25, h), 2)]
        if args["box"][2] <= args["box"][0] or args["box"][3] <= args["box"][1]:
            del args["box"]
    return st.add_step("resize", [cur], args, mode, (tw, th))


def _g_paste(st, cur, r):
    mode, (w, h) = st.shapes[cur]
    p = st.partner(cur, same_size=False)
    pw, ph = st.shapes[p][1]
    x, y = r.randint(-pw + 1, w - 1), r.randint(-ph + 1, h - 1)
    box = [x, y] if r.random() < 0.5 else [x, y, x + pw, y + ph]
    return st.add_step("paste", [cur, p], {"box": box}, mode, (w, h))


def _g_channel(st, cur, r):
    mode, size = st.shapes[cur]
    roll = r.random()
    if roll < 0.4:
        bands = Image.new(mode, (1, 1)).getbands()
        band = r.choice((r.randrange(len(bands)), r.choice(bands)))
        return st.add_step("getchannel", [cur], {"band": band}, "L", size)
    if mode in ("RGB", "RGBA", "LA") and roll < 0.8:
        op = r.choice(("convert", "grayscale"))
        return st.add_step(op, [cur], {"mode": "L"} if op == "convert" else {}, "L", size)
    if mode in ("L", "RGB"):
        return st.add_step("convert", [cur], {"mode": "RGBA"}, "RGBA", size)
    return cur


def _g_pointwise(st, cur, r):
    mode, size = st.shapes[cur]
    choices = [op for op in ("invert", "solarize", "posterize") if mode in ADMITS[op]]
    if mode in FOUR:
        choices += ["point", "point"]
    if not choices:
        return cur
    op = r.choice(choices)
    if op == "invert":
        args = {}
    elif op == "solarize":
        args = {"threshold": r.choice((r.randint(0, 256), round(r.uniform(-10, 270), 1)))}
    elif op == "posterize":
        args = {"bits": r.randint(1, 8)}
    elif r.random() < 0.3:
        args = {"lut": [r.randint(-40, 300) for _ in range(256 * parity.BANDS[mode])]}
    else:
        fn = r.choice(("linear", "gamma", "scramble"))
        p = round(r.uniform(0.3, 2.5), 3) if fn != "linear" else round(r.uniform(-1.5, 2.5), 3)
        args = {"fn": fn, "p": p, "q": round(r.uniform(-30, 30), 2)}
    return st.add_step(op, [cur], args, mode, size)


def _g_neighbourhood(st, cur, r):
    mode, size = st.shapes[cur]
    op = r.choice(("rank", "gaussian", "boxblur", "kernel") if mode in FOUR else ("gaussian", "boxblur"))
    if op == "rank":
        s = r.choice((3, 3, 3, 5, 7))
        rank = r.choice((0, s * s // 2, s * s - 1, r.randrange(s * s)))
        return st.add_step("rank", [cur], {"size": s, "rank": rank}, mode, size)
    if op in ("gaussian", "boxblur"):
        top = 30 if r.random() < 0.15 else 4
        rad = round(r.uniform(0, top), 2)
        radius = rad if r.random() < 0.6 else [rad, round(r.uniform(0, top), 2)]
        return st.add_step(op, [cur], {"radius": radius}, mode, size)
    if r.random() < 0.4:
        return st.add_step("kernel", [cur], {"builtin": r.choice(BUILTIN_KERNELS)}, mode, size)
    s = r.choice((3, 5))
    if r.random() < 0.3:
        kernel = [round(r.uniform(-2, 3), 3) for _ in range(s * s)]
    else:
        kernel = [r.randint(-4, 8) for _ in range(s * s)]
    args = {"size": s, "kernel": kernel, "offset": r.choice((0, 0, 64, 128, -12.5))}
    if sum(kernel) == 0 or r.random() < 0.3:
        args["scale"] = r.choice((1, 2, 3.5, 16, -4))
    return st.add_step("kernel", [cur], args, mode, size)


def _partner_any_mode(st, cur, r):
    """Mostly a same-mode partner; sometimes another mode of the same band
    count (RGBA/CMYK/RGBX), which Pillow's chops and blend accept."""
    mode, size = st.shapes[cur]
    others = [m for m in ("RGBA", "CMYK", "RGBX") if m != mode]
    if mode in ("RGBA", "CMYK", "RGBX") and r.random() < 0.15:
        return st.add_source(r.choice(others), size)
    return st.partner(cur)


def _g_combine(st, cur, r):
    mode, size = st.shapes[cur]
    roll = r.random()
    if roll < 0.6:
        fn = r.choice(CHOPS)
        p = _partner_any_mode(st, cur, r)
        args = {"fn": fn}
        if fn in ("add", "subtract"):
            args.update(scale=r.choice((1.0, 1.0, 2.0, 0.5, 3.0)), offset=r.choice((0, 0, 10, -20)))
        return st.add_step("chops", [cur, p], args, mode, size)
    if roll < 0.85:
        p = _partner_any_mode(st, cur, r)
        alpha = r.choice((0.0, 1.0, round(r.uniform(-0.5, 1.5), 3), round(r.uniform(-0.5, 1.5), 3)))
        out_mode = st.shapes[p][0] if alpha == 1.0 else mode  # ImagingBlend copies im2
        return st.add_step("blend", [cur, p], {"alpha": alpha}, out_mode, size)
    return st.add_step("constant", [cur], {"value": r.randrange(256)}, "L", size)


def _g_enhance(st, cur, r):
    mode, size = st.shapes[cur]
    if mode not in FOUR:
        return cur
    kind = r.choice(("Brightness", "Color", "Contrast"))
    return st.add_step("enhance", [cur], {"kind": kind, "factor": round(r.uniform(0, 2), 3)}, mode, size)


GENERATORS = [(_g_geometry, 4), (_g_paste, 1), (_g_channel, 1), (_g_pointwise, 2),
              (_g_neighbourhood, 2), (_g_combine, 2), (_g_enhance, 1)]


def generate(r, n_ops=None):
    """A recipe of 2-8 ops that Pillow accepts (retried until it does)."""
    for _ in range(50):
        st = _State(r)
        mode = r.choice(ALL)
        st.add_source(mode, (r.randint(1, MAX_SIDE // 2 + 8), r.randint(1, MAX_SIDE // 2 + 8)))
        cur = 0
        target = n_ops or r.randint(2, 8)
        while st.n_ops < target:
            gen = r.choices([g for g, _ in GENERATORS], [w for _, w in GENERATORS])[0]
            cur = gen(st, cur, r)
        if st.n_ops <= 8 and _pillow_accepts(st.recipe):
            return st.recipe
    raise RuntimeError("could not generate a graph Pillow accepts")


def _pillow_accepts(recipe):
    try:
        build(recipe).replay()
        return True
    except Exception:  # noqa: BLE001 - Pillow refused: draw another graph
        return False
