"""Scenario 4 (Kafka worker issue): poison messages each get an error Result
with the right stage and kind, in their own coordinates; with --dlq-topic
their original bytes land on the DLQ with the imgbatch-* headers; the worker
survives, answers the next good job and commits everything."""
import os

import pytest

from harness import Env, check_result_for, coord_key, error_of, outcome, wait_until
from imgbatch import imgbatch_pb2 as pb
from jobs import image_job, poison_cases

DLQ = "imgbatch.dlq"
CASES = poison_cases("escape/passwd")


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory):
    """One broker and one worker fed every poison case, then a good job."""
    workdir = tmp_path_factory.mktemp("poison")
    root = workdir / "root"
    root.mkdir()
    os.symlink("/etc", root / "escape")
    env = Env(workdir / "env", topics=[f"{DLQ}:1"])
    try:
        reader = env.reader()
        dlq = env.reader(DLQ, parse=False)
        w = env.worker("--dlq-topic", DLQ, "--source-root", root)
        coords = env.produce([data for _, data, *_ in CASES], partition=1)
        good, good_im = image_job(1, 16, 16)
        (good_coord,) = env.produce([good], partition=1)
        keys = [coord_key(*c) for c in coords + [good_coord]]
        by_key = reader.wait_keys(keys, 90, env.why)
        committed = env.wait_committed({1: good_coord[2] + 1}, 30)
        dlq.poll(1.0)  # DLQ copies are acknowledged before their commits
        yield dict(env=env, worker=w, coords=coords, by_key=by_key, dlq=dlq,
                   good=(good_coord, good_im), committed=committed)
    finally:
        env.close()
    reports = env.sanitizer_reports()
    assert not reports, "sanitizer reports:\n" + "\n".join(reports[:20])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_poison_gets_an_error_result_with_stage_and_kind(poisoned, case):
    name, data, stage, kinds, words = case
    coord = poisoned["coords"][CASES.index(case)]
    msgs = poisoned["by_key"][coord_key(*coord)]
    assert len(msgs) == 1, f"{name}: {len(msgs)} Results"
    r = check_result_for(msgs[0], coord)
    assert outcome(msgs[0]) == "error", f"{name}: {r}"
    got_stage, got_kind, message = error_of(msgs[0])
    if stage is not None:
        assert got_stage == pb.Stage.Name(stage), (name, got_stage, message)
    assert got_kind in {pb.ErrorKind.Name(k) for k in kinds}, (name, got_kind, message)
    for word in words:
        assert word in message, (name, message)
    r.SerializeToString()  # every string in it is valid UTF-8


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_poison_lands_on_the_dlq_with_its_original_bytes(poisoned, case):
    name, data = case[:2]
    topic, partition, offset = poisoned["coords"][CASES.index(case)]
    def matches():
        poisoned["dlq"].poll(0.2)
        return [m for m in poisoned["dlq"].messages
                if m.headers.get("imgbatch-offset") == str(offset).encode()
                and m.headers.get("imgbatch-partition") == str(partition).encode()]

    wait_until(matches, 5, lambda: f"{name}: not on the DLQ")
    assert len(matches()) == 1, (name, [m.headers for m in poisoned["dlq"].messages])
    (m,) = matches()
    assert (m.value or b"") == (data or b""), name
    assert m.headers.get("imgbatch-topic") == topic.encode()
    (r,) = poisoned["by_key"][coord_key(topic, partition, offset)]
    stage, kind, message = error_of(r)
    # The enum's name in any case (DECODE_ERROR may be DECODE), or its number.
    assert m.headers.get("imgbatch-stage", b"").upper() in (
        stage.encode(), str(r.result.error.stage).encode()), m.headers
    assert m.headers.get("imgbatch-kind", b"").upper() in (
        kind.encode(), kind.removesuffix("_ERROR").encode(), str(r.result.error.kind).encode()
    ), m.headers
    assert m.headers.get("imgbatch-error"), m.headers


def test_the_worker_survives_poison_and_commits_it(poisoned):
    coord, im = poisoned["good"]
    (m,) = poisoned["by_key"][coord_key(*coord)]
    r = check_result_for(m, coord, 1)
    assert r.image.data == im.replay().tobytes()
    assert poisoned["worker"].alive(), poisoned["env"].why()
    assert len(poisoned["worker"].named("start")) == 1
    assert poisoned["committed"][1] == coord[2] + 1
