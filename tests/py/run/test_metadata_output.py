"""The output metadata policy through `imgbatch run` (CpuOutput.metadata,
docs/metadata.md): what a PNG, JPEG or WebP file keeps of its source's EXIF,
XMP and ICC profile, read back with Pillow 12.3 and compared with what
Pillow holds for the same calls: STRIP (the default, Pillow's save()
default) writes none; KEEP writes the source's, and after an
ImageOps.exif_transpose that transposed, the metadata Pillow's
exif_transpose leaves (no orientation in the EXIF or the XMP);
KEEP_RESET_ORIENTATION always removes the orientation."""
import io
import os
import re

import PIL.Image
import PIL.ImageCms
import PIL.ImageOps
import PIL.PngImagePlugin
import pytest

import imgbatch
from imgbatch import Image, ImageOps

ICC = PIL.ImageCms.ImageCmsProfile(PIL.ImageCms.createProfile("sRGB")).tobytes()
XMP = (b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
       b'<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="8" tiff:Make="imgbatch">'
       b"<tiff:Orientation>8</tiff:Orientation></rdf:Description></rdf:RDF></x:xmpmeta>")
# The policy is the same on both backends; a GPU machine runs this with IB_BACKEND=cuda.
BACKEND = os.environ.get("IB_BACKEND", "cpu")
OUTPUTS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}


def exif_bytes(orientation):
    e = PIL.Image.Exif()
    if orientation is not None:
        e[274] = orientation
    e[305] = "imgbatch test"
    e[271] = "maker"
    e[282] = 72.0
    return e.tobytes()


def source(fmt, orientation=6, xmp=XMP, icc=ICC):
    pil = PIL.Image.frombytes("RGB", (7, 4), bytes(range(84)))
    buf = io.BytesIO()
    kw = {"exif": exif_bytes(orientation), "icc_profile": icc}
    if fmt == "PNG":
        info = PIL.PngImagePlugin.PngInfo()
        info.add_itxt("XML:com.adobe.xmp", xmp.decode())
        kw["pnginfo"] = info
    else:
        kw["xmp"] = xmp
    pil.save(buf, fmt, **kw)
    return buf.getvalue()


def xmp_of(im):
    v = im.info.get("xmp", im.info.get("XML:com.adobe.xmp"))
    return v.encode() if isinstance(v, str) else v


def read_back(data):
    im = PIL.Image.open(io.BytesIO(data))
    im.load()
    return dict(im.getexif()), xmp_of(im), im.info.get("icc_profile")


def expected(src, policy, transpose):
    """What Pillow holds after the same calls, as the policy writes it."""
    im = PIL.Image.open(io.BytesIO(src))
    im.load()
    if policy == "strip":
        return {}, None, None
    if transpose:
        im = PIL.ImageOps.exif_transpose(im)
    exif, xmp = dict(im.getexif()), xmp_of(im)
    if policy == "keep_reset_orientation":
        exif.pop(274, None)
        for pattern in (rb'tiff:Orientation="([0-9])"', rb"<tiff:Orientation>([0-9])</tiff:Orientation>"):
            xmp = re.sub(pattern, b"", xmp)
    return exif, xmp, im.info.get("icc_profile")


def run(cases):
    jobs = [lz.to_job_message(key=i, output=out, keep_metadata=policy)
            for i, (lz, out, policy) in enumerate(cases)]
    results = {r.input_key: r for r in imgbatch.run_local(jobs, backend=BACKEND, timeout=120)}
    return [results[i] for i in range(len(cases))]


@pytest.mark.parametrize("src_fmt", ["JPEG", "PNG"])
@pytest.mark.parametrize("policy", ["strip", "keep", "keep_reset_orientation"])
@pytest.mark.parametrize("transpose", [False, True], ids=["plain", "exif_transpose"])
def test_output_metadata_is_what_the_policy_says(src_fmt, policy, transpose):
    src = source(src_fmt)
    lz = Image.open(src)
    if transpose:
        lz = ImageOps.exif_transpose(lz)
    cases = [(lz, out, policy) for out in OUTPUTS]
    want = expected(src, policy, transpose)
    assert policy == "strip" or (want[0] and want[1] and want[2])
    for (_, out, _), res in zip(cases, run(cases)):
        assert res.error is None, res.error
        got = read_back(res.image.data)
        assert got == want, (out, got, want)


