"""The worker's operations endpoints (--metrics-addr): /metrics in the
Prometheus text format, /healthz, /readyz. Real processes: the embedded
broker (`imgbatch broker`) and `imgbatch worker --backend cpu`."""
import http.client
import json
import math
import os
import re
import subprocess
import time
import uuid

import confluent_kafka as ck
import pytest

import ibtest
from ibtest import encoded_job, raw_job
from imgbatch import imgbatch_pb2 as pb

BIN = os.environ["IB_BIN"]


# ---------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def broker():
    with ibtest.broker() as (_, bootstrap):
        yield bootstrap


class Worker:
    """`imgbatch worker` on fresh topics and group; stderr (JSON lines) to a file."""

    def __init__(self, brokers, tmp_path, *args, env=None, metrics=True, group_tag=None):
        tag = uuid.uuid4().hex[:8]
        topics = group_tag or tag
        self.jobs, self.results = f"jobs-{topics}", f"results-{topics}"
        self.log = tmp_path / f"worker-{tag}.log"
        cmd = [BIN, "worker", "--brokers", brokers, "--backend", "cpu", "--group", f"g-{topics}",
               "--jobs-topic", self.jobs, "--results-topic", self.results,
               "-X", "session.timeout.ms=6000", *args]
        if metrics:
            cmd += ["--metrics-addr", "127.0.0.1:0"]
        with open(self.log, "wb") as f:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f,
                                         stdin=subprocess.DEVNULL, env=env)
        self.addr = None

    def events(self):
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def wait_event(self, name, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events():
                if e.get("event") == name:
                    return e
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(f"no {name} event; log:\n{self.log.read_text(errors='replace')[-3000:]}")

    def http_addr(self):
        if not self.addr:
            self.addr = self.wait_event("http")["addr"]
        return self.addr

    def get(self, path, method="GET", timeout=5):
        host, port = self.http_addr().rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=timeout)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, r.read().decode(), dict(r.getheaders())
        finally:
            c.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def workers(broker, tmp_path):
    started = []

    def start(*args, **kw):
        w = Worker(broker, tmp_path, *args, **kw)
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()


def produce(brokers, topic, payloads):
    p = ck.Producer({"bootstrap.servers": brokers})
    for i, v in enumerate(payloads):
        p.produce(topic, value=v, key=str(i).encode())
    assert p.flush(20) == 0


def consume(brokers, topic, n, timeout=30):
    c = ck.Consumer({"bootstrap.servers": brokers, "group.id": uuid.uuid4().hex,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out, end = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            r = pb.Result()
            r.ParseFromString(m.value())
            out.append(r)
    c.close()
    return out


# The text exposition format 0.0.4, strictly enough to catch a malformed line.
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*"'
SAMPLE = re.compile(rf"^({NAME})(?:\{{({LABEL}(?:,{LABEL})*)?\}})? (\S+)$")


def parse_prometheus(text):
    """{family: {"type": t, "samples": [(name, {label: value}, float)]}}; asserts well-formedness."""
    assert text.endswith("\n")
    families, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            assert name not in types, f"family {name} declared twice"
            types[name] = kind
            families[name] = {"type": kind, "samples": []}
            continue
        assert not line.startswith("#") and line, repr(line)
        m = SAMPLE.match(line)
        assert m, f"malformed sample line {line!r}"
        name, labels, value = m.group(1), m.group(2), m.group(3)
        fam = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[: -len(suffix)] in types:
                fam = name[: -len(suffix)]
        assert fam in types, f"sample {name} before its # TYPE line"
        lab = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels or ""))
        v = float(value)  # raises on a malformed number
        assert not math.isnan(v)
        families[fam]["samples"].append((name, lab, v))
    for name, fam in families.items():
        if fam["type"] == "counter":
            assert name.endswith("_total"), name
            assert all(v >= 0 for _, _, v in fam["samples"]), name
        if fam["type"] == "histogram":
            buckets = [(s[1]["le"], s[2]) for s in fam["samples"] if s[0] == name + "_bucket"]
            assert buckets and buckets[-1][0] == "+Inf", name
            bounds = [float(le) for le, _ in buckets]
            counts = [c for _, c in buckets]
            assert bounds == sorted(bounds) and counts == sorted(counts), f"{name} not cumulative"
            count = [s[2] for s in fam["samples"] if s[0] == name + "_count"]
            assert count == [counts[-1]], name
    return families


