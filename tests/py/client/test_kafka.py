"""Producer, ResultReader, duplicate collapse and `python -m imgbatch produce`.

The broker is the real `imgbatch broker` (librdkafka's mock cluster over
TCP). No worker runs: this test plays it, reading the Jobs back from
imgbatch.jobs and publishing Results (some twice, as a crashed worker's
redelivery would) keyed `topic/partition/offset` like the worker does.
"""
import os
import subprocess
import sys
import uuid

import pytest
from PIL import Image as PILImage

import ibtest
import imgbatch
from imgbatch import Image, ImageFilter, ImageOps
from imgbatch._kafka import Delivery, collapse_duplicates, result_identity

pb = imgbatch.pb()
ck = pytest.importorskip("confluent_kafka")


def result_bytes(topic, partition, offset, key, worker="w1", job_id=1, data=b"\x01"):
    r = pb.Result(worker_id=worker, job_id=job_id, contract_version=imgbatch.CONTRACT_VERSION)
    if isinstance(key, str):
        r.key_string = key
    elif key is not None:
        r.key_u64 = key
    r.source.topic, r.source.partition, r.source.offset = topic, partition, offset
    r.image.mode, r.image.width, r.image.height, r.image.format = "L", len(data), 1, pb.RAW
    r.image.data = data
    return r.SerializeToString()


# ---------------------------------------------------------------- collapse (no broker)


def test_duplicates_collapse_by_message_key_then_by_source():
    a1 = imgbatch.parse_result(result_bytes("j", 0, 5, "a", worker="w1", job_id=1))
    a2 = imgbatch.parse_result(result_bytes("j", 0, 5, "a", worker="w2", job_id=9))  # re-executed
    b = imgbatch.parse_result(result_bytes("j", 1, 5, "b"))
    c_nokey = imgbatch.parse_result(result_bytes("j", 2, 0, "c"))
    c_dup = imgbatch.parse_result(result_bytes("j", 2, 0, "c", worker="w3"))
    bare = imgbatch.parse_result(pb.Result(key_string="x").SerializeToString())  # no coordinates
    msgs = [(b"j/0/5", a1), (b"j/1/5", b), (b"j/0/5", a2), (None, c_nokey), (b"j/2/0", c_dup),
            (None, bare), (None, bare)]
    out = list(collapse_duplicates(msgs))
    assert [(r.input_key, r.worker_id) for r in out] == [("a", "w1"), ("b", "w1"), ("c", "w1"),
                                                          ("x", ""), ("x", "")]
    assert result_identity(None, c_nokey) == "j/2/0"
    assert result_identity(None, bare) is None


def test_collapse_forgets_only_beyond_its_window():
    rs = [(f"t/0/{i % 3}".encode(), imgbatch.parse_result(result_bytes("t", 0, i % 3, i))) for i in range(9)]
    assert len(list(collapse_duplicates(rs))) == 3
    assert len(list(collapse_duplicates(rs, remember=2))) == 9  # 3 keys cycling through a window of 2


def test_graph_language_records_the_pillow_calls():
    src = Image.new("RGB", (20, 10), "red")
    steps = imgbatch.parse_graph("invert|gaussian_blur(2)|convert(L)|crop(0, 0, 8, 4)|"
                                 "transpose(ROTATE_90)|median(3)|filter(SHARPEN)|brightness(1.5)|"
                                 "expand(1, fill=9)|resize(3, 5)|tone(exposure_ev=0.5)")
    got = imgbatch.apply_graph(steps, src.convert("RGB"))
    ref = ImageOps.invert(src.convert("RGB")).filter(ImageFilter.GaussianBlur(2)).convert("L")
    ref = ref.crop((0, 0, 8, 4)).transpose(Image.Transpose.ROTATE_90).filter(ImageFilter.MedianFilter(3))
    ref = ref.filter(ImageFilter.SHARPEN)
    ref = imgbatch.ImageEnhance.Brightness(ref).enhance(1.5)
    ref = imgbatch.tone(ImageOps.expand(ref, 1, 9).resize((3, 5)), exposure_ev=0.5)
    assert got.to_job(key="k") == ref.to_job(key="k")
    with pytest.raises(ValueError, match="unknown step 'blurr'"):
        imgbatch.parse_graph("invert|blurr(2)")
    with pytest.raises(ValueError, match="step 2"):
        imgbatch.apply_graph(imgbatch.parse_graph("invert|convert(XYZ)"), src)


# ---------------------------------------------------------------- the broker


@pytest.fixture(scope="module")
def broker():
    if not os.environ.get("IB_BIN"):
        pytest.skip("IB_BIN is not set")
    with ibtest.broker() as (_, bootstrap):
        yield bootstrap


