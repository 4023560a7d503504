"""Job builders for the worker's end-to-end tests: small deterministic images
through the Pillow-shaped client (so that replay() gives the reference), and
the poison messages of the Kafka worker issue (scenario 4)."""
import io
import random
import struct
import zlib

import PIL.Image

from ibtest import bands_of, encoded_job, path_job, raw_job
from imgbatch import Image, ImageFilter, ImageOps
from imgbatch import imgbatch_pb2 as pb


def pixels(w, h, bands=3, seed=0):
    """w*h*bands deterministic pseudo-random bytes for seed."""
    return random.Random(seed).randbytes(w * h * bands)


# Graphs chosen to be cheap on the CPU backend and different from each other.
GRAPHS = (
    ("copy", lambda im: im),
    ("invert", lambda im: ImageOps.invert(im)),
    ("blur", lambda im: im.filter(ImageFilter.GaussianBlur(1))),
    ("median", lambda im: im.filter(ImageFilter.MedianFilter(3))),
    ("rotate", lambda im: im.transpose(Image.Transpose.ROTATE_90)),
    ("gray", lambda im: ImageOps.grayscale(im)),
    # CPU work with a small output: for tests that need jobs to take a while.
    ("median-small", lambda im: im.filter(ImageFilter.MedianFilter(5)).resize(
        (im.width // 4, im.height // 4), Image.Resampling.NEAREST)),
)
SLOW = len(GRAPHS) - 1


def lazy_image(seed, w=32, h=32, mode="RGB", graph=None):
    """A lazy image over raw pixels; graph is an index into GRAPHS (default
    seed % len(GRAPHS))."""
    im = Image.frombytes(mode, (w, h), pixels(w, h, bands_of(mode), seed))
    name, fn = GRAPHS[(seed if graph is None else graph) % len(GRAPHS)]
    return fn(im)


def image_job(seed, w=32, h=32, key=None, output="raw", graph=None, **kw):
    """(Job bytes, lazy image) for seed; the key defaults to the seed (u64)."""
    im = lazy_image(seed, w, h, graph=graph)
    return im.to_job(key=seed if key is None else key, output=output, **kw), im


def raw_copy_job(key, w=16, h=16, seed=0, mode="RGB"):
    """A Job message built directly on the protobuf (no client)."""
    return raw_job(key, w, h, mode, data=pixels(w, h, bands_of(mode), seed))


def png_bytes(im):
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_header_only(w, h):
    """A PNG that claims w x h RGB over a few bytes of pixels."""
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) +
            png_chunk(b"IEND", b""))


def poison_cases(source_root_escape_link):
    """[(name, message bytes, expected stage, expected kinds, message words)]:
    every message that must become an error Result without hurting the worker.
    `source_root_escape_link` is the path (relative to the worker's source
    root) of a symlink pointing outside the root."""
    cases = []
    good = raw_copy_job("t", 8, 8).SerializeToString()
    cases.append(("garbage", b"\xff\xfe\xfd not a protobuf \x00\x01", pb.PARSE,
                  {pb.INVALID}, ()))
    # An empty value parses as an empty Job: it is no job (no graph) either way.
    cases.append(("empty", b"", None, {pb.INVALID}, ()))
    cases.append(("null", None, None, {pb.INVALID}, ()))  # a tombstone: no value at all
    cases.append(("truncated", good[: len(good) // 2], pb.PARSE, {pb.INVALID}, ()))

    cycle = raw_copy_job("cycle")
    cycle.nodes[1].inputs[0] = 1
    cases.append(("cycle", cycle.SerializeToString(), pb.VALIDATE, {pb.INVALID}, ("cycle",)))

    # A node whose op is field 99, no op of this contract: a newer producer's.
    head = raw_copy_job("unknown-op")
    del head.nodes[1]
    node = b"\x0a\x01\x00" + b"\x9a\x06\x00"  # inputs=[0], field 99 (LEN 0)
    unknown = head.SerializeToString() + b"\x2a" + bytes([len(node)]) + node
    cases.append(("unknown-op", unknown, pb.VALIDATE, {pb.UNSUPPORTED}, ()))

    posterize = raw_copy_job("out-of-range")
    posterize.nodes[1].ClearField("copy")
    posterize.nodes[1].posterize.bits = 9
    cases.append(("out-of-range", posterize.SerializeToString(), pb.VALIDATE, {pb.INVALID},
                  ("bits",)))

    newer = raw_copy_job("newer-contract")
    newer.contract_version = 99
    cases.append(("newer-contract", newer.SerializeToString(), None, {pb.UNSUPPORTED}, ("99",)))

    png16 = png_bytes(PIL.Image.new("I;16", (8, 8), 1000))
    cases.append(("png16", encoded_job("png16", png16).SerializeToString(), pb.DECODE,
                  {pb.UNSUPPORTED}, ()))
    whole = png_bytes(PIL.Image.frombytes("RGB", (32, 32), pixels(32, 32)))
    cases.append(("png-truncated", encoded_job("png-truncated", whole[: len(whole) // 2])
                  .SerializeToString(), pb.DECODE, {pb.DECODE_ERROR}, ()))
    cases.append(("png-huge", encoded_job("png-huge", png_header_only(30000, 30000))
                  .SerializeToString(), None, {pb.LIMIT}, ()))
    cases.append(("passwd", path_job("passwd", "../../etc/passwd").SerializeToString(), None,
                  {pb.INVALID}, ()))
    cases.append(("symlink", path_job("symlink", source_root_escape_link).SerializeToString(),
                  None, {pb.INVALID}, ()))

    meta = raw_copy_job("metadata")
    meta.metadata["big"].bytes_value = b"m" * 100_000
    cases.append(("metadata", meta.SerializeToString(), None, {pb.LIMIT}, ()))
    deep = raw_copy_job("metadata-deep")
    v = deep.metadata["deep"]
    for _ in range(20):
        v = v.list_value.items.add()
    v.int_value = 1
    cases.append(("metadata-deep", deep.SerializeToString(), None, {pb.LIMIT, pb.INVALID}, ()))
    return cases
