"""ImageOps.exif_transpose vs Pillow 12.3: orientations 0..9 through EXIF
(JPEG APP1, PNG eXIf, WebP EXIF, TIFF IFD0) and through XMP (attribute and
element forms, JPEG APP1, PNG iTXt, WebP XMP), EXIF winning over XMP, no
metadata, raw sources; hostile EXIF drawn at random (types, counts, byte
orders, offsets past the end, truncated IFDs, duplicate tags) where Pillow's
answer, or its exception, is the reference."""
import io
import struct

import PIL.Image
import PIL.ImageOps
import PIL.PngImagePlugin
import pytest

import parity
from parity import Case
from imgbatch import Image, ImageOps

ORIENTATIONS = range(0, 10)
FORMATS = ("JPEG", "PNG", "WEBP")


def exif_with(orientation):
    e = PIL.Image.Exif()
    e[274] = orientation
    e[305] = "imgbatch"  # a second tag, so the IFD is not only the orientation
    return e.tobytes()


def xmp_with(orientation, form):
    tag = (f'<rdf:Description tiff:Orientation="{orientation}"/>' if form == "attr"
           else f"<rdf:Description><tiff:Orientation>{orientation}</tiff:Orientation></rdf:Description>")
    return (b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
            b'xmlns:tiff="http://ns.adobe.com/tiff/1.0/">' + tag.encode() + b"</rdf:RDF></x:xmpmeta>")


def encode(pil, fmt, exif=None, xmp=None, dpi=None):
    buf = io.BytesIO()
    kw = {} if dpi is None else {"dpi": dpi}
    if exif is not None:
        kw["exif"] = exif
    if fmt == "PNG":
        if xmp is not None:
            info = PIL.PngImagePlugin.PngInfo()
            info.add_itxt("XML:com.adobe.xmp", xmp.decode())
            kw["pnginfo"] = info
    elif xmp is not None:
        kw["xmp"] = xmp
    if fmt == "WEBP":
        kw["lossless"] = True
    if fmt == "JPEG":
        kw["quality"] = 95
    pil.save(buf, fmt, **kw)
    return buf.getvalue()


def source(r, fmt, mode, **meta):
    size = parity.sizes(r, 1)[0]
    pil = PIL.Image.frombytes(mode, size, parity.random_bytes(r, size[0] * size[1] * parity.BANDS[mode]))
    return Image.open(encode(pil, fmt, **meta))


def modes_of(fmt):
    return ("L", "RGB") if fmt == "JPEG" else ("L", "RGB", "RGBA")


@pytest.mark.parametrize("fmt", FORMATS)
def test_exif_orientation_matches_pillow(fmt):
    r = parity.rng("exif_transpose-exif", fmt)
    cases = []
    for mode in modes_of(fmt):
        for o in ORIENTATIONS:
            for i in range(max(1, parity.scale(3))):
                im = source(r, fmt, mode, exif=exif_with(o))
                cases.append(Case(f"exif-{fmt}-{mode}-{o}-{i}", "exif_transpose", mode,
                                  ImageOps.exif_transpose(im)))
    parity.assert_exact(cases)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("form", ("attr", "elem"))
def test_xmp_orientation_matches_pillow(fmt, form):
    r = parity.rng("exif_transpose-xmp", fmt, form)
    cases = []
    for mode in modes_of(fmt):
        for o in ORIENTATIONS:
            im = source(r, fmt, mode, xmp=xmp_with(o, form))
            cases.append(Case(f"xmp-{fmt}-{form}-{mode}-{o}", "exif_transpose", mode,
                              ImageOps.exif_transpose(im)))
    parity.assert_exact(cases)


@pytest.mark.parametrize("fmt", FORMATS)
def test_exif_tag_wins_over_xmp_and_no_metadata_is_a_copy(fmt):
    r = parity.rng("exif_transpose-both", fmt)
    no_tag = PIL.Image.Exif()
    no_tag[305] = "x"
    cases = [
        Case(f"both-{fmt}-{o}", "exif_transpose", "RGB",
             ImageOps.exif_transpose(source(r, fmt, "RGB", exif=exif_with(o), xmp=xmp_with(6, "attr"))))
        for o in (1, 3, 8)]
    cases.append(Case(f"notag-{fmt}", "exif_transpose", "RGB", ImageOps.exif_transpose(
        source(r, fmt, "RGB", exif=no_tag.tobytes(), xmp=xmp_with(5, "elem")))))
    cases.append(Case(f"none-{fmt}", "exif_transpose", "RGB",
                      ImageOps.exif_transpose(source(r, fmt, "RGB"))))
    parity.assert_exact(cases)


def test_tiff_orientation_tag_matches_pillow():
    r = parity.rng("exif_transpose-tiff")
    cases = []
    for mode in ("L", "RGB", "RGBA", "CMYK"):
        for o in ORIENTATIONS:
            size = parity.sizes(r, 1)[0]
            pil = PIL.Image.frombytes(mode, size, parity.random_bytes(r, size[0] * size[1] * parity.BANDS[mode]))
            buf = io.BytesIO()
            pil.save(buf, "TIFF", tiffinfo={274: o})
            cases.append(Case(f"tiff-{mode}-{o}", "exif_transpose", mode,
                              ImageOps.exif_transpose(Image.open(buf.getvalue()))))
    parity.assert_exact(cases)


def test_raw_and_fill_sources_are_copied():
    r = parity.rng("exif_transpose-raw")
    cases = [Case(f"raw-{m}", "exif_transpose", m,
                  ImageOps.exif_transpose(parity.random_image(r, m, (5, 3)))) for m in parity.MODES]
    cases.append(Case("fill", "exif_transpose", "RGB",
                      ImageOps.exif_transpose(Image.new("RGB", (4, 2), (1, 2, 3)))))
    parity.assert_exact(cases)


