"""imgbatch.Image: PIL.Image's constructors and module functions, recorded lazily.

    from imgbatch import Image
    im = Image.open("in.png").transpose(Image.Transpose.ROTATE_90)
    job_bytes = im.to_job(key="in.png", output="png")
    reference = im.replay()          # the same graph on real Pillow
"""

from __future__ import annotations

import builtins
import io
import os
import struct
from typing import IO, Any, Optional, Tuple, Union

import PIL.Image
from PIL.Image import Dither as Dither  # re-exported Pillow enums (explicitly, for type checkers)
from PIL.Image import Palette as Palette
from PIL.Image import Resampling as Resampling
from PIL.Image import Transform as Transform
from PIL.Image import Transpose as Transpose

from ._graph import SourceSpec, source_node
from ._methods import LazyImage, ensure_lazy, frombytes_source, lazy, new_source
from ._record import pillow_check

Image = LazyImage

# Pillow's module-level aliases (Image.FLIP_LEFT_RIGHT, Image.NEAREST, ...).
FLIP_LEFT_RIGHT = Transpose.FLIP_LEFT_RIGHT
FLIP_TOP_BOTTOM = Transpose.FLIP_TOP_BOTTOM
ROTATE_90 = Transpose.ROTATE_90
ROTATE_180 = Transpose.ROTATE_180
ROTATE_270 = Transpose.ROTATE_270
TRANSPOSE = Transpose.TRANSPOSE
TRANSVERSE = Transpose.TRANSVERSE
NEAREST = Resampling.NEAREST
BOX = Resampling.BOX
BILINEAR = Resampling.BILINEAR
HAMMING = Resampling.HAMMING
BICUBIC = Resampling.BICUBIC
LANCZOS = Resampling.LANCZOS
AFFINE = Transform.AFFINE
EXTENT = Transform.EXTENT
PERSPECTIVE = Transform.PERSPECTIVE
QUAD = Transform.QUAD
MESH = Transform.MESH


def _read_fp(fp: Any) -> bytes:
    if isinstance(fp, (bytes, bytearray, memoryview)):
        return bytes(fp)
    if isinstance(fp, (str, os.PathLike)):
        with builtins.open(fp, "rb") as f:
            return f.read()
    data: bytes = fp.read()
    return data


def decoded_mode(head: PIL.Image.Image) -> str:
    """The mode the worker's decoder (libvips) gives a file Pillow opened as head.

    libvips expands what Pillow keeps compact: a palette (P, PA) becomes RGB,
    or RGBA when the file has transparency (PNG tRNS, GIF transparent index);
    L or RGB with a PNG tRNS chunk become LA or RGBA; 1-bit becomes L. The
    pixels equal Pillow's convert() to that mode, which is what
    replay() does. Other modes are what Pillow says (the worker refuses the
    ones it does not admit, e.g. I;16).
    """
    transparent = "transparency" in head.info
    if head.mode in ("P", "PA"):
        return "RGBA" if transparent or head.mode == "PA" else "RGB"
    if head.mode == "1":
        return "L"
    if transparent and head.mode in ("L", "RGB"):
        return "LA" if head.mode == "L" else "RGBA"
    return head.mode


def _open_loaded(data: bytes, formats: Any = None) -> PIL.Image.Image:
    im = PIL.Image.open(io.BytesIO(data), "r", formats)
    im.load()
    mode = decoded_mode(im)
    return im if mode == im.mode else im.convert(mode)


def open(fp: Union[str, "os.PathLike[str]", bytes, IO[bytes]], mode: str = "r",
         formats: Optional[Union[list, tuple]] = None) -> LazyImage:
    """Image.open(fp, mode="r", formats=None) -> Source.encoded.

    fp: a path, a file object or the file's bytes; the bytes travel inline in
    the Job. Size comes from Pillow's header read; the mode is the one the
    worker decodes to (decoded_mode: a palette PNG/GIF reports RGB or RGBA, not
    Pillow's P), and replay() converts the same way, so chained calls see what
    the worker will compute. Pillow's errors (UnidentifiedImageError, ...)
    are raised here, at record time.
    """
    if mode != "r":
        raise ValueError(f"bad mode {mode!r}")
    data = _read_fp(fp)
    head = PIL.Image.open(io.BytesIO(data), "r", formats)
    spec = SourceSpec("encoded", None, None, data, head.format,
                      lambda: PIL.Image.open(io.BytesIO(data), "r", formats))
    return LazyImage(source_node(spec, lambda: _open_loaded(data, formats), decoded_mode(head),
                                 head.size))


def open_path(relpath: Union[str, "os.PathLike[str]"], root: Optional[str] = None) -> LazyImage:
    """A Source.path image: relpath is resolved by the worker inside its source
    root. root (default $IB_SOURCE_ROOT) is where this process reads the same
    file for mode/size and replay."""
    root = root if root is not None else os.environ.get("IB_SOURCE_ROOT", ".")
    full = os.path.join(root, relpath)
    with PIL.Image.open(full) as head:
        mode, size, fmt = decoded_mode(head), head.size, head.format

    def replay() -> PIL.Image.Image:
        with builtins.open(full, "rb") as f:
            return _open_loaded(f.read())

    def opener() -> PIL.Image.Image:
        with builtins.open(full, "rb") as f:
            return PIL.Image.open(io.BytesIO(f.read()))

    spec = SourceSpec("path", None, None, os.fspath(relpath), fmt, opener)
    return LazyImage(source_node(spec, replay, mode, size))


def new(mode: str, size: Tuple[int, int], color: Any = 0) -> LazyImage:
    """Image.new(mode, size, color) -> Source.fill, the colour resolved by Pillow
    to one byte per band."""
    return new_source(mode, size, color)


def frombytes(mode: str, size: Tuple[int, int], data: Any, decoder_name: str = "raw", *args: Any) -> LazyImage:
    """Image.frombytes(mode, size, data) (raw decoder, no stride) -> Source.raw.

    Pillow decodes the bytes once at record time (its errors: bad mode, not
    enough data); under unchecked() they are sent as given, for the worker
    to reject."""
    return frombytes_source(mode, size, data, decoder_name, *args)


def blend(im1: Any, im2: Any, alpha: float) -> LazyImage:
    """Image.blend(im1, im2, alpha) -> BlendOp over [im1, im2]."""
    im1, im2 = ensure_lazy(im1), ensure_lazy(im2)
    pillow_check(lambda a, b: PIL.Image.blend(a, b, alpha), im1, im2, exact=True)
    # ImagingBlend takes alpha as a float32 and returns a copy of im2 (its
    # mode, which may differ from im1's with the same band count) at 1.0.
    mode = im2.mode if struct.unpack("f", struct.pack("f", alpha))[0] == 1.0 else im1.mode
    return lazy("blend", {"alpha": float(alpha)}, [im1, im2], mode, im1.size,
                lambda a, b: PIL.Image.blend(a, b, alpha))

