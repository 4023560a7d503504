"""Pillow 12.3 baselines of bench/lib/workloads.py: sequential (one process) and
on P processes (multiprocessing, fork), raw bytes in and out (frombytes ->
graph -> tobytes), or with --source png|jpeg --output png the same decode,
graph and encode imgbatch does (PNG at --png-level, JPEG sources at
--jpeg-quality). Each case runs for about --budget seconds (at least one
image; the first image is a warm-up when there is time for more). Appends
rows (ms_per_img, img_per_s, mb_per_s of raw input) to --csv."""
import argparse
import io
import multiprocessing as mp
import os
import statistics
import sys
import time

import PIL
from PIL import Image as PILImage

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402
import workloads as W  # noqa: E402

NS = None
CASE = None  # (fn, inputs, mode, side, source, output, png_level): set before the pool forks


def encode(raw, mode, side, fmt, png_level, jpeg_quality):
    im = PILImage.frombytes(mode, (side, side), raw)
    buf = io.BytesIO()
    im.save(buf, "PNG", compress_level=png_level) if fmt == "png" else im.save(buf, "JPEG",
                                                                                quality=jpeg_quality)
    return buf.getvalue()


def one(_=0):
    fn, inputs, mode, side, source, output, png_level = CASE
    if source == "raw":
        ims = [PILImage.frombytes(mode, (side, side), d) for d in inputs]
    else:
        ims = [PILImage.open(io.BytesIO(d)) for d in inputs]
        for im in ims:
            im.load()
    out = fn(NS, ims[0], ims[1] if len(ims) > 1 else None)
    if output == "raw":
        return len(out.tobytes())
    buf = io.BytesIO()
    out.save(buf, "PNG", compress_level=png_level)
    return buf.tell()


def noop(_):
    return os.getpid()


def sequential(budget, max_n):
    times = []
    t_end = time.perf_counter() + budget
    while len(times) < max_n:
        t0 = time.perf_counter()
        one()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            break
    if len(times) > 1:
        times = times[1:]  # the first was a warm-up
    return statistics.median(times), len(times)


def parallel(procs, t_img, budget, max_n):
    k = max(1, min(max_n, int(budget / max(t_img, 1e-6))))
    with mp.get_context("fork").Pool(procs) as pool:
        pool.map(noop, range(procs * 4), chunksize=1)
        t0 = time.perf_counter()
        # Chunks of a few images: the pool's per-task messages stay off the clock
        # for small images, as a user batching work to processes would have it.
        pool.map(one, range(procs * k), chunksize=max(1, k // 4))
        wall = time.perf_counter() - t0
    return wall / (procs * k), procs * k


def main():
    global NS, CASE
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", required=True, help="workloads.parse_grid spec")
    ap.add_argument("--procs", default="1,0", help="process counts; 1 = sequential, 0 = every core")
    ap.add_argument("--source", default="raw", choices=["raw", "png", "jpeg"])
    ap.add_argument("--output", default="raw", choices=["raw", "png"])
    ap.add_argument("--png-level", type=int, default=6)
    ap.add_argument("--jpeg-quality", type=int, default=90)
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per case and process count")
    ap.add_argument("--max-n", type=int, default=2000)
    ap.add_argument("--part", default="pillow")
    ap.add_argument("--label", help="workload name in the rows (default: the workload id)")
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
    NS = W.Namespace("pillow")
    note = f"Pillow {PIL.__version__}"
    if PIL.__version__ != "12.3.0":
        note += " (not the pinned 12.3.0)"
        print(f"pillow_bench: warning: {note}", flush=True)
    procs = [os.cpu_count() if int(p) == 0 else int(p) for p in a.procs.split(",")]
    codec = "" if a.source == "raw" else f"{a.source}->png"
    setting = f"png_level={a.png_level} jpeg_quality={a.jpeg_quality}" if codec else "raw in/out"
    for wid, mode, side in W.parse_grid(a.grid):
        if not W.has_pillow(wid):
            continue
        fn, two = W.WORKLOADS[wid][3], W.WORKLOADS[wid][2]
        raws = [W.sample(mode, side, s, smooth=bool(codec)) for s in range(2 if two else 1)]
        inputs = raws if a.source == "raw" else [encode(r, mode, side, a.source, a.png_level,
                                                        a.jpeg_quality) for r in raws]
        CASE = (fn, inputs, mode, side, a.source, a.output, a.png_level)
        mb = sum(len(r) for r in raws) / 1e6
        rows, t_seq, line = [], None, []
        for p in procs:
            if p == 1 or t_seq is None:
                t_seq, n = sequential(a.budget, a.max_n)
                if p == 1:
                    t, impl = t_seq, "pillow-seq"
            if p != 1:
                t, n = parallel(p, t_seq, a.budget, a.max_n)
                impl = f"pillow-mp{p}"
            impl += f"-{codec}" if codec else ""
            for metric, v, unit in (("ms_per_img", t * 1e3, "ms"), ("img_per_s", 1 / t, "img/s"),
                                    ("mb_per_s", mb / t, "MB/s")):
                rows.append(csvrows.row(a.part, impl, a.label or wid, mode, side, n, metric, v, unit, setting,
                                        note=note))
            line.append(f"{impl} {t * 1e3:.3f} ms/img")
        csvrows.append(a.csv, rows)
        print(f"  {a.part}: {a.label or wid} {mode} {side}^2: " + ", ".join(line), flush=True)


if __name__ == "__main__":
    main()
