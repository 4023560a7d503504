"""`imgbatch run` as a front end over the executor API: streaming, caps, errors."""
import os
import subprocess

import pytest
from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes

from ibtest import frames, raw_job, results_of, run
from imgbatch import imgbatch_pb2 as pb

BIN = os.environ["IB_BIN"]


def test_results_match_inputs_by_key_through_a_small_window():
    jobs = [raw_job(k, seed=k) for k in range(40)]
    p, results = run(jobs, "--max-jobs", "2", "--max-in-flight", "1", "--host-bytes", "64K")
    assert p.returncode == 0, p.stderr
    assert len(results) == 40
    assert len({r.job_id for r in results}) == 40
    for r in results:
        assert r.WhichOneof("outcome") == "image", r.error.message
        assert r.image.data == jobs[r.key_u64].source.raw.data


def test_frames_parsed_in_place_keep_their_pixels_across_sizes():
    # 80x60 RGB and 128x64 RGBA are past the in-place threshold (their raw
    # data is borrowed from the frame's buffer), 4x3 is unpacked; an empty
    # frame is an error result and the stream goes on.
    sizes = [(80, 60, "RGB"), (4, 3, "RGB"), (128, 64, "RGBA"), (80, 60, "RGB")] * 3
    jobs = [raw_job(k, w=w, h=h, mode=m, seed=k) for k, (w, h, m) in enumerate(sizes)]
    p, results = run(jobs[:5] + [b""] + jobs[5:], "--max-jobs", "3")
    assert p.returncode == 0, p.stderr
    images = [r for r in results if r.WhichOneof("outcome") == "image"]
    errors = [r for r in results if r.WhichOneof("outcome") == "error"]
    assert len(images) == len(jobs) and len(errors) == 1
    for r in images:
        assert r.image.data == jobs[r.key_u64].source.raw.data


def test_a_frame_without_memory_is_an_internal_parse_error_and_the_next_frame_runs(tmp_path):
    # 450 MiB of zeros (a sparse file) under a 300 MB address-space limit:
    # no executor buffer for it, so it is read past and answered; the frame
    # after it lines up and runs.
    big = 450 << 20
    job = raw_job(9).SerializeToString()
    path = tmp_path / "frames.bin"
    with open(path, "wb") as f:
        f.write(_VarintBytes(big))
        f.seek(big, 1)
        f.write(_VarintBytes(len(job)) + job)
    p = subprocess.run(["bash", "-c", f'ulimit -v 300000; exec "{BIN}" run --in "{path}"'],
                       capture_output=True, timeout=60)
    if b"Sanitizer" in p.stderr:
        pytest.skip("sanitizer builds cannot run under an address-space limit")
    results = results_of(p.stdout)
    assert p.returncode == 0, p.stderr
    assert len(results) == 2
    (oom,) = [r for r in results if r.WhichOneof("outcome") == "error"]
    (ok,) = [r for r in results if r.WhichOneof("outcome") == "image"]
    assert oom.error.kind == pb.INTERNAL and oom.error.stage == pb.PARSE
    assert "out of memory" in oom.error.message
    assert oom.WhichOneof("job_id_present") is None
    assert ok.key_u64 == 9 and ok.image.data == raw_job(9).source.raw.data


@pytest.mark.parametrize("ahead", ["1", "0", "64M"])
def test_executor_ahead_bounds_the_frames_in_the_stream_and_every_job_is_answered(ahead):
    # --executor-ahead 1: never more than max-in-flight + 2 frames handed to
    # the executor without their result back (IB_RUN_PROFILE says how many
    # at most), and the bound holds nothing back for good: error inputs (an
    # empty frame failing validation, a frame that does not parse, a job
    # over host-bytes rejected at admission) count as inputs with one result
    # each, and every job is answered as without the bound (0) or with one
    # that never binds here (64M).
    jobs = [raw_job(k, w=64, h=48, seed=k) for k in range(30)]
    big = raw_job(99, w=512, h=512)
    stream = frames(jobs[:10] + [b""] + jobs[10:15] + [b"\xff"] + jobs[15:20] + [big] + jobs[20:])
    p = subprocess.run([BIN, "run", "--executor-ahead", ahead, "--max-in-flight", "1",
                        "--host-bytes", "512K"], input=stream, capture_output=True, timeout=60,
                       env={**os.environ, "IB_RUN_PROFILE": "1"})
    assert p.returncode == 0, p.stderr
    results = results_of(p.stdout)
    assert len(results) == 33
    images = [r for r in results if r.WhichOneof("outcome") == "image"]
    assert sorted(r.key_u64 for r in images) == list(range(30))
    for r in images:
        assert r.image.data == jobs[r.key_u64].source.raw.data
    errors = [r for r in results if r.WhichOneof("outcome") == "error"]
    assert sorted(r.error.stage for r in errors) == [pb.PARSE, pb.VALIDATE, pb.ADMIT]
    depth = int(p.stderr.split(b"executor depth at most ")[1].split()[0])
    held = int(p.stderr.split(b"(held back ")[1].split()[0])
    if ahead == "1":
        assert depth <= 3 and held > 0, p.stderr
    else:
        assert held == 0, p.stderr


