"""JPEG decoding, full size and drafted (Source.draft_scale, docs/wire.md), vs
Pillow 12.3, live.

Full size: gray, RGB 4:4:4 / 4:2:2 / 4:2:0 and CMYK, baseline and
progressive, odd sizes and 1x1, a CMYK file without its Adobe marker (which
Pillow inverts all the same): the worker's bytes equal Pillow's open + load.
Image.draft(None, size) on JPEGs that are gray, RGB 4:4:4 / 4:2:2 / 4:2:0 and
CMYK, baseline and progressive, at every scale it picks (1/2, 1/4, 1/8) and
on odd sizes (partial last blocks, which libvips' shrink-on-load drops):
the worker's bytes equal Pillow's open + draft + load. Image.thumbnail() of
such files, recorded as the draft and the resize Pillow makes, equals
Pillow's own thumbnail(). Then what must not decode: bad scales, corrupt
and truncated files, files past the memory and scan caps (the scan cap and
corrupt files at full size too)."""
import io

import PIL.Image
import pytest

import imgbatch
import parity
from parity import Case
from imgbatch import Image

# (mode, subsampling) as Pillow's save() takes them; gray and CMYK take none.
COLOURS = [("L", None), ("RGB", "4:4:4"), ("RGB", "4:2:2"), ("RGB", "4:2:0"), ("CMYK", None)]
SIZES = [(9, 17), (17, 9), (15, 15), (33, 7), (64, 48), (101, 67), (127, 255), (8, 8)]
FILTERS = list(PIL.Image.Resampling)
def jpeg(r, mode, size, subsampling=None, progressive=False, kind=None, quality=None):
    pil = PIL.Image.frombytes(mode, size, parity.random_bytes(r, size[0] * size[1] * len(mode), kind))
    kw = {"subsampling": subsampling} if subsampling else {}
    quality = quality or r.randint(40, 95)
    for _ in range(3):
        buf = io.BytesIO()
        try:
            pil.save(buf, "JPEG", quality=quality, progressive=progressive, **kw)
            return buf.getvalue()
        except OSError:
            # Pillow sizes a progressive file's buffer at about a byte a
            # pixel (two from quality 95); noise needs more. Coarser noise,
            # then, at a quality whose file fits.
            small = (max(1, size[0] // 3), max(1, size[1] // 3))
            pil = PIL.Image.frombytes(mode, small, r.randbytes(small[0] * small[1] * len(mode)))
            pil = pil.resize(size, PIL.Image.Resampling.BILINEAR)
            quality = min(quality, 80)
    raise AssertionError(f"Pillow could not write a {mode} {size} JPEG")


def pillow_draft(data, request):
    im = PIL.Image.open(io.BytesIO(data))
    res = im.draft(None, request)
    im.load()
    return im, res


def run_jobs(jobs):
    """Job messages through one `imgbatch run`; Results by key."""
    return {r.input_key: r for r in imgbatch.run_local([j.SerializeToString() for j in jobs],
                                                       binary=parity.binary(), backend=parity.backend())}


def source_job(key, source_bytes=None, draft_scale=0, raw=None):
    P = imgbatch.pb()
    job = P.Job(key_u64=key, contract_version=3)
    if raw is not None:
        job.source.raw.mode, (job.source.raw.width, job.source.raw.height) = raw.mode, raw.size
        job.source.raw.data = raw.tobytes()
    else:
        job.source.encoded = source_bytes
    job.source.draft_scale = draft_scale
    job.nodes.add().source.index = 0
    job.output.cpu.format = P.RAW
    return job


def without_adobe_marker(data):
    """The file without its APP14 "Adobe" segment (FF EE), which libjpeg
    writes for CMYK; libjpeg then takes 4 components as plain CMYK."""
    i = 2
    while i + 4 <= len(data) and data[i] == 0xFF and data[i + 1] not in (0xDA, 0xD9):
        n = int.from_bytes(data[i + 2:i + 4], "big")
        if data[i + 1] == 0xEE and data[i + 4:i + 9] == b"Adobe":
            return data[:i] + data[i + 2 + n:]
        i += 2 + n
    raise AssertionError("no Adobe segment")


@pytest.mark.parametrize("progressive", [False, True], ids=["baseline", "progressive"])
def test_full_size_decodes_match_pillow(progressive):
    r = parity.rng("jpeg-full", progressive)
    cases = []
    sizes = SIZES + [(1, 1), (1, 9), (r.randint(300, 1200), r.randint(1, 40))]
    sizes += [(r.randint(8, 300), r.randint(8, 300)) for _ in range(parity.scale(3))]
    for mode, subsampling in COLOURS:
        for size in sizes:
            data = jpeg(r, mode, size, subsampling, progressive, kind=r.choice(("noise", "smooth")))
            if mode == "CMYK" and r.random() < 0.5:
                data = without_adobe_marker(data)
            want = PIL.Image.open(io.BytesIO(data))
            want.load()
            assert (want.mode, want.size) == (mode, size)
            cases.append(Case(f"full-{mode}-{subsampling}-{progressive}-{size}", "decode", mode,
                              Image.open(data)))
    parity.assert_exact(cases)


@pytest.mark.parametrize("progressive", [False, True], ids=["baseline", "progressive"])
@pytest.mark.parametrize("mode,subsampling", COLOURS, ids=[f"{m}-{s}" for m, s in COLOURS])
def test_draft_scales_match_pillow(mode, subsampling, progressive):
    r = parity.rng("draft", mode, subsampling, progressive)
    cases, scales = [], set()
    sizes = SIZES + [(r.randint(8, 300), r.randint(8, 300)) for _ in range(parity.scale(3))]
    for i, size in enumerate(sizes):
        data = jpeg(r, mode, size, subsampling, progressive, kind=r.choice(("noise", "smooth")))
        for s in (2, 4, 8):
            request = (max(1, size[0] // s), max(1, size[1] // s))
            lazy = Image.open(data)
            got = lazy.draft(None, request)
            want, res = pillow_draft(data, request)
            assert got == res and (lazy.mode, lazy.size) == (want.mode, want.size), (size, s)
            if lazy._node.source.draft_scale() == 0:
                continue  # Pillow's draft kept the full size: nothing to test here
            scales.add(lazy._node.source.draft_scale())
            assert imgbatch.pb().Job.FromString(lazy.to_job()).contract_version == 3
            cases.append(Case(f"draft-{mode}-{subsampling}-{progressive}-{size}-{s}", "draft",
                              mode, lazy))
    assert scales == {2, 4, 8}
    parity.assert_exact(cases)


def test_a_wide_jpeg_past_the_side_bound_drafts_within_it():
    """The side bound is on the decoded (scaled) image: 8190 wide at 1/2."""
    r = parity.rng("draft-wide")
    data = jpeg(r, "L", (8190, 21), kind="smooth", quality=90)
    lazy = Image.open(data)
    lazy.draft(None, (4095, 10))
    assert lazy.size == (4095, 11)
    parity.assert_exact([Case("wide-8190", "draft", "L", lazy)])


def thumbnail_case(r, i):
    """Every third case shrinks a large JPEG at least 2 x gap on each side, so
    that it drafts whatever the draw (a small IB_PARITY_SCALE drew cases that
    almost never did); the others are drawn freely."""
    mode, subsampling = r.choice(COLOURS)
    drafts = i % 3 == 0
    lo = 600 if drafts else 40
    size = (r.randint(lo, 900), r.randint(lo, 900))
    data = jpeg(r, mode, size, subsampling, r.random() < 0.5, kind=r.choice(("noise", "smooth")))
    hi = 60 if drafts else 120
    want = (r.randint(4, hi) + r.choice((0, 0.5)), r.randint(4, hi))
    flt = r.choice(FILTERS)
    gap = r.choice((2.0, 2.0, 3.0, 1.0, 1.5) if drafts else (2.0, 2.0, 3.0, 1.0, 1.5, None))
    return data, mode, want, flt, gap


def thumbnails(cases):
    """Bytes equal to Pillow's, on either backend."""
    wrong = []
    for o in parity.run_cases(cases):
        if o.status != "exact":
            wrong.append(f"{o.case.case_id}: imgbatch {o.status}: {o.detail}")
    assert not wrong, (f"{len(wrong)} of {len(cases)} wrong (IB_PARITY_SEED={parity.SEED}):\n"
                       + "\n".join(wrong[:25]))


def test_thumbnail_of_a_jpeg_equals_pillows_thumbnail():
    r = parity.rng("draft-thumbnail")
    cases, drafted = [], 0
    for i in range(parity.scale(40)):
        data, mode, size, flt, gap = thumbnail_case(r, i)
        pil = PIL.Image.open(io.BytesIO(data))
        pil.thumbnail(size, flt, gap)
        lazy = Image.open(data)
        lazy.thumbnail(size, flt, gap)
        assert (lazy.mode, lazy.size) == (pil.mode, pil.size), i
        assert lazy.replay().tobytes() == pil.tobytes(), f"{i}: the recording is not Pillow's thumbnail"
        drafted += any(n.source is not None and n.source.draft_scale() for n in _nodes(lazy))
        cases.append(Case(f"thumb-{i}-{mode}-{pil.size}-{flt.name}-{gap}", "thumbnail", mode, lazy))
    assert drafted >= len(cases) // 3, drafted
    thumbnails(cases)


def test_a_thumbnail_that_is_the_draft_itself_has_no_resize():
    """800x600 to 100x75 with reducing_gap 1.0: draft's 1/8 already is the
    thumbnail, so Pillow's thumbnail() resizes nothing."""
    r = parity.rng("draft-exact")
    cases = []
    for mode, subsampling in COLOURS:
        data = jpeg(r, mode, (800, 600), subsampling, kind="smooth")
        pil = PIL.Image.open(io.BytesIO(data))
        pil.thumbnail((100, 75), reducing_gap=1.0)
        lazy = Image.open(data)
        lazy.thumbnail((100, 75), reducing_gap=1.0)
        assert lazy._node.op == "source" and lazy._node.source.draft_scale() == 8
        assert lazy.replay().tobytes() == pil.tobytes()
        cases.append(Case(f"exact-{mode}-{subsampling}", "thumbnail", mode, lazy))
    parity.assert_exact(cases)


def _nodes(lazy):
    from imgbatch._graph import topo_order

    return topo_order(lazy._node)


# ---------------------------------------------------------------- wire-level


def test_draft_scale_outside_pillows_scales_is_invalid():
    r = parity.rng("draft-bad-scale")
    data = jpeg(r, "RGB", (64, 64))
    res = run_jobs([source_job(k, data, s) for k, s in enumerate((3, 16, 7))])
    for k, s in enumerate((3, 16, 7)):
        e = res[k].error
        assert e and (e.stage, e.kind) == ("validate", "invalid") and f"draft_scale {s}" in e.message, e


def test_draft_scale_is_ignored_where_pillow_ignores_draft():
    """A PNG, and raw pixels, decode full size whatever the draft scale; a
    draft scale of 1 decodes a JPEG full size."""
    r = parity.rng("draft-ignored")
    pil = PIL.Image.frombytes("RGB", (37, 23), r.randbytes(37 * 23 * 3))
    png = io.BytesIO()
    pil.save(png, "PNG")
    assert PIL.Image.open(io.BytesIO(png.getvalue())).draft(None, (4, 4)) is None
    data = jpeg(r, "RGB", (37, 23))
    res = run_jobs([source_job(0, png.getvalue(), 4), source_job(1, raw=pil, draft_scale=8),
                    source_job(2, data, 1)])
    for k in (0, 1):
        assert res[k].error is None and (res[k].image.width, res[k].image.height) == (37, 23), res[k]
        assert res[k].image.data == pil.tobytes()
    full = PIL.Image.open(io.BytesIO(data))
    full.load()
    assert res[2].error is None and res[2].image.data == full.tobytes()


def test_a_truncated_jpeg_with_draft_is_a_decode_error_as_pillow_raises():
    r = parity.rng("draft-truncated")
    jobs, cuts = [], []
    for k, progressive in enumerate((False, True, False, True)):
        data = jpeg(r, "RGB", (160, 120), "4:2:0", progressive)
        cut = data[:len(data) * (1 + k % 2) // 3]
        with pytest.raises(OSError, match="truncated"):
            pillow_draft(cut, (40, 30))
        jobs.append(source_job(k, cut, 4))
        cuts.append(cut)
    for k, res in run_jobs(jobs).items():
        e = res.error
        assert e and (e.stage, e.kind) == ("decode", "decode") and "truncated" in e.message, (k, e)
        assert "jpeg draft 1/4" in e.message, e.message


def test_a_jpeg_cut_at_its_end_decodes_or_fails_as_in_pillow():
    """The whole file, without its EOI's last byte, without the EOI: Pillow
    decodes where libjpeg needs no byte past the data and calls the file
    truncated where its Huffman decoder reads ahead into the missing end;
    the worker does the same, with Pillow's bytes."""
    r = parity.rng("draft-no-eoi")
    jobs, wants = [], []
    for mode, sub in COLOURS:
        for progressive in (False, True):
            for size in ((99, 61), (17, 9), (64, 64), (r.randint(8, 200), r.randint(8, 200))):
                data = jpeg(r, mode, size, sub, progressive)
                assert data.endswith(b"\xff\xd9")
                for cut in (0, 1, 2):
                    try:
                        want = pillow_draft(data[:len(data) - cut], (size[0] // 4, size[1] // 4))[0]
                    except OSError as e:
                        assert "truncated" in str(e)
                        want = None
                    jobs.append(source_job(len(jobs), data[:len(data) - cut], 4))
                    wants.append(want)
    res = run_jobs(jobs)
    for k, want in enumerate(wants):
        got = res[k]
        if want is None:
            assert got.error and got.error.kind == "decode" and "truncated" in got.error.message, (k, got)
        else:
            assert got.error is None, (k, got.error)
            assert (got.image.width, got.image.height, got.image.data) == want.size + (want.tobytes(),), k
    assert sum(w is None for w in wants) > 10 and sum(w is not None for w in wants) > 20


def segments(data):
    """(marker, start, end) of each segment after SOI; a scan's entropy
    data belongs to its SOS segment."""
    out, i = [], 2
    while i + 4 <= len(data):
        assert data[i] == 0xFF, i
        marker = data[i + 1]
        if marker == 0xD9:
            out.append((marker, i, i + 2))
            break
        end = i + 2 + int.from_bytes(data[i + 2:i + 4], "big")
        if marker == 0xDA:
            while not (data[end] == 0xFF and data[end + 1] not in (0x00, *range(0xD0, 0xD8))):
                end += 1
        out.append((marker, i, end))
        i = end
    return out


def test_past_the_scan_cap_is_a_limit():
    """The last scan of a progressive file repeated 600 times: libjpeg only
    warns (a bogus progression), so the scan cap is what stops it."""
    r = parity.rng("draft-scans")
    data = jpeg(r, "RGB", (48, 32), "4:2:0", progressive=True)
    sos = [(s, e) for m, s, e in segments(data) if m == 0xDA]
    s, e = sos[-1]
    many = data[:e] + data[s:e] * 600 + data[e:]
    few = data[:e] + data[s:e] * 3 + data[e:]
    res = run_jobs([source_job(0, many, 2), source_job(1, few, 2), source_job(2, many, 0),
                    source_job(3, few, 0)])
    for k in (0, 2):  # drafted, and full size
        err = res[k].error
        assert err and (err.stage, err.kind) == ("decode", "limit") and "500 scans" in err.message, err
    assert res[1].error is None and res[3].error is None  # Pillow takes a few repeated scans too
    full = PIL.Image.open(io.BytesIO(few))
    full.load()
    assert res[3].image.data == full.tobytes()


def test_past_the_coefficient_memory_cap_is_a_limit():
    """A progressive file whose frame header claims 30000 x 30000: 1/8 of it
    fits the side bound, but libjpeg would keep every coefficient (5 GB),
    which the cap refuses before allocating."""
    r = parity.rng("draft-memory")
    data = jpeg(r, "RGB", (64, 64), "4:4:4", progressive=True)
    (m, s, e), = [seg for seg in segments(data) if seg[0] == 0xC2]
    sof = bytearray(data[s:e])
    sof[5:9] = (30000).to_bytes(2, "big") + (30000).to_bytes(2, "big")
    big = data[:s] + bytes(sof) + data[e:]
    res = run_jobs([source_job(0, big, 8)])
    err = res[0].error
    assert err and (err.stage, err.kind) == ("decode", "limit") and "512 MiB" in err.message, err


def test_corrupt_jpegs_are_answered_and_agree_with_pillow():
    """Random bytes overwritten in headers and entropy data: every job is
    answered (an image, or an error at validate/decode), and where both
    Pillow and the worker decode, their bytes are equal."""
    r = parity.rng("draft-corrupt")
    jobs, files = [], []
    for k in range(parity.scale(120)):
        mode, sub = r.choice(COLOURS)
        data = bytearray(jpeg(r, mode, (r.randint(16, 90), r.randint(16, 90)), sub, r.random() < 0.5))
        for _ in range(r.randint(1, 6)):
            at = r.randrange(2, len(data)) if r.random() < 0.7 else r.randrange(2, min(len(data), 700))
            data[at] = r.randrange(256)
        files.append(bytes(data))
        jobs.append(source_job(k, bytes(data), r.choice((1, 2, 4, 8))))  # 1: full size
    res = run_jobs(jobs)
    both = 0
    for k, job in enumerate(jobs):
        got = res[k]
        if got.error:
            # A frame header may now claim a side past the bound (validate).
            assert (got.error.stage, got.error.kind) in (
                ("decode", "decode"), ("decode", "unsupported"), ("validate", "limit")), got.error
            continue
        scale = job.source.draft_scale
        try:
            im = PIL.Image.open(io.BytesIO(files[k]))
            if scale > 1:
                im.draft(None, (max(1, im.width // scale), max(1, im.height // scale)))
                if im.decoderconfig[0] != scale:
                    continue
            im.load()
        except Exception:  # noqa: BLE001 - Pillow refuses what libjpeg took: nothing to compare
            continue
        both += 1
        assert (got.image.width, got.image.height) == im.size, k
        assert got.image.data == im.tobytes(), f"corrupt file {k}: bytes differ from Pillow's"
    assert both > parity.scale(120) // 12, both  # enough cases decoded to compare (most do)


def test_thumbnail_of_a_path_source_drafts_the_file_the_worker_reads(tmp_path):
    r = parity.rng("draft-path")
    data = jpeg(r, "RGB", (513, 387), "4:2:0", progressive=True, kind="smooth")
    (tmp_path / "photo.jpg").write_bytes(data)
    lazy = Image.open_path("photo.jpg", root=str(tmp_path))
    lazy.thumbnail((60, 60))
    pil = PIL.Image.open(io.BytesIO(data))
    pil.thumbnail((60, 60))
    job = imgbatch.pb().Job.FromString(lazy.to_job(key=1))
    # draft(None, (120, 120)): min(513 // 120, 387 // 120) = 3 -> 1/2.
    assert job.source.path == "photo.jpg" and job.source.draft_scale == 2
    assert lazy.replay().tobytes() == pil.tobytes()
    (res,) = imgbatch.run_local([job.SerializeToString()], binary=parity.binary(), backend=parity.backend(),
                                args=("--source-root", str(tmp_path)))
    assert res.error is None, res.error
    assert (res.image.width, res.image.height, res.image.data) == pil.size + (pil.tobytes(),)


def test_a_photo_sized_jpeg_thumbnail_equals_pillows():
    """12 MP (4032 x 3024, decoded at 1/4 by its draft) to 256."""
    r = parity.rng("draft-photo")
    bands = [PIL.Image.linear_gradient("L"), PIL.Image.radial_gradient("L"),
             PIL.Image.frombytes("L", (64, 48), r.randbytes(64 * 48)).resize((256, 256))]
    photo = PIL.Image.merge("RGB", [b.resize((4032, 3024), PIL.Image.Resampling.BILINEAR) for b in bands])
    buf = io.BytesIO()
    photo.save(buf, "JPEG", quality=85)
    data = buf.getvalue()
    pil = PIL.Image.open(io.BytesIO(data))
    pil.thumbnail((256, 256))
    lazy = Image.open(data)
    lazy.thumbnail((256, 256))
    assert imgbatch.pb().Job.FromString(lazy.to_job()).source.draft_scale == 4
    assert lazy.replay().tobytes() == pil.tobytes()
    thumbnails([Case("photo-4032x3024-256", "thumbnail", "RGB", lazy)])


def test_an_mpo_thumbnail_drafts_its_first_frame_as_pillow_does():
    r = parity.rng("draft-mpo")
    frames = [PIL.Image.frombytes("RGB", (50, 40), r.randbytes(6000)).resize((503, 377)) for _ in range(2)]
    buf = io.BytesIO()
    frames[0].save(buf, "MPO", save_all=True, append_images=frames[1:])
    pil = PIL.Image.open(io.BytesIO(buf.getvalue()))
    assert pil.format == "MPO"
    pil.thumbnail((60, 60))
    lazy = Image.open(buf.getvalue())
    lazy.thumbnail((60, 60))
    assert imgbatch.pb().Job.FromString(lazy.to_job()).source.draft_scale == 2
    assert lazy.replay().tobytes() == pil.tobytes()
    thumbnails([Case("mpo-503x377-60", "thumbnail", "RGB", lazy)])
