"""Scenario 8 (Kafka worker issue): resident outputs. With --backend cuda
(IB_WORKER_BACKEND=cuda, the GPU machine): a HandleRef Result, a Download on
the control topic gives the same bytes as a raw output of the same graph, a
Release frees it and a second Download gets a clean error. With --backend
cpu: output gpu is answered with a clean Unsupported error Result and the
worker goes on."""
import pytest

from harness import BACKEND, CONTROL, check_result_for, coord_key, outcome
from imgbatch import imgbatch_pb2 as pb
from jobs import image_job


def control(env, command):
    """Publishes a Control keyed by its handle id (the worker keeps one
    handle's commands in order that way); returns the key its answer, if
    any, carries on the results topic: the control message's coordinates."""
    which = command.WhichOneof("command")
    handle = getattr(command, which).handle
    (coord,) = env.produce([(command.SerializeToString(), None,
                             str(handle.handle_id).encode())], topic=CONTROL, partition=0)
    return coord_key(*coord)


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

    download = pb.Control(download=pb.Download(handle=h, output=pb.CpuOutput(format=pb.RAW)))
    key = control(env, download)
    (answer,) = reader.wait_keys([key], 60, env.why)[key]
    assert outcome(answer) == "image", answer.result
    got = answer.result.image
    assert (got.mode, got.width, got.height, got.data) == (ref.mode, ref.width, ref.height,
                                                           ref.data)

    control(env, pb.Control(release=pb.Release(handle=h)))
    key = control(env, download)
    (answer,) = reader.wait_keys([key], 60, env.why)[key]
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
