"""Scenario 6 (Kafka worker issue): a third worker joins mid-stream and one
leaves; nothing is lost, and no worker commits for a partition it does not
own (per its own assigned/revoked/committed log events)."""
import signal
import time

from harness import check_commits_only_for_owned, check_result_for, coord_key, same_outcome, t
from jobs import image_job


def test_join_and_leave_mid_stream(make_env):
    env = make_env()
    reader = env.reader()
    jobs, coords = [], []

    def feed(n=10):
        batch = [image_job(len(jobs) + i, 16, 16) for i in range(n)]
        coords.extend(env.produce([j for j, _ in batch], timeout=30))
        jobs.extend(batch)
        reader.poll(0.1)

    def feed_until(pred, timeout, what):
        deadline = time.monotonic() + t(timeout)
        while not pred():
            assert time.monotonic() < deadline, env.why(f"no {what} within {timeout}s")
            assert not env.hopeless(), env.why(f"{env.hopeless()}, waiting for {what}")
            feed()

    w1, w2 = env.worker(), env.worker()
    feed_until(lambda: w1.owned() and w2.owned(), 60, "two-worker assignment")
    feed_until(lambda: len(reader.messages) >= 150, 60, "150 Results")
    w3 = env.worker()
    feed_until(lambda: w3.owned(), 60, "assignment for the third worker")
    seen = len(reader.messages)
    feed_until(lambda: len(reader.messages) >= seen + 100, 60, "100 Results after the join")
    w1.signal(signal.SIGTERM)
    feed_until(lambda: not w1.alive(), 60, "the leaving worker's exit")
    feed_until(lambda: w2.owned() | w3.owned() == {0, 1, 2, 3}, 60,
               "all partitions on the remaining two")
    feed(50)

    keys = [coord_key(*c) for c in coords]
    by_key = reader.wait_keys(keys, 120, env.why)
    env.wait_committed(env.end_offsets(), 60)
    reader.poll(0.5)
    by_key = reader.by_key()
    assert w1.wait_exit(5) == 0, w1.stderr()
    assert w2.alive() and w3.alive(), env.why()
    for i, c in enumerate(coords):
        msgs = by_key[coord_key(*c)]
        first = check_result_for(msgs[0], c, i)
        assert first.WhichOneof("outcome") == "image", (i, first.error)
        assert all(same_outcome(first, m.result) for m in msgs[1:]), i
        if i % 25 == 0:
            assert first.image.data == jobs[i][1].replay().tobytes(), i
    for w in (w1, w2, w3):
        check_commits_only_for_owned(w)
    workers = {m.result.worker_id for m in reader.messages}
    assert {w1.worker_id, w2.worker_id, w3.worker_id} <= workers, workers
