#!/usr/bin/env python3
"""stage_cost.py - where the CPU time of a thumbs row goes, per image on one
core: Pillow's decode, resizes and encodes, beside the stages that stay on the
CPU when imgbatch resizes on the GPU (the source's decode, every output's
encode). The GPU takes only the resize off the CPU, so with the cores busy
with codecs the best a GPU worker can do against Pillow on the same cores is

    ceiling = Pillow's whole CPU time per image / imgbatch's CPU-side time per image

and with C cores the rate cannot pass C / (CPU-side time). A row whose target
is above its ceiling is bound by the codecs, not by the GPU (bench/RESULTS.md).

Rows (the inputs of bench/drivers/thumbs_bench.py, generated the same way):
  renditions  12 MP JPEG -> 2048/1024/512/256 LANCZOS -> JPEG q85
  png         PNG 2048^2 RGB -> 512^2 LANCZOS -> PNG level 6

imgbatch's stages are timed as CPU seconds (user + sys, from the child's
rusage) of `imgbatch run --backend cpu` over N jobs that do only that stage,
less a run of one trivial job (start-up, libvips init):
  decode   the row's encoded source -> crop to 1x1 -> raw (the decode whole)
  encode   the row's output sizes as raw sources -> encoded as the row encodes,
           less the same sources cropped to 1x1 raw
  cpu job  the row's whole job on the CPU backend (decode + CPU resize + encode)

  stage_cost.py [--bin build/imgbatch] [--scratch DIR] [--n N] [--rows renditions,png]
                [--md FILE]
"""
import argparse
import io
import os
import resource
import subprocess
import sys
import tempfile
import time

from PIL import Image as PILImage

import imgbatch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import thumbs_bench as tb  # noqa: E402


def pillow_ms(fn, reps):
    """CPU ms of fn() on this process, the median-free mean of reps calls
    after one warm-up (the stage is deterministic; the process is alone on
    its core)."""
    fn()
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    return 1000.0 * (time.process_time() - t0) / reps


