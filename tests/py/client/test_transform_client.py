"""Image.rotate / Image.transform on the recorder: what is recorded is the
call Pillow 12.3's Image.rotate makes (copy, a transpose, or transform with
its double matrix), and the graph language's steps record the same."""
import math

import PIL.Image

import imgbatch
from imgbatch import Image, _graphlang


def src(mode="RGBA", size=(9, 6)):
    return Image.new(mode, size, 7)


def recorded(im):
    return im._node.op, im._node.params, im.size


def test_rotate_records_pillows_fast_paths():
    assert recorded(src().rotate(0))[0] == "copy"
    assert recorded(src().rotate(360.0))[0] == "copy"
    assert recorded(src().rotate(-180)) == ("transpose", {"method": 3}, (9, 6))
    assert recorded(src().rotate(90, expand=True)) == ("transpose", {"method": 2}, (6, 9))
    assert recorded(src(size=(5, 5)).rotate(-90)) == ("transpose", {"method": 4}, (5, 5))
    # Not square and not expanded, or with a centre: Pillow's transform.
    assert recorded(src().rotate(90))[0] == "transform"
    assert recorded(src().rotate(180, center=(1, 1)))[0] == "transform"


def test_rotate_matrix_is_pillows_matrix():
    op, p, size = recorded(src().rotate(30, PIL.Image.Resampling.BICUBIC, expand=True,
                                        translate=(2, -1)))
    a = -math.radians(30)
    c, s = round(math.cos(a), 15), round(math.sin(a), 15)
    assert op == "transform" and p["matrix"][:2] == [c, s] and p["matrix"][3:5] == [-s, c]
    assert size == PIL.Image.new("RGBA", (9, 6)).rotate(30, expand=True, translate=(2, -1)).size
    assert p["resample"] == 3


def test_fill_is_the_pixel_of_the_image_pillow_transforms_into():
    # RGBA with a filter: Image.new("RGBa", ..., fillcolor), not premultiplied.
    p = recorded(src().rotate(30, PIL.Image.Resampling.BILINEAR, fillcolor=(200, 100, 50, 128)))[1]
    assert p["fill"] == bytes((200, 100, 50, 128))
    assert recorded(src("L").rotate(30, fillcolor="white"))[1]["fill"] == b"\xff"
    assert recorded(src().rotate(30))[1]["fill"] == b""


def test_graph_steps_record_what_the_calls_record():
    im = src("RGB")
    steps = _graphlang.parse_graph("rotate(-30.5, BICUBIC, expand=1) | transform(4, 3, 1, 0.5, 0, 0, 1, 0, BILINEAR)")
    got = _graphlang.apply_graph(steps, im)
    want = im.rotate(-30.5, PIL.Image.Resampling.BICUBIC, expand=1).transform(
        (4, 3), PIL.Image.Transform.AFFINE, (1, 0.5, 0, 0, 1, 0), PIL.Image.Resampling.BILINEAR)
    assert got.to_job_message(key="k").SerializeToString() == want.to_job_message(key="k").SerializeToString()


def test_unchecked_records_a_filter_pillow_refuses():
    with imgbatch.unchecked():
        assert recorded(src().rotate(30, PIL.Image.Resampling.LANCZOS))[1]["resample"] == 1
