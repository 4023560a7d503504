"""Restarts with a stable --worker-id (README, "The Kafka worker", restarts):
the id given is the jobs consumer's group.instance.id, so that a restarted
worker takes its partitions back at once instead of waiting for its old
member's session to expire; a generated id is not (it changes with every
start), and `-X group.instance.id=` (empty) turns it off."""
import http.client
import json
import re
import signal
import subprocess
import time

import pytest

from harness import BIN, coord_key, outcome, t
from jobs import image_job


def start_event(w):
    return w.wait_event("start", timeout=30)


def test_a_given_worker_id_is_the_static_member_id_and_a_generated_one_is_not(make_env):
    env = make_env()
    given = env.worker(worker_id="stable-1", static=True)
    other = env.worker(worker_id="stable-2", static=True, x=("group.instance.id=pod-7",))
    off = env.worker(worker_id="stable-3", static=True, x=("group.instance.id=",))
    # librdkafka's own configuration, read back after every -X.
    assert start_event(given)["group_instance_id"] == "stable-1", env.why()
    assert start_event(other)["group_instance_id"] == "pod-7", env.why()
    assert start_event(off)["group_instance_id"] == "", env.why()
    p = subprocess.Popen([BIN, "worker", "--brokers", env.bootstrap, "--backend", "cpu"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + t(30)
        event = None
        for line in p.stderr:
            if '"event":"start"' in line:
                event = json.loads(line)
                break
            assert time.monotonic() < deadline, "no start event"
        assert event and event["group_instance_id"] == "", event
        assert re.match(r".+-\d+-[0-9a-f]{8}$", event["worker_id"]), event
    finally:
        p.kill()
        p.wait(30)
        p.stderr.close()


def ready(w):
    host, port = w.wait_event("http", timeout=20)["addr"].rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=2)
    try:
        c.request("GET", "/readyz")
        return c.getresponse().status == 200
    except OSError:
        return False
    finally:
        c.close()


def _mock_lacks_static_membership():
    # Measured: librdkafka 2.0.2's mock cluster (`imgbatch broker`) ignores
    # JoinGroup's GroupInstanceId and holds a join to a group that had a
    # member for the session timeout less a second, static or not (44 s at
    # the default 45 s).
    out = subprocess.run([BIN, "version"], capture_output=True, text=True).stdout
    m = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", out)
    return m is not None and tuple(map(int, m.groups())) <= (2, 0, 2)


@pytest.mark.xfail(_mock_lacks_static_membership(), strict=True,
                   reason="librdkafka <= 2.0.2's mock broker has no static membership")
def test_a_restarted_worker_with_a_stable_id_is_ready_and_consuming_within_5_s(make_env):
    env = make_env(topics=["imgbatch.jobs:1"])
    reader = env.reader()
    # librdkafka's default session (45 s), which a restart must not wait out.
    session = ("session.timeout.ms=45000", "heartbeat.interval.ms=3000")
    args = ("--metrics-addr", "127.0.0.1:0")
    w = env.worker(*args, worker_id="stable", static=True, x=session)
    deadline = time.monotonic() + t(60)
    while not ready(w):
        assert time.monotonic() < deadline, env.why("not ready")
        time.sleep(0.1)
    w.signal(signal.SIGTERM)
    assert w.wait_exit(20) == 0, w.stderr()
    (c,) = env.produce([image_job(1, 16, 16)[0]], partition=0)
    began = time.monotonic()
    w = env.worker(*args, worker_id="stable", static=True, x=session)
    while not ready(w):
        took = time.monotonic() - began
        assert took < t(5), f"not ready {took:.1f} s after the restart\n{env.why()}"
        time.sleep(0.1)
    by_key = reader.wait_keys([coord_key(*c)], max(0.1, 5 - (time.monotonic() - began)), env.why)
    assert outcome(by_key[coord_key(*c)][0]) == "image"
