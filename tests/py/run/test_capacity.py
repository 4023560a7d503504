"""docs/credits.md: at the default caps (host_bytes 256 MiB, gpu_bytes
512 MiB) `imgbatch run --backend cpu` admits a 4096^2 RGBA 3x3 Kernel job and a
Kernel -> GaussianBlur chain - the raw source is charged once, read in place,
and the blur holds no image-sized scratch - and the results equal Pillow's."""
import os
import subprocess

import numpy as np
import pytest
from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes
from PIL import Image, ImageFilter

from ibtest import raw_job
from imgbatch import imgbatch_pb2 as pb

BIN = os.environ["IB_BIN"]
SIDE = 4096
WEIGHTS = [1.0, 2.0, 1.0, 2.0, -4.0, 2.0, 1.0, 2.0, 1.0]


@pytest.mark.parametrize("chain", [False, True], ids=["kernel", "kernel-gaussian"])
def test_a_4096_square_rgba_job_is_admitted_at_the_defaults_and_equals_pillow(chain):
    pixels = np.random.default_rng(9).integers(0, 256, SIDE * SIDE * 4, dtype=np.uint8).tobytes()
    job = raw_job(1, SIDE, SIDE, "RGBA", data=pixels, copy=False)
    node = job.nodes.add()
    node.inputs.append(0)
    node.kernel.size = 3
    node.kernel.kernel.extend(WEIGHTS)
    node.kernel.scale = 9.0
    node.kernel.offset = 3.0
    if chain:
        node = job.nodes.add()
        node.inputs.append(1)
        node.gaussian_blur.radius_x = node.gaussian_blur.radius_y = 2.5
    msg = job.SerializeToString()
    p = subprocess.run([BIN, "run", "--backend", "cpu"], input=_VarintBytes(len(msg)) + msg,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    n, pos = _DecodeVarint32(p.stdout, 0)
    r = pb.Result()
    r.ParseFromString(p.stdout[pos:pos + n])
    assert r.WhichOneof("outcome") == "image", r.error.message
    assert (r.image.mode, r.image.width, r.image.height) == ("RGBA", SIDE, SIDE)
    want = Image.frombytes("RGBA", (SIDE, SIDE), pixels).filter(
        ImageFilter.Kernel((3, 3), WEIGHTS, scale=9.0, offset=3.0))
    if chain:
        want = want.filter(ImageFilter.GaussianBlur(2.5))
    assert r.image.data == want.tobytes()
