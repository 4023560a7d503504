"""Scenario 7 (Kafka worker issue): SIGTERM mid-stream drains: exit 0 within
--grace-seconds, every Result the worker published is committed (a worker
started after it repeats none), nothing committed lacks a Result, nothing is
lost."""
import signal
import time

from harness import check_result_for, coord_key, t
from jobs import SLOW, image_job

N = 600
GRACE = 10


def test_sigterm_drains_and_exits_zero(make_env):
    env = make_env()
    reader = env.reader()
    jobs = [image_job(i, 80, 80, graph=SLOW) for i in range(N)]
    coords = env.produce([j for j, _ in jobs])
    w1 = env.worker("--max-jobs", 8, "--grace-seconds", GRACE)
    reader.wait_count(100, 120, why=env.why)
    sent = time.monotonic()
    w1.signal(signal.SIGTERM)
    rc = w1.wait_exit(GRACE + 10)
    took = time.monotonic() - sent
    assert rc == 0, w1.stderr()
    assert took <= t(GRACE + 2), f"drain took {took:.1f}s"
    assert w1.named("shutdown"), w1.stderr()
    assert [e.get("code") for e in w1.named("exit")] == [0], w1.stderr()

    committed = env.committed()
    done = [c for c in coords if c[2] < committed[c[1]]]
    assert len(done) < N, "SIGTERM came after the last job: not mid-stream"
    reader.wait_keys([coord_key(*c) for c in done], 30,
                     lambda: env.why(f"committed {committed} without Results"))
    reader.poll(0.5)
    first_pass = reader.by_key()
    for c in coords:
        if coord_key(*c) in first_pass:
            assert c[2] < committed[c[1]], f"{c} answered but not committed {committed}"

    w2 = env.worker("--max-jobs", 8)
    by_key = reader.wait_keys([coord_key(*c) for c in coords], 240, env.why)
    env.wait_committed(env.end_offsets(), 60)
    reader.poll(0.5)
    by_key = reader.by_key()
    for i, c in enumerate(coords):
        msgs = by_key[coord_key(*c)]
        assert len(msgs) == 1, f"job {i}: {len(msgs)} Results after a drained shutdown"
        r = check_result_for(msgs[0], c, i)
        assert r.WhichOneof("outcome") == "image", (i, r.error)
        assert r.worker_id == (w1.worker_id if coord_key(*c) in first_pass else w2.worker_id)
    assert w2.alive(), env.why()
