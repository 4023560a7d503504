"""README's walk-through with a camera-sized photo: a generated 6000x4000
JPEG (quality 92, over 3 MB, so over librdkafka's default message.max.bytes)
goes through `python -m imgbatch produce --source-dir` as a path Job to the
real `imgbatch worker --backend cpu` on the embedded broker, and every result
--out writes is Pillow's: a thumbnail, an EXIF-rotated resize too large for a
message (a file Result copied from --output-dir), and renditions as JPEG and,
too large for a message, as PNG files.
"""
import io
import os
import subprocess
import sys
import uuid

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageOps as PILImageOps

from test_kafka import broker  # noqa: F401 - a fixture
from test_kafka import fresh_topics

W, H = 6000, 4000


def camera_photo():
    """Smooth gradients plus sensor-like noise, as a camera's 24 MP frame."""
    rng = np.random.default_rng(6000)
    x = np.linspace(0, 8, W, dtype=np.float32)[None, :]
    y = np.linspace(0, 6, H, dtype=np.float32)[:, None]
    planes = [128 + 90 * np.sin(x) * np.cos(y), 128 + 90 * np.cos(x + y), 128 + 80 * np.sin(x * y / 4)]
    rgb = np.stack([np.broadcast_to(p, (H, W)) for p in planes], -1)
    rgb = rgb + rng.normal(0, 10, (H, W, 3)).astype(np.float32)
    return PILImage.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), "RGB")


def save_jpeg(im, path, orientation=None):
    """Saved as a camera would (quality 92), with an EXIF orientation when given."""
    exif = PILImage.Exif()
    if orientation:
        exif[0x0112] = orientation
    im.save(path, "JPEG", quality=92, exif=exif.tobytes())
    return str(path)


def produce(*args, cwd):
    return subprocess.run([sys.executable, "-m", "imgbatch", "produce", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.fixture
def worker(broker, tmp_path):  # noqa: F811 - the imported fixture
    jobs_topic, results_topic = fresh_topics(broker)
    shared, results = tmp_path / "shared", tmp_path / "worker-results"
    shared.mkdir()
    results.mkdir()
    proc = subprocess.Popen([os.environ["IB_BIN"], "worker", "--brokers", broker, "--backend", "cpu",
                             "--group", uuid.uuid4().hex, "--jobs-topic", jobs_topic,
                             "--results-topic", results_topic, "--source-root", str(shared),
                             "--output-dir", str(results), "-X", "fetch.wait.max.ms=50"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    common = ["--brokers", broker, "--topic", jobs_topic, "--results-topic", results_topic,
              "--source-dir", str(shared / "incoming"), "--source-root", str(shared),
              "--wait", "60", "--out", str(tmp_path / "out"), "--output-dir", str(results)]
    try:
        yield common
    finally:
        proc.terminate()
        err = proc.communicate(timeout=60)[1]
        assert proc.returncode == 0, err[-3000:]


def test_a_camera_photo_goes_by_source_dir_and_every_result_is_pillows(worker, tmp_path):
    frame = camera_photo()
    photo = save_jpeg(frame, tmp_path / "photo.jpg")
    rotated = save_jpeg(frame, tmp_path / "rotated.jpg", orientation=6)
    assert os.path.getsize(photo) > 3_000_000
    out = tmp_path / "out"

    p = produce("photo.jpg", "--graph", "thumbnail(256)", *worker, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.splitlines()[-1] == "photo.jpg\tok ImageData RGB", p.stdout + p.stderr
    ref = PILImage.open(photo)
    ref.thumbnail((256, 256))
    got = PILImage.open(out / "photo.jpg.png")
    assert (got.mode, got.size, got.tobytes()) == (ref.mode, ref.size, ref.tobytes())

    # 1000x1500 RGB raw (4.5 MB) is over the Result's message size: a file.
    p = produce("rotated.jpg", "--graph", "exif_transpose|resize(1000, 1500)", "--output", "raw",
                *worker, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1].startswith("rotated.jpg\tok ImageFile RGB (copied from "), p.stdout
    ref = PILImageOps.exif_transpose(PILImage.open(rotated)).resize((1000, 1500))
    assert (out / "rotated.jpg.raw").read_bytes() == ref.tobytes()

    p = produce("photo.jpg", "--renditions", "1024,256", "--output", "jpeg", "--quality", "85",
                *worker, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == "photo.jpg\tok renditions 1024:1024x683 256:256x171", p.stdout
    src = PILImage.open(photo)
    for n, size in ((1024, (1024, 683)), (256, (256, 171))):
        f = io.BytesIO()
        src.resize(size).save(f, "JPEG", quality=85)
        assert (out / f"photo.jpg.{n}.jpeg").read_bytes() == f.getvalue(), n

    # Renditions too large for a message are files: copied with --output-dir,
    # else the line says how to copy them (nothing is written silently).
    p = produce("photo.jpg", "--renditions", "2048,256", *worker, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    line = p.stdout.splitlines()[-1]
    assert line.startswith("photo.jpg\tok renditions 2048:2048x1365 file ") and line.endswith(".png (copied)"), line
    for n, size in ((2048, (2048, 1365)), (256, (256, 171))):
        assert PILImage.open(out / f"photo.jpg.{n}.png").tobytes() == src.resize(size).tobytes(), n
    elsewhere = tmp_path / "out2"
    args = worker[:worker.index("--out")] + ["--out", str(elsewhere)]
    p = produce("photo.jpg", "--renditions", "2048,256", *args, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1].endswith("'s --output-dir; pass --output-dir DIR to copy them)"), p.stdout
    assert not elsewhere.exists()

    # Every Job went as a path: the photos are in the shared directory, once each.
    stored = sorted(os.listdir(tmp_path / "shared" / "incoming"))
    assert len(stored) == 2
