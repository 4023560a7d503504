"""The client's renditions (contract version 3): renditions_job records
several outputs of one lazy graph Pillow-shaped - (image, format, quality or
save options) - into one Job; the Result's renditions come back in order;
`python -m imgbatch produce --renditions` writes one file per size. Run
through the real binary (`imgbatch run`, and a CPU worker on the embedded
broker)."""
import io
import os
import subprocess
import sys
import uuid

import PIL.Image as PILImage
import pytest

import imgbatch
from ibtest import run
from test_kafka import broker  # noqa: F401 - broker is a fixture
from test_kafka import fresh_topics as fresh_pair

pb = imgbatch.pb()


def photo(tmp_path, w=101, h=67, seed=3):
    path = tmp_path / f"photo{seed}.png"
    PILImage.frombytes("RGB", (w, h), bytes((i * 31 + seed) % 251 for i in range(w * h * 3))).save(path)
    return str(path)


def pillow_save(im, fmt, **kw):
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def test_renditions_job_shares_one_source_and_names_each_node_in_order(tmp_path):
    src = imgbatch.Image.open(photo(tmp_path))
    a, b = src.resize((50, 33)), src.resize((25, 17), imgbatch.Image.Resampling.LANCZOS)
    job = imgbatch.renditions_job_message([(a, "JPEG", 85), (b, "webp", {"quality": 70}), (a, "PNG")],
                                          key="k")
    assert job.contract_version == 3 == imgbatch.CONTRACT_VERSION
    assert not job.HasField("output") and len(job.nodes) == 3  # source, two resizes
    assert [r.node for r in job.renditions] == [1, 2, 1]
    assert [r.output.format for r in job.renditions] == [pb.JPEG, pb.WEBP, pb.PNG]
    assert job.renditions[0].output.quality == 85 and job.renditions[1].output.quality == 70
    assert job.renditions[2].output.WhichOneof("quality_present") is None


def test_every_rendition_equals_pillow_replay_and_save(tmp_path):
    src = imgbatch.Image.open(photo(tmp_path, 97, 61, 5))
    outs = [(src.resize((48, 30)), "JPEG", 85), (src.resize((24, 15)), "JPEG", {"quality": 60,
                                                                                  "subsampling": "4:4:4"}),
            (imgbatch.ImageOps.grayscale(src).resize((12, 8)), "RAW"), (src, "PNG")]
    data = imgbatch.renditions_job(outs, key="photo")
    p, (res,) = run([data], parse=imgbatch.parse_result)
    assert res.ok and res.image is None and len(res.renditions) == 4, res
    r0, r1, r2, r3 = (r.read() for r in res.renditions)
    assert r0.data == pillow_save(outs[0][0].replay(), "JPEG", quality=85)
    assert r1.data == pillow_save(outs[1][0].replay(), "JPEG", quality=60, subsampling="4:4:4")
    assert (r2.format, r2.mode, r2.data) == ("raw", "L", outs[2][0].replay().tobytes())
    assert r3.to_pil().tobytes() == src.replay().tobytes()


def test_recording_mistakes_are_named_before_anything_is_sent(tmp_path):
    src = imgbatch.Image.open(photo(tmp_path))
    with pytest.raises(ValueError, match="at least one"):
        imgbatch.renditions_job([])
    with pytest.raises(ValueError, match=r"at most 16 renditions per job, not 17"):
        imgbatch.renditions_job([(src, "PNG")] * 17)
    with pytest.raises(ValueError, match=r"renditions\[1\]: format must be one of"):
        imgbatch.renditions_job([(src, "PNG"), (src, "BMP")])
    with pytest.raises(TypeError, match=r"renditions\[0\]: Image is not a lazy image"):
        imgbatch.renditions_job([(PILImage.new("RGB", (2, 2)), "PNG")])
    with pytest.raises(ValueError, match=r"renditions\[0\]: quality must be an int in 0..100"):
        imgbatch.renditions_job([(src, "JPEG", 101)])
    with pytest.raises(TypeError, match=r"renditions\[0\]: unknown save options \['qualty'\]"):
        imgbatch.renditions_job([(src, "JPEG", {"qualty": 80})])


def produce(*args, cwd=None, timeout=180):
    return subprocess.run([sys.executable, "-m", "imgbatch", "produce", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def test_produce_renditions_writes_one_file_per_size(broker, tmp_path):  # noqa: F811
    jobs_topic, results_topic = fresh_pair(None)
    path = photo(tmp_path, 300, 200, 9)
    out = tmp_path / "out"
    worker = subprocess.Popen([os.environ["IB_BIN"], "worker", "--brokers", broker, "--backend", "cpu",
                               "--group", uuid.uuid4().hex, "--jobs-topic", jobs_topic,
                               "--results-topic", results_topic, "-X", "fetch.wait.max.ms=50"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        p = produce(os.path.basename(path), "--renditions", "256,128,64,16", "--output", "jpeg",
                    "--quality", "85", "--brokers", broker, "--topic", jobs_topic,
                    "--results-topic", results_topic, "--wait", "120", "--out", str(out),
                    cwd=str(tmp_path))
    finally:
        worker.terminate()
        worker_err = worker.communicate(timeout=60)[1]
    assert p.returncode == 0, p.stdout + p.stderr + worker_err[-3000:]
    assert "ok renditions 256:256x171 128:128x85 64:64x43 16:16x11" in p.stdout, p.stdout
    im = PILImage.open(path)
    for n, size in ((256, (256, 171)), (128, (128, 85)), (64, (64, 43)), (16, (16, 11))):
        want = pillow_save(im.resize(size, PILImage.Resampling.BICUBIC), "JPEG", quality=85)
        assert (out / f"photo9.png.{n}.jpeg").read_bytes() == want, n


def test_produce_renditions_usage_errors(tmp_path):
    path = photo(tmp_path)
    for bad in ("0,5", "a,b", "64,64"):
        p = produce(path, "--renditions", bad, "--brokers", "127.0.0.1:1")
        assert p.returncode == 2 and f"--renditions {bad!r}" in p.stderr, p.stderr
    p = produce(path, "--renditions", "64", "--output", "gpu", "--brokers", "127.0.0.1:1")
    assert p.returncode == 2 and "--output gpu does not apply" in p.stderr, p.stderr
    p = produce(path, "--brokers", "127.0.0.1:1")
    assert p.returncode == 2 and "--graph or --renditions is required" in p.stderr, p.stderr
