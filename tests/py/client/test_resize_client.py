"""The recorder's resize: what it puts on the wire for every filter, box and
reducing_gap, Pillow's own errors at record time, the graph language's
resize step (default BICUBIC, as Pillow)."""
import PIL.Image
import pytest

import imgbatch
from imgbatch import Image

R = PIL.Image.Resampling


def resize_params(lazy):
    node = lazy.to_job_message(key="k").nodes[-1]
    assert node.WhichOneof("op") == "resize"
    return node.resize


@pytest.mark.parametrize("flt", list(R), ids=lambda f: f.name)
def test_resize_records_filter_box_and_reducing_gap(flt):
    src = Image.new("RGB", (40, 30), "red")
    msg = resize_params(src.resize((7, 5), flt, (1.5, 2, 39.25, 30), 2.5))
    assert (msg.width, msg.height, msg.resample) == (7, 5, int(flt))
    assert (msg.box.left, msg.box.top, msg.box.right, msg.box.bottom) == (1.5, 2, 39.25, 30)
    assert msg.WhichOneof("reducing_gap_present") == "reducing_gap" and msg.reducing_gap == 2.5


def test_resize_defaults_to_bicubic_without_box_or_gap():
    msg = resize_params(Image.new("L", (9, 9)).resize((4, 4)))
    assert msg.resample == R.BICUBIC
    assert msg.WhichOneof("box_present") is None
    assert msg.WhichOneof("reducing_gap_present") is None


@pytest.mark.parametrize("call", [
    lambda im: im.resize((3, 3), R.LANCZOS, None, 0.5),
    lambda im: im.resize((3, 3), R.BOX, (0, 0, 99, 9)),
    lambda im: im.resize((3, 1), R.HAMMING, (4, 0, 4, 9), 2.0),  # reduce box empty
], ids=["gap-below-1", "box-outside", "empty-reduce-box"])
def test_record_time_errors_are_pillows(call):
    with pytest.raises(ValueError) as ours:
        call(Image.new("RGB", (9, 9)))
    with pytest.raises(ValueError) as pillows:
        call(PIL.Image.new("RGB", (9, 9)))
    assert str(ours.value) == str(pillows.value)


def test_replay_is_pillows_resize():
    src = PIL.Image.radial_gradient("L").convert("RGBA")
    lazy = Image.frombytes("RGBA", src.size, src.tobytes()).resize((37, 21), R.LANCZOS, None, 2.0)
    assert lazy.replay().tobytes() == src.resize((37, 21), R.LANCZOS, None, 2.0).tobytes()


def test_graph_language_resize_defaults_to_bicubic_and_takes_a_filter_name():
    src = Image.new("RGB", (20, 10), "red")
    for text, flt, gap in [("resize(5, 4)", R.BICUBIC, None),
                           ("resize(5, 4, LANCZOS)", R.LANCZOS, None),
                           ("resize(5, 4, NEAREST)", R.NEAREST, None),
                           ("resize(5, 4, BOX, reducing_gap=2)", R.BOX, 2.0)]:
        got = imgbatch.apply_graph(imgbatch.parse_graph(text), src)
        assert got.to_job(key="k") == src.resize((5, 4), flt, reducing_gap=gap).to_job(key="k"), text
    with pytest.raises(ValueError, match="step 1"):
        imgbatch.apply_graph(imgbatch.parse_graph("resize(5, 4, SHARP)"), src)
