"""Worker faults are not job faults (worker-faults issue, "Tests"): a device,
allocation, sink, produce or commit failure never becomes an error Result with
a committed offset. Jobs go to a one-partition topic and the worker runs one
job at a time (--max-jobs 1 --max-in-flight 1), so that "job N" is the N-th
submission, counted from 1, at offset N-1.

--fault needs a build configured with -DIB_FAULTS=ON (tests skip without it);
the sink, produce and commit cases also run on any build, through RLIMIT_FSIZE
and the broker's mock request errors. With IB_WORKER_BACKEND=cuda (the GPU
machine) the transient and sticky device cases run through --backend cuda."""
import os
import signal
import time

import pytest

from harness import check_result_for, coord_key, error_of, outcome, same_outcome, t
from imgbatch import imgbatch_pb2 as pb
from jobs import image_job

ONE = ("--max-jobs", 1, "--max-in-flight", 1)
TOPICS = ["imgbatch.jobs:1", "imgbatch.dlq:1"]
GRACE = 5


def one_partition_env(make_env):
    return make_env(topics=TOPICS)


def produce_jobs(env, n, w=16, h=16, **kw):
    jobs = [image_job(i, w, h, key=f"job-{i}", **kw) for i in range(n)]
    coords = env.produce([j for j, _ in jobs], partition=0)
    return jobs, coords


def assert_all_right(env, reader, jobs, coords, timeout=120):
    """Every job has its right Result (the Pillow image), none is an error,
    duplicates agree; the group committed the whole partition."""
    by_key = reader.wait_keys([coord_key(*c) for c in coords], timeout, env.why)
    env.wait_committed({0: len(coords)}, 60)
    for i, c in enumerate(coords):
        msgs = by_key[coord_key(*c)]
        first = check_result_for(msgs[0], c, f"job-{i}")
        assert outcome(msgs[0]) == "image", (i, first.error)
        assert first.image.data == jobs[i][1].replay().tobytes(), f"job {i} != Pillow"
        assert all(same_outcome(first, m.result) for m in msgs[1:]), i
    errors = [m for m in reader.messages if outcome(m) == "error"]
    assert not errors, [error_of(m) for m in errors]


@pytest.mark.parametrize("spec", ["device@4", "alloc@4"])
def test_transient_fault_is_retried_and_every_job_is_right(make_env, need_faults, spec):
    env = one_partition_env(make_env)
    reader = env.reader()
    jobs, coords = produce_jobs(env, 10)
    w = env.worker(*ONE, "--fault", spec)
    assert_all_right(env, reader, jobs, coords)
    assert w.named("fault"), env.why("no fault event: the injected fault never fired, or was "
                                     "not logged")
    assert w.alive(), env.why()


def _sticky(env, reader, w, fault_job, n):
    """A sticky fault from job fault_job on: the worker exits non-zero within
    the grace period; nothing from fault_job on is answered or committed, and
    no error Result exists."""
    fault = w.wait_event("fault", timeout=60)
    rc = w.wait_exit(GRACE + 10)
    took = time.monotonic() - (w.started_at + fault["_t"])
    assert rc != 0, env.why(f"exit code {rc}")
    assert took <= t(GRACE + 3), env.why(f"exited {took:.1f}s after the fault")
    exits = w.named("exit")
    assert not exits or exits[-1].get("code") == rc, w.stderr()
    committed = env.committed()[0]
    assert committed <= fault_job - 1, env.why(f"committed {committed} past job {fault_job}")
    reader.poll(1.0)
    errors = [m for m in reader.messages if outcome(m) == "error"]
    assert not errors, [error_of(m) for m in errors]
    late = [m.key for m in reader.messages if m.result and m.result.source.offset >= fault_job - 1]
    assert not late, f"answered from job {fault_job} on: {late}"
    return committed


def test_sticky_device_fault_exits_and_a_restart_completes(make_env, need_faults):
    env = one_partition_env(make_env)
    reader = env.reader()
    jobs, coords = produce_jobs(env, 10)
    w = env.worker(*ONE, "--fault", "device@4+", "--grace-seconds", GRACE)
    _sticky(env, reader, w, 4, len(jobs))
    env.worker(*ONE)
    assert_all_right(env, reader, jobs, coords)


def _file_results_right(env, reader, outdir, jobs, coords):
    by_key = reader.wait_keys([coord_key(*c) for c in coords], 120, env.why)
    env.wait_committed({0: len(coords)}, 60)
    for i, c in enumerate(coords):
        m = by_key[coord_key(*c)][0]
        r = check_result_for(m, c, f"job-{i}")
        assert outcome(m) == "file", (i, r)
        with open(os.path.join(outdir, r.file.path), "rb") as f:
            assert f.read() == jobs[i][1].replay().tobytes(), f"job {i}: file != Pillow"
    assert not [m for m in reader.messages if outcome(m) == "error"]