def test_parse_error_has_no_id_and_validation_error_consumes_one():
    bad = raw_job(7)
    bad.nodes[1].inputs[0] = 1  # self reference
    p, results = run([raw_job(1), bad, b"\x0f\xff\x01"])
    assert p.returncode == 0
    by_outcome = {}
    for r in results:
        by_outcome.setdefault(r.WhichOneof("outcome"), []).append(r)
    assert len(by_outcome["image"]) == 1
    errors = by_outcome["error"]
    parse = [r for r in errors if r.error.stage == pb.PARSE]
    validate = [r for r in errors if r.error.stage == pb.VALIDATE]
    assert len(parse) == 1 and parse[0].WhichOneof("job_id_present") is None
    assert parse[0].WhichOneof("input_key") is None
    assert len(validate) == 1 and validate[0].WhichOneof("job_id_present") == "job_id"
    assert validate[0].key_u64 == 7 and "cycle" in validate[0].error.message


def test_metadata_and_correlation_id_are_echoed():
    job = raw_job("k")
    job.metadata["n"].int_value = 5
    job.metadata["l"].list_value.items.add().string_value = "x"
    job.correlation_id = "corr-1"
    p, (r,) = run([job])
    assert p.returncode == 0
    assert r.metadata["n"].int_value == 5
    assert r.metadata["l"].list_value.items[0].string_value == "x"
    assert r.correlation_id == "corr-1" and r.key_string == "k"


def test_a_job_over_host_bytes_is_a_limit_at_admission_with_an_id():
    p, (r,) = run([raw_job(3, w=64, h=64)], "--host-bytes", "4K")
    assert p.returncode == 0
    assert r.WhichOneof("outcome") == "error"
    assert r.error.kind == pb.LIMIT and r.error.stage == pb.ADMIT
    assert r.WhichOneof("job_id_present") == "job_id" and "host_bytes" in r.error.message


def test_png_output_follows_the_jobs_output_spec():
    job = raw_job(1)
    job.output.cpu.format = pb.PNG
    p, (r,) = run([job])
    assert r.image.format == pb.PNG and r.image.data.startswith(b"\x89PNG")


@pytest.mark.parametrize("args", [["--max-jobs", "0"], ["--host-bytes", "1X"],
                                  ["--max-in-flight"], ["--device", "-1"],
                                  ["--executor-ahead", "-1"], ["--executor-ahead"],
                                  ["--compile-timeout", "0"], ["--compile-timeout", "4294968"]])
def test_bad_cap_flags_are_usage_errors(args):
    p = subprocess.run([BIN, "run", *args], input=b"", capture_output=True, timeout=20)
    assert p.returncode == 2


def test_compile_timeout_takes_seconds():
    p = subprocess.run([BIN, "run", "--backend", "cpu", "--compile-timeout", "5"], input=b"",
                       capture_output=True, timeout=20)
    assert p.returncode == 0, p.stderr


def test_cuda_backend_without_driver_or_device_is_a_start_up_failure():
    # No machine has device 999: without a driver (CI) or with one, start-up
    # fails and says what is missing.
    p = subprocess.run([BIN, "run", "--backend", "cuda", "--device", "999"], input=b"",
                       capture_output=True, timeout=60)
    assert p.returncode == 1
    assert b"no CUDA d" in p.stderr, p.stderr


