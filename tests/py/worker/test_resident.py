"""Scenario 8 (Kafka worker issue): resident outputs. With --backend cuda
(IB_WORKER_BACKEND=cuda, the GPU machine): a HandleRef Result, a Download on
the control topic gives the same bytes as a raw output of the same graph, a
Release frees it and a second Download gets a clean error. With --backend
cpu: output gpu is answered with a clean Unsupported error Result and the
worker goes on."""
import time

import pytest

from harness import BACKEND, CONTROL, JOBS, check_result_for, coord_key, outcome
from imgbatch import imgbatch_pb2 as pb
from jobs import image_job


def control(env, command):
    """Publishes a Control keyed by its handle id (the worker keeps one
    handle's commands in order that way)."""
    which = command.WhichOneof("command")
    handle = getattr(command, which).handle
    env.produce([(command.SerializeToString(), None, str(handle.handle_id).encode())],
                topic=CONTROL, partition=0)


def next_answer(env, reader, after, timeout=60):
    """The first message on the results topic past index `after` that answers
    no job (a control answer)."""
    deadline = time.monotonic() + timeout
    while True:
        for i, m in enumerate(reader.messages[after:], after):
            if not (m.key or "").startswith(JOBS + "/"):
                return i, m
        assert time.monotonic() < deadline, env.why("no control answer")
        reader.poll(0.3)


@pytest.mark.skipif(BACKEND != "cuda", reason="resident outputs need --backend cuda")
def test_resident_round_trip(make_env):
    env = make_env()
    reader = env.reader()
    w = env.worker()
    gpu_job, im = image_job(3, 48, 32, output="gpu")
    raw_job, _ = image_job(3, 48, 32, output="raw")
    gpu_coord, raw_coord = env.produce([gpu_job, raw_job], partition=0)
    by_key = reader.wait_keys([coord_key(*gpu_coord), coord_key(*raw_coord)], 60, env.why)
    (gm,) = by_key[coord_key(*gpu_coord)]
    (rm,) = by_key[coord_key(*raw_coord)]
    ref = check_result_for(rm, raw_coord, 3).image
    assert ref.data == im.replay().tobytes()
    r = check_result_for(gm, gpu_coord, 3)
    assert outcome(gm) == "resident", r
    h = r.resident
    assert h.worker_id == w.worker_id and (h.mode, h.width, h.height) == ("RGB", 48, 32)

    mark = len(reader.messages)
    control(env, pb.Control(download=pb.Download(handle=h, output=pb.CpuOutput(format=pb.RAW))))
    mark, answer = next_answer(env, reader, mark)
    assert outcome(answer) == "image", answer.result
    assert (answer.result.image.mode, answer.result.image.width, answer.result.image.height,
            answer.result.image.data) == (ref.mode, ref.width, ref.height, ref.data)

    control(env, pb.Control(release=pb.Release(handle=h)))
    control(env, pb.Control(download=pb.Download(handle=h, output=pb.CpuOutput(format=pb.RAW))))
    deadline = time.monotonic() + 60
    while True:  # a Release may be answered (no image); the Download after it fails
        mark, answer = next_answer(env, reader, mark + 1, timeout=deadline - time.monotonic())
        if outcome(answer) in ("image", "error"):
            break
    assert outcome(answer) == "error", f"Download after Release: {answer.result}"
    answer.result.SerializeToString()
    assert w.alive(), env.why()


def test_output_gpu_on_the_cpu_backend_is_a_clean_unsupported_result(make_env):
    if BACKEND != "cpu":
        pytest.skip("the cpu backend's answer to output gpu")
    env = make_env()
    reader = env.reader()
    w = env.worker()
    gpu_job, _ = image_job(5, 16, 16, output="gpu")
    raw_job, im = image_job(6, 16, 16)
    gpu_coord, raw_coord = env.produce([gpu_job, raw_job], partition=3)
    by_key = reader.wait_keys([coord_key(*gpu_coord), coord_key(*raw_coord)], 60, env.why)
    (gm,) = by_key[coord_key(*gpu_coord)]
    r = check_result_for(gm, gpu_coord, 5)
    assert outcome(gm) == "error", r
    assert r.error.kind == pb.UNSUPPORTED and r.error.stage == pb.ADMIT, r.error
    (rm,) = by_key[coord_key(*raw_coord)]
    assert check_result_for(rm, raw_coord, 6).image.data == im.replay().tobytes()
    env.wait_committed({3: raw_coord[2] + 1}, 30)
    assert w.alive(), env.why()