def test_sink_fault_is_sticky_and_a_restart_writes_every_file(make_env, need_faults, tmp_path):
    env = one_partition_env(make_env)
    reader = env.reader()
    outdir = tmp_path / "out"
    outdir.mkdir()
    jobs, coords = produce_jobs(env, 6, 32, 32)  # 3072 raw bytes each, past 1000
    sink = ("--output-dir", outdir, "--max-result-bytes", 1000)
    w = env.worker(*ONE, *sink, "--fault", "sink", "--grace-seconds", GRACE)
    _sticky(env, reader, w, 1, len(jobs))
    env.worker(*ONE, *sink)
    _file_results_right(env, reader, outdir, jobs, coords)


def test_file_size_limit_is_a_sink_fault(make_env, tmp_path):
    """The same without --fault: RLIMIT_FSIZE (SIGXFSZ ignored) makes every
    output write fail with EFBIG."""
    env = one_partition_env(make_env)
    reader = env.reader()
    outdir = tmp_path / "out"
    outdir.mkdir()
    jobs, coords = produce_jobs(env, 6, 32, 32)
    sink = ("--output-dir", outdir, "--max-result-bytes", 1000)
    w = env.worker(*ONE, *sink, "--grace-seconds", GRACE, rlimit_fsize=1000)
    _sticky(env, reader, w, 1, len(jobs))
    env.worker(*ONE, *sink)
    _file_results_right(env, reader, outdir, jobs, coords)


def test_a_job_that_alone_faults_gets_internal_and_the_dlq(make_env, need_faults):
    env = one_partition_env(make_env)
    reader = env.reader()
    dlq = env.reader("imgbatch.dlq", parse=False)
    jobs, coords = produce_jobs(env, 10)
    bad = 4
    w = env.worker(*ONE, "--fault", f"key=job-{bad}", "--dlq-topic", "imgbatch.dlq")
    by_key = reader.wait_keys([coord_key(*c) for c in coords], 120, env.why)
    env.wait_committed({0: len(coords)}, 60)
    for i, c in enumerate(coords):
        msgs = by_key[coord_key(*c)]
        r = check_result_for(msgs[0], c, f"job-{i}")
        if i == bad:
            assert [outcome(m) for m in msgs] == ["error"], [m.result for m in msgs]
            assert r.error.kind == pb.INTERNAL, r.error
        else:
            assert outcome(msgs[0]) == "image", (i, r.error)
            assert r.image.data == jobs[i][1].replay().tobytes()
    (d,) = dlq.wait_count(1, 30, why=env.why)
    assert d.value == jobs[bad][0]
    assert d.headers.get("imgbatch-offset") == str(coords[bad][2]).encode()
    assert len(w.named("fault")) >= 3, env.why("fewer than 3 attempts")
    assert w.alive() and len(w.named("start")) == 1, env.why()


def test_produce_errors_past_message_timeout_are_waited_out(make_env):
    """Produce fails on the broker (mock request errors) for longer than the
    worker's message.timeout.ms: its Results are produced again once the broker
    recovers; the worker does not exit; nothing is committed before."""
    env = one_partition_env(make_env)
    reader = env.reader()
    jobs, coords = produce_jobs(env, 8)
    env.broker.command("error Produce 100000 NOT_ENOUGH_REPLICAS")  # from here on, ours too
    w = env.worker(*ONE, x=("message.timeout.ms=2000",))
    w.wait_assigned(60)
    time.sleep(t(6))  # three message timeouts
    assert w.alive(), env.why("the worker exited on produce errors")
    assert env.committed()[0] < 0, env.why("committed while no Result was acknowledged")
    reader.poll(0.5)
    assert not reader.messages, "Results while every Produce failed"
    env.broker.command("clear Produce")
    assert_all_right(env, reader, jobs, coords)
    assert w.alive() and len(w.named("start")) == 1, env.why()


def test_a_commit_retried_late_does_not_undo_the_final_one(make_env):
    """librdkafka retries a timed-out OffsetCommit itself, retry.backoff.ms later: the retry
    of an old offset lands after newer commits. At a clean stop it landed after the final
    commit and the group went back to it (CI 12-04: a restarted worker redid 16 of 20 jobs).
    The final commit waits for every earlier commit's answer."""
    env = one_partition_env(make_env)
    reader = env.reader()
    jobs, coords = produce_jobs(env, 20)
    env.broker.command("error OffsetCommit 1 REQUEST_TIMED_OUT")
    w = env.worker(*ONE, "-X", "retry.backoff.ms=3000")
    assert_all_right(env, reader, jobs, coords)
    # The first commit's retry is still waiting out its backoff.
    w.signal(signal.SIGTERM)
    assert w.wait_exit(30) == 0, w.stderr()
    assert env.committed()[0] == 20, env.why("the group's offset went back after the stop")


