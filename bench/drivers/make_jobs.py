"""Writes a file of varint-delimited Jobs for one workload (bench/lib/workloads.py),
built with the imgbatch client, for `imgbatch run --in FILE`; and beside it
the bytes real Pillow gives for the first --sample distinct jobs (Results
with raw images, in key order) for bench/drivers/check_results.py. Job i is distinct
job i % --distinct and carries that index as its key."""
import argparse
import io
import os
import sys

from PIL import Image as PILImage

import imgbatch
from imgbatch import imgbatch_pb2 as pb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import workloads as W  # noqa: E402


def encoded(raw, mode, side, fmt, png_level, jpeg_quality):
    im = PILImage.frombytes(mode, (side, side), raw)
    buf = io.BytesIO()
    if fmt == "png":
        im.save(buf, "PNG", compress_level=png_level)
    else:
        im.save(buf, "JPEG", quality=jpeg_quality)
    return buf.getvalue()


def source(ns, raw, mode, side, fmt, png_level, jpeg_quality):
    if fmt == "raw":
        return ns.Image.frombytes(mode, (side, side), raw)
    return ns.Image.open(io.BytesIO(encoded(raw, mode, side, fmt, png_level, jpeg_quality)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", required=True, choices=sorted(W.WORKLOADS))
    ap.add_argument("--mode", default="RGB")
    ap.add_argument("--side", type=int, default=256)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--distinct", type=int, default=4)
    ap.add_argument("--source", default="raw", choices=["raw", "png", "jpeg"])
    ap.add_argument("--output", default="raw", choices=["raw", "png"])
    ap.add_argument("--png-level", type=int, default=6, help="zlib level of PNG outputs (and sources)")
    ap.add_argument("--jpeg-quality", type=int, default=90, help="quality of JPEG sources")
    ap.add_argument("--sample", type=int, default=2, help="distinct jobs whose Pillow bytes are kept")
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--expect", required=True)
    a = ap.parse_args()
    if not W.admits(a.workload, a.mode):
        raise SystemExit(f"make_jobs: {a.workload} does not run on {a.mode}")
    ns = W.Namespace("imgbatch")
    fn = W.WORKLOADS[a.workload][3]
    two = W.WORKLOADS[a.workload][2]
    smooth = a.source != "raw"
    jobs, expect = [], []
    for k in range(a.distinct):
        im1 = source(ns, W.sample(a.mode, a.side, 2 * k, smooth), a.mode, a.side, a.source,
                     a.png_level, a.jpeg_quality)
        im2 = source(ns, W.sample(a.mode, a.side, 2 * k + 1, smooth), a.mode, a.side, a.source,
                     a.png_level, a.jpeg_quality) if two else None
        img = fn(ns, im1, im2)
        jobs.append(img.to_job(key=k, output=a.output, compression=a.png_level))
        if k < a.sample and W.has_pillow(a.workload):
            ref = img.replay()
            r = pb.Result()
            r.key_u64 = k
            r.image.mode = ref.mode
            r.image.width, r.image.height = ref.size
            r.image.format = pb.RAW
            r.image.data = ref.tobytes()
            expect.append(r)
    with open(a.jobs, "wb") as f:
        for i in range(a.n):
            imgbatch.write_delimited(f, jobs[i % a.distinct])
    with open(a.expect, "wb") as f:
        imgbatch.write_delimited(f, expect)


if __name__ == "__main__":
    main()