def child_cpu_s(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
    if rc != 0:
        raise SystemExit(f"stage_cost: {' '.join(cmd)} exited {rc}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imgbatch_ms(binary, jobs, n, scratch, trivial_s):
    """CPU ms per job of `imgbatch run --backend cpu` over n jobs (cycling
    through `jobs`), less the trivial run's CPU; every Result must be an
    image or a renditions set."""
    path, out = os.path.join(scratch, "stage.bin"), os.path.join(scratch, "stage.out")
    with open(path, "wb") as f:
        for i in range(n):
            imgbatch.write_delimited(f, jobs[i % len(jobs)])
    s = child_cpu_s([binary, "run", "--backend", "cpu", "--max-in-flight", "1", "--in", path, "--out", out])
    with open(out, "rb") as f:
        res = list(imgbatch.read_results(f))
    bad = [r for r in res if r.error is not None]
    if len(res) != n or bad:
        raise SystemExit(f"stage_cost: {len(res)} results for {n} jobs, {len(bad)} errors "
                         f"({bad[0].error if bad else ''})")
    os.remove(path)
    os.remove(out)
    return 1000.0 * max(0.0, s - trivial_s) / n


def trivial_s(binary, scratch):
    job = imgbatch.Image.frombytes("L", (1, 1), b"\0").crop((0, 0, 1, 1)).to_job(key=0)
    path, out = os.path.join(scratch, "trivial.bin"), os.path.join(scratch, "trivial.out")
    with open(path, "wb") as f:
        imgbatch.write_delimited(f, job)
    runs = [child_cpu_s([binary, "run", "--backend", "cpu", "--in", path, "--out", out]) for _ in range(3)]
    return min(runs)


def encode_ms(a, scratch, base, sizes, fmt, **kw):
    """CPU ms of imgbatch encoding one of each of `sizes` as the row encodes:
    raw sources of those sizes (camera frames) encoded, less the same sources
    cropped to 1x1 raw (reading and parsing the raw source is not the
    encode's)."""
    enc, bare = [], []
    for k, (w, h) in enumerate(sizes):
        src = imgbatch.Image.frombytes("RGB", (w, h), PILImage.fromarray(tb.camera(w, h, 300 + k)).tobytes())
        enc.append(src.crop((0, 0, w, h)).to_job(key=k, output=fmt, **kw))
        bare.append(src.crop((0, 0, 1, 1)).to_job(key=k))
    n = len(sizes) * a.n
    return len(sizes) * (imgbatch_ms(a.bin, enc, n, scratch, base) - imgbatch_ms(a.bin, bare, n, scratch, base))


def row_renditions(a, scratch, base):
    data = tb.jpeg_inputs(scratch, 2)
    src = PILImage.open(io.BytesIO(data[0]))
    sizes = [tb.fit(src.size, s) for s in tb.REND]
    full = PILImage.open(io.BytesIO(data[0]))
    full.load()
    outs = [full.resize(sz, tb.LANCZOS) for sz in sizes]
    reps = a.reps
    p = [("decode 12 MP JPEG", pillow_ms(lambda: PILImage.open(io.BytesIO(data[0])).load(), reps))]
    p += [(f"resize -> {w}x{h} LANCZOS", pillow_ms(lambda sz=(w, h): full.resize(sz, tb.LANCZOS), reps))
          for w, h in sizes]
    p += [(f"encode {o.size[0]}x{o.size[1]} JPEG q{tb.Q}", pillow_ms(lambda o=o: tb.save(o, "JPEG"), reps))
          for o in outs]
    dec = [imgbatch.Image.open(d).crop((0, 0, 1, 1)).to_job(key=k) for k, d in enumerate(data)]
    whole = [j for j, _ in tb.rendition_jobs(data, "jpeg")]
    i = [("decode 12 MP JPEG", imgbatch_ms(a.bin, dec, a.n, scratch, base)),
         (f"encode the 4 sizes JPEG q{tb.Q}", encode_ms(a, scratch, base, sizes, "jpeg", quality=tb.Q))]
    cpu_job = imgbatch_ms(a.bin, whole, max(2, a.n // 2), scratch, base)
    return "12 MP JPEG -> 2048/1024/512/256 LANCZOS -> JPEG q85", p, i, cpu_job


def row_png(a, scratch, base):
    data = tb.png_inputs(scratch, 2)
    full = PILImage.open(io.BytesIO(data[0]))
    full.load()
    small = full.resize((512, 512), tb.LANCZOS)
    reps = a.reps
    p = [("decode PNG 2048x2048", pillow_ms(lambda: PILImage.open(io.BytesIO(data[0])).load(), reps)),
         ("resize -> 512x512 LANCZOS", pillow_ms(lambda: full.resize((512, 512), tb.LANCZOS), reps)),
         ("encode 512x512 PNG level 6", pillow_ms(lambda: tb.save(small, "PNG"), reps))]
    dec = [imgbatch.Image.open(d).crop((0, 0, 1, 1)).to_job(key=k) for k, d in enumerate(data)]
    whole = [imgbatch.Image.open(d).resize((512, 512), tb.LANCZOS).to_job(key=k, output="png", compression=6)
             for k, d in enumerate(data)]
    i = [("decode PNG 2048x2048", imgbatch_ms(a.bin, dec, a.n, scratch, base)),
         ("encode 512x512 PNG level 6", encode_ms(a, scratch, base, [(512, 512)], "png", compression=6))]
    cpu_job = imgbatch_ms(a.bin, whole, a.n, scratch, base)
    return "PNG 2048^2 -> 512^2 LANCZOS -> PNG level 6", p, i, cpu_job


ROWS = {"renditions": row_renditions, "png": row_png}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("IB_BIN", "build/imgbatch"))
    ap.add_argument("--scratch", default=None, help="inputs cached here (default: a temporary directory)")
    ap.add_argument("--n", type=int, default=8, help="jobs per imgbatch stage run")
    ap.add_argument("--reps", type=int, default=5, help="Pillow calls per stage")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="cores for the rate ceiling")
    ap.add_argument("--rows", default="renditions,png")
    ap.add_argument("--md", default=None, help="also write the table here")
    a = ap.parse_args(argv)
    scratch = a.scratch or tempfile.mkdtemp(prefix="stage_cost.")
    os.makedirs(scratch, exist_ok=True)
    base = trivial_s(a.bin, scratch)
    lines = [f"stage_cost: CPU ms per image on one core; Pillow {PILImage.__version__}, "
             f"imgbatch `run --backend cpu` ({a.bin}), {a.n} jobs a stage, trivial run {1000 * base:.0f} ms "
             f"subtracted; ceilings for {a.cores} cores", ""]
    for name in a.rows.split(","):
        what, p, i, cpu_job = ROWS[name](a, scratch, base)
        pt, it = sum(ms for _, ms in p), sum(ms for _, ms in i)
        lines += [f"### {what}", "", "| stage | Pillow ms | imgbatch CPU-side ms |", "|---|---|---|"]
        ib = dict(i)
        for stage, ms in p:
            other = ib.pop(stage, None)
            lines.append(f"| {stage} | {ms:.1f} | {'on the GPU' if other is None and 'resize' in stage else ''}"
                         f"{'' if other is None else f'{other:.1f}'} |")
        lines += [f"| {stage} | | {ms:.1f} |" for stage, ms in ib.items()]
        lines += [f"| **total** | **{pt:.1f}** | **{it:.1f}** (+ the GPU's resize) |", "",
                  f"ceiling against Pillow on the same cores: {pt / it:.2f}x; rate ceiling on {a.cores} cores: "
                  f"{1000 * a.cores / it:.1f} img/s (Pillow's: {1000 * a.cores / pt:.1f}); the whole job on "
                  f"imgbatch's cpu backend: {cpu_job:.1f} ms", ""]
    text = "\n".join(lines)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
