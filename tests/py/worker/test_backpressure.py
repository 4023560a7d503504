"""Scenario 5 (Kafka worker issue): tiny caps and 200 large jobs. All are
done, the partitions were paused and resumed, and the worker's RSS stays
under twice --host-bytes plus 200 MB."""
import threading

from harness import SANITIZED, check_result_for, coord_key, rss_bytes
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
    jobs = [image_job(i, W, H, graph=1) for i in range(N)]
    w = env.worker("--host-bytes", HOST_BYTES, "--max-jobs", 2, "--max-in-flight", 1)
    w.wait_assigned(60)
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
        r = check_result_for(m, c, i)
        assert r.WhichOneof("outcome") == "image", (i, r.error)
        if i % 20 == 0:
            assert r.image.data == jobs[i][1].replay().tobytes(), f"job {i} != Pillow"
    assert w.named("paused"), env.why("never paused")
    assert w.named("resumed"), env.why("never resumed")
    assert w.alive(), env.why()
    print(f"peak RSS {peak[0] >> 20} MiB")
    # ASan's shadow memory and quarantine are not the worker's.
    if not SANITIZED:
        assert 0 < peak[0] < 2 * HOST_BYTES + (200 << 20), f"peak RSS {peak[0] >> 20} MiB"
