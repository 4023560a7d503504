"""Renditions (contract version 3) through the real binary: `imgbatch run` on
the CPU backend, or on $IB_BACKEND (IB_BACKEND=cuda on a GPU machine, as
tests/py/parity selects it; tests/gpu/case.sh renditions_live). One Job, one decode, several resize nodes each encoded as
its own CpuOutput. JPEG and raw renditions are byte-equal to Pillow 12.3
doing the same resize and save; PNG and WebP are not Pillow's bytes
(README, "Encoded output"), so a PNG decodes to Pillow's pixels and every
rendition is byte-equal to the single-output Job of the same node."""
import io
import os
import random

import PIL.Image
import pytest

import ibtest
from ibtest import encoded_job
from imgbatch import imgbatch_pb2 as pb

BACKEND = os.environ.get("IB_BACKEND", "cpu")


def run(msgs, *args, **kw):
    """ibtest.run on $IB_BACKEND (default cpu)."""
    return ibtest.run(msgs, "--backend", BACKEND, *args, **kw)


V3 = 3
FMT = {"JPEG": pb.JPEG, "WEBP": pb.WEBP, "PNG": pb.PNG, "RAW": pb.RAW}
RESAMPLE = {PIL.Image.Resampling.BICUBIC: pb.BICUBIC, PIL.Image.Resampling.LANCZOS: pb.LANCZOS,
            PIL.Image.Resampling.NEAREST: pb.NEAREST}


def photo(w, h, seed=0):
    rnd = random.Random(seed)
    im = PIL.Image.frombytes("RGB", (w, h), rnd.randbytes(w * h * 3))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return im, buf.getvalue()


def add_resize(job, w, h, resample=PIL.Image.Resampling.BICUBIC, src=0):
    node = job.nodes.add()
    node.inputs.append(src)
    node.resize.width, node.resize.height, node.resize.resample = w, h, RESAMPLE[resample]
    return len(job.nodes) - 1


def cpu_output(fmt, quality=None):
    out = pb.CpuOutput(format=FMT[fmt])
    if quality is not None:
        out.quality = quality
    return out


def rendition_job(key, png, sizes, version=V3):
    """source -> one resize per (w, h, resample, fmt, quality) -> renditions."""
    job = pb.Job(key_string=key, contract_version=version)
    job.source.encoded = png
    job.nodes.add().source.index = 0
    for w, h, resample, fmt, q in sizes:
        n = add_resize(job, w, h, resample)
        job.renditions.add(node=n, output=cpu_output(fmt, q))
    return job


def single(png, w, h, resample, fmt, q):
    """The same resize as a one-output (version 2) Job: the encoded bytes."""
    job = pb.Job(key_string="single", contract_version=2)
    job.source.encoded = png
    job.nodes.add().source.index = 0
    add_resize(job, w, h, resample)
    job.output.cpu.CopyFrom(cpu_output(fmt, q))
    p, results = run([job])
    assert results[0].WhichOneof("outcome") == "image", results[0]
    return results[0].image.data


def check(im, png, got, w, h, resample, fmt, q):
    assert got == single(png, w, h, resample, fmt, q), fmt
    if fmt in ("JPEG", "RAW"):
        assert got == pillow(im, w, h, resample, fmt, q), fmt
    elif fmt == "PNG":
        want = im.resize((w, h), resample).tobytes()
        assert PIL.Image.open(io.BytesIO(got)).tobytes() == want
    else:
        assert PIL.Image.open(io.BytesIO(got)).size == (w, h)


def pillow(im, w, h, resample, fmt, q):
    small = im.resize((w, h), resample)
    if fmt == "RAW":
        return small.tobytes()
    buf = io.BytesIO()
    small.save(buf, fmt, **({} if q is None else {"quality": q}))
    return buf.getvalue()


def only(results):
    assert len(results) == 1, results
    return results[0]