def value(fams, name, **labels):
    fam = re.sub(r"_(bucket|sum|count)$", "", name) if name not in fams else name
    for n, lab, v in fams[fam]["samples"]:
        if n == name and all(lab.get(k) == x for k, x in labels.items()):
            return v
    raise KeyError(f"{name}{labels}")


def metrics(w):
    status, body, headers = w.get("/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse_prometheus(body)


def wait_for(fn, timeout=20, every=0.05):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"condition not met in {timeout}s (last: {last!r})")


# ---------------------------------------------------------------- tests


def test_metrics_count_the_jobs_sent(broker, workers):
    w = workers()
    wait_for(lambda: w.get("/readyz")[0] == 200)
    jobs = [raw_job(k, 8, 6, seed=k).SerializeToString() for k in range(7)]
    payloads = jobs + [b"\xff\xff not a Job"]
    n = len(payloads)
    produce(broker, w.jobs, payloads)
    results = consume(broker, w.results, n)
    assert len(results) == n
    assert sum(r.WhichOneof("outcome") == "image" for r in results) == 7

    def settled():
        f = metrics(w)
        return f if value(f, "imgbatch_results_undelivered") == 0 and \
            value(f, "imgbatch_results_uncommitted") == 0 and \
            value(f, "imgbatch_commits_total") >= 1 and \
            sum(value(f, "imgbatch_results_total", outcome=o)
                for o in ("image", "error", "file", "resident")) == n else None

    f = wait_for(settled)
    assert value(f, "imgbatch_messages_consumed_total") == n
    assert value(f, "imgbatch_consumed_bytes_total") == sum(len(p) for p in payloads)
    assert value(f, "imgbatch_result_bytes_total") > 0
    assert value(f, "imgbatch_results_total", outcome="image") == 7
    assert value(f, "imgbatch_results_total", outcome="error") == 1
    assert value(f, "imgbatch_results_total", outcome="file") == 0
    assert value(f, "imgbatch_results_total", outcome="resident") == 0
    assert sum(v for _, _, v in f["imgbatch_worker_faults_total"]["samples"]) == 0
    assert value(f, "imgbatch_retries_total") == 0
    assert value(f, "imgbatch_results_republished_total") == 0
    # Every message is one executor result; only images go through the encode pool.
    assert value(f, "imgbatch_queue_seconds_count") == n
    assert value(f, "imgbatch_exec_seconds_count") == n
    assert value(f, "imgbatch_encode_seconds_count") == 7
    assert value(f, "imgbatch_encode_seconds_sum") > 0
    assert value(f, "imgbatch_jobs_running") == 0
    assert value(f, "imgbatch_jobs_live") == 0
    assert value(f, "imgbatch_jobs_waiting") == 0
    assert value(f, "imgbatch_partitions_assigned") >= 1
    assert value(f, "imgbatch_paused") == 0
    for credit in ("gpu_bytes", "host_bytes", "jobs", "in_flight"):
        assert value(f, "imgbatch_credit_cap", credit=credit) > 0
        assert value(f, "imgbatch_credit_in_use", credit=credit) >= 0
    assert value(f, "imgbatch_resident_handles") == 0
    # The cpu backend's host pool: its large blocks, bounded by host_bytes; no device.
    assert value(f, "imgbatch_host_pool_cap_bytes") == value(f, "imgbatch_credit_cap", credit="host_bytes")
    assert 0 <= value(f, "imgbatch_host_pool_bytes") <= value(f, "imgbatch_host_pool_cap_bytes")
    assert value(f, "imgbatch_device_pool_bytes") == value(f, "imgbatch_device_pool_cap_bytes") == 0
    # The kernel caches (cuda): none on the cpu backend, their bounds the defaults.
    assert value(f, "imgbatch_module_cache_entries") == value(f, "imgbatch_module_cache_bytes") == 0
    assert value(f, "imgbatch_disk_cache_bytes") == 0
    assert value(f, "imgbatch_module_cache_cap_bytes") == 256 << 20
    assert value(f, "imgbatch_disk_cache_cap_bytes") == 2 << 30
    assert value(f, "imgbatch_compile_queue_depth") == 0  # the cpu backend compiles nothing
    assert value(f, "imgbatch_compile_queue_full_total") == 0
    # Every job finished and was committed: nothing left behind.
    wait_for(lambda: value(metrics(w), "imgbatch_oldest_uncommitted_seconds") == 0)
    assert value(metrics(w), "imgbatch_consumer_lag_messages") == 0


