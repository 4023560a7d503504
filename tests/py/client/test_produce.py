"""`python -m imgbatch produce` at the edges a new user meets first: a wrong
broker address, a photo over the message size, output names, file Results,
graph mistakes and how soon the first Result is seen.

The broker is the real `imgbatch broker`; where a worker is needed it is
the real `imgbatch worker --backend cpu`, otherwise the test plays it.
"""
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest
from PIL import Image as PILImage

import imgbatch
from test_kafka import broker, consume_all  # noqa: F401 - broker is a fixture
from test_kafka import fresh_topics as fresh_pair

pb = imgbatch.pb()
ck = pytest.importorskip("confluent_kafka")


def produce(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "imgbatch", "produce", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def noise_png(path, w, h):
    """An incompressible RGB PNG (w*h*3 bytes and more on disk)."""
    PILImage.frombytes("RGB", (w, h), os.urandom(w * h * 3)).save(path)
    return str(path)


def small_png(path, size=(5, 4), color="red"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    PILImage.new("RGB", size, color).save(path)
    return str(path)


def fresh_topics():
    return fresh_pair(None)


def jobs_on(brokers, topic, n, timeout=30):
    """n Jobs of topic from the start: [(key, Job, coordinates)]."""
    return [(k, pb.Job.FromString(v), c) for k, v, c in consume_all(brokers, topic, n, timeout)]


# ---------------------------------------------------------------- no broker


def test_graph_mistakes_name_the_step_and_how_it_is_written(tmp_path):
    f = small_png(tmp_path / "x.png")
    cases = {
        "invert|gaussian_blur(radius=2)":
            "step 2 gaussian_blur(radius=2): no argument named radius; "
            "expected gaussian_blur(r[, ry])",
        "resize(1, 2, 3, 4, 5)": "step 1 resize(1, 2, 3, 4, 5): too many arguments; "
            "expected resize(width, height[, FILTER], reducing_gap=g)",
        "rank(3)": "step 1 rank(3): too few arguments; expected rank(size, rank)",
        "invert(1)": "step 1 invert(1): too many arguments; expected invert (no arguments)",
        "crop(1, 2)": "step 1 crop(1, 2): wrong number of values; expected crop(left, top, right, bottom)",
        "transpose(SIDEWAYS)": "step 1 transpose('SIDEWAYS'): unknown value 'SIDEWAYS'; expected transpose(METHOD)",
        "median(width=3)": "step 1 median(width=3): no argument named width; expected median(size=3)",
        "rotate(30, SIDEWAYS)": "step 1 rotate(30, 'SIDEWAYS'): unknown value 'SIDEWAYS'; "
            "expected rotate(angle[, FILTER], expand=0)",
        "transform(3, 4, 1, 0)": "step 1 transform(3, 4, 1, 0): too few arguments; "
            "expected transform(width, height, a, b, c, d, e, f[, FILTER])",
    }
    for graph, message in cases.items():
        p = produce(f, "--graph", graph, "--brokers", "127.0.0.1:1")
        assert p.returncode == 2, (graph, p.stderr)
        assert p.stderr.strip() == f"{f}: TypeError: imgbatch graph: {message}" or \
            p.stderr.strip() == f"{f}: ValueError: imgbatch graph: {message}", (graph, p.stderr)
        for leak in ("<locals>", "<lambda>", "Traceback", "positional argument", "index out of range"):
            assert leak not in p.stderr, (graph, p.stderr)


def test_unknown_output_format_is_a_usage_error(tmp_path):
    p = produce(small_png(tmp_path / "x.png"), "--graph", "invert", "--brokers", "127.0.0.1:1",
                "--output", "jpg")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "argument --output: invalid choice: 'jpg'" in p.stderr and "'jpeg'" in p.stderr


def test_out_without_wait_is_a_usage_error_not_a_silent_no_op(tmp_path):
    p = produce(small_png(tmp_path / "x.png"), "--graph", "invert", "--brokers", "127.0.0.1:1",
                "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert p.stderr.splitlines()[-1].endswith("error: --out needs --wait SECONDS: results are written "
                                              "while they are awaited"), p.stderr


def test_an_unreachable_broker_is_one_line_naming_it_within_the_wait(tmp_path):
    f = small_png(tmp_path / "x.png")
    t0 = time.monotonic()
    p = produce(f, "--graph", "invert", "--brokers", "127.0.0.1:1", "--wait", "3")
    took = time.monotonic() - t0
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == [
        "imgbatch: no Kafka broker answered at 127.0.0.1:1 within 3 s "
        "(Failed to get metadata: Local: Broker transport failure)"], p.stderr
    assert took < 3 + 5, took  # the wait, and the interpreter's start
    # Without --wait the connect timeout bounds it; --verbose shows librdkafka.
    p = produce(f, "--graph", "invert", "--brokers", "127.0.0.1:1", "--connect-timeout", "1", "-v")
    lines = p.stderr.splitlines()
    assert p.returncode == 1 and lines[-1].startswith("imgbatch: no Kafka broker answered at 127.0.0.1:1 within 1 s")
    assert lines[:-1] and all(line.startswith("imgbatch.kafka ") for line in lines[:-1]), p.stderr
    assert "Connect to ipv4#127.0.0.1:1 failed" in lines[0]


def test_the_library_fails_fast_too():
    for make in (lambda: imgbatch.Producer("127.0.0.1:1", connect_timeout=1),
                 lambda: imgbatch.ResultReader("127.0.0.1:1", connect_timeout=1)):
        t0 = time.monotonic()
        with pytest.raises(ConnectionError, match=r"no Kafka broker answered at 127\.0\.0\.1:1 within 1 s"):
            make()
        assert time.monotonic() - t0 < 4


# ---------------------------------------------------------------- the broker, the test as the worker


def test_a_job_over_the_message_size_is_reported_naming_both_remedies(broker, tmp_path):
    jobs_topic, _ = fresh_topics()
    small = small_png(tmp_path / "small.png")
    big = noise_png(tmp_path / "big.png", 700, 600)  # about 1.26 MB of PNG
    other = small_png(tmp_path / "later.png", color="blue")
    p = produce(small, big, other, "--graph", "invert", "--brokers", broker, "--topic", jobs_topic)
    assert p.returncode == 1 and "Traceback" not in p.stderr + p.stdout, p.stderr
    lines = dict(line.split("\t", 1) for line in p.stdout.splitlines())
    assert list(lines) == [small, big, other]
    why = lines[big]
    assert why.startswith(f"error imgbatch: the Job for '{big}' is ") and "message.max.bytes (1000000)" in why
    assert "-X message.max.bytes=N on both" in why and "--source-dir DIR" in why and "--source-root" in why
    sent = jobs_on(broker, jobs_topic, 2)
    assert sorted(k for k, _, _ in sent) == sorted([small.encode(), other.encode()])
    assert lines[small] != lines[other] and all(v.startswith(jobs_topic + "/") for v in (lines[small], lines[other]))

    # The first remedy: a larger message.max.bytes (the embedded broker takes it as it is).
    p = produce(big, "--graph", "invert", "--brokers", broker, "--topic", jobs_topic,
                "-X", "message.max.bytes=4000000")
    assert p.returncode == 0, p.stdout + p.stderr
    (key, job, _), = [j for j in jobs_on(broker, jobs_topic, 3) if j[0] == big.encode()]
    assert job.source.encoded == open(big, "rb").read()


def test_the_embedded_broker_takes_no_job_over_half_its_partition_whatever_the_limit(broker, tmp_path):
    # librdkafka 2.0.2's mock deletes a message that passes 5 MiB with the
    # partition's newest one, so a raised message.max.bytes must not let a
    # 3 MB Job go there to be lost unanswered: it is refused, naming the way
    # that works, and --source-dir sends it as a path Job.
    jobs_topic, _ = fresh_topics()
    big = noise_png(tmp_path / "big.png", 1100, 1000)  # about 3.3 MB of PNG
    p = produce(big, "--graph", "invert", "--brokers", broker, "--topic", jobs_topic,
                "-X", "message.max.bytes=16000000")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    (key, why), = [line.split("\t", 1) for line in p.stdout.splitlines()]
    assert key == big and why.startswith(f"error imgbatch: the Job for '{big}' is "), why
    assert "over 2621440 bytes, the most the embedded broker keeps safely" in why
    assert "--source-dir DIR" in why and "--source-root" in why
    p = produce(big, "--graph", "invert", "--brokers", broker, "--topic", jobs_topic,
                "-X", "message.max.bytes=16000000", "--source-dir", str(tmp_path / "shared"))
    assert p.returncode == 0, p.stdout + p.stderr
    (_, job, _), = jobs_on(broker, jobs_topic, 1)
    assert job.source.WhichOneof("kind") == "path"
    with imgbatch.Producer(broker, jobs_topic, config={"message.max.bytes": 16000000}) as prod:
        assert prod.embedded_broker
        with pytest.raises(imgbatch._kafka.JobTooLargeError, match="the most the embedded broker keeps"):
            prod.send(imgbatch.Image.open(big), key="big", output="raw")


def test_the_library_raises_one_clear_error_and_queues_nothing(broker):
    jobs_topic, _ = fresh_topics()
    im = imgbatch.Image.frombytes("RGB", (600, 600), os.urandom(600 * 600 * 3))
    with imgbatch.Producer(broker, jobs_topic, source_dir=None) as p:
        with pytest.raises(imgbatch._kafka.JobTooLargeError, match="message.max.bytes"):
            p.send(im, key="raw")
        assert p.flush() == []


def test_the_first_result_is_seen_within_half_a_second_of_its_arrival(broker, tmp_path):
    jobs_topic, results_topic = fresh_topics()
    f = small_png(tmp_path / "x.png")
    proc = subprocess.Popen([sys.executable, "-m", "imgbatch", "produce", f, "--graph", "invert",
                             "--brokers", broker, "--topic", jobs_topic, "--results-topic", results_topic,
                             "--output", "raw", "--wait", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = {}

    def read():
        for line in proc.stdout:
            seen.setdefault("ok" if "\tok " in line else "sent", time.monotonic())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    (key, job, coords), = jobs_on(broker, jobs_topic, 1)
    # Answered at once, as a warm worker would: the reader has just started
    # on a results topic that does not exist yet (a fresh run).
    r = pb.Result(worker_id="w", job_id=1, key_string=job.key_string, contract_version=imgbatch.CONTRACT_VERSION)
    r.source.topic, r.source.partition, r.source.offset = coords
    r.image.mode, r.image.width, r.image.height, r.image.format, r.image.data = "L", 1, 1, pb.RAW, b"\x07"
    arrived = []
    prod = ck.Producer({"bootstrap.servers": broker})
    prod.produce(results_topic, key="{}/{}/{}".format(*coords).encode(), value=r.SerializeToString(),
                 on_delivery=lambda err, msg: arrived.append((err, time.monotonic())))
    assert prod.flush(10) == 0 and arrived[0][0] is None
    proc.wait(timeout=60)
    reader.join(5)
    stderr = proc.stderr.read()
    assert proc.returncode == 0, stderr
    assert seen["ok"] - arrived[0][1] < 0.5, seen["ok"] - arrived[0][1]


# ---------------------------------------------------------------- the broker and a CPU worker


def test_big_photos_by_source_dir_and_file_results_reach_out_under_unique_names(broker, tmp_path):
    jobs_topic, results_topic = fresh_topics()
    root, outdir, out = tmp_path / "shared", tmp_path / "worker-out", tmp_path / "out"
    root.mkdir()
    outdir.mkdir()
    a = small_png(tmp_path / "a" / "x.png", (5, 4), "red")
    b = small_png(tmp_path / "b" / "x.png", (6, 3), "green")
    big = noise_png(tmp_path / "big.png", 800, 600)  # 1.44 MB raw, more as PNG
    worker = subprocess.Popen([os.environ["IB_BIN"], "worker", "--brokers", broker, "--backend", "cpu",
                               "--group", uuid.uuid4().hex, "--jobs-topic", jobs_topic,
                               "--results-topic", results_topic, "--source-root", str(root),
                               "--output-dir", str(outdir), "-X", "fetch.wait.max.ms=50"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        rel = ["a/x.png", "b/x.png", "big.png"]
        p = produce(*rel, "--graph", "invert", "--brokers", broker, "--topic", jobs_topic,
                    "--results-topic", results_topic, "--output", "raw", "--wait", "120",
                    "--source-dir", str(root / "incoming"), "--source-root", str(root),
                    "--out", str(out), "--output-dir", str(outdir), cwd=str(tmp_path), timeout=180)
    finally:
        worker.terminate()
        worker_err = worker.communicate(timeout=60)[1]
    assert p.returncode == 0, p.stdout + p.stderr + worker_err[-3000:]
    oks = dict(line.split("\t", 1) for line in p.stdout.splitlines() if "\tok " in line)
    assert sorted(oks) == sorted(rel)
    assert oks["big.png"].startswith("ok ImageFile RGB (copied from ")
    (stored,) = os.listdir(root / "incoming")  # the big source, named by its content
    assert open(root / "incoming" / stored, "rb").read() == open(big, "rb").read()
    for name, path in (("a/x.png", a), ("b/x.png", b), ("big.png", big)):
        expect = imgbatch.ImageOps.invert(imgbatch.Image.open(path)).replay().tobytes()
        assert (out / f"{name}.raw").read_bytes() == expect, name
    assert sorted(str(q.relative_to(out)) for q in out.rglob("*") if q.is_file()) == \
        ["a/x.png.raw", "b/x.png.raw", "big.png.raw"]


def test_a_size_the_broker_refuses_is_reported_per_file(tmp_path):
    if not os.environ.get("IB_BIN"):
        pytest.skip("IB_BIN is not set")
    files = [small_png(tmp_path / f"{n}.png") for n in ("a", "b")]
    broker = subprocess.Popen([os.environ["IB_BIN"], "broker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        bootstrap = broker.stdout.readline().strip().split("=", 1)[1]
        # A broker whose message.max.bytes is below the producer's answers so.
        broker.stdin.write("error Produce 2 MSG_SIZE_TOO_LARGE\n")  # one request or two
        broker.stdin.flush()
        assert broker.stdout.readline().strip() == "ok"
        p = produce(*files, "--graph", "invert", "--brokers", bootstrap, "--topic", "sizes")
    finally:
        broker.terminate()
        broker.wait(20)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    lines = [line.split("\t", 1) for line in p.stdout.splitlines()]
    assert [k for k, _ in lines] == files
    for _, why in lines:
        assert why.startswith("error not delivered: Broker: Message size too large")
        assert "message.max.bytes" in why and "max.message.bytes" in why and "--source-dir" in why


def test_the_library_moves_only_encoded_sources_to_source_dir(broker, tmp_path):
    jobs_topic, _ = fresh_topics()
    big = noise_png(tmp_path / "big.png", 700, 600)
    raw = imgbatch.Image.frombytes("RGB", (600, 600), os.urandom(600 * 600 * 3))
    root = tmp_path / "root"
    with imgbatch.Producer(broker, jobs_topic, source_dir=root / "in", source_root=root) as p:
        p.send(imgbatch.ImageOps.invert(imgbatch.Image.open(big)), key="big", output="raw")
        with pytest.raises(imgbatch._kafka.JobTooLargeError, match="only encoded sources"):
            p.send(raw, key="raw")
        (d,) = p.flush()
    (_, job, coords), = jobs_on(broker, jobs_topic, 1)
    assert coords == d.coordinates and job.source.WhichOneof("kind") == "path"
    assert job.source.path.startswith("in/") and (root / job.source.path).read_bytes() == open(big, "rb").read()
    with pytest.raises(ValueError, match="not inside source_root"):
        imgbatch.Producer(broker, source_dir=tmp_path / "elsewhere", source_root=root)
