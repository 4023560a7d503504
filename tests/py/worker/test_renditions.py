"""Renditions (contract version 3) through the Kafka worker on the embedded
broker: one Job, every rendition in one Result in the order asked, or, past
--max-result-bytes, one file per rendition; a Job newer than the worker is
Unsupported naming the version (parse.c check_contract); a v2 Job is
answered as before."""
import io
import os
import random

import PIL.Image

from harness import coord_key
from imgbatch import imgbatch_pb2 as pb

SIZES = ((48, 36, pb.JPEG, 85), (24, 18, pb.JPEG, 70), (12, 9, pb.RAW, None))


def source(seed=0):
    rnd = random.Random(seed)
    im = PIL.Image.frombytes("RGB", (97, 73), rnd.randbytes(97 * 73 * 3))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return im, buf.getvalue()


def rendition_job(key, png, version=3):
    job = pb.Job(key_string=key, contract_version=version)
    job.source.encoded = png
    job.nodes.add().source.index = 0
    for w, h, fmt, q in SIZES:
        node = job.nodes.add()
        node.inputs.append(0)
        node.resize.width, node.resize.height, node.resize.resample = w, h, pb.BICUBIC
        out = pb.CpuOutput(format=fmt)
        if q is not None:
            out.quality = q
        job.renditions.add(node=len(job.nodes) - 1, output=out)
    return job


def pillow(im, w, h, fmt, q):
    small = im.resize((w, h), PIL.Image.Resampling.BICUBIC)
    if fmt == pb.RAW:
        return small.tobytes()
    buf = io.BytesIO()
    small.save(buf, "JPEG", quality=q)
    return buf.getvalue()


def results_for(env, reader, jobs):
    coords = env.produce([j.SerializeToString() for j in jobs], partition=0)
    by_key = reader.wait_keys([coord_key(*c) for c in coords], 120, env.why)
    return [by_key[coord_key(*c)][0].result for c in coords]


def test_renditions_in_one_result_and_as_files_past_the_message_bound(make_env, tmp_path):
    im, png = source(1)
    env = make_env(topics=["imgbatch.jobs:1"])
    reader = env.reader()
    env.worker()
    old = pb.Job(key_string="v2", contract_version=2)
    old.source.encoded = png
    old.nodes.add().source.index = 0
    old.output.cpu.format = pb.PNG
    newer = rendition_job("v4", png, version=4)
    r, r_old, r_newer = results_for(env, reader, [rendition_job("a", png), old, newer])
    assert r.WhichOneof("outcome") is None and r.contract_version == 3, r
    assert [x.node for x in r.renditions] == [1, 2, 3]
    for (w, h, fmt, q), got in zip(SIZES, r.renditions):
        assert (got.image.width, got.image.height, got.image.format) == (w, h, fmt)
        assert got.image.data == pillow(im, w, h, fmt, q), (w, h)
    assert r_old.WhichOneof("outcome") == "image" and not r_old.renditions
    assert PIL.Image.open(io.BytesIO(r_old.image.data)).tobytes() == im.tobytes()
    assert r_newer.WhichOneof("outcome") == "error", r_newer
    assert r_newer.error.kind == pb.UNSUPPORTED and "contract version 4" in r_newer.error.message

    outdir = tmp_path / "out"
    outdir.mkdir()
    env2 = make_env(topics=["imgbatch.jobs:1"])
    reader2 = env2.reader()
    env2.worker("--output-dir", outdir, "--max-result-bytes", 2000)
    (r,) = results_for(env2, reader2, [rendition_job("big", png)])
    assert [x.WhichOneof("outcome") for x in r.renditions] == ["file"] * 3, r
    paths = [x.file.path for x in r.renditions]
    assert len(set(paths)) == 3
    for (w, h, fmt, q), got in zip(SIZES, r.renditions):
        with open(os.path.join(outdir, got.file.path), "rb") as f:
            data = f.read()
        assert (got.file.width, got.file.height, got.file.size) == (w, h, len(data))
        assert data == pillow(im, w, h, fmt, q), got.file.path


def test_renditions_past_the_message_bound_without_an_output_dir_are_a_limit(make_env):
    _, png = source(2)
    env = make_env(topics=["imgbatch.jobs:1"])
    reader = env.reader()
    env.worker("--max-result-bytes", 2000)
    (r,) = results_for(env, reader, [rendition_job("big", png)])
    assert r.WhichOneof("outcome") == "error" and not r.renditions, r
    e = r.error
    assert (e.kind, e.stage) == (pb.LIMIT, pb.PUBLISH), e
    assert "(3 renditions) exceeds --max-result-bytes 2000" in e.message, e.message