def consume_all(brokers, topic, n, timeout=30):
    """n messages of topic from the start: [(key, value, (topic, partition, offset))]."""
    c = ck.Consumer({"bootstrap.servers": brokers, "group.id": uuid.uuid4().hex,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    import time

    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append((m.key(), m.value(), (m.topic(), m.partition(), m.offset())))
    c.close()
    return out


def fresh_topics(brokers):
    # The mock broker auto-creates topics on first produce (4 partitions);
    # a unique pair per test keeps the tests independent.
    tag = uuid.uuid4().hex[:8]
    return f"jobs-{tag}", f"results-{tag}"


def test_producer_reports_coordinates_and_reader_yields_each_result_once(broker):
    jobs_topic, results_topic = fresh_topics(broker)
    ims = [ImageOps.invert(Image.new("L", (3 + i, 2), i * 10)) for i in range(12)]
    with imgbatch.Producer(broker, jobs_topic) as p:
        idx = [p.send(im, key=f"img{i}" if i % 2 else i, output="raw") for i, im in enumerate(ims)]
        raw = pb.Job.FromString(ims[0].to_job(key="prebuilt"))
        raw.contract_version = 0  # a hand-built Job: the producer stamps the contract
        idx.append(p.send(raw.SerializeToString()))
        deliveries = p.flush()
    assert idx == list(range(13)) and len(deliveries) == 13
    assert all(isinstance(d, Delivery) and d.topic == jobs_topic for d in deliveries)
    assert len({d.coordinates for d in deliveries}) == 13
    assert deliveries[12].input_key == "prebuilt"

    # Play the worker: every Job arrives with its key and the coordinates reported.
    seen = consume_all(broker, jobs_topic, 13)
    by_coord = {c: (k, v) for k, v, c in seen}
    assert set(by_coord) == {d.coordinates for d in deliveries}
    for d in deliveries:
        key, value = by_coord[d.coordinates]
        job = pb.Job.FromString(value)
        assert job.contract_version == imgbatch.CONTRACT_VERSION == 3
        assert key == str(d.input_key).encode()
        which = job.WhichOneof("input_key")
        assert getattr(job, which) == d.input_key

    # Results, each twice (a redelivery after a crash), and one stranger's.
    prod = ck.Producer({"bootstrap.servers": broker})
    for worker in ("w1", "w2"):
        for d in deliveries:
            prod.produce(results_topic, key=d.result_key.encode(),
                         value=result_bytes(*d.coordinates, d.input_key, worker=worker))
    prod.produce(results_topic, key=b"other/0/1", value=result_bytes("other", 0, 1, "x"))
    assert prod.flush(10) == 0

    with imgbatch.ResultReader(broker, results_topic) as reader:
        got = list(reader.results(deliveries, timeout=30))
    assert sorted(r.source for r in got) == sorted(d.coordinates for d in deliveries)
    assert {r.source: r.input_key for r in got} == {d.coordinates: d.input_key for d in deliveries}
    assert all(r.worker_id == "w1" for r in got)  # the first of each pair

    # The whole topic read through: 13 + 1 distinct, the 13 repeats dropped.
    with imgbatch.ResultReader(broker, results_topic) as reader:
        every = list(reader.read(timeout=5))
    assert len(every) == 14 and len({r.source for r in every}) == 14


def test_reader_times_out_naming_the_missing_job(broker):
    _, results_topic = fresh_topics(broker)
    with imgbatch.ResultReader(broker, results_topic) as reader:
        with pytest.raises(TimeoutError, match="1 job"):
            list(reader.results([("imgbatch.jobs", 0, 123)], timeout=2))


def test_produce_command_publishes_one_job_per_file(broker, tmp_path):
    jobs_topic, _ = fresh_topics(broker)
    files = []
    for i, mode in enumerate(("RGB", "L", "P")):
        im = PILImage.radial_gradient("L").resize((8 + i, 6)).convert(mode)
        path = tmp_path / f"f{i}.png"
        im.save(path)
        files.append(str(path))
    graph = "invert|gaussian_blur(2)|convert(L)"
    run = subprocess.run([sys.executable, "-m", "imgbatch", "produce", *files, "--graph", graph,
                          "--brokers", broker, "--topic", jobs_topic, "--output", "png"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = [line.split("\t") for line in run.stdout.splitlines()]
    assert [k for k, _ in lines] == files
    coords = {}
    for k, c in lines:
        t, p, o = c.rsplit("/", 2)
        coords[(t, int(p), int(o))] = k
    seen = consume_all(broker, jobs_topic, 3)
    assert {c for _, _, c in seen} == set(coords)
    for key, value, c in seen:
        job = pb.Job.FromString(value)
        path = coords[c]
        expect = ImageOps.invert(Image.open(path)).filter(ImageFilter.GaussianBlur(2)).convert("L")
        assert value == expect.to_job(key=path, output="png") and key == path.encode()
        assert job.output.cpu.format == pb.PNG

    bad = subprocess.run([sys.executable, "-m", "imgbatch", "produce", files[0], "--graph", "invert|nope",
                          "--brokers", broker], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown step 'nope'" in bad.stderr


def test_produce_command_waits_for_the_results_once_each(broker, tmp_path):
    jobs_topic, results_topic = fresh_topics(broker)
    files = []
    for i in range(2):
        path = tmp_path / f"w{i}.png"
        PILImage.new("RGB", (4 + i, 3), "red").save(path)
        files.append(str(path))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "imgbatch", "produce", *files, "--graph", "invert",
                             "--brokers", broker, "--topic", jobs_topic, "--results-topic", results_topic,
                             "--output", "raw", "--wait", "60", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Play the worker: answer each Job twice (a redelivery), the second one an error.
    seen = consume_all(broker, jobs_topic, 2)
    prod = ck.Producer({"bootstrap.servers": broker})
    for key, _, coords in seen:
        ok = result_bytes(*coords, key.decode(), data=b"\x05\x06")
        dup = pb.Result.FromString(ok)
        dup.ClearField("image")
        dup.error.message = "must not be seen"
        for value in (ok, dup.SerializeToString()):
            prod.produce(results_topic, key="{}/{}/{}".format(*coords).encode(), value=value)
    assert prod.flush(10) == 0
    stdout, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
    answered = [line.split("\t") for line in stdout.splitlines() if "\tok " in line]
    assert sorted(k for k, _ in answered) == files and "must not be seen" not in stdout
    assert sorted(p.name for p in out.iterdir()) == ["w0.png.raw", "w1.png.raw"]
