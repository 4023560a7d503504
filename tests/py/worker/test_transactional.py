"""--transactional on the embedded broker. librdkafka's mock cluster accepts
the transactional calls but neither hides aborted messages from
read_committed readers nor stores transactional offsets (README), so this
pins what can be observed: the call sequence succeeds (init, begin, produce,
send_offsets_to_transaction, commit), every job gets exactly one Result, and
the worker drains and exits 0."""
import signal
import time

from harness import check_result_for, coord_key
from jobs import image_job

N = 60


def test_transactional_worker_commits_results_and_offsets_in_transactions(make_env):
    env = make_env()
    reader = env.reader()
    jobs = [image_job(i, 24, 24) for i in range(N)]
    coords = env.produce([j for j, _ in jobs])
    w = env.worker("--transactional", "--grace-seconds", 20)
    by_key = reader.wait_keys([coord_key(*c) for c in coords], 120, env.why)
    for i, c in enumerate(coords):
        msgs = by_key[coord_key(*c)]
        assert len(msgs) == 1, f"job {i}: {len(msgs)} Results"
        r = check_result_for(msgs[0], c, i)
        assert r.WhichOneof("outcome") == "image", (i, r.error)
    w.wait_event("txn_committed", timeout=30)
    # The mock shows Results before their transaction commits, so the last
    # commits may still be on their way when every Result has been read.
    deadline = time.monotonic() + 30
    while sum(e["results"] for e in w.named("txn_committed")) < N and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not w.named("txn_failed"), w.stderr()
    txns = w.named("txn_committed")
    assert sum(e["results"] for e in txns) >= N, txns
    assert any(e["offsets"] > 0 for e in txns), txns
    w.signal(signal.SIGTERM)
    assert w.wait_exit(30) == 0, w.stderr()
