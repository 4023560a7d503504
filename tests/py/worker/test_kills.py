"""Scenario 2 (Kafka worker issue): a worker killed with SIGKILL three times
mid-stream and restarted each time loses nothing; its duplicates are identical
(key, outcome, bytes), and each kill adds at most --max-uncommitted of them."""
import signal

from harness import Feeder, check_result_for, coord_key, same_outcome
from jobs import image_job

KILLS = 3
# The kill bound is its own setting, below --max-jobs (which counts jobs only
# until their delivery): a worker bounded by --max-jobs alone would expose
# up to MAX_JOBS answered-uncommitted Results per kill and fail below.
MAX_UNCOMMITTED = 4
MAX_JOBS = 16
# Every broker answer this late: a Result waits that long for its delivery
# and again for the commit after it, so a kill finds many answered and
# uncommitted unless the bound holds them back (with the gate taken out, a
# worker killed mid-burst exposed up to --max-jobs; a broker that answers at
# once, and a kill while the worker kept up, let a missing gate pass about
# one run in three).
RTT_MS = 40
BURST = 80


def test_sigkill_three_times_loses_nothing(make_env):
    env = make_env()
    env.broker.command(f"rtt all {RTT_MS}")
    reader = env.reader()
    feeder = Feeder(env, reader, lambda i: image_job(i, 16, 16))
    # Static membership: a restart inside the session timeout takes its
    # partitions back without a rebalance (README, "Rebalance"). Each run
    # has its own worker id (the Results carry it), so that what a killed
    # run answered is told apart from its successors' Results.
    args = ("--max-jobs", MAX_JOBS, "--max-uncommitted", MAX_UNCOMMITTED, "--max-in-flight", 1,
            "-X", "group.instance.id=killed")
    w = env.worker(*args, worker_id="killed-0")
    committed_at_kill = []
    for k in range(KILLS):
        feeder.until(lambda: w.owned(), 60, "assignment")
        seen = len(reader.by_key())
        feeder.until(lambda: len(reader.by_key()) >= seen + 100, 60, "100 more Results")
        # A burst, so that the kill lands while the worker is busy: Results
        # going out faster than commits come back.
        seen = len(reader.by_key())
        feeder.step(BURST)
        feeder.until(lambda: len(reader.by_key()) >= seen + 20, 60, "20 Results of the burst")
        w.signal(signal.SIGKILL)
        assert w.wait_exit(20) == -signal.SIGKILL
        # A commit the dead process had on the wire lands meanwhile; the
        # group's committed offsets are then where its successor starts.
        reader.poll(0.5)
        committed_at_kill.append(env.committed())
        w = env.worker(*args, worker_id=f"killed-{k + 1}")
    feeder.until(lambda: w.owned(), 60, "assignment")
    feeder.step(50)
    by_key = reader.wait_keys(feeder.keys(), 120, env.why)
    env.wait_committed(env.end_offsets(), 60)
    reader.poll(1.0)
    by_key = reader.by_key()

    assert set(by_key) == set(feeder.keys())
    duplicates = 0
    for i, c in enumerate(feeder.coords):
        msgs = by_key[coord_key(*c)]
        first = check_result_for(msgs[0], c, i)
        assert first.WhichOneof("outcome") == "image", (i, first.error)
        if i % 25 == 0:
            assert first.image.data == feeder.jobs[i][1].replay().tobytes(), f"job {i} != Pillow"
        for m in msgs[1:]:
            check_result_for(m, c, i)
            assert same_outcome(first, m.result), f"duplicate of job {i} differs"
        duplicates += len(msgs) - 1
    # What kill k exposed: jobs run k answered (their Result is on the topic)
    # at or past the offsets committed when it died. Its successor starts
    # there and answers them again. The worker sends a Result only while
    # fewer than --max-uncommitted are answered and not yet covered by an
    # acknowledged commit, so a kill exposes at most that many.
    # (Read after the end, so a Result that reached the topic just before a
    # kill is not missed.)
    exposed = []
    for k, committed in enumerate(committed_at_kill):
        exposed.append({m.key for m in reader.messages
                        if m.result.worker_id == f"killed-{k}"
                        and m.result.source.offset >= committed[m.result.source.partition]})
    counts = [len(s) for s in exposed]
    print(f"{len(feeder.coords)} jobs, {duplicates} duplicates after {KILLS} kills; "
          f"answered-uncommitted per kill: {counts}")
    for k, s in enumerate(exposed):
        assert len(s) <= MAX_UNCOMMITTED, (
            f"kill {k} exposed {len(s)} answered-uncommitted jobs, "
            f"more than --max-uncommitted {MAX_UNCOMMITTED}: {sorted(s)}")
    # A job is repeated only after a kill that found it answered but not
    # committed: once per such kill at most.
    for i, c in enumerate(feeder.coords):
        key = coord_key(*c)
        extra = len(by_key[key]) - 1
        assert extra <= sum(key in s for s in exposed), (
            f"job {i} answered {extra + 1} times, exposed at {sum(key in s for s in exposed)} "
            f"kills; committed at kills {committed_at_kill}")
    assert duplicates <= KILLS * MAX_UNCOMMITTED, (duplicates, counts)
    assert w.alive(), env.why()
