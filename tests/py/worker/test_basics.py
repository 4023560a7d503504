"""The worker's interface in the small: flags, one job's round trip (key,
coordinates, headers, correlation id, byte-exact image), its commit, its logs
and a drained exit."""
import os
import signal
import subprocess

from harness import BACKEND, BIN, JOBS, RESULTS, check_result_for, coord_key
from jobs import image_job

TRACEPARENT = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_help_names_the_interface():
    p = subprocess.run([BIN, "worker", "--help"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0
    for flag in ("--brokers", "--group", "--jobs-topic", "--results-topic", "--control-topic",
                 "--dlq-topic", "--backend", "--source-root", "--output-dir",
                 "--max-result-bytes", "--host-bytes", "--gpu-bytes", "--max-jobs",
                 "--max-uncommitted", "--max-in-flight", "--grace-seconds", "--worker-id", "-X"):
        assert flag in p.stdout, flag


def test_a_bad_flag_is_a_usage_error():
    p = subprocess.run([BIN, "worker", "--brokers", "127.0.0.1:1", "--no-such-flag"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 2, p.stderr
    for bad in ("0", "-1", "x", "4294967296"):
        p = subprocess.run([BIN, "worker", "--brokers", "127.0.0.1:1", "--max-uncommitted", bad],
                           capture_output=True, text=True, timeout=20)
        assert p.returncode == 2, (bad, p.stderr)


def test_one_job_round_trip(make_env):
    env = make_env()
    reader = env.reader()
    w = env.worker()
    start = w.wait_event("start")
    assert start.get("worker_id") == w.worker_id and start.get("backend") == BACKEND, start
    job, im = image_job(7, w=24, h=16, correlation_id="corr-7")
    headers = [("traceparent", TRACEPARENT), ("correlation-id", b"c-7"), ("other", b"x")]
    (coord,) = env.produce([(job, headers, b"msg-key")], partition=2)
    key = coord_key(*coord)
    (m,) = reader.wait_keys([key], 60, env.why)[key]
    assert m.topic == RESULTS
    r = check_result_for(m, coord, 7)
    assert r.WhichOneof("outcome") == "image", r
    ref = im.replay()
    assert (r.image.mode, r.image.width, r.image.height) == (ref.mode, *ref.size)
    assert r.image.data == ref.tobytes()
    assert r.worker_id == w.worker_id
    assert r.correlation_id == "corr-7"
    assert m.headers.get("traceparent") == TRACEPARENT, m.headers
    assert m.headers.get("correlation-id") == b"c-7", m.headers

    committed = env.wait_committed({2: coord[2] + 1}, 30)
    assert all(o < 0 for p, o in committed.items() if p != 2), committed
    w.wait_event("committed", lambda e: (e.get("topic"), e.get("partition"), e.get("offset")) ==
                 (JOBS, 2, coord[2] + 1))
    assigned = w.wait_event("assigned")
    assert [JOBS, 2] in assigned["partitions"], assigned

    w.signal(signal.SIGTERM)
    assert w.wait_exit(20) == 0, w.stderr()
    assert w.named("shutdown"), w.stderr()
    assert [e.get("code") for e in w.named("exit")] == [0], w.stderr()


def test_jobs_in_every_partition_are_answered_in_their_own_coordinates(make_env):
    env = make_env()
    reader = env.reader()
    env.worker()
    jobs = [image_job(i, w=8, h=8) for i in range(12)]
    coords = env.produce([j for j, _ in jobs])
    assert sorted({p for _, p, _ in coords}) == [0, 1, 2, 3]
    by_key = reader.wait_keys([coord_key(*c) for c in coords], 60, env.why)
    for i, c in enumerate(coords):
        (m,) = by_key[coord_key(*c)]
        r = check_result_for(m, c, i)
        assert r.image.data == jobs[i][1].replay().tobytes()
    env.wait_committed({p: 3 for p in range(4)}, 30)



def test_tuned_worker_runs_jobs_with_its_settings(make_env):
    """--tune flags and a `tune =` line of the config file reach the executor the
    worker creates, which runs jobs with them for the worker's whole life."""
    env = make_env()
    conf = os.path.join(env.workdir, "tuned.conf")
    with open(conf, "w") as f:
        f.write("tune = compile_queue=8\n")
    reader = env.reader()
    w = env.worker("--config", conf, "--tune", "ramp_jobs=2", "--tune", "cuda_pieces=1")
    w.wait_event("start")
    jobs = [image_job(i, w=9, h=5) for i in range(3)]
    coords = env.produce([job for job, _ in jobs], partition=0)
    keys = [coord_key(*c) for c in coords]
    got = reader.wait_keys(keys, 60, env.why)
    for i, ((_, im), c, k) in enumerate(zip(jobs, coords, keys)):
        (m,) = got[k]
        r = check_result_for(m, c, i)
        assert r.WhichOneof("outcome") == "image", r
        assert r.image.data == im.replay().tobytes()