def test_exif_transpose_of_a_non_source_is_unsupported():
    im = ImageOps.exif_transpose(ImageOps.invert(Image.new("RGB", (4, 2))))
    parity.assert_rejected([Case("non-source", "exif_transpose", "RGB", im, expect_kind="unsupported")],
                           pillow_raises=False)


# ---------------------------------------------------------------- hostile EXIF

TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 14: 4,
              15: 4, 16: 8, 17: 8, 0: 1, 99: 2}


def random_value(r, typ, count, end):
    """count values of TIFF type typ (some equal to orientations, some not)."""
    want = r.choice([1, 2, 3, 5, 6, 8, 9, 0, 255, 65535])
    if typ in (5, 10):
        den = r.choice([1, 2, 0, 3])
        return struct.pack(end + ("LL" if typ == 5 else "ll"), want * max(den, 1), den) * count
    if typ in (11, 12):
        v = r.choice([float(want), want + 0.5, float("nan")])
        return struct.pack(end + ("f" if typ == 11 else "d"), v) * count
    if typ == 2:
        return (str(want).encode() + b"\0")[:count].ljust(count, b"\0")
    fmt = {1: "B", 6: "b", 7: "B", 3: "H", 8: "h", 4: "L", 9: "l", 13: "L", 16: "Q", 17: "q"}.get(typ, "B")
    lim = {"B": 255, "b": 127, "h": 32767}.get(fmt, 65535)
    return struct.pack(end + fmt, min(want, lim)) * count if count < 64 else bytes(count * TYPE_SIZES.get(typ, 1))


def hostile_exif(r):
    end = r.choice("<>")
    magic = r.choice([b"II*\0", b"MM\0*", b"MM*\0", b"II\0*", b"MM\0+", b"II+\0", b"IX*\0", b"II"])
    if magic[:2] == b"MM":
        end = ">"
    elif magic[:2] == b"II":
        end = "<"
    entries, data = [], b""
    n = r.choice([0, 1, 2, 3, 5])
    ifd_at = 8
    data_at = ifd_at + 2 + 12 * n + 4
    for _ in range(n):
        tag = r.choice([274, 274, 274, 305, 282])
        typ = r.choice([3, 3, 3, 4, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 0, 99])
        count = r.choice([1, 1, 1, 2, 3, 0, 70000])
        val = random_value(r, typ, count, end)
        if len(val) <= 4:
            field = val.ljust(4, b"\0")
        else:
            off = data_at + len(data) if r.random() < 0.8 else r.choice([0xFFFFFFF0, 3, 10 ** 6])
            field = struct.pack(end + "L", off)
            data += val
        entries.append(struct.pack(end + "HHL", tag, typ if typ != 99 else 99, count) + field)
    ifd = struct.pack(end + "H", n) + b"".join(entries) + struct.pack(end + "L", 0)
    head = magic + struct.pack(end + "L", r.choice([ifd_at, ifd_at, ifd_at, 3, 10 ** 6]))
    blob = head[:8] + ifd + data
    cut = r.random()
    if cut < 0.2:
        blob = blob[:r.randint(0, len(blob))]
    prefix = r.choice([b"", b"Exif\0\0", b"Exif\0\0Exif\0\0"])
    return prefix + blob


def pillow_answer(data):
    """'refused' when Image.getexif raises (the worker refuses at validation),
    'rewrite' when only exif_transpose's re-serialisation of the EXIF
    without its orientation raises (Exif.tobytes on tag types it cannot
    write: the worker writes no EXIF there and transposes; not compared),
    else 'ok'."""
    try:
        PIL.Image.open(io.BytesIO(data)).getexif()
    except Exception:  # noqa: BLE001 - Pillow's refusal is the expected answer
        return "refused"
    try:
        PIL.ImageOps.exif_transpose(PIL.Image.open(io.BytesIO(data)))
    except Exception:  # noqa: BLE001
        return "rewrite"
    return "ok"


@pytest.mark.parametrize("fmt", ("PNG", "JPEG"))
def test_hostile_exif_is_read_as_pillow_reads_it(fmt):
    r = parity.rng("exif_transpose-hostile", fmt)
    found = {"ok": [], "refused": [], "rewrite": []}
    for i in range(parity.scale(300)):
        exif = hostile_exif(r)
        if fmt == "JPEG" and not exif.startswith(b"Exif\0\0"):
            exif = b"Exif\0\0" + exif  # only such APP1 segments are EXIF
        if fmt == "JPEG" and len(exif) > 65000:
            continue  # one APP1 segment's worth (Pillow's save refuses more)
        pil = PIL.Image.frombytes("RGB", (3, 5), parity.random_bytes(r, 45))
        # A JPEG without JFIF dpi has its EXIF read (errors swallowed) at open.
        data = encode(pil, fmt, exif=exif, dpi=(72, 72) if r.random() < 0.5 else None)
        case = Case(f"hostile-{fmt}-{i}", "exif_transpose", "RGB", ImageOps.exif_transpose(Image.open(data)),
                    expect_kind="invalid")
        found[pillow_answer(data)].append(case)
    assert found["ok"] and found["refused"], {k: len(v) for k, v in found.items()}
    assert len(found["rewrite"]) * 5 < len(found["ok"]), {k: len(v) for k, v in found.items()}
    parity.assert_exact(found["ok"])
    parity.assert_rejected(found["refused"])
