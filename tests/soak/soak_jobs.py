"""The soak's workload: Job messages over every op family of the op table
(worker/ops/ops.def, as the client's _optable lists it) and chains of them,
sources from 1x1 to 4096x4096 (few large), raw/PNG/JPEG in and out, poison,
jobs past their deadline, resident outputs (cuda) and new graphs (new kernel
signatures) arriving throughout the run.

Graphs are built with the client (its record-time checks are Pillow's) and
reused: a job is a fresh graph with probability `new_graph_rate`, else one
already made, so the worker meets new signatures at a steady rate all along.

Each job first draws its source's size, then reuses (or makes) a graph of
that size class, so the share of large jobs is the same in every quarter of
the run. Picking among all graphs made so far let the few large ones weigh
by chance: 3 of 150 graphs early, 9 of 450 late, and a cpu worker's RSS,
which holds its in-flight images, followed that mix, not a leak."""
import io
import random
from typing import Dict, List, Optional, Tuple

import PIL.Image

from imgbatch import Image, ImageChops
from imgbatch._optable import OPS

# Families the op table has and how this workload reaches each: a step of
# the graph language, or a call of the client's API.
API_FAMILIES = {"source", "paste", "point", "chops", "blend", "constant", "exif_transpose"}
STEP_ARGS = {
    "copy": lambda r, w, h: (),
    "flip": lambda r, w, h: (),
    "mirror": lambda r, w, h: (),
    "transpose": lambda r, w, h: (r.choice(["FLIP_LEFT_RIGHT", "FLIP_TOP_BOTTOM", "ROTATE_90",
                                            "ROTATE_180", "ROTATE_270", "TRANSPOSE",
                                            "TRANSVERSE"]),),
    "crop": lambda r, w, h: (r.randint(-2, w // 2), r.randint(-2, h // 2),
                             r.randint(w // 2 + 1, w + 2), r.randint(h // 2 + 1, h + 2)),
    "expand": lambda r, w, h: (r.randint(0, 3),),
    "resize": lambda r, w, h: (r.randint(1, 2 * w), r.randint(1, 2 * h),
                               r.choice(["NEAREST", "BOX", "BILINEAR", "HAMMING", "BICUBIC",
                                         "LANCZOS"])),
    "thumbnail": lambda r, w, h: (r.randint(1, w), r.randint(1, h)),
    "reduce": lambda r, w, h: (r.randint(1, 4),),
    "rotate": lambda r, w, h: (round(r.uniform(-360, 360), 1), r.choice(["NEAREST", "BILINEAR", "BICUBIC"]),
                               f"expand={r.randint(0, 1)}"),
    "transform": lambda r, w, h: (r.randint(1, 2 * w), r.randint(1, 2 * h), round(r.uniform(0.5, 1.5), 2),
                                  round(r.uniform(-0.5, 0.5), 2), r.randint(-2, 2), round(r.uniform(-0.5, 0.5), 2),
                                  round(r.uniform(0.5, 1.5), 2), r.randint(-2, 2),
                                  r.choice(["NEAREST", "BILINEAR", "BICUBIC"])),
    "getchannel": lambda r, w, h: (0,),
    "convert": lambda r, w, h: (r.choice(["L", "RGB", "RGBA", "LA", "CMYK", "RGBX"]),),
    "grayscale": lambda r, w, h: (),
    "invert": lambda r, w, h: (),
    "solarize": lambda r, w, h: (r.randint(0, 255),),
    "posterize": lambda r, w, h: (r.randint(1, 8),),
    "median": lambda r, w, h: (r.choice([3, 5]),),
    "min": lambda r, w, h: (3,),
    "max": lambda r, w, h: (3,),
    "rank": lambda r, w, h: (3, r.randint(0, 8)),
    "box_blur": lambda r, w, h: (r.choice([0, 1, 2, 0.5, 3.5]),),
    "gaussian_blur": lambda r, w, h: (r.choice([0.5, 1, 2, 3.7, 6]),),
    "filter": lambda r, w, h: (r.choice(["BLUR", "CONTOUR", "DETAIL", "EDGE_ENHANCE",
                                         "EDGE_ENHANCE_MORE", "EMBOSS", "FIND_EDGES", "SHARPEN",
                                         "SMOOTH", "SMOOTH_MORE"]),),
    "brightness": lambda r, w, h: (round(r.uniform(0, 2), 2),),
    "color": lambda r, w, h: (round(r.uniform(0, 2), 2),),
    "contrast": lambda r, w, h: (round(r.uniform(0, 2), 2),),
    "tone": lambda r, w, h: (),
}
MAX_MESSAGE = 900_000  # under the producer's message.max.bytes (1,000,000)


def coverage_gaps() -> List[str]:
    """Families or steps of the op table this workload does not produce:
    a new op must be added here (the harness refuses to run otherwise)."""
    gaps = []
    for op in OPS:
        if op.field in API_FAMILIES:
            continue
        gaps += [f"{op.field}.{s.name}" for s in op.steps if s.name not in STEP_ARGS]
        if not op.steps:
            gaps.append(op.field)
    return gaps


def _pixels(r: random.Random, w: int, h: int, bands: int, smooth: bool) -> bytes:
    if not smooth:
        return r.randbytes(w * h * bands)
    row = bytes((x * 255 // max(1, w - 1) + b * 40) & 255 for x in range(w) for b in range(bands))
    return b"".join(row[y % 7:] + row[:y % 7] for y in range(h))


class Workload:
    """profile 'small' (CI: sides 1..64) or 'mixed' (1..4096, few large)."""

    def __init__(self, seed: int, profile: str, backend: str, poison: float = 0.02,
                 late: float = 0.01, resident: float = 0.01, new_graph_rate: float = 0.01):
        self.r = random.Random(seed)
        self.profile, self.backend = profile, backend
        self.poison, self.late = poison, late
        self.resident = resident if backend == "cuda" else 0.0
        self.new_graph_rate = new_graph_rate
        self.by_class: Dict[int, List[Tuple[bytes, str]]] = {}  # size class -> its graphs
        self.sources = {}
        self.made = 0

    # ---- sources

    def _side(self) -> int:
        r = self.r
        if self.profile == "small":
            return r.choice([1, 2, 3, 7, 16, 31, 64])
        x = r.random()
        if x < 0.001:
            return 4096
        if x < 0.02:
            return r.randint(1025, 2048)
        if x < 0.2:
            return r.randint(257, 1024)
        return r.choice([1, 2, 3]) if x < 0.23 else r.randint(4, 256)

    @property
    def graphs(self) -> List[Tuple[bytes, str]]:
        """Every graph made so far."""
        return [g for same in self.by_class.values() for g in same]

    def _dims(self) -> Tuple[int, int]:
        w, h = self._side(), self._side()
        if w > 1024 or h > 1024:
            w = h = max(w, h)  # the few large ones square, 1025..4096
        return w, h

    @staticmethod
    def _size_class(dims: Tuple[int, int]) -> int:
        side = max(dims)
        return sum(side > b for b in (3, 64, 256, 1024, 2048))

    def _source(self, dims: Optional[Tuple[int, int]] = None):
        """A lazy source image of `dims` (else drawn): raw bytes, or an
        encoded PNG/JPEG (the large ones encoded: a raw one would not fit a
        message)."""
        r = self.r
        w, h = dims or self._dims()
        mode = r.choice(["RGB", "RGB", "L", "RGBA", "LA", "CMYK"])
        fmt = r.choice(["raw", "png", "jpeg"]) if w * h <= 256 * 256 else r.choice(["png", "jpeg"])
        if fmt == "jpeg" and mode not in ("L", "RGB", "CMYK"):
            mode = "RGB"
        if fmt == "png" and mode == "CMYK":
            mode = "RGBA"
        key = (w, h, mode, fmt)
        if key in self.sources:
            return self.sources[key]
        bands = len(PIL.Image.new(mode, (1, 1)).getbands())
        data = _pixels(r, w, h, bands, smooth=w * h > 64 * 64)
        if fmt == "raw":
            src = Image.frombytes(mode, (w, h), data)
        else:
            buf = io.BytesIO()
            PIL.Image.frombytes(mode, (w, h), data).save(buf, "JPEG" if fmt == "jpeg" else "PNG")
            if buf.tell() > MAX_MESSAGE:
                buf = io.BytesIO()
                PIL.Image.frombytes(mode, (w, h), data).convert("RGB").save(buf, "JPEG", quality=50)
            src = Image.open(buf.getvalue())
        self.sources[key] = src
        return src

    # ---- graphs

    def _step(self, im):
        r = self.r
        family = r.choice(sorted(API_FAMILIES - {"source"}) + list(STEP_ARGS))
        w, h = im.size
        if family == "paste":
            out = im.copy()
            out.paste(Image.new(im.mode, (max(1, w // 2), max(1, h // 2)), 0), (w // 4, h // 4))
            return out
        if family == "point":
            return im.point([(i * 3 + 7) & 255 for i in range(256)] * len(im.getbands()))
        if family == "chops":
            other = Image.new(im.mode, im.size, r.randint(0, 255) if im.mode == "L" else None)
            fn = r.choice(["add", "subtract", "multiply", "screen", "difference", "lighter",
                           "darker", "add_modulo", "subtract_modulo", "overlay"])
            return getattr(ImageChops, fn)(im, other)
        if family == "blend":
            return Image.blend(im, Image.new(im.mode, im.size), round(r.uniform(0, 1), 2))
        if family == "tone" and im.mode not in ("RGB", "RGBA"):
            raise ValueError("tone takes RGB and RGBA")  # no Pillow call checks it at record time
        if family == "exif_transpose":
            # Reads a source's orientation; elsewhere the client refuses it.
            from imgbatch import ImageOps
            return ImageOps.exif_transpose(im) if im._node.op == "source" else im.copy()
        if family == "constant":
            return Image.new(im.mode, im.size, r.randint(0, 255) if im.mode == "L" else None)
        args = STEP_ARGS[family](r, w, h)
        from imgbatch import apply_graph, parse_graph
        text = f"{family}({', '.join(str(a) for a in args)})" if args else family
        return apply_graph(parse_graph(text), im)

    def _graph(self, dims: Tuple[int, int]) -> Tuple[bytes, str]:
        """A fresh random chain (1..3 steps) on a source of `dims`, as Job bytes."""
        r = self.r
        while True:
            im = self._source(dims)
            try:
                for _ in range(r.choice([1, 1, 2, 3])):
                    im = self._step(im)
                resident = r.random() < self.resident
                output = "gpu" if resident else self._output(im)
                self.made += 1
                job = im.to_job(key=f"g{self.made}", output=output)
            except (TypeError, ValueError, OSError):
                continue  # Pillow refuses this step on this mode: another one
            if len(job) <= MAX_MESSAGE:
                return job, "resident" if resident else "image"

    def _output(self, im) -> str:
        mode = im.mode
        choices = ["raw"]
        if mode in ("L", "LA", "RGB", "RGBA"):
            choices.append("png")
        if mode in ("L", "RGB", "CMYK", "RGBX"):
            choices.append("jpeg")
        return self.r.choice(choices)

    def next(self) -> Tuple[bytes, str]:
        """(message bytes, kind): kind image, resident, poison or late."""
        r = self.r
        x = r.random()
        if x < self.poison:
            if x < self.poison / 2:
                return r.randbytes(r.randint(1, 64)), "poison"
            job, _ = self._pick()
            return job[: max(1, len(job) // 2)], "poison"  # cut short: unparsable
        if x < self.poison + self.late:
            job = self._source().to_job(key="late", output="raw", deadline_unix_ms=1)
            if len(job) <= MAX_MESSAGE:
                return job, "late"
        return self._pick()

    def _pick(self) -> Tuple[bytes, str]:
        dims = self._dims()
        same = self.by_class.setdefault(self._size_class(dims), [])
        if not same or self.r.random() < self.new_graph_rate:
            same.append(self._graph(dims))
        return self.r.choice(same)