@pytest.mark.parametrize("seed", range(3))
def test_renditions_are_byte_equal_to_pillow_in_the_order_asked(seed):
    rnd = random.Random(seed)
    w, h = rnd.randint(40, 97), rnd.randint(30, 83)
    im, png = photo(w, h, seed)
    B, L, N = (PIL.Image.Resampling.BICUBIC, PIL.Image.Resampling.LANCZOS,
               PIL.Image.Resampling.NEAREST)
    sizes = [(w // 2, h // 2, B, "JPEG", 85), (w // 3 + 1, h // 4 + 1, L, "WEBP", 80),
             (w // 5 + 1, h // 5 + 1, B, "PNG", None), (7, 5, N, "JPEG", None),
             (1, 1, L, "RAW", None)]
    p, results = run([rendition_job("k", png, sizes)])
    assert p.returncode == 0, p.stderr
    r = only(results)
    assert r.WhichOneof("outcome") is None
    assert len(r.renditions) == len(sizes)
    for i, ((rw, rh, rs, fmt, q), got) in enumerate(zip(sizes, r.renditions)):
        assert got.node == i + 1 and got.WhichOneof("outcome") == "image"
        assert (got.image.width, got.image.height, got.image.format) == (rw, rh, FMT[fmt])
        check(im, png, got.image.data, rw, rh, rs, fmt, q)


def test_one_node_in_two_formats_and_the_source_itself():
    im, png = photo(33, 21, 7)
    job = pb.Job(key_u64=5, contract_version=V3)
    job.source.encoded = png
    job.nodes.add().source.index = 0
    n = add_resize(job, 16, 10)
    job.renditions.add(node=n, output=cpu_output("JPEG", 90))
    job.renditions.add(node=n, output=cpu_output("WEBP", 70))
    job.renditions.add(node=0, output=cpu_output("PNG"))
    p, results = run([job])
    r = only(results)
    B = PIL.Image.Resampling.BICUBIC
    got = [x.image.data for x in r.renditions]
    assert got[0] == pillow(im, 16, 10, B, "JPEG", 90)
    check(im, png, got[1], 16, 10, B, "WEBP", 70)
    assert PIL.Image.open(io.BytesIO(got[2])).tobytes() == im.tobytes()
    assert [x.node for x in r.renditions] == [1, 1, 0]


def test_a_job_without_renditions_is_answered_as_before():
    im, png = photo(20, 10, 3)
    for version in (0, 2, 3):
        job = encoded_job("old", png)
        job.contract_version = version
        job.output.cpu.format = pb.PNG
        p, results = run([job])
        r = only(results)
        assert r.WhichOneof("outcome") == "image" and not r.renditions, r
        assert PIL.Image.open(io.BytesIO(r.image.data)).tobytes() == im.tobytes()


def error_of(job):
    p, results = run([job])
    assert p.returncode == 0, p.stderr
    r = only(results)
    assert r.WhichOneof("outcome") == "error", r
    return r.error


def base_job(n=2):
    _, png = photo(16, 12, 1)
    return rendition_job("bad", png, [(8, 6, PIL.Image.Resampling.BICUBIC, "JPEG", 80)] * n)


def test_renditions_need_contract_version_3():
    for version in (0, 1, 2):
        job = base_job(1)
        job.contract_version = version
        e = error_of(job)
        assert (e.kind, e.stage) == (pb.INVALID, pb.VALIDATE), e
        assert "renditions" in e.message and "contract_version >= 3" in e.message, e.message


def test_a_worker_older_than_the_job_names_the_version():
    job = base_job(1)
    job.contract_version = 4
    e = error_of(job)
    assert e.kind == pb.UNSUPPORTED and "contract version 4" in e.message, e.message


@pytest.mark.parametrize("node", [3, 4, 2**31, 2**32 - 1])
def test_a_node_out_of_range_is_invalid_naming_it(node):
    job = base_job(1)
    job.renditions[0].node = node
    e = error_of(job)
    assert e.kind == pb.INVALID and f"renditions[0]: node {node} out of range" in e.message, e


def test_a_duplicate_rendition_is_invalid():
    job = base_job(1)
    job.renditions.add().CopyFrom(job.renditions[0])
    e = error_of(job)
    assert e.kind == pb.INVALID and "renditions[1]: duplicate of renditions[0]" in e.message, e


@pytest.mark.parametrize("count", [17, 1000, 200_000])
def test_too_many_renditions_is_a_limit_naming_it(count):
    job = base_job(1)
    for _ in range(count - 1):
        job.renditions.add(node=1, output=cpu_output("JPEG", 80))
    e = error_of(job)
    assert e.kind == pb.LIMIT and f"renditions: {count} exceed the limit of 16" in e.message, e


def test_output_gpu_or_cpu_beside_renditions_is_invalid():
    job = base_job(1)
    job.output.gpu.SetInParent()
    e = error_of(job)
    assert e.kind == pb.INVALID and "output gpu" in e.message and "renditions" in e.message, e
    job = base_job(1)
    job.output.cpu.format = pb.PNG
    e = error_of(job)
    assert e.kind == pb.INVALID and "output is set too" in e.message, e


def test_a_rendition_without_output_or_with_a_bad_one_names_it():
    job = base_job(1)
    job.renditions[0].ClearField("output")
    e = error_of(job)
    assert e.kind == pb.INVALID and "renditions[0]: output missing" in e.message, e
    job = base_job(2)
    job.renditions[1].output.quality = 101
    e = error_of(job)
    assert e.kind == pb.INVALID and e.message.startswith("renditions[1]: node 2: "), e
    assert "quality" in e.message, e
    job = base_job(1)
    job.renditions[0].output.format = pb.JPEG
    la = pb.Job(key_string="la", contract_version=V3)
    la.source.raw.mode, la.source.raw.width, la.source.raw.height = "LA", 2, 2
    la.source.raw.data = bytes(8)
    la.nodes.add().source.index = 0
    la.renditions.add(node=0, output=cpu_output("JPEG"))
    e = error_of(la)
    assert e.kind == pb.UNSUPPORTED and "renditions[0]: node 0" in e.message and "LA" in e.message, e


def fill_job(key, n_renditions, side=512):
    """A 512x512 RGB fill (768 KiB) as n JPEG renditions of the same node."""
    job = pb.Job(key_string=key, contract_version=V3)
    job.source.fill.mode, job.source.fill.width, job.source.fill.height = "RGB", side, side
    job.source.fill.color = bytes([10, 200, 30])
    job.nodes.add().source.index = 0
    for q in range(n_renditions):
        job.renditions.add(node=0, output=cpu_output("JPEG", 50 + q))
    return job


def test_every_rendition_is_charged_to_the_job():
    """Sixteen 768 KiB renditions hold 12 MiB until delivered: past an 8 MiB
    host cap, where the same job with one rendition fits."""
    p, (one,) = run([fill_job("one", 1)], "--host-bytes", "8M")
    assert one.WhichOneof("outcome") is None and len(one.renditions) == 1, one
    p, (many,) = run([fill_job("many", 16)], "--host-bytes", "8M")
    assert many.WhichOneof("outcome") == "error", many
    e = many.error
    assert (e.kind, e.stage) == (pb.LIMIT, pb.ADMIT) and "host_bytes cap" in e.message, e
    p, (fits,) = run([fill_job("fits", 16)], "--host-bytes", "16M")
    assert len(fits.renditions) == 16
    im = PIL.Image.new("RGB", (512, 512), (10, 200, 30))
    for q, r in enumerate(fits.renditions):
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=50 + q)
        assert r.image.data == buf.getvalue(), q


def test_hostile_renditions_are_each_answered_and_the_stream_goes_on():
    """Random node indices, formats, qualities, counts and versions in one
    stream: every Job gets one Result - images for the valid ones, an error
    naming renditions for the rest - and the process exits cleanly."""
    rnd = random.Random(26)
    _, png = photo(9, 7, 2)
    jobs, expect_ok = [], []
    for k in range(60):
        job = pb.Job(key_u64=k, contract_version=rnd.choice([0, 2, 3, 3, 3]))
        job.source.encoded = png
        job.nodes.add().source.index = 0
        add_resize(job, rnd.randint(1, 12), rnd.randint(1, 12))
        ok = job.contract_version == 3
        pairs = set()
        for _ in range(rnd.choice([1, 2, 3, 17, 40])):
            node = rnd.choice([0, 1, 1, 2, 7, 2**32 - 1])
            fmt = rnd.choice([pb.RAW, pb.PNG, pb.JPEG, pb.WEBP, pb.TIFF])
            out = pb.CpuOutput(format=fmt)
            if rnd.random() < 0.5:
                out.quality = rnd.choice([0, 50, 100, 101, 2**32 - 1])
            job.renditions.add(node=node, output=out)
            ok = ok and node <= 1 and (not out.HasField("quality") or out.quality <= 100)
            ok = ok and (node, out.SerializeToString()) not in pairs
            pairs.add((node, out.SerializeToString()))
        ok = ok and len(job.renditions) <= 16
        jobs.append(job)
        expect_ok.append(ok)
    p, results = run(jobs)
    assert p.returncode == 0, p.stderr
    by_key = {r.key_u64: r for r in results}
    assert sorted(by_key) == list(range(60))
    for k, ok in enumerate(expect_ok):
        r = by_key[k]
        if ok:
            assert r.WhichOneof("outcome") is None and len(r.renditions) == len(jobs[k].renditions), r
        else:
            assert r.WhichOneof("outcome") == "error" and "renditions" in r.error.message, r.error
    assert 5 <= sum(expect_ok) <= 55, sum(expect_ok)
