"""Scenario 1 (Kafka worker issue): 1,000 jobs over 4 partitions and 2 workers;
every job gets exactly one Result, and a sample is byte-exact with Pillow."""
from harness import check_result_for, coord_key, wait_until
from jobs import image_job

N = 1000


def test_volume_exactly_one_result_per_job(make_env):
    env = make_env()
    reader = env.reader()
    w1, w2 = env.worker(), env.worker()
    wait_until(lambda: w1.owned() and w2.owned(), 60,
               lambda: env.why("both workers own partitions"), hopeless=env.hopeless)
    sizes = [(16, 16), (32, 16), (24, 40)]
    jobs = [image_job(i, *sizes[i % len(sizes)]) for i in range(N)]
    coords = env.produce([j for j, _ in jobs])
    keys = [coord_key(*c) for c in coords]
    by_key = reader.wait_keys(keys, 240, env.why)
    env.wait_committed(env.end_offsets(), 60)
    reader.poll(1.0)  # anything late would be a duplicate
    by_key = reader.by_key()

    extra = sorted(set(by_key) - set(keys))
    assert not extra, f"Results for no job: {extra[:5]}"
    dups = {k: len(v) for k, v in by_key.items() if len(v) > 1}
    assert not dups, f"{len(dups)} jobs with more than one Result: {list(dups.items())[:5]}"
    workers = set()
    for i, c in enumerate(coords):
        (m,) = by_key[coord_key(*c)]
        r = check_result_for(m, c, i)
        assert r.WhichOneof("outcome") == "image", (i, r.error)
        ref = jobs[i][1]
        assert (r.image.mode, r.image.width, r.image.height) == (ref.mode, *ref.size), i
        workers.add(r.worker_id)
        if i % 10 == 0:
            assert r.image.data == ref.replay().tobytes(), f"job {i} differs from Pillow"
    assert workers == {w1.worker_id, w2.worker_id}, workers
    assert w1.alive() and w2.alive(), env.why()
