"""`imgbatch broker`: idempotent topics and the fault-injection commands on
standard input, observed through a real Kafka client over TCP."""
import signal
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from harness import BIN, Broker, t


@pytest.fixture(scope="module")
def three_brokers(tmp_path_factory):
    broker = Broker(str(tmp_path_factory.mktemp("broker")), brokers=3)
    yield broker
    assert broker.stop() == 0, broker.stderr()


def test_default_topic_named_again_with_its_count_is_harmless(make_env):
    env = make_env(topics=["imgbatch.jobs:4", "imgbatch.jobs:4", "extra:2"])
    assert env.partitions("imgbatch.jobs") == [0, 1, 2, 3]
    assert env.partitions("imgbatch.results") == [0, 1, 2, 3]
    assert env.partitions("extra") == [0, 1]


def test_default_topic_with_another_count_replaces_the_default(make_env):
    env = make_env(topics=["imgbatch.jobs:1", "imgbatch.control:3"])
    assert env.partitions("imgbatch.jobs") == [0]
    assert env.partitions("imgbatch.control") == [0, 1, 2]


def test_one_topic_given_with_two_counts_is_a_usage_error():
    p = subprocess.run([BIN, "broker", "--topic", "t:2", "--topic", "t:3"], capture_output=True,
                       text=True, timeout=20)
    assert p.returncode == 2
    assert "t given with 2 and 3 partitions" in p.stderr


def test_end_of_stdin_does_not_stop_the_broker():
    p = subprocess.Popen([BIN, "broker"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("bootstrap="), line
        time.sleep(1)
        assert p.poll() is None, p.stderr.read()
        c = Consumer({"bootstrap.servers": line.strip().split("=", 1)[1], "group.id": "g"})
        assert "imgbatch.jobs" in c.list_topics(timeout=t(10)).topics
        c.close()
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=t(20)) == 0


@pytest.mark.parametrize("line,answer", [
    ("down 1", "ok"), ("up 1", "ok"), ("down all", "ok"), ("up all", "ok"),
    ("down 3", "ok"), ("up 3", "ok"),
    ("down 4", "error: broker id '4' is not 1..3 or 'all'"),
    ("down", "error: usage: down N"),
    ("rtt 2 50", "ok"), ("rtt 2 0", "ok"), ("rtt 1 -5", "error: MS '-5' is not 0..3600000"),
    ("error Produce 2", "ok"), ("error fetch 1 NOT_LEADER_FOR_PARTITION", "ok"),
    ("error JoinGroup 1 RD_KAFKA_RESP_ERR__TRANSPORT", "ok"), ("error 8 1 7", "ok"),
    ("error SyncGroup 1 COORDINATOR_NOT_AVAILABLE", "ok"), ("error InitProducerId 1", "ok"),
    ("error Heartbeat 1", "ok"), ("error FindCoordinator 1", "ok"), ("error Metadata 1", "ok"),
    ("error Nope 1", "error: unknown API 'Nope' (Produce, Fetch, OffsetCommit, JoinGroup, ...)"),
    ("error Produce 0", "error: COUNT '0' is not 1..1000000"),
    ("error Produce 1 NO_SUCH_ERROR", "error: unknown error 'NO_SUCH_ERROR' "
     "(REQUEST_TIMED_OUT, NOT_LEADER_FOR_PARTITION, ...)"),
    ("clear Produce", "ok"), ("clear Fetch", "ok"),
    ("create fresh:3", "ok"), ("create imgbatch.jobs:4", "ok"),
    ("create imgbatch.jobs:2", "error: topic imgbatch.jobs exists with 4 partitions, not 2"),
    ("create bad:0", "error: bad topic 'bad:0' (want NAME:PARTITIONS, 1..1024 partitions)"),
    ("frobnicate", "error: unknown command 'frobnicate' (down, up, rtt, error, clear, create)"),
    ("up 1 2 3 4 5", "error: too many words"),
])
def test_each_command_is_answered_on_one_line(three_brokers, line, answer):
    assert three_brokers.command(line, expect_ok=False) == answer
    # The broker still answers after any command, errors included.
    assert three_brokers.command("rtt all 0") == "ok"


def test_blank_and_overlong_lines(make_env):
    env = make_env()
    env.broker.proc.stdin.write(b"\n  \n" + b"x" * 5000 + b"\nup 1\n")
    assert env.broker._readline(t(10)) == "error: line too long"
    assert env.broker._readline(t(10)) == "ok"


def test_created_topic_is_served_and_creation_is_idempotent(make_env):
    env = make_env()
    env.broker.command("create made:3")
    env.broker.command("create made:3")
    assert env.partitions("made") == [0, 1, 2]
    coords = env.produce([b"a", b"b", b"c"], topic="made")
    assert sorted(p for _, p, _ in coords) == [0, 1, 2]


def _delivery(bootstrap, value, topic="imgbatch.jobs", **conf):
    """Produces one message; returns (error or None, seconds to its report)."""
    p = Producer({"bootstrap.servers": bootstrap, **conf})
    got = []
    start = time.monotonic()
    p.produce(topic, value=value, partition=0, on_delivery=lambda e, m: got.append(e))
    p.flush(t(30))
    assert got, "no delivery report"
    return got[0], time.monotonic() - start


def test_produce_errors_are_seen_by_a_producer_without_retries_then_clear(make_env):
    env = make_env()
    _delivery(env.bootstrap, b"warm-up")  # metadata and connections before the errors
    env.broker.command("error Produce 3 NOT_ENOUGH_REPLICAS")
    no_retry = {"retries": 0, "enable.idempotence": False, "acks": "all"}
    for _ in range(3):
        err, _ = _delivery(env.bootstrap, b"x", **no_retry)
        assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS, err
    err, _ = _delivery(env.bootstrap, b"y", **no_retry)
    assert err is None


def test_produce_errors_are_retried_by_a_retrying_producer(make_env):
    env = make_env()
    _delivery(env.bootstrap, b"warm-up")
    env.broker.command("error Produce 5")  # REQUEST_TIMED_OUT, retriable
    err, _ = _delivery(env.bootstrap, b"z", **{"enable.idempotence": True,
                                               "retry.backoff.ms": 20})
    assert err is None
    values = [m.value for m in env.reader("imgbatch.jobs", parse=False).wait_count(
        2, timeout=20)]
    assert values.count(b"z") == 1


def test_cleared_errors_no_longer_apply(make_env):
    env = make_env()
    _delivery(env.bootstrap, b"warm-up")
    env.broker.command("error Produce 100 NOT_ENOUGH_REPLICAS")
    env.broker.command("clear Produce")
    err, _ = _delivery(env.bootstrap, b"x", retries=0, **{"enable.idempotence": False})
    assert err is None


def test_a_broker_down_times_out_deliveries_until_it_is_up(make_env):
    env = make_env()
    _delivery(env.bootstrap, b"warm-up")
    env.broker.command("down 1")
    err, _ = _delivery(env.bootstrap, b"lost", **{"message.timeout.ms": 1500})
    assert err is not None and err.code() == KafkaError._MSG_TIMED_OUT, err
    env.broker.command("up 1")
    err, _ = _delivery(env.bootstrap, b"kept")
    assert err is None


def test_rtt_delays_every_answer(make_env):
    env = make_env()
    _, fast = _delivery(env.bootstrap, b"warm-up")
    env.broker.command("rtt 1 700")
    _, slow = _delivery(env.bootstrap, b"slow")
    env.broker.command("rtt 1 0")
    assert slow >= 0.7, (fast, slow)