def test_keep_without_transpose_keeps_the_orientation_and_the_pixels_stay():
    src = source("JPEG", orientation=3)
    res, = run([(Image.open(src), "png", "keep")])
    exif, xmp, icc = read_back(res.image.data)
    assert exif[274] == 3 and b'tiff:Orientation="8"' in xmp and icc == ICC


def test_exif_transpose_that_does_nothing_keeps_the_metadata_as_is():
    src = source("PNG", orientation=1)
    res, = run([(ImageOps.exif_transpose(Image.open(src)), "jpeg", "keep")])
    exif, xmp, icc = read_back(res.image.data)
    assert exif[274] == 1 and xmp == XMP and icc == ICC


def test_raw_sources_have_no_metadata_to_keep():
    lz = Image.frombytes("RGB", (2, 2), bytes(12))
    res, = run([(lz, "jpeg", "keep")])
    assert read_back(res.image.data) == ({}, None, None)


def test_tiff_output_refuses_keep():
    res, = run([(Image.open(source("PNG")), "tiff", "keep")])
    assert res.error is not None and res.error.kind == "invalid" and "TIFF" in str(res.error)


def test_strip_is_the_default_and_matches_pillows_bytes():
    """No policy given: the JPEG is the one Pillow's save() writes (no metadata)."""
    src = source("JPEG")
    res, = run([(Image.open(src), "jpeg", "strip")])
    buf = io.BytesIO()
    PIL.Image.open(io.BytesIO(src)).save(buf, "JPEG")
    assert res.image.data == buf.getvalue()


def test_each_rendition_keeps_what_its_own_policy_says():
    """One Job, one decode, a policy per rendition: the source node and the
    transposed node under keep (the first keeps the orientation, the second
    loses it as Pillow's exif_transpose drops it), reset, strip and a raw
    rendition beside them."""
    src = source("JPEG", orientation=6)
    plain = Image.open(src)
    turned = ImageOps.exif_transpose(plain)
    small = turned.resize((2, 3))
    job = imgbatch.renditions_job_message(
        [(plain, "PNG", {"keep_metadata": "keep"}), (turned, "JPEG", {"keep_metadata": "keep"}),
         (small, "WEBP", {"keep_metadata": "keep_reset_orientation"}), (turned, "PNG"),
         (plain, "JPEG", {"keep_metadata": "keep_reset_orientation"}), (small, "RAW")], key=0)
    res, = imgbatch.run_local([job], backend=BACKEND, timeout=120)
    assert res.error is None, res.error
    got = [read_back(r.image.data) for r in res.renditions[:5]]
    assert got[0] == expected(src, "keep", transpose=False) and got[0][0][274] == 6
    assert got[1] == expected(src, "keep", transpose=True) and 274 not in got[1][0]
    assert got[2] == expected(src, "keep_reset_orientation", transpose=True)
    assert got[3] == ({}, None, None)
    assert got[4] == expected(src, "keep_reset_orientation", transpose=False)
    assert res.renditions[5].image.data == small.replay().tobytes()
    for r, im in zip(res.renditions[:5], (plain, turned, small, turned, plain)):
        assert PIL.Image.open(io.BytesIO(r.image.data)).size == im.size


def test_a_tiff_rendition_refuses_keep_naming_it():
    src = source("PNG")
    job = imgbatch.renditions_job_message([(Image.open(src), "PNG", {"keep_metadata": "keep"}),
                                           (Image.open(src), "TIFF", {"keep_metadata": "keep"})], key=0)
    res, = imgbatch.run_local([job], backend=BACKEND, timeout=120)
    assert res.error is not None and res.error.kind == "invalid", res.error
    assert "renditions[1]" in str(res.error) and "TIFF" in str(res.error), res.error
