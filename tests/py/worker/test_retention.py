"""No silent loss on the embedded broker (README, "The embedded broker"):
librdkafka's mock keeps about 5 MiB a partition and deletes the oldest
messages beyond that. What it deletes before a consumer read it must be
reported: by the worker (event jobs_deleted_unconsumed and the counter
imgbatch_jobs_deleted_unconsumed_total), by ResultReader (ResultGapError
naming the counts) and by `imgbatch broker`, which states its room at start.

The burst of the report that found this (1,500 jobs of 160x160 RGBA, 150 MB,
into a topic of 4 partitions) is scaled to one partition: 120 such jobs
(12 MB) overflow its 5 MiB as theirs overflowed 4 x 5 MiB."""
import http.client
import subprocess

import imgbatch
import pytest
from harness import BIN, t, wait_until
from imgbatch import Image
from imgbatch import imgbatch_pb2 as pb
from jobs import pixels

ONE_PARTITION = ["imgbatch.jobs:1", "imgbatch.results:1"]
BURST = 120
SIDE = 160


def metric(w, name):
    """An unlabelled sample of the worker's /metrics."""
    host, port = w.wait_event("http", timeout=20)["addr"].rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
    finally:
        c.close()
    for line in body.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    raise AssertionError(f"{name} not in /metrics:\n{body}")


def burst(env, n):
    """n 160x160 RGBA jobs in one burst through the client, as a new user
    sends them; each answers an 8x8 crop (small Results)."""
    with imgbatch.Producer(env.bootstrap) as producer:
        for i in range(n):
            im = Image.frombytes("RGBA", (SIDE, SIDE), pixels(SIDE, SIDE, 4, i))
            producer.send(im.crop((0, 0, 8, 8)), key=f"burst-{i}", output="raw")
        return producer.flush()


def answered(env, deliveries, timeout):
    """The Results ResultReader yields for deliveries, and the error it ends
    with (None when every job was answered)."""
    got = []
    with imgbatch.ResultReader(env.bootstrap) as reader:
        try:
            for r in reader.results(deliveries, timeout=timeout):
                got.append(r)
        except TimeoutError as e:
            return got, e
    return got, None


def test_broker_states_its_capacity_and_defaults_to_64_partitions(tmp_path):
    p = subprocess.Popen([BIN, "broker"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=open(tmp_path / "err", "w"), text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("bootstrap="), line
    finally:
        p.terminate()
        assert p.wait(timeout=t(20)) == 0
    err = (tmp_path / "err").read_text()
    assert ("keeps at most 5 MiB and 100000 message sets a partition, then deletes the oldest: "
            "imgbatch.jobs 64 x 5 MiB = 320 MiB, imgbatch.results 64 x 5 MiB = 320 MiB") in err


def test_a_burst_beyond_the_cap_before_the_worker_starts_is_reported(make_env):
    env = make_env(topics=ONE_PARTITION)
    deliveries = burst(env, BURST)
    low = env.watermarks("imgbatch.jobs", 0)[0]
    assert low > 0, "the burst did not overflow one partition: make it larger"
    w = env.worker("--metrics-addr", "127.0.0.1:0")
    got, err = answered(env, deliveries, t(15))
    # Every job kept was answered; every one deleted is named, by the reader
    # and by the worker.
    assert len(got) == BURST - low
    assert isinstance(err, imgbatch.ResultGapError), err
    assert len(err.missing) == low and len(err.jobs_deleted) == low, err
    assert err.jobs_deleted == [("imgbatch.jobs", 0, o) for o in range(low)]
    assert f"the broker deleted {low} of those jobs" in str(err)
    ev = w.wait_event("jobs_deleted_unconsumed", timeout=t(10))
    assert (ev["partition"], ev["from"], ev["to"], ev["count"]) == (0, 0, low, low), ev
    assert ev["level"] == "warn"
    assert metric(w, "imgbatch_jobs_deleted_unconsumed_total") == low


def test_a_burst_into_a_running_worker_loses_nothing_silently(make_env):
    """The report's own sequence: the worker already running. However much
    it keeps up, what it answered and what it reports deleted add up to the
    burst."""
    env = make_env(topics=ONE_PARTITION)
    w = env.worker("--metrics-addr", "127.0.0.1:0")
    w.wait_assigned(t(60))
    deliveries = burst(env, BURST)
    got, err = answered(env, deliveries, t(20))
    deleted = metric(w, "imgbatch_jobs_deleted_unconsumed_total")
    assert len(got) + deleted == BURST, (len(got), deleted, err)
    if deleted:
        assert isinstance(err, imgbatch.ResultGapError) and len(err.jobs_deleted) == deleted, err
    else:
        assert err is None


def test_result_reader_counts_results_deleted_before_it_read_them(make_env):
    env = make_env(topics=["imgbatch.results:1"])
    big = pb.Result(key_string="x", image=pb.ImageData(mode="L", width=1000, height=100,
                                                       data=bytes(100_000)))
    env.producer.produce("imgbatch.results", big.SerializeToString(), key=b"k")
    for _ in range(79):
        env.producer.produce("imgbatch.results", big.SerializeToString(), key=b"k")
        env.producer.poll(0)
    assert env.producer.flush(t(30)) == 0
    low = env.watermarks("imgbatch.results", 0)[0]
    assert low > 0
    with imgbatch.ResultReader(env.bootstrap) as reader:
        wait_until(lambda: next(iter(reader.read(timeout=0.5)), None) is not None, t(20))
        assert reader.results_deleted == low
        with pytest.raises(imgbatch.ResultGapError) as e:
            list(reader.results([("imgbatch.jobs", 0, 0)], timeout=1))
    assert e.value.results_deleted == low and e.value.jobs_deleted == []
    assert f"and {low} Result(s) before this reader read them" in str(e.value)