def test_a_job_past_its_deadline_is_answered_with_timeout_not_run():
    import time
    late = raw_job("late")
    late.deadline_unix_ms = int(time.time() * 1000) - 5000
    fresh = raw_job("fresh")
    fresh.deadline_unix_ms = int(time.time() * 1000) + 600000
    p, results = run([late, fresh])
    assert p.returncode == 0, p.stderr
    by_key = {r.key_string: r for r in results}
    assert by_key["late"].WhichOneof("outcome") == "error"
    assert by_key["late"].error.kind == pb.TIMEOUT
    assert "deadline" in by_key["late"].error.message
    assert by_key["late"].HasField("job_id")
    assert by_key["fresh"].WhichOneof("outcome") == "image"


@pytest.mark.parametrize("extra", [[], ["--download-resident"]])
def test_output_gpu_on_the_cpu_backend_is_unsupported_at_admission(extra):
    gpu = raw_job("gpu")
    gpu.output.gpu.SetInParent()
    p, results = run([gpu, raw_job("cpu")], "--backend", "cpu", *extra)
    assert p.returncode == 0, p.stderr
    by_key = {r.key_string: r for r in results}
    err = by_key["gpu"]
    assert err.WhichOneof("outcome") == "error"
    assert err.error.kind == pb.UNSUPPORTED
    assert err.error.stage == pb.ADMIT
    assert "output gpu: the cpu backend keeps no device memory" in err.error.message
    assert err.HasField("job_id")
    assert by_key["cpu"].WhichOneof("outcome") == "image"


def test_download_resident_is_a_flag_without_a_value():
    p = subprocess.run([BIN, "run", "--download-resident", "--max-jobs", "2"], input=b"",
                       capture_output=True, timeout=20)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([BIN, "run", "--help"], capture_output=True, timeout=20)
    assert b"--download-resident" in p.stdout


def test_each_result_is_written_while_the_input_stays_open():
    # A stream processor: the first job's Result comes out while stdin is
    # still open and silent, not at the next frame or EOF.
    import select
    p = subprocess.Popen([BIN, "run"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        for k in (1, 2):
            p.stdin.write(frames([raw_job(k)]))
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], 20)
            assert ready, f"no Result for job {k} while the input stays open"
            head = b""
            while True:
                head += os.read(p.stdout.fileno(), 1)
                if head[-1] < 0x80:
                    break
            n, _ = _DecodeVarint32(head, 0)
            body = b""
            while len(body) < n:
                body += os.read(p.stdout.fileno(), n - len(body))
            r = pb.Result()
            r.ParseFromString(body)
            assert r.key_u64 == k and r.WhichOneof("outcome") == "image"
        p.stdin.close()
        assert p.wait(timeout=20) == 0
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_png_outputs_decode_to_their_pixels_in_every_plain_mode_and_level(level):
    """The PNG encoder (libdeflate, adaptive row filters): every mode it
    writes, odd and one-pixel sizes, noise and flat images, each level
    (0 = the default, 6), decoded by Pillow to the very pixels sent."""
    import io
    import random

    from PIL import Image

    rnd = random.Random(level)
    cases = []
    for mode in ("L", "LA", "RGB", "RGBA"):
        for w, h in ((1, 1), (1, 7), (7, 1), (33, 17), (128, 128)):
            bands = len(mode)
            noise = bytes(rnd.randrange(256) for _ in range(w * h * bands))
            flat = bytes([rnd.randrange(256)] * bands) * (w * h)
            cases += [(mode, w, h, noise), (mode, w, h, flat)]
    jobs = []
    for k, (mode, w, h, data) in enumerate(cases):
        job = raw_job(k, w=w, h=h, mode=mode, data=data)
        job.output.cpu.format = pb.PNG
        job.output.cpu.compression = level
        jobs.append(job)
    p, results = run(jobs)
    assert p.returncode == 0, p.stderr
    assert len(results) == len(cases)
    for r in results:
        mode, w, h, data = cases[r.key_u64]
        assert r.WhichOneof("outcome") == "image", r.error.message
        assert r.image.format == pb.PNG
        im = Image.open(io.BytesIO(r.image.data))
        im.load()  # checks every CRC and the zlib stream
        assert (im.mode, im.size) == (mode, (w, h)), (r.key_u64, im.mode, im.size)
        assert im.tobytes() == data, (r.key_u64, mode, w, h)
