"""Scenario 5 (Kafka worker issue): tiny caps and 200 large jobs. All are
done, the partitions were paused and resumed, and the worker's RSS grows by
less than twice --host-bytes plus 100 MB over what it held after one job of
the same kind (its fixed footprint: libraries, and on cuda the device
context and the NVRTC compile of the job's kernels, which the credits do
not count), and on the cpu backend stays under twice --host-bytes plus
200 MB in all."""
import threading

from harness import BACKEND, SANITIZED, check_result_for, coord_key, rss_bytes
from jobs import image_job

N = 200
HOST_BYTES = 1 << 20
# RGB raw: 75 KiB in and out, 3.75 MiB a partition (the mock keeps 5 MiB).
W = H = 160


def test_tiny_caps_pause_and_resume_and_bound_memory(make_env):
    env = make_env()
    reader = env.reader()
    # Invert: large in and large out, so that Results awaiting their
    # acknowledgement fill the host credits too.
    jobs = [image_job(i, W, H, graph=1) for i in range(N + 1)]
    w = env.worker("--host-bytes", HOST_BYTES, "--max-jobs", 2, "--max-in-flight", 1)
    w.wait_assigned(60)
    # One job first: what the process holds for good once it has run one.
    first = env.produce([jobs[0][0]])
    reader.wait_keys([coord_key(*c) for c in first], 120, env.why)
    base = rss_bytes(w.proc.pid)
    jobs = jobs[1:]
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss_bytes(w.proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        coords = env.produce([j for j, _ in jobs])
        by_key = reader.wait_keys([coord_key(*c) for c in coords], 240, env.why)
        env.wait_committed(env.end_offsets(), 60)
    finally:
        done.set()
        sampler.join(5)

    for i, c in enumerate(coords):
        m = by_key[coord_key(*c)][0]
        r = check_result_for(m, c, i + 1)  # job 0 went first
        assert r.WhichOneof("outcome") == "image", (i, r.error)
        if i % 20 == 0:
            assert r.image.data == jobs[i][1].replay().tobytes(), f"job {i} != Pillow"
    assert w.named("paused"), env.why("never paused")
    assert w.named("resumed"), env.why("never resumed")
    assert w.alive(), env.why()
    print(f"RSS after one job {base >> 20} MiB, peak {peak[0] >> 20} MiB")
    # ASan's shadow memory and quarantine are not the worker's.
    if not SANITIZED:
        assert 0 < peak[0] < base + 2 * HOST_BYTES + (100 << 20), \
            f"RSS after one job {base >> 20} MiB, peak {peak[0] >> 20} MiB"
        if BACKEND == "cpu":
            assert peak[0] < 2 * HOST_BYTES + (200 << 20), f"peak RSS {peak[0] >> 20} MiB"