def test_commit_failures_are_retried_and_nothing_is_lost(make_env):
    env = one_partition_env(make_env)
    reader = env.reader()
    jobs, coords = produce_jobs(env, 20)
    env.broker.command("error OffsetCommit 3 REQUEST_TIMED_OUT")
    env.broker.command("error OffsetCommit 3 COORDINATOR_NOT_AVAILABLE")
    w = env.worker(*ONE)
    assert_all_right(env, reader, jobs, coords)
    assert w.alive() and len(w.named("start")) == 1, env.why()
    # A restarted worker finds everything committed: nothing is redone.
    w.signal(signal.SIGTERM)
    assert w.wait_exit(20) == 0, w.stderr()
    seen = len(reader.messages)
    w2 = env.worker(*ONE)
    w2.wait_assigned(60)
    time.sleep(t(2))
    reader.poll(0.5)
    assert len(reader.messages) == seen, "jobs redone after a clean restart"


def test_a_refused_commit_is_retried_with_backoff_not_in_a_storm(make_env):
    """A commit the group refuses outright (here INVALID_COMMIT_OFFSET_SIZE, which
    librdkafka hands back at once) is sent again later, backing off: it was resent every
    loop, ~1 ms apart in a drain (CI: 22 commit_failed lines in 23 ms). Once the broker
    takes commits again, the whole partition is committed and nothing is redone."""
    env = one_partition_env(make_env)
    reader = env.reader()
    env.broker.command("error OffsetCommit 1000000 INVALID_COMMIT_OFFSET_SIZE")
    jobs, coords = produce_jobs(env, 20)
    w = env.worker(*ONE)
    by_key = reader.wait_keys([coord_key(*c) for c in coords], t(120), env.why)
    assert len(by_key) == 20
    w.wait_event("commit_failed", timeout=t(30))
    window = 3.0
    time.sleep(window)
    refused = w.named("commit_failed")
    # A backoff doubling from 10 ms to a 0.5 s ceiling resends about 12 times in 3 s; one try a
    # loop was about 60 (steady state, 50 ms a loop) and ~1 ms apart in a drain.
    assert 2 <= len(refused) <= 16, env.why(f"{len(refused)} refused commits in ~{window} s")
    env.broker.command("clear OffsetCommit")
    env.wait_committed({0: 20}, t(30))
    assert w.alive() and len(w.named("start")) == 1, env.why()
    w.signal(signal.SIGTERM)
    assert w.wait_exit(t(20)) == 0, w.stderr()


def test_a_drain_behind_refused_commits_backs_off_and_finishes_once_they_are_taken(make_env):
    """The drain after SIGTERM with Results held behind the kill bound (--max-uncommitted 2)
    and every commit refused: it resends with the same backoff (it was every 1 ms), and once
    the broker takes commits again the held Results go out, the partition is committed and
    the worker exits 0."""
    env = one_partition_env(make_env)
    reader = env.reader()
    env.broker.command("error OffsetCommit 1000000 INVALID_COMMIT_OFFSET_SIZE")
    jobs, coords = produce_jobs(env, 10)
    w = env.worker(*ONE, "--max-uncommitted", 2, "--grace-seconds", 60)
    w.wait_event("commit_failed", timeout=t(60))
    time.sleep(0.5)
    w.signal(signal.SIGTERM)
    w.wait_event("shutdown", timeout=t(30))
    before = len(w.named("commit_failed"))
    time.sleep(2.0)
    during = len(w.named("commit_failed")) - before
    assert during <= 12, env.why(f"{during} refused commits in 2 s of the drain")
    assert w.alive(), env.why("the drain ended before its Results were out")
    env.broker.command("clear OffsetCommit")
    assert w.wait_exit(t(60)) == 0, w.stderr()
    # The stop fetched no more: what it finished is out and committed, the rest is the
    # next worker's.
    reader.poll(0.5)
    done = {m.key for m in reader.messages}
    assert done and env.committed()[0] == len(done), env.why(f"{len(done)} Results out")
    env.worker(*ONE)
    by_key = reader.wait_keys([coord_key(*c) for c in coords], t(60), env.why)
    assert len(by_key) == 10