def test_the_codec_threads_scratch_is_reported_within_its_budget(broker, workers):
    # A PNG in and out: the decoding thread keeps its inflated rows and IDAT
    # data, the encoding one its filtered rows, and the gauge says so.
    import io

    from PIL import Image as PILImage
    w = workers()
    wait_for(lambda: w.get("/readyz")[0] == 200)
    buf = io.BytesIO()
    PILImage.frombytes("RGB", (97, 61), bytes(range(256)) * 70).save(buf, "PNG")
    job = encoded_job("png", buf.getvalue())
    job.output.cpu.format = pb.PNG
    produce(broker, w.jobs, [job.SerializeToString()])
    results = consume(broker, w.results, 1)
    assert results[0].WhichOneof("outcome") == "image", results[0]
    f = metrics(w)
    cap = value(f, "imgbatch_codec_scratch_cap_bytes")
    # rows (97 x 3 + 1) x 61, at least, besides the IDAT data and the encoder's rows
    assert (97 * 3 + 1) * 61 <= value(f, "imgbatch_codec_scratch_bytes") <= cap == 512 << 20
    assert f["imgbatch_codec_scratch_bytes"]["type"] == "gauge"


def test_the_kernel_caches_bounds_are_the_ones_configured(broker, workers, tmp_path):
    # Odd sizes, none a default, each through another of the worker's inputs.
    config = tmp_path / "worker.conf"
    config.write_text("module-cache-bytes = 3M\n")
    env = {**os.environ, "IMGBATCH_DISK_CACHE_BYTES": "5G"}
    w = workers("--config", str(config), env=env)
    f = metrics(w)
    assert value(f, "imgbatch_module_cache_cap_bytes") == 3 << 20
    assert value(f, "imgbatch_disk_cache_cap_bytes") == 5 << 30
    # Flags override both.
    w = workers("--config", str(config), "--module-cache-bytes", "1234567",
                "--disk-cache-bytes", "7K", env=env)
    f = metrics(w)
    assert value(f, "imgbatch_module_cache_cap_bytes") == 1234567
    assert value(f, "imgbatch_disk_cache_cap_bytes") == 7 << 10
    assert f["imgbatch_module_cache_cap_bytes"]["type"] == "gauge"
    assert f["imgbatch_disk_cache_cap_bytes"]["type"] == "gauge"


def test_health_readiness_and_routing(broker, workers):
    w = workers()
    seen = []
    # Not ready before the group assigned partitions; the log says when it did.
    def ready():
        status = w.get("/readyz")[0]
        seen.append(status)
        return status == 200

    assert w.get("/healthz")[:2] == (200, "ok\n")
    wait_for(ready)
    assert seen[0] == 503, seen
    assert any(e.get("event") == "assigned" for e in w.events())
    assert w.get("/readyz")[:2] == (200, "ok\n")
    assert w.get("/healthz")[:2] == (200, "ok\n")
    assert w.get("/other")[0] == 404
    assert w.get("/metrics/x")[0] == 404
    assert w.get("/metrics?x=1")[0] == 200  # a query string names the same resource
    status, body, headers = w.get("/metrics", method="HEAD")
    assert status == 200 and body == ""
    status, _, headers = w.get("/metrics", method="POST")
    assert status == 405 and headers.get("Allow") == "GET, HEAD"
    assert w.get("/healthz", method="DELETE")[0] == 405
    # A drain: not ready any more, exits 0.
    w.proc.terminate()
    assert w.proc.wait(30) == 0


