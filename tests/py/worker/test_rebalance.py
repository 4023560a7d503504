"""Scenario 6 (Kafka worker issue): a third worker joins mid-stream and one
leaves; nothing is lost, and no worker commits for a partition it does not
own (per its own assigned/revoked/committed log events)."""
import signal

from harness import Feeder, check_commits_only_for_owned, check_result_for, coord_key, same_outcome
from jobs import image_job


def test_join_and_leave_mid_stream(make_env):
    env = make_env()
    reader = env.reader()
    feeder = Feeder(env, reader, lambda i: image_job(i, 16, 16))
    # w1 leaves by SIGTERM while the group may still be rebalancing after
    # w3's join: its drain then waits on refused commits until the group
    # settles or drops it (about 10 s under CI's load, which outlasted the
    # default --grace-seconds 10 once: exit 1 by the grace backstop). The
    # grace is not what this test is about; the drain and its exit 0 are.
    w1, w2 = env.worker("--grace-seconds", 30), env.worker()
    feeder.until(lambda: w1.owned() and w2.owned(), 60, "two-worker assignment")
    feeder.until(lambda: len(reader.messages) >= 150, 60, "150 Results")
    w3 = env.worker()
    feeder.until(lambda: w3.owned(), 60, "assignment for the third worker")
    seen = len(reader.messages)
    feeder.until(lambda: len(reader.messages) >= seen + 100, 60, "100 Results after the join")
    w1.signal(signal.SIGTERM)
    feeder.until(lambda: not w1.alive(), 60, "the leaving worker's exit")
    feeder.until(lambda: w2.owned() | w3.owned() == {0, 1, 2, 3}, 60,
                 "all partitions on the remaining two")
    feeder.step(50)

    by_key = reader.wait_keys(feeder.keys(), 120, env.why)
    env.wait_committed(env.end_offsets(), 60)
    reader.poll(0.5)
    by_key = reader.by_key()
    assert w1.wait_exit(5) == 0, w1.stderr()
    assert w2.alive() and w3.alive(), env.why()
    for i, c in enumerate(feeder.coords):
        msgs = by_key[coord_key(*c)]
        first = check_result_for(msgs[0], c, i)
        assert first.WhichOneof("outcome") == "image", (i, first.error)
        assert all(same_outcome(first, m.result) for m in msgs[1:]), i
        if i % 25 == 0:
            assert first.image.data == feeder.jobs[i][1].replay().tobytes(), i
    for w in (w1, w2, w3):
        check_commits_only_for_owned(w)
    workers = {m.result.worker_id for m in reader.messages}
    assert {w1.worker_id, w2.worker_id, w3.worker_id} <= workers, workers
