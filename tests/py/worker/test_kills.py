"""Scenario 2 (Kafka worker issue): a worker killed with SIGKILL three times
mid-stream and restarted each time loses nothing; its duplicates are identical
(key, outcome, bytes), and each kill adds at most --max-jobs of them."""
import signal
import time

from harness import check_result_for, coord_key, same_outcome
from jobs import SLOW, image_job

N = 900
MAX_JOBS = 4
KILL_AT = (150, 350, 550)  # distinct Results seen before each kill


def test_sigkill_three_times_loses_nothing(make_env):
    env = make_env()
    reader = env.reader()
    args = ("--max-jobs", MAX_JOBS, "--max-in-flight", 1)
    jobs = [image_job(i, 96, 96, graph=SLOW) for i in range(N)]
    coords = env.produce([j for j, _ in jobs])
    keys = [coord_key(*c) for c in coords]

    w = env.worker(*args, worker_id="killed")
    mid_stream = []
    for threshold in KILL_AT:
        w.wait_assigned(60)
        deadline = time.monotonic() + 240
        while len(reader.by_key()) < threshold:
            assert time.monotonic() < deadline, env.why(f"stuck below {threshold} Results")
            assert w.alive(), env.why("worker died on its own")
            reader.poll(0.05)
        w.signal(signal.SIGKILL)
        assert w.wait_exit(20) == -signal.SIGKILL
        mid_stream.append(len(reader.by_key()) < N)
        w = env.worker(*args, worker_id="killed")
    by_key = reader.wait_keys(keys, 300, env.why)
    env.wait_committed(env.end_offsets(), 60)
    reader.poll(1.0)
    by_key = reader.by_key()

    assert sum(mid_stream) >= 2, f"kills were not mid-stream ({mid_stream}): make N larger"
    assert set(by_key) == set(keys)
    duplicates = 0
    for i, c in enumerate(coords):
        msgs = by_key[coord_key(*c)]
        first = check_result_for(msgs[0], c, i)
        assert first.WhichOneof("outcome") == "image", (i, first.error)
        if i % 15 == 0:
            assert first.image.data == jobs[i][1].replay().tobytes(), f"job {i} != Pillow"
        for m in msgs[1:]:
            check_result_for(m, c, i)
            assert same_outcome(first, m.result), f"duplicate of job {i} differs"
        duplicates += len(msgs) - 1
    assert duplicates <= len(KILL_AT) * MAX_JOBS, (
        f"{duplicates} duplicates for {len(KILL_AT)} kills at --max-jobs {MAX_JOBS}")
    assert w.alive(), env.why()
