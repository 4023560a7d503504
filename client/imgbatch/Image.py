"""imgbatch.Image: PIL.Image's constructors and module functions, recorded lazily.

    from imgbatch import Image
    im = Image.open("in.png").transpose(Image.Transpose.ROTATE_90)
    job_bytes = im.to_job(key="in.png", output="png")
    reference = im.replay()          # the same graph on real Pillow
"""

import builtins
import io
import os
import struct

import PIL.Image
from PIL.Image import (  # noqa: F401  (re-exported Pillow enums and constants)
    Dither,
    Palette,
    Resampling,
    Transpose,
)

from ._graph import SourceSpec, source_node
from ._methods import LazyImage, ensure_lazy, lazy, resolve_color

Image = LazyImage

# Pillow's module-level aliases (Image.FLIP_LEFT_RIGHT, Image.NEAREST, ...).
for _enum in (Transpose, Resampling):
    for _member in _enum:
        globals()[_member.name] = _member
del _enum, _member


def _read_fp(fp):
    if isinstance(fp, (bytes, bytearray, memoryview)):
        return bytes(fp)
    if isinstance(fp, (str, os.PathLike)):
        with builtins.open(fp, "rb") as f:
            return f.read()
    return fp.read()


def _open_loaded(data, formats=None):
    im = PIL.Image.open(io.BytesIO(data), "r", formats)
    im.load()
    return im


def open(fp, mode="r", formats=None):
    """Image.open: a path, a file object or the file's bytes -> Source.encoded.

    The bytes travel inline in the Job; mode and size come from Pillow's
    header read, so chained calls see what Pillow would.
    """
    if mode != "r":
        raise ValueError(f"bad mode {mode!r}")
    data = _read_fp(fp)
    head = PIL.Image.open(io.BytesIO(data), "r", formats)
    spec = SourceSpec("encoded", None, None, data)
    return LazyImage(source_node(spec, lambda: _open_loaded(data, formats), head.mode, head.size))


def open_path(relpath, root=None):
    """A Source.path image: relpath is resolved by the worker inside its source
    root. root (default $IB_SOURCE_ROOT) is where this process reads the same
    file for mode/size and replay."""
    root = root if root is not None else os.environ.get("IB_SOURCE_ROOT", ".")
    full = os.path.join(root, relpath)
    with PIL.Image.open(full) as head:
        mode, size = head.mode, head.size

    def replay():
        with builtins.open(full, "rb") as f:
            return _open_loaded(f.read())

    spec = SourceSpec("path", None, None, os.fspath(relpath))
    return LazyImage(source_node(spec, replay, mode, size))


def _check_size(size):
    size = tuple(size)
    if len(size) != 2 or not all(isinstance(v, int) for v in size):
        raise ValueError("Size must be a list or tuple of two integers")
    if size[0] < 0 or size[1] < 0:
        raise ValueError("Width and height must be >= 0")
    return size


def new(mode, size, color=0):
    """Image.new -> Source.fill, the colour resolved by Pillow to one byte per band."""
    size = _check_size(size)
    fill = resolve_color(mode, color)
    spec = SourceSpec("fill", mode, size, fill)
    return LazyImage(source_node(spec, lambda: PIL.Image.new(mode, size, color), mode, size))


def frombytes(mode, size, data, decoder_name="raw", *args):
    """Image.frombytes (raw decoder, no stride args) -> Source.raw.

    The bytes are sent as given: a wrong length reaches the worker, which
    rejects it where Pillow raises."""
    if decoder_name != "raw" or (args and args not in ((mode,), (mode, 0, 1))):
        raise NotImplementedError("imgbatch: frombytes supports the raw decoder without stride")
    size = _check_size(size)
    data = bytes(data)
    spec = SourceSpec("raw", mode, size, data)
    return LazyImage(source_node(spec, lambda: PIL.Image.frombytes(mode, size, data), mode, size))


def blend(im1, im2, alpha):
    """Image.blend(im1, im2, alpha) -> BlendOp over [im1, im2]."""
    im1, im2 = ensure_lazy(im1), ensure_lazy(im2)
    # ImagingBlend takes alpha as a float32 and returns a copy of im2 (its
    # mode, which may differ from im1's with the same band count) at 1.0.
    mode = im2.mode if struct.unpack("f", struct.pack("f", alpha))[0] == 1.0 else im1.mode
    return lazy("blend", {"alpha": float(alpha)}, [im1, im2], mode, im1.size,
                lambda a, b: PIL.Image.blend(a, b, alpha))

