"""`imgbatch run`'s output side: Results are written by a writer thread as a
frame around the image bytes where they lie. The bytes must be the canonical
serialization of each Result (the same the whole-message packing gave), for
mixed sizes and every kind of field; a failed write is said and exits 1."""
import os
import subprocess

from ibtest import binary, frames, raw_job as copy_job, results_of
from imgbatch import imgbatch_pb2 as pb

BIN = binary()


def raw_job(key, w, h, mode="RGB", seed=0, invert=False):
    """ibtest's source -> copy job, or source -> invert."""
    job = copy_job(key, w, h, mode, seed=seed, copy=not invert)
    if invert:
        node = job.nodes.add()
        node.invert.SetInParent()
        node.inputs.append(0)
    return job


def frames_of(data):
    return results_of(data, parse=bytes)


def job_file(tmp_path, msgs):
    path = tmp_path / "jobs.bin"
    path.write_bytes(frames(msgs))
    return path


def mixed_jobs():
    sizes = [(4, 3, "RGB"), (1024, 1024, "RGB"), (300, 200, "RGBA"), (127, 1, "L"),
             (128, 1, "L"), (80, 60, "RGB"), (2048, 1024, "L"), (1, 1, "RGBA")]
    jobs = []
    for k, (w, h, m) in enumerate(sizes * 2):
        key = k if k % 2 else f"k{k}"
        job = raw_job(key, w, h, m, seed=k)
        if k % 3 == 0:
            job.metadata["n"].int_value = k
            job.metadata["s"].string_value = "x" * (k + 1)
        if k % 4 == 1:
            job.correlation_id = f"corr-{k}"
        if k == 5:
            job.output.cpu.format = pb.PNG
        jobs.append(job)
    return jobs


def test_every_frame_is_canonical_and_carries_its_pixels_across_mixed_sizes(tmp_path):
    jobs = mixed_jobs()
    msgs = [j.SerializeToString() for j in jobs]
    src = job_file(tmp_path, msgs[:7] + [b"\x0f\xff\x01"] + msgs[7:])
    out = tmp_path / "results.bin"
    p = subprocess.run([BIN, "run", "--backend", "cpu", "--max-jobs", "3", "--in", str(src),
                        "--out", str(out)], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    frames = frames_of(out.read_bytes())
    assert len(frames) == len(jobs) + 1
    by_key = {}
    for f in frames:
        r = pb.Result.FromString(f)
        # The writer packs around the pixels by hand: any field out of
        # place, or a length off by one, is not the canonical encoding.
        assert r.SerializeToString() == f, r.WhichOneof("input_key")
        if r.WhichOneof("outcome") == "error":
            assert r.error.stage == pb.PARSE
            continue
        by_key[getattr(r, r.WhichOneof("input_key"))] = r
    assert len(by_key) == len(jobs)
    for k, job in enumerate(jobs):
        r = by_key[k if k % 2 else f"k{k}"]
        assert r.WhichOneof("outcome") == "image", r.error.message
        assert (r.image.width, r.image.height) == (job.source.raw.width, job.source.raw.height)
        if k == 5:
            assert r.image.format == pb.PNG and r.image.data.startswith(b"\x89PNG")
        else:
            assert r.image.data == job.source.raw.data
        assert r.correlation_id == job.correlation_id
        assert dict(r.metadata) == dict(job.metadata)


def test_encoder_threads_pair_every_encode_with_its_own_result(tmp_path):
    """PNG outputs are built on encoder threads while raw ones and errors
    are built on the driving thread, and the writer keeps the queue's order:
    every PNG must decode to its own job's pixels, under its own key."""
    import io

    from PIL import Image

    sizes = [(37, 21, "RGB"), (256, 128, "RGBA"), (1, 1, "L"), (300, 200, "RGB"), (64, 64, "L")]
    jobs = []
    for k in range(20):
        w, h, m = sizes[k % len(sizes)]
        job = raw_job(k, w, h, m, seed=k)
        if k % 3:
            job.output.cpu.format = pb.PNG
        jobs.append(job)
    msgs = [j.SerializeToString() for j in jobs]
    src = job_file(tmp_path, msgs[:9] + [b"\x0f\xff\x01"] + msgs[9:])
    p = subprocess.run([BIN, "run", "--backend", "cpu", "--decode-threads", "3", "--in", str(src)],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    results = [pb.Result.FromString(f) for f in frames_of(p.stdout)]
    assert sum(r.WhichOneof("outcome") == "error" for r in results) == 1
    by_key = {r.key_u64: r for r in results if r.WhichOneof("outcome") == "image"}
    assert sorted(by_key) == list(range(20))
    for k, job in enumerate(jobs):
        r, raw = by_key[k], job.source.raw
        if k % 3:
            assert r.image.format == pb.PNG
            im = Image.open(io.BytesIO(r.image.data))
            assert (im.mode, im.size) == (raw.mode, (raw.width, raw.height))
            assert im.tobytes() == raw.data, k
        else:
            assert r.image.data == raw.data, k


def test_stdout_gets_the_same_frames_as_a_file(tmp_path):
    jobs = [raw_job(k, 256, 256, "RGB", seed=k, invert=True) for k in range(6)]
    src = job_file(tmp_path, [j.SerializeToString() for j in jobs])
    p = subprocess.run([BIN, "run", "--max-jobs", "1", "--max-in-flight", "1", "--in", str(src)],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    results = [pb.Result.FromString(f) for f in frames_of(p.stdout)]
    # One job at a time: completion order is input order.
    assert [r.key_u64 for r in results] == list(range(6))
    for r, job in zip(results, jobs):
        assert r.image.data == bytes(255 - b for b in job.source.raw.data)


def test_a_full_disk_is_said_and_exits_1(tmp_path):
    if not os.path.exists("/dev/full"):
        import pytest
        pytest.skip("no /dev/full")
    jobs = [raw_job(k, 512, 512, "RGB", seed=k) for k in range(8)]
    src = job_file(tmp_path, [j.SerializeToString() for j in jobs])
    p = subprocess.run([BIN, "run", "--in", str(src), "--out", "/dev/full"],
                       capture_output=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert b"writing results failed: No space left on device" in p.stderr, p.stderr


def test_a_reader_gone_away_is_a_broken_pipe_and_exit_1(tmp_path):
    jobs = [raw_job(k, 512, 512, "RGB", seed=k) for k in range(8)]
    src = job_file(tmp_path, [j.SerializeToString() for j in jobs])
    r, w = os.pipe()
    os.close(r)  # nobody will read: the first write fails with EPIPE
    p = subprocess.run([BIN, "run", "--in", str(src)], stdout=w, stderr=subprocess.PIPE,
                       timeout=60)
    os.close(w)
    assert p.returncode == 1, p.stderr  # not killed by SIGPIPE
    assert b"writing results failed: Broken pipe" in p.stderr, p.stderr
