#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (tests/fuzz/corpus/{job,image}/).

    .venv/bin/python tests/fuzz/make_corpus.py   # the installed client (scripts/setup.sh)

Deterministic: rerunning rewrites the same bytes. A job seed is an `imgbatch
run` input stream (varint-length-delimited Jobs, usually one); an image seed
is the bytes of one encoded image. Names say what a seed is: `ok-*` valid
work for every op family and source kind (`ok-op-<op>`: the sample
parameters of each op in the op table, worker/ops/ops.def), `i<N>-*` one input
of each class of hostile input (README, "Limits"), `bad-*` other malformed input.

Path seeds name the files fuzz_job.c puts in its source root: a.png,
sub/b.png, link.png (-> a.png), escape (-> /etc/hostname), fifo, empty,
notimg.
"""

import io
import math
import os
import shutil
import struct
import sys

from google.protobuf import text_format
from PIL import Image

from imgbatch import imgbatch_pb2 as pb
from imgbatch._optable import OPS
from imgbatch.stream import encode_varint as varint

HERE = os.path.dirname(os.path.abspath(__file__))
JOB_DIR = os.path.join(HERE, "corpus", "job")
IMAGE_DIR = os.path.join(HERE, "corpus", "image")


# ------------------------------------------------------------------ helpers


def frame(msg_bytes):
    return varint(len(msg_bytes)) + msg_bytes


def stream(*jobs):
    return b"".join(frame(j if isinstance(j, bytes) else j.SerializeToString()) for j in jobs)


def pattern(n, seed=3):
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


BANDS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4, "RGBX": 4}


def raw_source(src, mode="RGB", w=8, h=8, seed=3):
    src.raw.mode = mode
    src.raw.width = w
    src.raw.height = h
    src.raw.data = pattern(w * h * BANDS.get(mode, 1), seed)


def encoded(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def gradient(mode, w=8, h=8):
    im = Image.new("RGBA", (w, h))
    im.putdata([((x * 37) & 255, (y * 53) & 255, ((x + y) * 29) & 255, 255 - x * 9)
                for y in range(h) for x in range(w)])
    return im.convert(mode)


def job(mode="RGB", w=8, h=8, key=None, fmt=None):
    """A Job with one raw source and node 0 = source(0)."""
    j = pb.Job()
    j.contract_version = 2
    if key is not None:
        j.key_string = key
    raw_source(j.source, mode, w, h)
    j.nodes.add().source.index = 0
    if fmt is not None:
        j.output.cpu.format = fmt
    return j


def add(j, inputs=None, **op):
    """Appends a node reading `inputs` (default: the last node)."""
    n = j.nodes.add()
    n.inputs.extend([len(j.nodes) - 2] if inputs is None else inputs)
    (name, params), = op.items()
    sub = getattr(n, name)
    sub.SetInParent()
    for k, v in (params or {}).items():
        if isinstance(v, list):
            getattr(sub, k).extend(v)
        elif isinstance(v, dict):
            m = getattr(sub, k)
            for kk, vv in v.items():
                setattr(m, kk, vv)
        else:
            setattr(sub, k, v)
    return n


def corrupt(msg, placeholder, replacement):
    """Serializes `msg`, then swaps an ASCII placeholder for bytes protobuf
    would refuse to set in a string field (same length: framing intact)."""
    assert len(placeholder) == len(replacement)
    b = msg.SerializeToString()
    assert b.count(placeholder) >= 1, placeholder
    return b.replace(placeholder, replacement)


def nested_value(v, depth, kind):
    for _ in range(depth):
        if kind == "list":
            v = v.list_value.items.add()
        else:
            v = v.map_value.entries["k"]
    v.int_value = 7


def deep_metadata_bytes(depth, kind):
    """Job.metadata["m"] nested `depth` times, written by hand: the Python
    runtime refuses to serialize past its own recursion limit."""
    inner = pb.Value(int_value=7).SerializeToString()
    for _ in range(depth):
        if kind == "list":  # Value.list_value(7) = ValueList{items(1) = inner}
            inner = b"\x3a" + varint(len(inner) + 1 + len(varint(len(inner)))) + b"\x0a" + varint(len(inner)) + inner
        else:  # Value.map_value(8) = ValueMap{entries(1) = {key(1) "k", value(2) inner}}
            entry = b"\x0a\x01k\x12" + varint(len(inner)) + inner
            vm = b"\x0a" + varint(len(entry)) + entry
            inner = b"\x42" + varint(len(vm)) + vm
    entry = b"\x0a\x01m\x12" + varint(len(inner)) + inner
    return job().SerializeToString() + b"\x3a" + varint(len(entry)) + entry


# ------------------------------------------------------------------ job seeds


def table_jobs():
    """One seed per op of the op table with a sample: the sample on RGB (or
    the op's first mode), a second RGB source for two-input ops."""
    out = {}
    for op in OPS:
        if op.inputs == 0 or op.sample is None:
            continue
        mode = "RGB" if "RGB" in op.modes else op.modes[0]
        j = job(mode, key=op.field)
        inputs = [0]
        if op.inputs == 2:
            raw_source(j.extra_sources.add(), mode, 8, 8, seed=13)
            j.nodes.add().source.index = 1
            inputs = [0, 1]
        n = add(j, inputs, **{op.field: None})
        text_format.Parse(op.sample, getattr(n, op.field))
        out[f"ok-op-{op.field}"] = stream(j)
    return out


def ok_jobs():
    out = table_jobs()
    RAW, PNG, JPEG, WEBP, TIFF = 0, 1, 2, 3, 4

    j = job(key="copy")
    add(j, copy=None)
    out["ok-source-copy-raw"] = stream(j)

    for m in range(7):
        j = job(w=6, h=4, fmt=PNG)
        add(j, transpose={"method": m})
        out[f"ok-transpose-{m}"] = stream(j)

    j = job("RGBA")
    add(j, crop={"left": -2, "top": 1, "right": 9, "bottom": 6})
    add(j, expand={"left": 1, "top": 2, "right": 3, "bottom": 0, "fill": b"\x01\x02\x03\x04"})
    out["ok-crop-expand"] = stream(j)

    j = job()
    add(j, resize={"width": 13, "height": 5, "resample": 0})
    out["ok-resize"] = stream(j)
    j = job("L")
    n = add(j, resize={"width": 4, "height": 4, "resample": 0})
    n.resize.box.left, n.resize.box.top, n.resize.box.right, n.resize.box.bottom = 1.5, 0.5, 7, 6.25
    out["ok-resize-box"] = stream(j)

    j = job("RGB", 8, 8)
    raw_source(j.extra_sources.add(), "RGB", 3, 2, seed=9)
    j.nodes.add().source.index = 1
    add(j, [0, 1], paste={"left": 2, "top": -1})
    out["ok-paste"] = stream(j)
    j = job("RGBA", 8, 8)
    raw_source(j.extra_sources.add(), "RGBA", 3, 2, seed=9)
    j.nodes.add().source.index = 1
    n = add(j, [0, 1], paste={"left": 1, "top": 1})
    n.paste.size.width, n.paste.size.height = 3, 2
    out["ok-paste-sized"] = stream(j)

    j = job("RGBA")
    add(j, getchannel={"band": 3})
    out["ok-getchannel"] = stream(j)

    for src, dst in [("RGB", "L"), ("RGBA", "RGB"), ("L", "RGBA"), ("CMYK", "RGB"), ("RGB", "CMYK"),
                     ("LA", "L"), ("RGB", "RGBX")]:
        j = job(src)
        add(j, convert={"mode": dst})
        out[f"ok-convert-{src}-{dst}"] = stream(j)

    j = job("RGB")
    add(j, point={"lut": [(i * 3) % 300 - 20 for i in range(768)]})
    out["ok-point"] = stream(j)

    j = job("RGB", fmt=JPEG)
    add(j, invert=None)
    add(j, solarize={"threshold": 100})
    add(j, posterize={"bits": 3})
    out["ok-invert-solarize-posterize-jpeg"] = stream(j)

    for size, rank in [(3, 4), (5, 0), (3, 8)]:
        j = job("L", 9, 7)
        add(j, rank_filter={"size": size, "rank": rank})
        out[f"ok-rank-{size}-{rank}"] = stream(j)

    j = job("RGB", fmt=WEBP)
    add(j, box_blur={"radius_x": 1.5, "radius_y": 0})
    add(j, gaussian_blur={"radius_x": 2, "radius_y": 0.7})
    out["ok-blur-webp"] = stream(j)

    j = job("RGB")
    add(j, kernel={"size": 3, "kernel": [-1, -1, -1, -1, 9, -1, -1, -1, -1], "scale": 1, "offset": 0})
    out["ok-kernel3"] = stream(j)
    j = job("L")
    add(j, kernel={"size": 5, "kernel": [1.0] * 25, "scale": 25, "offset": 3})
    out["ok-kernel5"] = stream(j)

    for fn in range(12):
        j = job("RGB")
        raw_source(j.extra_sources.add(), "RGB", 8, 8, seed=11)
        j.nodes.add().source.index = 1
        params = {"function": fn}
        if fn in (8, 9):
            params.update(scale=2.0, offset=10.0)
        add(j, [0, 1], chops=params)
        out[f"ok-chops-{fn}"] = stream(j)

    j = job("RGBA")
    raw_source(j.extra_sources.add(), "RGBA", 8, 8, seed=11)
    j.nodes.add().source.index = 1
    add(j, [0, 1], blend={"alpha": 0.3})
    out["ok-blend"] = stream(j)

    j = job("RGB")
    add(j, constant={"value": 200})
    out["ok-constant"] = stream(j)

    for kind in range(3):
        j = job("RGB", fmt=TIFF)
        add(j, enhance={"kind": kind, "factor": 1.7})
        out[f"ok-enhance-{kind}"] = stream(j)

    j = job("RGB")
    add(j, tone={"exposure_ev": 0.5, "contrast": 0.2, "highlights": -0.3, "shadows": 0.4,
                 "whites": 0.1, "blacks": -0.1})
    out["ok-tone"] = stream(j)

    # Every source kind; outputs in every format.
    j = pb.Job(key_u64=42)
    j.source.fill.mode, j.source.fill.width, j.source.fill.height = "RGB", 5, 3
    j.source.fill.color = b"\x10\x20\x30"
    j.nodes.add().source.index = 0
    j.output.cpu.format, j.output.cpu.compression = PNG, 9
    out["ok-fill-png"] = stream(j)
    for name, im, fmt, kw in [
        ("png-la", gradient("LA"), "PNG", {}),
        ("png-palette", gradient("RGB").convert("P"), "PNG", {}),
        ("jpeg-rgb", gradient("RGB"), "JPEG", {"quality": 80}),
        ("jpeg-cmyk", gradient("CMYK"), "JPEG", {}),
        ("gif", gradient("RGB"), "GIF", {}),
        ("webp", gradient("RGBA"), "WEBP", {"lossless": True}),
        ("tiff", gradient("RGB"), "TIFF", {}),
    ]:
        j = pb.Job(key_string=name)
        j.source.encoded = encoded(im, fmt, **kw)
        j.nodes.add().source.index = 0
        add(j, copy=None)
        # Every format, each where the mode fits it (JPEG: no alpha).
        j.output.cpu.format = {"png-la": PNG, "webp": WEBP, "tiff": TIFF, "gif": RAW}.get(name, JPEG)
        j.output.cpu.quality = 90
        out[f"ok-encoded-{name}"] = stream(j)
    for path in ["a.png", "sub/b.png", "link.png"]:
        j = pb.Job(key_string=path)
        j.source.path = path
        j.nodes.add().source.index = 0
        add(j, invert=None)
        out["ok-path-" + path.replace("/", "_").replace("..", "up")] = stream(j)

    # A stream of several jobs (more than max_jobs: exercises the credit window).
    jobs = []
    for i in range(6):
        j = job("L", 4 + i, 3, key=f"s{i}")
        j.key_u64 = i  # the oneof: the last key set wins
        add(j, invert=None)
        jobs.append(j)
    out["ok-stream-6-jobs"] = stream(*jobs)

    j = job()
    j.metadata["tag"].string_value = "héllo"
    j.metadata["n"].int_value = -5
    j.metadata["u"].uint_value = 5
    j.metadata["d"].double_value = 2.5
    j.metadata["b"].bytes_value = b"\x00\xff"
    j.metadata["t"].bool_value = True
    nested_value(j.metadata["deep8"], 7 - 1, "list")  # the entry's Value is level 1
    nested_value(j.metadata["map"], 3, "map")
    j.correlation_id = "corr-1"
    j.deadline_unix_ms = 2**62
    add(j, copy=None)
    out["ok-metadata-correlation"] = stream(j)
    return out


def hostile_jobs():
    out = {}
    # Item 1: metadata nested past what the stack holds (and just past depth 8).
    out["i1-deep-list-metadata-4400"] = stream(deep_metadata_bytes(4400, "list"))
    out["i1-deep-map-metadata-4400"] = stream(deep_metadata_bytes(4400, "map"))
    out["i1-metadata-depth-9"] = stream(deep_metadata_bytes(9, "list"))

    # Items 2 and 3: special files and paths leaving the root.
    for path in ["fifo", "escape", "sub/../a.png", "./a.png", "../etc/hostname", "/etc/hostname", "sub/../../etc/hostname",
                 "empty", "notimg", "missing", "sub", ".", ""]:
        j = pb.Job(key_string="p")
        j.source.path = path
        j.nodes.add().source.index = 0
        name = path.replace("/", "_").replace(".", "dot") or "emptystring"
        out[f"i2-path-{name}"] = stream(j)

    # Item 4: invalid UTF-8 in every string a Result echoes; long multi-byte
    # strings whose error messages get cut.
    j = job(key="KKKK")
    out["i4-key-invalid-utf8"] = stream(corrupt(j, b"KKKK", b"\xff\xfe\xc3\x28"))
    j = job(key="k")
    j.correlation_id = "CCCC"
    out["i4-correlation-invalid-utf8"] = stream(corrupt(j, b"CCCC", b"a\xe2\x82z"))
    j = job(key="k")
    j.metadata["MMMM"].string_value = "VVVV"
    out["i4-metadata-invalid-utf8"] = stream(corrupt(j, b"VVVV", b"\xed\xa0\x80x"))
    j = job(key="k")
    j.metadata["MMMM"].int_value = 1
    out["i4-metadata-key-invalid-utf8"] = stream(corrupt(j, b"MMMM", b"\xc0\xafMM"))
    j = job("RGB", key="k")
    j.source.raw.mode = "QQQ"
    out["i4-mode-invalid-utf8"] = stream(corrupt(j, b"QQQ", b"\xffQ\x80"))
    j = pb.Job(key_string="k")
    j.source.path = "PPPP.png"
    j.nodes.add().source.index = 0
    out["i4-path-invalid-utf8"] = stream(corrupt(j, b"PPPP", b"\xf4\x90\x80\x80"))
    j = job("RGB", key="€" * 150)
    j.source.raw.mode = "é" * 200
    out["i4-long-multibyte-mode"] = stream(j)
    j = pb.Job(key_string="k")
    j.source.path = "ü" * 300 + ".png"
    j.nodes.add().source.index = 0
    out["i4-long-multibyte-path"] = stream(j)

    # Item 6: many sources charged before admission.
    j = pb.Job(key_string="many-paths")
    j.source.path = "a.png"
    for _ in range(30):
        j.extra_sources.add().path = "a.png"
    j.nodes.add().source.index = 0
    for i in range(1, 4):
        j.nodes.add().source.index = i
    add(j, [0, 3], blend={"alpha": 0.5})
    out["i6-30-extra-path-sources"] = stream(j)

    # Item 7: NUL inside strings, truncated JPEG, NaN/Inf parameters, unknown
    # output format, thousands of unused extra sources.
    j = job("L", key="k")
    j.source.raw.mode = "L\0x"
    out["i7-nul-in-mode"] = stream(j)
    j = job("RGB")
    add(j, convert={"mode": "L\0RGB"})
    out["i7-nul-in-convert-mode"] = stream(j)
    j = pb.Job(key_string="k")
    j.source.path = "a.png\0../.."
    j.nodes.add().source.index = 0
    out["i7-nul-in-path"] = stream(j)
    big = encoded(gradient("RGB", 64, 64), "JPEG")
    j = pb.Job(key_string="trunc")
    j.source.encoded = big[: len(big) // 2]
    j.nodes.add().source.index = 0
    out["i7-truncated-jpeg-64"] = stream(j)
    j = pb.Job(key_string="trunc4000")
    j.source.encoded = truncated_jpeg_4000()
    j.nodes.add().source.index = 0
    out["i7-truncated-jpeg-4000"] = stream(j)
    for name, op in [
        ("enhance-nan", {"enhance": {"kind": 0, "factor": math.nan}}),
        ("enhance-inf", {"enhance": {"kind": 2, "factor": math.inf}}),
        ("blend-nan", None),
        ("gaussian-nan", {"gaussian_blur": {"radius_x": math.nan, "radius_y": 1}}),
        ("boxblur-inf", {"box_blur": {"radius_x": 1, "radius_y": -math.inf}}),
        ("kernel-nan", {"kernel": {"size": 3, "kernel": [math.nan] + [1.0] * 8, "scale": 1}}),
        ("kernel-scale-zero", {"kernel": {"size": 3, "kernel": [1.0] * 9, "scale": 0}}),
        ("chops-scale-nan", None),
        ("tone-nan", {"tone": {"exposure_ev": math.nan}}),
        ("tone-huge", {"tone": {"contrast": 1e308, "whites": -1e308}}),
    ]:
        j = job("RGB")
        if op is None:
            raw_source(j.extra_sources.add(), "RGB", 8, 8, seed=5)
            j.nodes.add().source.index = 1
            if name == "blend-nan":
                add(j, [0, 1], blend={"alpha": math.nan})
            else:
                add(j, [0, 1], chops={"function": 8, "scale": math.nan})
        else:
            add(j, **op)
        out[f"i7-{name}"] = stream(j)
    j = job()
    n = add(j, resize={"width": 4, "height": 4})
    n.resize.box.right = math.nan
    out["i7-resize-box-nan"] = stream(j)
    j = job(fmt=99)
    add(j, invert=None)
    out["i7-unknown-output-format"] = stream(j)
    j = job()
    j.output.cpu.format = 1
    j.output.cpu.quality = 1000
    j.output.cpu.compression = 77
    out["i7-out-of-range-quality"] = stream(j)
    j = job("L", 2, 2)
    for _ in range(2000):
        f = j.extra_sources.add().fill
        f.mode, f.width, f.height, f.color = "L", 1, 1, b"\x01"
    out["i7-2000-unused-extra-sources"] = stream(j)

    # Item 8: a 4096^2 RGBA Kernel job (admission charge); item 9: palette sources.
    j = pb.Job(key_string="big")
    j.source.fill.mode, j.source.fill.width, j.source.fill.height = "RGBA", 4096, 4096
    j.source.fill.color = b"\x01\x02\x03\x04"
    j.nodes.add().source.index = 0
    add(j, kernel={"size": 3, "kernel": [1.0] * 9, "scale": 9})
    out["i8-kernel-4096-rgba"] = stream(j)
    j = job("RGB", key="p")
    j.source.raw.mode = "P"
    out["i9-raw-mode-P"] = stream(j)
    return out


def malformed_jobs():
    out = {}
    j = job()
    add(j, [1], copy=None)
    out["bad-self-cycle"] = stream(j)
    j = job()
    add(j, [5], copy=None)
    out["bad-forward-ref"] = stream(j)
    j = job()
    j.nodes[0].source.index = 3
    out["bad-source-index"] = stream(j)
    j = job()
    add(j, [0], blend={"alpha": 0.5})
    out["bad-missing-input"] = stream(j)
    j = job()
    j.contract_version = 3
    out["bad-contract-version"] = stream(j)
    j = job()
    j.deadline_unix_ms = 1
    out["bad-deadline-passed"] = stream(j)
    j = job()
    j.output.gpu.SetInParent()
    out["bad-output-gpu-on-cpu"] = stream(j)
    j = job()
    del j.nodes[:]
    out["bad-no-nodes"] = stream(j)
    j = job("RGB", 8, 8)
    j.source.raw.data = b"\x00" * 5
    out["bad-raw-short-data"] = stream(j)
    j = job("RGB", 8, 8)
    j.source.raw.width = 5000
    out["bad-raw-too-wide"] = stream(j)
    j = job()
    add(j, resize={"width": 4096, "height": 4096})
    add(j, resize={"width": 1, "height": 1})
    out["bad-resize-peak"] = stream(j)
    j = pb.Job()
    j.extra_sources.add()
    out["bad-extra-without-source"] = stream(j)
    good = job().SerializeToString()
    out["bad-truncated-frame"] = varint(len(good) + 10) + good
    out["bad-overlong-prefix"] = b"\xff" * 11 + b"\x01"
    out["bad-not-protobuf"] = stream(b"\xff\xff\xff\xff\x0f")
    out["bad-unknown-fields"] = stream(good + b"\xf8\x07\x01" + b"\x82\x08\x02hi")
    out["bad-good-then-garbage"] = stream(job()) + b"\x05\x0a\x03"
    return out


def truncated_jpeg_4000():
    """A JPEG whose header says 4000x4000 over a body of about 900 bytes."""
    small = encoded(gradient("RGB", 16, 16), "JPEG", quality=50)
    # The SOF0 segment holds height then width (big-endian) after its
    # length and precision bytes.
    i = small.index(b"\xff\xc0")
    head = small[: i + 5] + struct.pack(">HH", 4000, 4000) + small[i + 9:]
    return head[:900]


# ------------------------------------------------------------------ image seeds


def image_seeds():
    out = {}
    g = gradient
    for name, im, fmt, kw in [
        ("png-l", g("L"), "PNG", {}),
        ("png-la", g("LA"), "PNG", {}),
        ("png-rgb", g("RGB"), "PNG", {}),
        ("png-rgba-interlaced", g("RGBA"), "PNG", {"interlace": 1}),
        ("png-palette", g("RGB").convert("P"), "PNG", {}),
        ("png-palette-trns", g("RGBA").convert("P"), "PNG", {"transparency": 0}),
        ("png-1bit", g("L").convert("1"), "PNG", {}),
        ("png-16bit", g("L").convert("I;16"), "PNG", {}),
        ("jpeg-l", g("L"), "JPEG", {}),
        ("jpeg-rgb", g("RGB", 16, 16), "JPEG", {"quality": 60}),
        ("jpeg-rgb-progressive", g("RGB", 16, 16), "JPEG", {"progressive": True}),
        ("jpeg-cmyk", g("CMYK"), "JPEG", {}),
        ("gif", g("RGB"), "GIF", {}),
        ("webp-lossy", g("RGB"), "WEBP", {"quality": 50}),
        ("webp-lossless-alpha", g("RGBA"), "WEBP", {"lossless": True}),
        ("tiff-rgb", g("RGB"), "TIFF", {}),
        ("tiff-cmyk-lzw", g("CMYK"), "TIFF", {"compression": "tiff_lzw"}),
        ("tiff-la", g("LA"), "TIFF", {}),
        ("tiff-16bit", g("L").convert("I;16"), "TIFF", {}),
    ]:
        out[name] = encoded(im, fmt, **kw)
    # exif_transpose's metadata (codec/metadata.c, codec/exif_orient.c).
    exif = Image.Exif()
    exif[274] = 6
    exif[305] = "imgbatch"
    xmp = b'<x:xmpmeta><rdf:Description tiff:Orientation="8"/></x:xmpmeta>'
    out["jpeg-exif-orientation-6"] = encoded(g("RGB"), "JPEG", exif=exif.tobytes(), xmp=xmp)
    out["png-exif-orientation-6"] = encoded(g("RGB"), "PNG", exif=exif.tobytes())
    out["webp-exif-xmp"] = encoded(g("RGB"), "WEBP", lossless=True, exif=exif.tobytes(), xmp=xmp)
    out["tiff-orientation-5"] = encoded(g("RGB"), "TIFF", tiffinfo={274: 5})
    # Big-endian IFD whose Orientation's value lies past the end (a RATIONAL).
    out["jpeg-exif-mm-offset-past-end"] = encoded(
        g("L"), "JPEG", exif=b"Exif\0\0MM\0*\0\0\0\x08\0\x01\x01\x12\0\x05\0\0\0\x01\xff\xff\xff\xf0\0\0\0\0")
    frames = [g("RGB").rotate(90 * i) for i in range(3)]
    b = io.BytesIO()
    frames[0].save(b, "GIF", save_all=True, append_images=frames[1:], duration=10, loop=0)
    out["gif-animated"] = b.getvalue()
    big = encoded(g("RGB", 64, 64), "JPEG")
    out["i7-truncated-jpeg-64"] = big[: len(big) // 2]
    out["i7-truncated-jpeg-4000"] = truncated_jpeg_4000()
    png = encoded(g("RGB", 16, 16), "PNG")
    out["truncated-png"] = png[: len(png) - 30]
    # Header claims 100000 x 100000 (a bomb by header): IHDR width/height at 16.
    bomb = bytearray(encoded(g("L"), "PNG"))
    bomb[16:24] = struct.pack(">II", 100000, 100000)
    out["png-huge-header-bad-crc"] = bytes(bomb)
    out["magic-only-png"] = b"\x89PNG\r\n\x1a\n"
    out["magic-only-jpeg"] = b"\xff\xd8\xff"
    out["magic-only-webp"] = b"RIFF\0\0\0\0WEBP"
    out["magic-only-tiff"] = b"II*\0"
    out["magic-only-gif"] = b"GIF89a"
    out["not-an-image"] = b"hello, world\n"
    return out


def write(directory, seeds):
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    return sum(len(d) for d in seeds.values())


def main():
    jobs = {**ok_jobs(), **hostile_jobs(), **malformed_jobs()}
    n_job = write(JOB_DIR, jobs)
    images = image_seeds()
    n_img = write(IMAGE_DIR, images)
    total = n_job + n_img
    print(f"make_corpus: {len(jobs)} job seeds ({n_job} bytes), {len(images)} image seeds "
          f"({n_img} bytes)")
    if total >= 2 << 20:
        sys.exit("make_corpus: corpus is over 2 MB")


if __name__ == "__main__":
    main()