def test_an_idle_member_of_the_group_is_ready(broker, workers):
    # The embedded broker creates topics with 4 partitions: of 5 workers in
    # one group, one is assigned nothing and is ready all the same.
    tag = uuid.uuid4().hex[:8]
    produce(broker, f"jobs-{tag}", [raw_job(0, 8, 6).SerializeToString()])
    group = [workers(group_tag=tag) for _ in range(5)]

    def all_ready():
        return all(w.get("/readyz")[0] == 200 for w in group)

    wait_for(all_ready, timeout=40)
    counts = wait_for(lambda: (lambda c: c if sum(c) == 4 else None)(
        [value(metrics(w), "imgbatch_partitions_assigned") for w in group]), timeout=40)
    assert sorted(counts) == [0, 1, 1, 1, 1], counts
    assert all_ready()


def test_a_sticky_fault_fails_healthz_before_the_worker_exits(broker, workers):
    help_text = subprocess.run([BIN, "worker", "--help"], capture_output=True, text=True).stdout
    if "--fault" not in help_text:
        pytest.skip("this build has no fault injection (configure with -DIB_FAULTS=ON)")
    w = workers("--fault", "device@1+", "--grace-seconds", "10")
    wait_for(lambda: w.get("/readyz")[0] == 200)
    produce(broker, w.jobs, [raw_job(1, 8, 6).SerializeToString()])
    health, faults = [], None
    while w.proc.poll() is None:
        try:
            status, _, _ = w.get("/healthz", timeout=2)
        except OSError:
            continue  # the listener closed: the worker is exiting
        health.append(status)
        if status == 503 and faults is None:
            try:
                faults = metrics(w)
            except OSError:
                pass
        time.sleep(0.005)
    assert w.proc.wait(30) == 1
    assert 200 in health and 503 in health, health
    first_bad = health.index(503)
    assert all(s == 503 for s in health[first_bad:]), health
    assert all(s == 200 for s in health[:first_bad]), health
    assert any(e.get("event") == "shutdown" and e.get("reason") == "sticky worker fault"
               for e in w.events())
    if faults is not None:  # fetched while the worker was still up
        assert value(faults, "imgbatch_worker_faults_total", kind="device") >= 5
        assert value(faults, "imgbatch_retries_total") >= 1
        assert sum(value(faults, "imgbatch_results_total", outcome=o)
                   for o in ("image", "error", "file", "resident")) == 0


def test_the_listener_is_off_unless_configured_and_reads_the_environment(broker, workers, tmp_path):
    quiet = workers(metrics=False)
    quiet.wait_event("start")
    assert not any(e.get("event") == "http" for e in quiet.events())
    env = dict(os.environ, IMGBATCH_METRICS_ADDR="127.0.0.1:0")
    from_env = workers(env=env, metrics=False)
    assert re.fullmatch(r"127\.0\.0\.1:[1-9][0-9]*", from_env.http_addr())
    assert from_env.get("/healthz")[0] == 200
    cfg = tmp_path / "worker.conf"
    cfg.write_text("metrics-addr = 127.0.0.1:0\n")
    from_file = workers("--config", str(cfg), metrics=False)
    assert from_file.get("/healthz")[0] == 200


@pytest.mark.parametrize("addr", ["nonsense", "127.0.0.1", "127.0.0.1:http", ":9100",
                                  "::1:9100", "127.0.0.1:70000", "no-such-host.invalid:0"])
