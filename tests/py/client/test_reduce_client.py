"""The recorder's Image.reduce: what it puts on the wire (factor pairs, the
box, Pillow's copy shortcut), and replay() and the worker's bytes equal to
Pillow's, through the real binary."""
import os
import random

import PIL.Image
import pytest

import imgbatch
from imgbatch import Image


def binary():
    path = os.environ.get("IB_BIN")
    assert path, "IB_BIN must name the imgbatch binary (ctest sets it)"
    return path


def last_node(lazy):
    return lazy.to_job_message(key="k").nodes[-1]


def test_reduce_records_factor_pair_and_box():
    n = last_node(Image.new("RGB", (40, 30)).reduce((3, 2), (1, 2, 39, 30)))
    assert n.WhichOneof("op") == "reduce"
    assert (n.reduce.factor_x, n.reduce.factor_y) == (3, 2)
    assert (n.reduce.box.left, n.reduce.box.top, n.reduce.box.right, n.reduce.box.bottom) == (1, 2, 39, 30)
    n = last_node(Image.new("L", (9, 9)).reduce(4))
    assert (n.reduce.factor_x, n.reduce.factor_y) == (4, 4)
    assert n.reduce.WhichOneof("box_present") is None


def test_factor_one_over_the_whole_image_is_pillows_copy():
    assert last_node(Image.new("RGBA", (7, 5)).reduce(1, (0, 0, 7, 5))).WhichOneof("op") == "copy"


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA", "CMYK", "RGBX"])
def test_reduce_replay_and_worker_equal_pillow(mode):
    r = random.Random(f"reduce-client-{mode}")
    jobs, wants = [], []
    for i in range(12):
        w, h = r.randint(1, 70), r.randint(1, 70)
        src = PIL.Image.frombytes(mode, (w, h), r.randbytes(w * h * len(mode)))
        factor = r.randint(1, 8) if i % 2 else (r.randint(1, 8), r.randint(1, 8))
        x0, y0 = r.randint(0, w - 1), r.randint(0, h - 1)
        box = (x0, y0, r.randint(x0 + 1, w), r.randint(y0 + 1, h)) if i % 3 == 0 else None
        want = src.reduce(factor, box)
        lazy = Image.frombytes(mode, src.size, src.tobytes()).reduce(factor, box)
        assert lazy.size == want.size
        assert lazy.replay().tobytes() == want.tobytes()
        jobs.append(lazy.to_job(key=i))
        wants.append(want)
    results = {res.input_key: res for res in imgbatch.run_local(iter(jobs), binary=binary())}
    assert len(results) == len(jobs)
    for i, want in enumerate(wants):
        res = results[i]
        assert res.error is None, res.error
        assert (res.image.mode, res.image.size) == (want.mode, want.size)
        assert res.image.data == want.tobytes(), f"case {i}"
