"""The soak's workload keeps the same mix all run: the share of large jobs
(a source side past 1024) is the same in the second and the last quarter,
whichever graphs the run happened to make first. With graphs picked among
all made so far, a few large ones made early weighed by chance (the RSS of a
cpu worker followed the mix: bench/RESULTS.md, 2026-12-07 20:45)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_jobs  # noqa: E402

NOMINAL = 1 - 0.98 ** 2  # either of two side draws past 1024 (soak_jobs._side)


def large_share_by_quarter(seed, n=40_000):
    w = soak_jobs.Workload(seed, "mixed", "cpu", poison=0.0, late=0.0, new_graph_rate=0.01)
    w._graph = lambda dims: (str(max(dims)).encode(), "image")  # a graph stands for its source's side
    sides = [int(w.next()[0]) for _ in range(n)]
    q = n // 4

    def share(part):
        return sum(s > 1024 for s in part) / len(part)
    return share(sides[q:2 * q]), share(sides[3 * q:])


def test_the_share_of_large_jobs_is_the_same_in_every_quarter():
    for seed in range(1, 7):
        q2, q4 = large_share_by_quarter(seed)
        # 10,000 jobs a quarter: one standard deviation of a share is 0.2 points
        assert abs(q2 - NOMINAL) < 0.01 and abs(q4 - NOMINAL) < 0.01, (seed, q2, q4)
        assert abs(q2 - q4) < 0.01, (seed, q2, q4)
