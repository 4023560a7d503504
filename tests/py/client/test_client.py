"""The Python producer client: recorders, Job serialization, delimited IO,
and the wire round trip through `imgbatch run`."""
import io
import os
import random
import subprocess

import pytest
from PIL import Image as PILImage

import imgbatch
from imgbatch import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps
from imgbatch.stream import encode_varint, from_value

MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "RGBX")
BANDS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4, "RGBX": 4}
pb = imgbatch.pb()


def rand_image(r, mode, w, h):
    return Image.frombytes(mode, (w, h), r.randbytes(w * h * BANDS[mode]))


def job_of(im, **kw):
    job = pb.Job()
    job.ParseFromString(im.to_job(**kw))
    return job


def binary():
    path = os.environ.get("IB_BIN")
    if not path:
        pytest.skip("IB_BIN is not set")
    return path


# ---------------------------------------------------------------- recorders


def _paste_into(a, src, box):
    b = a.copy()
    b.paste(src, box)
    return b


SHAPE_OPS = {
    **{f"transpose{m}": (lambda m: lambda a: a.transpose(m))(m) for m in range(7)},
    "crop": lambda a: a.crop((-1.5, 0.5, 4.5, 3)),
    "crop_none": lambda a: a.crop(),
    "resize": lambda a: a.resize((9, 4), Image.Resampling.NEAREST),
    "resize_box": lambda a: a.resize((3, 7), Image.NEAREST, box=(0.5, 0.5, 1, 1.5)),
    "resize_same": lambda a: a.resize(a.size),
    "getchannel": lambda a: a.getchannel(0),
    "getchannel_name": lambda a: a.getchannel(a.getbands()[-1]),
    "convert_L": lambda a: a.convert("L"),
    "convert_RGBA": lambda a: a.convert("RGBA"),
    "convert_same": lambda a: a.convert(a.mode),
    "point": lambda a: a.point(lambda i: i * 1.7 - 20),
    "median": lambda a: a.filter(ImageFilter.MedianFilter(3)),
    "gauss": lambda a: a.filter(ImageFilter.GaussianBlur((1.5, 0.7))),
    "box0": lambda a: a.filter(ImageFilter.BoxBlur(0)),
    "sharpen": lambda a: a.filter(ImageFilter.SHARPEN),
    "expand": lambda a: ImageOps.expand(a, (1, 2, 3, 4), "red"),
    "expand_negative": lambda a: ImageOps.expand(a, (-1, 2, 0, -1), 5),
    "flip": ImageOps.flip, "mirror": ImageOps.mirror, "grayscale": ImageOps.grayscale,
    "invert": ImageOps.invert, "solarize": lambda a: ImageOps.solarize(a, 100.5),
    "posterize": lambda a: ImageOps.posterize(a, 3),
    "multiply_min_size": lambda a: ImageChops.multiply(a, a.crop((0, 0, 2, 3))),
    "add": lambda a: ImageChops.add(a, a.copy(), 2.0, 10),
    "blend": lambda a: Image.blend(a, a.transpose(0), 0.3),
    "blend_alpha1_takes_im2_mode": lambda a: Image.blend(a, a.convert("CMYK"), 1.0),
    "blend_alpha1_float32": lambda a: Image.blend(a.convert("RGBA"), a.convert("CMYK"), 1 + 1e-9),
    "constant": lambda a: ImageChops.constant(a, 77),
    "brightness": lambda a: ImageEnhance.Brightness(a).enhance(1.4),
    "color": lambda a: ImageEnhance.Color(a).enhance(0.4),
    "contrast": lambda a: ImageEnhance.Contrast(a).enhance(1.2),
    "paste2": lambda a: _paste_into(a, a.crop((0, 0, 2, 2)), (3, -1)),
    "paste4": lambda a: _paste_into(a, a.crop((0, 0, 2, 2)), (1, 1, 3, 3)),
    "paste_colour": lambda a: _paste_into(a, 7, (1, 1, 3, 3)),
    "paste_other_mode": lambda a: _paste_into(a, a.convert("L"), (1, 1)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_recorded_mode_and_size_are_pillows(name):
    r = random.Random(name)
    fn = SHAPE_OPS[name]
    checked = 0
    for mode in MODES:
        for w, h in ((7, 5), (1, 1), (4, 9)):
            a = rand_image(r, mode, w, h)
            try:
                ref = fn(a).replay()
            except Exception:  # noqa: BLE001 - a context Pillow refuses
                continue
            lz = fn(a)
            assert (lz.mode, lz.size) == (ref.mode, ref.size), (mode, (w, h))
            job_of(lz)  # serializes
            checked += 1
    assert checked


def _apply_lut(im, lut):
    """Apply a per-band 256-entry table the way the worker must."""
    raw, n = im.tobytes(), len(im.getbands())
    return bytes(lut[(i % n) * 256 + b] for i, b in enumerate(raw))


@pytest.mark.parametrize("lut", [
    lambda i: i * 1.5 + 0.5,           # half-way values: Python round() is half to even
    lambda i: 255 - i,
    lambda i: (i - 128) * 3,           # clamps both ways
    lambda i: 2 ** 32 + 7 + i,         # wraps at 32 bits before CLIP8, as _imaging.c does
    lambda i: 2.5,
])
@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA"])
def test_point_table_is_the_one_pillow_applies(lut, mode):
    a = rand_image(random.Random(mode), mode, 16, 16)
    lz = a.point(lut)
    table = list(job_of(lz).nodes[-1].point.lut)
    assert len(table) == 256 * BANDS[mode]
    assert all(0 <= v <= 255 for v in table)
    assert _apply_lut(a.replay(), table) == lz.replay().tobytes()


def test_point_list_is_rounded_and_sent_whatever_its_length():
    a = rand_image(random.Random(1), "RGB", 3, 3)
    with pytest.raises(ValueError, match="wrong number of lut entries"):  # Pillow's, at record time
        a.point([0.5, 1.5, 300, -3] * 64)
    with imgbatch.unchecked():
        lz = a.point([0.5, 1.5, 300, -3] * 64)
    assert list(job_of(lz).nodes[-1].point.lut) == [0, 2, 255, 0] * 64
    with pytest.raises(OverflowError):
        a.point([2 ** 64] * 768)


def test_filters_map_to_their_params():
    a = rand_image(random.Random(2), "RGB", 6, 6)
    n = job_of(a.filter(ImageFilter.MaxFilter(5))).nodes[-1]
    assert (n.rank_filter.size, n.rank_filter.rank) == (5, 24)
    n = job_of(a.filter(ImageFilter.MedianFilter)).nodes[-1]  # a class is instantiated, as Pillow does
    assert (n.rank_filter.size, n.rank_filter.rank) == (3, 4)
    n = job_of(a.filter(ImageFilter.GaussianBlur((2, 0.5)))).nodes[-1]
    assert (n.gaussian_blur.radius_x, n.gaussian_blur.radius_y) == (2, 0.5)
    n = job_of(a.filter(ImageFilter.BoxBlur(3))).nodes[-1]
    assert (n.box_blur.radius_x, n.box_blur.radius_y) == (3, 3)
    n = job_of(a.filter(ImageFilter.Kernel((3, 3), [1] * 9, offset=4))).nodes[-1]
    assert (n.kernel.size, n.kernel.scale, n.kernel.offset, len(n.kernel.kernel)) == (3, 9, 4, 9)
    n = job_of(a.filter(ImageFilter.Kernel((3, 3), [1, -1] + [0] * 7))).nodes[-1]
    assert n.kernel.scale == 0  # Pillow divides by the zero sum; nothing turns it into 1
    n = job_of(a.filter(ImageFilter.BLUR)).nodes[-1]
    assert (n.kernel.size, n.kernel.scale) == (5, 16)
    assert job_of(a.filter(ImageFilter.GaussianBlur(0))).nodes[-1].WhichOneof("op") == "copy"
    with pytest.raises(NotImplementedError):
        a.filter(ImageFilter.UnsharpMask())
    # A non-square Kernel: Pillow refuses it when filtering, and so does the recorder.
    with pytest.raises(ValueError, match="bad kernel size"):
        PILImage.new("L", (6, 6)).filter(ImageFilter.Kernel((3, 5), [1] * 15))
    with pytest.raises(ValueError, match="bad kernel size"):
        a.filter(ImageFilter.Kernel((3, 5), [1] * 15))


def test_colours_and_params_are_resolved_by_pillow():
    a = rand_image(random.Random(3), "RGBA", 4, 4)
    assert job_of(ImageOps.expand(a, 2, "red")).nodes[-1].expand.fill == b"\xff\x00\x00\xff"
    assert job_of(Image.new("LA", (2, 2), 7)).source.fill.color == b"\x07\x00"
    assert job_of(ImageChops.constant(a, 300)).nodes[-1].constant.value == 255
    assert job_of(ImageChops.constant(a, "red")).nodes[-1].constant.value == 76
    L = rand_image(random.Random(3), "L", 4, 4)
    assert job_of(ImageOps.solarize(L, 100.5)).nodes[-1].solarize.threshold == 101
    assert job_of(ImageOps.solarize(L, -5)).nodes[-1].solarize.threshold == 0
    assert job_of(ImageOps.solarize(L, 999)).nodes[-1].solarize.threshold == 256
    assert job_of(a.getchannel("A")).nodes[-1].getchannel.band == 3
    with pytest.raises(ValueError):
        a.getchannel("Z")
    n = job_of(a.crop((0.5, 1.5, 2.5, 3.49))).nodes[-1].crop  # round half to even
    assert (n.left, n.top, n.right, n.bottom) == (0, 2, 2, 3)


# ---------------------------------------------------------------- Job structure


def test_graph_is_topological_with_sources_indexed_and_shared_nodes_once():
    r = random.Random(4)
    a = rand_image(r, "RGB", 5, 5)
    b = rand_image(r, "RGB", 5, 5)
    x = ImageOps.invert(a)
    out = ImageChops.multiply(ImageChops.screen(x, b), x.transpose(2))
    job = job_of(out)
    assert job.source.raw.data == a._node.source.data
    assert [s.raw.data for s in job.extra_sources] == [b._node.source.data]
    ops = [n.WhichOneof("op") for n in job.nodes]
    assert ops.count("invert") == 1 and ops[-1] == "chops"
    for i, n in enumerate(job.nodes):
        assert all(j < i for j in n.inputs)
    srcs = [n.source.index for n in job.nodes if n.WhichOneof("op") == "source"]
    assert sorted(srcs) == [0, 1]


def test_identical_sources_and_identical_nodes_are_emitted_once():
    data = bytes(range(12))
    a1 = Image.frombytes("L", (4, 3), data)
    a2 = Image.frombytes("L", (4, 3), data)
    job = job_of(ImageChops.add(a1.transpose(0), a2.transpose(0)))
    assert len(job.extra_sources) == 0
    assert [n.WhichOneof("op") for n in job.nodes] == ["source", "transpose", "chops"]
    assert list(job.nodes[2].inputs) == [1, 1]


def test_paste_rebinds_only_its_handle():
    r = random.Random(5)
    a = rand_image(r, "RGB", 6, 6)
    before = a.copy()
    a.paste(rand_image(r, "RGB", 2, 2), (1, 1))
    assert job_of(before).nodes[-1].WhichOneof("op") == "copy"
    assert job_of(a).nodes[-1].WhichOneof("op") == "paste"
    assert before.replay().tobytes() != a.replay().tobytes()


def test_job_fields_keys_outputs_metadata():
    im = Image.new("RGB", (2, 2))
    job = job_of(im, key="k", output="png", metadata={"n": -1, "big": 2 ** 63, "f": 0.5, "b": True,
                                                      "s": "x", "y": b"\x00", "l": [1, [2]],
                                                      "m": {"a": {}}},
                 quality=0, compression=6, correlation_id="c", deadline_unix_ms=9)
    assert job.key_string == "k" and job.output.cpu.format == pb.PNG and job.output.cpu.compression == 6
    assert {k: from_value(v) for k, v in job.metadata.items()} == {
        "n": -1, "big": 2 ** 63, "f": 0.5, "b": True, "s": "x", "y": b"\x00", "l": [1, [2]],
        "m": {"a": {}}}
    assert job.correlation_id == "c" and job.deadline_unix_ms == 9
    assert job_of(im, key=2 ** 64 - 1).key_u64 == 2 ** 64 - 1
    assert job_of(im, key="").WhichOneof("input_key") == "key_string"
    assert job_of(im).WhichOneof("input_key") is None
    assert job_of(im, output="gpu").output.WhichOneof("target") == "gpu"
    for bad in (True, -1, 2 ** 64, 1.5):
        with pytest.raises((TypeError, ValueError)):
            im.to_job(key=bad)
    with pytest.raises(ValueError):
        im.to_job(output="bmp")


def test_output_options_are_pillows_save_options():
    im = Image.new("RGB", (2, 2))
    cpu = job_of(im, output="jpeg").output.cpu
    assert not cpu.HasField("quality") and cpu.subsampling == pb.SUBSAMPLING_DEFAULT
    assert not cpu.progressive and not cpu.optimize
    assert not job_of(im, output="jpeg", quality=-1).output.cpu.HasField("quality")
    cpu = job_of(im, output="jpeg", quality=0, subsampling="4:2:2", progressive=True,
                 optimize=True).output.cpu
    assert cpu.HasField("quality") and cpu.quality == 0
    assert cpu.subsampling == pb.SUBSAMPLING_422 and cpu.progressive and cpu.optimize
    for given, want in (("4:4:4", pb.SUBSAMPLING_444), (0, pb.SUBSAMPLING_444), (1, pb.SUBSAMPLING_422),
                        (2, pb.SUBSAMPLING_420), ("4:1:1", pb.SUBSAMPLING_420), (-1, pb.SUBSAMPLING_DEFAULT)):
        assert job_of(im, output="jpeg", subsampling=given).output.cpu.subsampling == want
    for bad in (101, -2, 1.5, True, "keep"):
        with pytest.raises(ValueError, match="quality must be an int in 0..100"):
            im.to_job(output="jpeg", quality=bad)
    with pytest.raises(ValueError, match="subsampling must be one of"):
        im.to_job(output="jpeg", subsampling="4:4:0")


def test_open_keeps_file_bytes_and_pillows_header():
    buf = io.BytesIO()
    PILImage.new("RGBA", (3, 7), (1, 2, 3, 4)).save(buf, "PNG")
    im = Image.open(io.BytesIO(buf.getvalue()))
    assert (im.mode, im.size) == ("RGBA", (3, 7))
    assert job_of(im).source.encoded == buf.getvalue()
    assert im.transpose(2).replay().size == (7, 3)


# ---------------------------------------------------------------- delimited IO


def test_write_then_read_delimited_round_trips():
    msgs = [b"", b"x", bytes(127), bytes(128), bytes(300), os.urandom(70000)]
    buf = io.BytesIO()
    assert imgbatch.write_delimited(buf, msgs) == len(msgs)
    buf.seek(0)
    assert list(imgbatch.read_delimited(buf)) == msgs
    assert encode_varint(300) == b"\xac\x02"


def test_truncated_streams_raise():
    with pytest.raises(EOFError):
        list(imgbatch.read_delimited(io.BytesIO(b"\x05ab")))
    with pytest.raises(EOFError):
        list(imgbatch.read_delimited(io.BytesIO(b"\x80")))


def test_results_built_in_python_parse():
    res = pb.Result(job_id=7, worker_id="w", key_u64=3)
    res.error.stage = pb.DECODE
    res.error.kind = pb.DECODE_ERROR
    res.error.message = "bad png"
    ok = pb.Result(key_string="a")
    ok.image.mode, ok.image.width, ok.image.height, ok.image.data = "L", 2, 1, b"\x01\x02"
    ok.image.format = pb.RAW
    ok.metadata["m"].int_value = 5
    buf = io.BytesIO()
    imgbatch.write_delimited(buf, [res, ok])
    buf.seek(0)
    e, i = list(imgbatch.read_results(buf))
    assert (e.job_id, e.input_key, e.error.stage, e.error.kind, e.error.message) == \
        (7, 3, "decode", "decode", "bad png")
    assert i.job_id is None and i.input_key == "a" and i.metadata == {"m": 5}
    assert (i.image.mode, i.image.size, i.image.format) == ("L", (2, 1), "raw")
    assert i.image.to_pil().tobytes() == b"\x01\x02"


# ---------------------------------------------------------------- through imgbatch run


def test_jobs_round_trip_through_imgbatch_run():
    r = random.Random(6)
    imgs = [rand_image(r, m, r.randint(1, 20), r.randint(1, 20)).copy() for m in MODES]
    jobs = [im.to_job(key=f"k{i}" if i % 2 else i, metadata={"i": i, "l": [b"x", {"d": 1.5}]},
                      correlation_id=f"c{i}")
            for i, im in enumerate(imgs)]
    results = list(imgbatch.run_local(iter(jobs), binary=binary()))
    assert len(results) == len(imgs)
    by_key = {res.input_key: res for res in results}
    for i, im in enumerate(imgs):
        res = by_key[f"k{i}" if i % 2 else i]
        assert res.error is None, res.error
        ref = im.replay()
        assert (res.image.mode, res.image.size, res.image.format) == (ref.mode, ref.size, "raw")
        assert res.image.data == ref.tobytes()
        assert res.metadata == {"i": i, "l": [b"x", {"d": 1.5}]}
        assert res.correlation_id == f"c{i}"
    ids = [res.job_id for res in results]
    assert len(set(ids)) == len(ids)


def test_png_output_decodes_to_pillows_pixels():
    im = rand_image(random.Random(7), "RGBA", 9, 4).copy()
    (res,) = imgbatch.run_local([im.to_job(key=1, output="png")], binary=binary())
    assert res.error is None, res.error
    assert res.image.format == "png"
    assert res.image.to_pil().tobytes() == im.replay().tobytes()


def test_garbage_gets_a_parse_error_result_and_the_stream_goes_on():
    good = Image.new("L", (2, 2), 9).copy()
    stream = [good.to_job(key="before"), b"\xff\xfe garbage \x00", good.to_job(key="after")]
    results = list(imgbatch.run_local(stream, binary=binary()))  # any completion order
    by_key = {res.input_key: res for res in results}
    assert len(results) == 3 and set(by_key) == {"before", None, "after"}
    bad = by_key[None]
    assert (bad.error.stage, bad.error.kind) == ("parse", "invalid")
    assert bad.job_id is None or isinstance(bad.job_id, int)
    assert by_key["before"].ok and by_key["after"].ok


def test_invalid_graph_is_a_validate_error_naming_the_key():
    job = pb.Job(key_u64=5)
    job.source.raw.mode, job.source.raw.width, job.source.raw.height = "L", 1, 1
    job.source.raw.data = b"\x00"
    job.nodes.add().source.index = 0
    job.nodes.add().inputs.append(1)  # refers to itself: a cycle
    job.nodes[1].copy.SetInParent()
    (res,) = imgbatch.run_local([job], binary=binary())
    assert res.input_key == 5 and res.error.stage == "validate" and res.error.kind == "invalid"


def test_truncated_input_yields_the_good_result_and_a_parse_error_then_exit_1():
    good = Image.new("L", (1, 1)).copy().to_job(key="ok")
    p = subprocess.run([binary(), "run"], input=encode_varint(len(good)) + good + b"\x09abc",
                       capture_output=True, timeout=60)
    assert p.returncode == 1
    by_key = {res.input_key: res for res in imgbatch.read_results(io.BytesIO(p.stdout))}
    assert set(by_key) == {"ok", None} and by_key["ok"].ok
    assert (by_key[None].error.stage, by_key[None].error.kind) == ("parse", "invalid")


def test_path_sources_resolve_inside_the_source_root(tmp_path):
    PILImage.frombytes("RGB", (5, 4), bytes(range(60))).save(tmp_path / "a.png")
    im = Image.open_path("a.png", root=str(tmp_path))
    assert (im.mode, im.size) == ("RGB", (5, 4))
    assert job_of(im).source.path == "a.png"
    out = im.transpose(Image.Transpose.ROTATE_90)
    (res,) = imgbatch.run_local([out.to_job(key=1)], binary=binary(),
                                args=("--source-root", str(tmp_path)))
    assert res.error is None, res.error
    assert res.image.data == out.replay().tobytes()


def test_keep_metadata_writes_the_policy_and_refuses_other_names():
    from imgbatch import imgbatch_pb2 as pb
    lz = imgbatch.Image.new("RGB", (2, 2))
    assert lz.to_job_message(output="jpeg").output.cpu.metadata == pb.METADATA_STRIP
    for name, value in (("keep", pb.METADATA_KEEP),
                        ("keep_reset_orientation", pb.METADATA_KEEP_RESET_ORIENTATION)):
        assert lz.to_job_message(output="png", keep_metadata=name).output.cpu.metadata == value
    with pytest.raises(ValueError, match="keep_metadata"):
        lz.to_job(output="webp", keep_metadata="all")


def test_exif_transpose_needs_a_source_and_no_in_place():
    lz = imgbatch.Image.new("RGB", (2, 3))
    assert imgbatch.ImageOps.exif_transpose(lz).size == (2, 3)
    with pytest.raises(NotImplementedError, match="source"):
        imgbatch.ImageOps.exif_transpose(imgbatch.ImageOps.invert(lz))
    with pytest.raises(NotImplementedError, match="in_place"):
        imgbatch.ImageOps.exif_transpose(lz, in_place=True)