def test_a_bad_metrics_address_is_a_usage_error(broker, addr):
    p = subprocess.run([BIN, "worker", "--brokers", broker, "--backend", "cpu",
                        "--metrics-addr", addr], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stderr
    assert '"stage":"http"' in p.stderr and "--metrics-addr" in p.stderr


def test_a_taken_port_fails_the_start(broker, workers):
    w = workers()
    addr = w.http_addr()
    p = subprocess.run([BIN, "worker", "--brokers", broker, "--backend", "cpu",
                        "--metrics-addr", addr], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1, p.stderr
    assert '"stage":"http"' in p.stderr


def slow_cpu_job(key, side=500, passes=8):
    """One Job that keeps the CPU backend busy for seconds (about half a
    second per pass here): median(9) over a side x side RGB image of noise,
    `passes` times; small enough for one Kafka message."""
    from imgbatch import Image, ImageFilter
    im = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    for _ in range(passes):
        im = im.filter(ImageFilter.MedianFilter(9))
    return im.to_job(key=key, output="raw")


def test_readyz_turns_503_at_once_on_sigterm_while_a_cpu_job_runs(broker, workers):
    # The driving thread is inside the job when the signal comes; the
    # listener must not wait for it to say the worker is leaving.
    w = workers("--grace-seconds", "60")
    wait_for(lambda: w.get("/readyz")[0] == 200, timeout=40)
    produce(broker, w.jobs, [slow_cpu_job(1)])
    wait_for(lambda: value(metrics(w), "imgbatch_jobs_running") == 1, timeout=30)
    time.sleep(0.3)
    w.proc.terminate()
    t0 = time.monotonic()
    # The handler runs on whichever thread the kernel picks, which on a
    # loaded machine may wait a moment for a CPU: "at once" is well within
    # 0.5 s, not on the very first request.
    while True:
        status, body, _ = w.get("/readyz")
        took = time.monotonic() - t0
        if status != 200 or took >= 0.5:
            break
        time.sleep(0.01)
    assert (status, body) == (503, "stopping\n"), (status, body, took)
    assert took < 0.5, took
    # The job was still running: the drain had not finished it yet.
    assert w.proc.poll() is None
    assert w.get("/healthz")[0] == 200  # a drain within its grace is healthy
    assert w.proc.wait(90) == 0


def committed_offsets(brokers, w):
    """The worker's group's committed offsets of its jobs topic (4
    partitions on the embedded broker); negative: none."""
    c = ck.Consumer({"bootstrap.servers": brokers, "group.id": "g-" + w.jobs[len("jobs-"):],
                     "enable.auto.commit": False})
    try:
        parts = c.committed([ck.TopicPartition(w.jobs, p) for p in range(4)], timeout=10)
        return [tp.offset for tp in parts]
    finally:
        c.close()


def test_sigterm_exits_within_the_grace_abandoning_a_running_cpu_job(broker, workers):
    grace = 2
    w = workers("--grace-seconds", str(grace))
    wait_for(lambda: w.get("/readyz")[0] == 200, timeout=40)
    produce(broker, w.jobs, [slow_cpu_job(1, passes=24)])  # about 12 s of work
    wait_for(lambda: value(metrics(w), "imgbatch_jobs_running") == 1, timeout=30)
    t0 = time.monotonic()
    w.proc.terminate()
    assert w.proc.wait(grace + 5) == 1
    took = time.monotonic() - t0
    assert grace - 0.5 < took < grace + 1.0, took
    assert any(e.get("event") == "grace_expired" and e.get("abandoned") for e in w.events())
    # Abandoned, not answered and not committed: another member redoes it.
    assert consume(broker, w.results, 1, timeout=10) == []
    assert all(o < 0 for o in committed_offsets(broker, w)), committed_offsets(broker, w)


def test_cpu_results_stream_per_job_as_each_finishes(broker, tmp_path):
    # Three slow jobs that the worker fetches together: each Result is
    # published when its job is done, not all three after the last.
    tag = uuid.uuid4().hex[:8]
    produce(broker, f"jobs-{tag}", [slow_cpu_job(k, passes=3) for k in range(3)])
    w = Worker(broker, tmp_path, group_tag=tag, metrics=False)
    try:
        c = ck.Consumer({"bootstrap.servers": broker, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([w.results])
        stamps, end = [], time.monotonic() + 90
        while len(stamps) < 3 and time.monotonic() < end:
            m = c.poll(0.2)
            if m is not None and not m.error():
                stamps.append(m.timestamp()[1])  # the worker's produce time, ms
        c.close()
        assert len(stamps) == 3, stamps
        stamps.sort()
        # A job here takes over a second; batched, all three left together.
        assert stamps[1] - stamps[0] > 500 and stamps[2] - stamps[1] > 500, stamps
    finally:
        w.stop()
