"""Scenario 3 (Kafka worker issue): the broker frozen (SIGSTOP) for 5 s
mid-stream, or taken down by mock fault injection for 5 s: nothing is lost,
no error Result appears and the worker neither exits nor restarts."""
import time

import pytest

from harness import check_result_for, coord_key, same_outcome
from jobs import SLOW, image_job

N = 600
# Margins for a 5 s outage: a session outlives it, reconnects come fast.
X = ("session.timeout.ms=15000", "reconnect.backoff.max.ms=1000")


@pytest.mark.parametrize("how", ["sigstop", "mock-down"])
def test_broker_outage_mid_stream_loses_nothing(make_env, how):
    env = make_env()
    reader = env.reader()
    jobs = [image_job(i, 80, 80, graph=SLOW) for i in range(N)]
    coords = env.produce([j for j, _ in jobs])
    w = env.worker("--max-jobs", 4, x=X)
    reader.wait_count(N // 6, 120, why=env.why)
    reader.poll(0)
    answered_before = len(reader.by_key())
    if how == "sigstop":
        env.broker.freeze()
        time.sleep(5)
        env.broker.thaw()
    else:
        env.broker.command("down 1")
        time.sleep(5)
        env.broker.command("up 1")
    assert w.alive(), env.why("the worker exited during the outage")
    assert answered_before < N, "the outage came after the last job: not mid-stream"
    keys = [coord_key(*c) for c in coords]
    by_key = reader.wait_keys(keys, 180, env.why)
    env.wait_committed(env.end_offsets(), 90)
    for i, c in enumerate(coords):
        msgs = by_key[coord_key(*c)]
        first = check_result_for(msgs[0], c, i)
        assert first.WhichOneof("outcome") == "image", (i, first.error)
        assert all(same_outcome(first, m.result) for m in msgs[1:]), i
        if i % 20 == 0:
            assert first.image.data == jobs[i][1].replay().tobytes(), i
    assert w.alive() and len(w.named("start")) == 1, env.why()
    assert not w.named("exit") and not w.named("shutdown"), env.why()
