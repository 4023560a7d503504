"""The thumbnail and rendition rows (bench/drivers/run.sh thumbs), each measured
in the same run against its peer on the same machine:

  kernel      4032x3024 RGB -> resize (256, 192) LANCZOS, kernel only: the job's
              kernels under Nsight Compute (`imgbatch run --backend cuda`, as
              bench/drivers/ncu_kernels.py), one job a submission and B jobs a
              submission (per image: the submission's kernels / B);   >= 25k img/s
  api         1024x768 RGB -> resize (256, 192) BICUBIC, raw in and out, through
              the executor API (bench/harness/jobs_bench.c, zero-copy feed);
              Pillow on every core beside it;                          >= 10k img/s
  thumb       12 MP JPEG -> thumbnail((256, 256)) (draft decode, BICUBIC, reducing
              gap 2) -> JPEG q85 through `imgbatch run` (bench/drivers/run_bench.py);
              Pillow on every core doing the same; libvips' vips_thumbnail_buffer +
              jpegsave Q 85 on every core (bench/harness/vips_thumb_bench.c, the
              libvips our binaries link: on the GPU machine the only one); >= both
  renditions  12 MP JPEG -> 2048/1024/512/256 (longest side, LANCZOS) JPEG q85, one
              Job with four renditions (imgbatch.renditions_job) through `imgbatch
              run`; Pillow on every core doing the same decode, four resizes and
              four saves; a backend that answers Unsupported is reported as
              "unsupported on BACKEND" (exit 0) and with --backend cuda the cpu
              backend runs it too;                                      >= 3x Pillow
  thumb, renditions --via kafka: the same Jobs through the Kafka worker, as issue 26
              measures them: the JPEGs written under SCRATCH/kafka-src and sent as
              path Jobs (Source.path: these 1.7 MB JPEGs, a camera's 3-15 MB, are over
              librdkafka's 1 MB message.max.bytes, and the embedded broker keeps 5 MiB
              a partition; README "Big photos"), `imgbatch broker`, `imgbatch worker
              --backend B --source-root SCRATCH/kafka-src --output-dir DIR` (Results
              over --max-result-bytes come back as files there) and `kafka_bench
              drive --jobs FILE --results FILE` (bench/harness/kafka_bench.c: a window
              of Jobs outstanding, jobs/s after the warm-up); a fresh broker and worker
              per setting (default caps; with cuda as above, also --caps or the larger
              one). Rows imgbatch-kafka-BACKEND; every Result must be images or files,
              no error (else exit 1), and keys 0 and 1 are checked against Pillow as
              above (no raw twins: they check the backend, which the plain row does). A
              rate whose Results waited over 1 s for the driver's reader is written
              "suspect". No Pillow/libvips rows: run the plain row into the same CSV for
              the peers. `table` shows both figures; the verdict takes the Kafka one
              where there is one, and says which it took.
  png         PNG 2048^2 RGB -> resize (512, 512) LANCZOS -> PNG (level 6), as
              `imgbatch run` (480 jobs; default caps and PNG_CAPS, the deeper
              executor it needs); Pillow on every core;                 >= 3x Pillow

Inputs are generated deterministically (camera-like: smooth gradients + noise;
JPEG quality 90, PNG level 6) into --scratch and reused by later calls. Every
row checks a sample against Pillow 12.3: raw outputs bytes equal; the same
graphs with raw output for the sample keys bytes equal to Pillow's pixels before
the encode (MISMATCH fails the row, exit 1); PNG outputs decoded, bytes equal;
JPEG outputs decoded and compared with Pillow's own JPEG of the same pixels
(equal, or the max difference noted: libjpeg builds may differ).

  thumbs_bench.py ROW --scratch DIR --csv FILE [--backend cuda|cpu] [--quick]
  thumbs_bench.py thumb|renditions --via kafka --scratch DIR --csv FILE [--backend cuda|cpu]
                  [--quick] [--n N] [--kafka-bench PATH] [--kafka-timeout S]
  thumbs_bench.py table --csv FILE [--md FILE]: the targets table of the rows
"""
import argparse
import csv
import io
import multiprocessing as mp
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import PIL
from PIL import Image as PILImage

import imgbatch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import csvrows  # noqa: E402
from ncu_kernels import kernel_times  # noqa: E402

PART = "thumbs"
CAM = (4032, 3024)
THUMB = (256, 256)
REND = [2048, 1024, 512, 256]
Q = 85
LANCZOS = PILImage.Resampling.LANCZOS
BICUBIC = PILImage.Resampling.BICUBIC


def say(msg):
    print(f"  {PART}: {msg}", flush=True)


def fit(size, side):
    """(w, h) of size scaled so its longest side is `side` (Pillow's thumbnail rounding)."""
    w, h = size
    return (side, max(1, round(h * side / w))) if w >= h else (max(1, round(w * side / h)), side)


# ------------------------------------------------------------ inputs

def camera(w, h, seed):
    """A camera-like RGB frame: smooth gradients and blobs, sensor noise."""
    rng = np.random.default_rng(1000 + seed)
    y = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, w, dtype=np.float32)[None, :]
    ph = rng.uniform(0, 6.28, 6).astype(np.float32)
    r = 128 + 90 * np.sin(2.1 * x + 1.3 * y + ph[0]) + 30 * np.cos(7 * x * y + ph[1])
    g = 120 + 80 * np.sin(1.7 * y - 0.9 * x + ph[2]) + 25 * np.sin(11 * (x - 0.5) ** 2 + ph[3])
    b = 110 + 70 * np.cos(2.6 * x * (1 - y) + ph[4]) + 35 * np.sin(9 * y + ph[5])
    img = np.stack([np.broadcast_to(c, (h, w)) for c in (r, g, b)], axis=-1)
    img = img + rng.normal(0.0, 4.0, (h, w, 3)).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def cached(scratch, name, make):
    p = os.path.join(scratch, name)
    if not os.path.exists(p):
        data = make()
        with open(p + ".tmp", "wb") as f:
            f.write(data)
        os.replace(p + ".tmp", p)
    with open(p, "rb") as f:
        return f.read()


def encode(arr, fmt, **kw):
    buf = io.BytesIO()
    PILImage.fromarray(arr, "RGB").save(buf, fmt, **kw)
    return buf.getvalue()


def jpeg_inputs(scratch, k):
    return [cached(scratch, f"camera{s}.jpg", lambda s=s: encode(camera(*CAM, s), "JPEG", quality=90))
            for s in range(k)]


def png_inputs(scratch, k):
    return [cached(scratch, f"png2048_{s}.png",
                   lambda s=s: encode(camera(2048, 2048, 50 + s), "PNG", compress_level=6)) for s in range(k)]


def raw_inputs(w, h, k):
    return [camera(w, h, 100 + s).tobytes() for s in range(k)]


# ------------------------------------------------------------ the graphs (client and Pillow alike)

def g_thumb(ns, data):
    im = ns.open(io.BytesIO(data)) if ns is PILImage else ns.open(data)
    im.thumbnail(THUMB)
    return im


def g_renditions(ns, data):
    im = ns.open(io.BytesIO(data)) if ns is PILImage else ns.open(data)
    return [im.resize(fit(im.size, s), LANCZOS) for s in REND]


def g_png(ns, data):
    im = ns.open(io.BytesIO(data)) if ns is PILImage else ns.open(data)
    return im.resize((512, 512), LANCZOS)


def save(im, fmt):
    buf = io.BytesIO()
    if fmt == "JPEG":
        im.save(buf, "JPEG", quality=Q)
    else:
        im.save(buf, "PNG", compress_level=6)
    return buf.getvalue()


# Pillow's whole work per input (bytes in, encoded bytes out), for the baselines.
def p_thumb(d):
    return len(save(g_thumb(PILImage, d), "JPEG"))


def p_renditions(d):
    im = PILImage.open(io.BytesIO(d))
    im.load()
    return sum(len(save(im.resize(fit(im.size, s), LANCZOS), "JPEG")) for s in REND)


def p_png(d):
    return len(save(g_png(PILImage, d), "PNG"))


def p_resize_api(d):
    return len(PILImage.frombytes("RGB", (1024, 768), d).resize((256, 192), BICUBIC).tobytes())


PILLOW = {"thumb": p_thumb, "renditions": p_renditions, "png": p_png, "api": p_resize_api}
CASE = None  # (fn, inputs), set before the pool forks


def _one(i):
    fn, inputs = CASE
    return fn(inputs[i % len(inputs)])


def _noop(_):
    return os.getpid()


def pillow_rates(row, inputs, procs, budget, csv_path, workload, mode, side):
    """Pillow sequential and on `procs` processes (fork); rows pillow-seq, pillow-mpP."""
    global CASE
    CASE = (PILLOW[row], inputs)
    times = []
    t_end = time.perf_counter() + budget
    while True:
        t0 = time.perf_counter()
        _one(len(times))
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > t_end or len(times) >= 200:
            break
    t_seq = statistics.median(times[1:] if len(times) > 1 else times)
    k = max(2, min(400, int(budget / max(t_seq, 1e-6))))
    with mp.get_context("fork").Pool(procs) as pool:
        pool.map(_noop, range(procs * 4), chunksize=1)
        t0 = time.perf_counter()
        pool.map(_one, range(procs * k), chunksize=max(1, k // 4))
        wall = time.perf_counter() - t0
    t_mp = wall / (procs * k)
    note = f"Pillow {PIL.__version__}" + ("" if PIL.__version__ == "12.3.0" else " (not the pinned 12.3.0)")
    rows = []
    for impl, t, n in (("pillow-seq", t_seq, len(times)), (f"pillow-mp{procs}", t_mp, procs * k)):
        rows += [csvrows.row(PART, impl, workload, mode, side, n, "ms_per_img", t * 1e3, "ms", note=note),
                 csvrows.row(PART, impl, workload, mode, side, n, "img_per_s", 1 / t, "img/s", note=note)]
    csvrows.append(csv_path, rows)
    say(f"{workload}: pillow-seq {1 / t_seq:.1f} img/s, pillow-mp{procs} {1 / t_mp:.1f} img/s")
    return 1 / t_mp


# ------------------------------------------------------------ imgbatch run

def rm(*paths):
    for p in paths:
        if os.path.exists(p):
            os.unlink(p)


def write_jobs(path, jobs, n):
    with open(path, "wb") as f:
        for i in range(n):
            imgbatch.write_delimited(f, jobs[i % len(jobs)])


def run_results(binary, backend, jobs_path, out_path, extra=()):
    subprocess.run([binary, "run", "--backend", backend, *extra, "--in", jobs_path, "--out", out_path],
                   check=True)
    with open(out_path, "rb") as f:
        return list(imgbatch.read_results(f))


def probe(a, jobs, workload, mode, side, scratch):
    """Runs Job 0 alone: None when it succeeds, else the error (an Unsupported
    one gets a row saying so)."""
    j, r = os.path.join(scratch, "probe.bin"), os.path.join(scratch, "probe.out")
    write_jobs(j, jobs[:1], 1)
    res = run_results(a.bin, a.backend, j, r)
    rm(j, r)
    err = res[0].error if res else "no result"
    if err is None:
        return None
    if getattr(err, "kind", "") == "unsupported":
        csvrows.append(a.csv, [csvrows.row(PART, f"imgbatch-run-{a.backend}", workload, mode, side, 0,
                                           "img_per_s", "", "img/s", status="unsupported",
                                           note=f"unsupported on {a.backend}: {err.message}")])
        say(f"{workload}: unsupported on {a.backend} ({err.message})")
        return err
    raise SystemExit(f"thumbs_bench: {workload} on {a.backend}: job 0 failed: {err}")


def time_run(a, jobs, n, workload, mode, side, scratch, backend=None, caps=""):
    backend = backend or a.backend
    j, r = os.path.join(scratch, f"{workload}.bin"), os.path.join(scratch, f"{workload}.out")
    write_jobs(j, jobs, n)
    cmd = [sys.executable, os.path.join(HERE, "run_bench.py"), "--bin", a.bin, "--backend", backend,
           "--jobs", j, "--results", r, "--n", str(n), "--row", f"{PART},{workload},{mode},{side}",
           "--warm", str(max(1, n // 3)), "--reps", "1" if a.quick else "2", "--csv", a.csv]
    if caps:
        cmd += ["--caps", caps, "--setting", caps]
    subprocess.run(cmd, check=True)
    with open(r, "rb") as f:
        res = list(imgbatch.read_results(f))
    rm(j, r)
    bad = [x for x in res if x.error is not None]
    if len(res) != n or bad:
        raise SystemExit(f"thumbs_bench: {workload}: {len(res)} results for {n} jobs, "
                         f"{len(bad)} errors ({bad[0].error if bad else ''})")
    rate = None
    for row in csvrows.read_all(os.path.dirname(os.path.abspath(a.csv))):
        if (row["part"], row["impl"], row["workload"], row["metric"], row["setting"]) == (
                PART, f"imgbatch-run-{backend}", workload, "img_per_s", caps or "default caps"):
            rate = float(row["value"])
    return res, rate


BEST_CAPS = "--max-in-flight 4 --max-jobs 256 --gpu-bytes 8G --host-bytes 8G"  # run.sh's best_caps


# The PNG row's larger setting: a deeper executor (the default --executor-ahead,
# 64 MiB, holds 9 of its 7.2 MB frames, fewer decodes than cores) without
# BEST_CAPS' max_jobs 256, whose few large submissions allocate their pinned
# blocks afresh (bench/RESULTS.md, 2026-12-07 15:13 and 15:50).
PNG_CAPS = "--executor-ahead 256M --host-bytes 1G"


def settings(a, backend, larger=BEST_CAPS):
    """The caps a row runs at: the default (""), then on cuda (not --quick, or
    --caps given) --caps or `larger`."""
    return [""] + ([a.caps or larger] if backend == "cuda" and (not a.quick or a.caps) else [])


def renditions_n(a, backend):
    """Jobs of a renditions run: on the cpu backend 6 whatever --n (a check
    that it answers them, not the row)."""
    return 6 if backend == "cpu" else (a.n or (6 if a.quick else 120))


def time_runs(a, jobs, n, workload, mode, side, scratch, larger=BEST_CAPS):
    """time_run at settings(); the default's results and the better rate."""
    res, rate = time_run(a, jobs, n, workload, mode, side, scratch)
    for caps in settings(a, a.backend, larger)[1:]:
        _, r2 = time_run(a, jobs, n, workload, mode, side, scratch, caps=caps)
        rate = max(x for x in (rate, r2) if x) if (rate or r2) else None
    return res, rate


def cmp_pixels(got, want):
    """(equal, max abs difference) of two PIL images."""
    if (got.mode, got.size) != (want.mode, want.size):
        return False, None
    if got.tobytes() == want.tobytes():
        return True, 0
    d = np.abs(np.asarray(got, dtype=np.int16) - np.asarray(want, dtype=np.int16))
    return False, int(d.max())


def check(a, workload, mode, side, pairs, exact_raw, backend=None, impl=None):
    """pairs: [(imgbatch ImageData, Pillow PIL image (pixels before the encode), fmt)].
    exact_raw: results of the raw-output twin jobs [(ImageData, PIL image)]. Appends
    a `checked` row (impl: default imgbatch-run-BACKEND); returns False on a MISMATCH."""
    backend = backend or a.backend
    impl = impl or f"imgbatch-run-{backend}"
    problem, notes, jpeg_diff = None, [], 0
    for got, want in exact_raw:
        eq, d = cmp_pixels(got.to_pil(), want)
        if not eq:
            problem = problem or f"raw twin differs from Pillow (max diff {d}, {got.size} vs {want.size})"
    for got, want, fmt in pairs:
        g = got.to_pil()
        ref = PILImage.open(io.BytesIO(save(want, fmt))) if fmt == "JPEG" else want
        eq, d = cmp_pixels(g.convert(ref.mode) if g.mode != ref.mode else g, ref)
        if d is None:
            problem = problem or f"{fmt} output {g.mode} {g.size} vs Pillow's {ref.mode} {ref.size}"
        elif not eq and fmt != "JPEG":
            problem = problem or f"{fmt} output differs from Pillow (max diff {d})"
        elif not eq:
            jpeg_diff = max(jpeg_diff, d)
    notes.append(f"{len(exact_raw)} raw twins bytes-equal to Pillow" if exact_raw else "")
    if pairs:
        fmt = pairs[0][2]
        notes.append(f"{len(pairs)} {fmt} outputs " + (
            "decoded equal to Pillow's" if not jpeg_diff else
            f"decoded within {jpeg_diff} of Pillow's own JPEG of the same pixels (libjpeg build difference)"))
    note = "; ".join(x for x in notes if x) if not problem else problem
    status = "MISMATCH" if problem else "ok"
    csvrows.append(a.csv, [csvrows.row(PART, impl, workload, mode, side,
                                       len(pairs) + len(exact_raw), "checked", len(pairs) + len(exact_raw),
                                       "results", status=status, note=note)])
    where = backend if impl == f"imgbatch-run-{backend}" else impl
    print(f"{'MISMATCH' if problem else 'ok'}: {workload} on {where}: {note}", flush=True)
    return not problem


def raw_twins(a, twins, refs, scratch, backend=None):
    """Runs raw-output twin jobs (sample keys); [(ImageData, Pillow image)]."""
    j, r = os.path.join(scratch, "twins.bin"), os.path.join(scratch, "twins.out")
    write_jobs(j, twins, len(twins))
    res = run_results(a.bin, backend or a.backend, j, r)
    rm(j, r)
    out = []
    for x in sorted(res, key=lambda x: x.input_key):
        if x.error is not None:
            raise SystemExit(f"thumbs_bench: raw twin {x.input_key}: {x.error}")
        if x.renditions:
            out += [(rd.image, refs[x.input_key][i]) for i, rd in enumerate(x.renditions)]
        else:
            out.append((x.image, refs[x.input_key]))
    return out


# ------------------------------------------------------------ rows

def row_kernel(a, scratch):
    w, h = CAM
    out = fit(CAM, 256)
    raws = raw_inputs(w, h, 1)
    ib = imgbatch.Image.frombytes("RGB", (w, h), raws[0]).resize(out, LANCZOS)
    job = ib.to_job(key=0)
    want = ib.replay()
    # The job itself, checked on this backend (cpu: the only thing this row does).
    j, r = os.path.join(scratch, "kernel1.bin"), os.path.join(scratch, "kernel1.out")
    write_jobs(j, [job], 1)
    res = run_results(a.bin, a.backend, j, r)
    if res[0].error is not None:
        if res[0].error.kind == "unsupported":
            csvrows.append(a.csv, [csvrows.row(PART, "imgbatch-ncu", "resize_lanczos_kernel", "RGB", "4032x3024",
                                               0, "img_per_s", "", "img/s", status="unsupported",
                                               note=f"unsupported on {a.backend}: {res[0].error.message}")])
            say(f"kernel: unsupported on {a.backend} ({res[0].error.message})")
            return True
        raise SystemExit(f"thumbs_bench: kernel job: {res[0].error}")
    ok = check(a, "resize_lanczos_kernel", "RGB", "4032x3024", [], [(res[0].image, want)])
    if a.backend != "cuda":
        csvrows.append(a.csv, [csvrows.row(PART, "imgbatch-ncu", "resize_lanczos_kernel", "RGB", "4032x3024", 0,
                                           "img_per_s", "", "img/s", status="skipped", note="no GPU (--backend cpu)")])
        say("kernel: skipped: no GPU (--backend cpu); the job checked on cpu")
        return ok
    ncu = shutil.which("ncu") or ("/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else None)
    if not ncu:
        say("kernel: ncu: skipped: no ncu")
        return ok
    def ncu_run(n, batch):
        """[(kernel, ms)] of n equal jobs at max_jobs `batch` (one submission at a time)."""
        write_jobs(j, [job], n)
        log = os.path.join(scratch, f"kernel_{n}_b{batch}.ncu.csv")
        # Read-ahead past the 36 MB frames, so a submission gets `batch` jobs.
        caps = ["--max-jobs", str(batch), "--max-in-flight", "1", "--gpu-bytes", "16G", "--host-bytes", "16G",
                "--read-ahead", "2G", "--executor-ahead", "4G"]
        cmd = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
               "--print-units", "base", "--log-file", log, a.bin, "run", "--backend", "cuda", *caps,
               "--in", j, "--out", os.devnull]
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        ks = kernel_times(log) if os.path.exists(log) else []
        return rc, ks

    def put(batch, ms, note):
        setting = f"max_jobs {batch}"
        if ms is None:
            csvrows.append(a.csv, [csvrows.row(PART, "imgbatch-ncu", "resize_lanczos_kernel", "RGB", "4032x3024",
                                               batch, "ms_kernel", "", "ms", setting, status="error", note=note)])
            say(f"kernel: {setting}: error ({note})")
            return
        csvrows.append(a.csv, [
            csvrows.row(PART, "imgbatch-ncu", "resize_lanczos_kernel", "RGB", "4032x3024", batch, "ms_kernel", ms,
                        "ms", setting, note=note),
            csvrows.row(PART, "imgbatch-ncu", "resize_lanczos_kernel", "RGB", "4032x3024", batch, "img_per_s",
                        1e3 / ms, "img/s", setting, note=note)])
        say(f"kernel: 4032x3024 RGB -> {out} LANCZOS, {setting}: {ms * 1e3:.2f} us/img kernel only "
            f"= {1e3 / ms:,.0f} img/s ({note})")

    # One job a submission: the third of three equal jobs (the first meets cold memory).
    rc, ks = ncu_run(3, 1)
    if rc != 0 or not ks or len(ks) % 3:
        put(1, None, f"ncu rc {rc}, {len(ks)} kernels for 3 jobs")
    else:
        per = len(ks) // 3
        names = ", ".join(sorted({k.split("(")[0] for k, _ in ks[-per:]}))
        put(1, sum(t for _, t in ks[-per:]), f"job 3 of 3: {per} kernels ({names}); job 1: "
            f"{sum(t for _, t in ks[:per]) * 1e3:.1f} us")
    # B jobs a submission: B jobs and 3B jobs in two processes; per image the
    # difference of their kernel sums over 2B (the first, cold submission cancels).
    B = a.kernel_batch
    rc1, k1 = ncu_run(B, B)
    rc3, k3 = ncu_run(3 * B, B)
    if rc1 or rc3 or not k1 or not k3 or sum(t for _, t in k3) <= sum(t for _, t in k1):
        put(B, None, f"ncu rc {rc1}/{rc3}, {len(k1)}/{len(k3)} kernels for {B}/{3 * B} jobs")
    else:
        ms = (sum(t for _, t in k3) - sum(t for _, t in k1)) / (2 * B)
        names = ", ".join(sorted({k.split("(")[0] for k, _ in k3}))
        put(B, ms, f"(kernel sum of {3 * B} jobs - of {B} jobs) / {2 * B}; {len(k1)} and {len(k3)} kernels "
            f"({names})")
    os.unlink(j)
    return ok


def row_api(a, scratch):
    raws = raw_inputs(1024, 768, 4)
    ims = [imgbatch.Image.frombytes("RGB", (1024, 768), d).resize((256, 192), BICUBIC) for d in raws]
    j = os.path.join(scratch, "api.bin")
    write_jobs(j, [im.to_job(key=k) for k, im in enumerate(ims)], len(ims))
    # The sample against Pillow, through `imgbatch run` on this backend.
    pairs = raw_twins(a, [im.to_job(key=k) for k, im in enumerate(ims[:2])], [im.replay() for im in ims[:2]],
                      scratch)
    ok = check(a, "resize_bicubic_api", "RGB", "1024x768", [], pairs)
    images = a.api_images or (400 if a.quick else (8000 if a.backend == "cuda" else 2000))
    # The default caps, then (cuda) a larger setting, as run.sh's other parts look for the best.
    api_caps = [["--max-jobs", "64", "--inflight", "2"]]
    if a.backend == "cuda" and not a.quick:
        api_caps.append(["--max-jobs", "256", "--inflight", "4"])
    for caps in api_caps:
        rc = subprocess.run([a.jobs_bench, "--jobs", j, "--backend", a.backend, "--images", str(images),
                             "--reps", "1" if a.quick else "3", *caps,
                             "--row", f"{PART},resize_bicubic_api,RGB,1024x768", "--csv", a.csv]).returncode
        if rc == 3:
            os.unlink(j)
            return ok  # "unsupported on BACKEND" row written by jobs_bench
        if rc != 0:
            raise SystemExit(f"thumbs_bench: jobs_bench rc {rc}")
    os.unlink(j)
    pillow_rates("api", raws, a.procs, a.budget, a.csv, "resize_bicubic_api", "RGB", "1024x768")
    return ok


def thumb_jobs(data, ns=imgbatch.Image):
    """[(JPEG Job, raw-output twin Job, the LazyImage)] per input (ns.open(x) for each
    x of data: encoded bytes, or with a PathSources a path Job's file)."""
    jobs = []
    for k, d in enumerate(data):
        im = g_thumb(ns, d)
        jobs.append((im.to_job(key=k, output="jpeg", quality=Q), im.to_job(key=k), im))
    return jobs


def row_thumb(a, scratch):
    data = jpeg_inputs(scratch, 2 if a.quick else 4)
    if a.via == "kafka":
        return kafka_thumb(a, scratch, data)
    jobs = thumb_jobs(data)
    say(f"thumb: {len(data)} camera JPEGs {CAM[0]}x{CAM[1]} q90, {sum(map(len, data)) / len(data) / 1e6:.1f} MB "
        f"each -> thumbnail{THUMB} (draft decode, BICUBIC) -> {jobs[0][2].size} JPEG q{Q}")
    if probe(a, [j[0] for j in jobs], "thumbnail256_jpeg", "RGB", "4032x3024", scratch):
        return True
    ok = True
    twins = raw_twins(a, [j[1] for j in jobs[:2]], [j[2].replay() for j in jobs[:2]], scratch)
    n = a.n or (8 if a.quick else 240)
    res, rate = time_runs(a, [j[0] for j in jobs], n, "thumbnail256_jpeg", "RGB", "4032x3024", scratch)
    by_key = {x.input_key: x for x in res}
    ok &= check(a, "thumbnail256_jpeg", "RGB", "4032x3024",
                [(by_key[k].image, jobs[k][2].replay(), "JPEG") for k in range(min(2, len(jobs)))], twins)
    pil = pillow_rates("thumb", data, a.procs, a.budget, a.csv, "thumbnail256_jpeg", "RGB", "4032x3024")
    if a.vips_bench and os.path.exists(a.vips_bench):
        files = [os.path.join(scratch, f"camera{s}.jpg") for s in range(len(data))]
        subprocess.run([a.vips_bench, "--size", "256", "--quality", str(Q), "--threads", str(a.procs),
                        "--seconds", str(a.budget), "--row", f"{PART},thumbnail256_jpeg,RGB,4032x3024",
                        "--csv", a.csv, *files], check=True)
    else:
        say("thumb: libvips peer: skipped: no vips_thumb_bench binary")
    if rate:
        say(f"thumb: imgbatch-run-{a.backend} {rate:.1f} img/s = {rate / pil:.2f}x Pillow on {a.procs} cores")
    return ok


def rendition_jobs(data, output, ns=imgbatch.Image):
    out = []
    for k, d in enumerate(data):
        ims = g_renditions(ns, d)
        fmt = "JPEG" if output == "jpeg" else "RAW"
        out.append((imgbatch.renditions_job([(im, fmt, Q) if fmt == "JPEG" else (im, fmt) for im in ims], key=k),
                    [im.replay() for im in ims] if k < 2 else None))
    return out


def row_renditions(a, scratch):
    data = jpeg_inputs(scratch, 2 if a.quick else 4)
    if a.via == "kafka":
        return kafka_renditions(a, scratch, data)
    jobs = rendition_jobs(data, "jpeg")
    twins = rendition_jobs(data[:2], "raw")
    refs = {k: t[1] for k, t in enumerate(twins)}
    say(f"renditions: {len(data)} camera JPEGs -> {', '.join(str(fit(CAM, s)) for s in REND)} LANCZOS -> JPEG q{Q}")
    pil = pillow_rates("renditions", data, a.procs, a.budget, a.csv, "renditions4_jpeg", "RGB", "4032x3024")
    ok = True
    backends = [a.backend] + (["cpu"] if a.backend == "cuda" else [])
    for be in backends:
        b = argparse.Namespace(**{**vars(a), "backend": be})
        if probe(b, [j[0] for j in jobs], "renditions4_jpeg", "RGB", "4032x3024", scratch):
            continue
        tw = raw_twins(b, [t[0] for t in twins], refs, scratch)
        n = renditions_n(a, be)
        res, rate = time_runs(b, [j[0] for j in jobs], n, "renditions4_jpeg", "RGB", "4032x3024", scratch)
        by_key = {x.input_key: x for x in res}
        pairs = [(rd.image, jobs[k][1][i], "JPEG") for k in range(min(2, len(jobs)))
                 for i, rd in enumerate(by_key[k].renditions)]
        ok &= check(b, "renditions4_jpeg", "RGB", "4032x3024", pairs, tw)
        if rate:
            say(f"renditions: imgbatch-run-{be} {rate:.1f} img/s = {rate / pil:.2f}x Pillow on {a.procs} cores")
    return ok


# ------------------------------------------------------------ the Kafka worker (--via kafka)

class PathSources:
    """ns.open(name) for the graph builders: a path Job's source (Source.path
    `name`, relative to the worker's --source-root `root`)."""

    def __init__(self, root):
        self.root = root

    def open(self, name):
        return imgbatch.Image.open_path(name, root=self.root)


def path_sources(scratch, data):
    """The inputs as files of a source root under the scratch; (root, names)."""
    root = os.path.join(scratch, "kafka-src")
    os.makedirs(root, exist_ok=True)
    names = []
    for k, d in enumerate(data):
        name = f"camera{k}.jpg"
        p = os.path.join(root, name)
        if not os.path.exists(p) or os.path.getsize(p) != len(d):
            with open(p + ".tmp", "wb") as f:
                f.write(d)
            os.replace(p + ".tmp", p)
        names.append(name)
    return root, names


def stop(proc, what, timeout):
    """SIGTERM, then SIGKILL after timeout; the exit status."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            say(f"{what} did not stop in {timeout} s: killed")
            proc.kill()
    return proc.wait()


def tail(path, k=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-k:])
    except OSError:
        return ""


def kafka_case(a, backend, src, jobs_path, n, caps, work):
    """`imgbatch broker`, `imgbatch worker` on it and `kafka_bench drive --jobs`:
    (drive's summary line, the Results file); SystemExit when a process fails."""
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    results = os.path.join(work, "results.bin")
    with open(os.path.join(logs, "broker.log"), "wb") as blog:
        broker = subprocess.Popen([a.bin, "broker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=blog)
    worker = drive = None
    try:
        line = broker.stdout.readline().decode().strip()
        if not line.startswith("bootstrap="):
            raise SystemExit(f"thumbs_bench: the broker did not start ({line!r}): {tail(blog.name)}")
        boot = line.split("=", 1)[1]
        wlog = os.path.join(logs, "worker.log")
        with open(wlog, "wb") as f:
            worker = subprocess.Popen(
                [a.bin, "worker", "--brokers", boot, "--backend", backend, "--source-root", src,
                 "--output-dir", out, "--grace-seconds", "30", *caps.split(),
                 "-X", "session.timeout.ms=6000", "-X", "fetch.wait.max.ms=10"], stderr=f)
        dlog = os.path.join(logs, "drive.log")
        with open(dlog, "wb") as f:
            drive = subprocess.Popen([a.kafka_bench, "drive", "--brokers", boot, "--n", str(n),
                                      "--jobs", jobs_path, "--results", results],
                                     stdout=f, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + a.kafka_timeout
        while drive.poll() is None:
            if worker.poll() is not None:
                stop(drive, "kafka_bench", 5)
                raise SystemExit(f"thumbs_bench: the worker exited {worker.returncode} during the drive:\n"
                                 f"{tail(wlog)}")
            if time.monotonic() > deadline:
                stop(drive, "kafka_bench", 5)
                raise SystemExit(f"thumbs_bench: kafka_bench drive not done in {a.kafka_timeout} s:\n"
                                 f"{tail(dlog)}{tail(wlog)}")
            time.sleep(0.2)
        summary = tail(dlog, 1).strip()
        if drive.returncode != 0:
            raise SystemExit(f"thumbs_bench: kafka_bench drive exited {drive.returncode}:\n{tail(dlog)}")
        rc = stop(worker, "the worker", 60)
        if rc != 0:
            raise SystemExit(f"thumbs_bench: the worker exited {rc} at its drain:\n{tail(wlog)}")
        return summary, results
    finally:
        for p, what in ((drive, "kafka_bench"), (worker, "the worker"), (broker, "the broker")):
            if p is not None:
                stop(p, what, 10)
        broker.stdin.close()
        broker.stdout.close()


DRIVE = re.compile(r"(\d+) of (\d+) results \(window (\d+) over (\d+) partitions.*\): ([\d.]+) jobs/s.*"
                   r"latency p50 ([\d.]+) ms p99 ([\d.]+) ms \(p50 in (\d+) ms, out (\d+) ms\)")


def kafka_runs(a, backend, src, jobs, n, workload, mode, side, scratch, sample):
    """jobs: [(path Job, Pillow images of its outputs or None)], their sources under
    `src` (the worker's --source-root). N messages (message i: jobs[i % len]) through
    the Kafka worker on `backend`, at the default caps and, as time_runs, at --caps or
    BEST_CAPS (cuda); rows imgbatch-kafka-BACKEND. sample(result, output_dir) ->
    [(ImageData, fmt)] of one Result. Checks every Result (images or --output-dir
    files, no error) and the first two keys' outputs against Pillow; returns False
    on an error or a MISMATCH."""
    impl = f"imgbatch-kafka-{backend}"
    work = os.path.join(scratch, f"kafka-{workload}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    jobs_path = os.path.join(work, "jobs.bin")
    write_jobs(jobs_path, [j for j, _ in jobs], len(jobs))
    runs = settings(a, backend)
    ok = True
    for caps in runs:
        setting = caps or "default caps"
        summary, results = kafka_case(a, backend, src, jobs_path, n, caps, work)
        m = DRIVE.search(summary)
        if not m:
            raise SystemExit(f"thumbs_bench: no rate in kafka_bench's summary: {summary!r}")
        rate = float(m.group(5))
        with open(results, "rb") as f:
            res = list(imgbatch.read_results(f))
        errors = [r for r in res if r.error is not None]
        if errors and all(r.error.kind == "unsupported" for r in errors) and len(errors) == len(res):
            msg = errors[0].error.message
            csvrows.append(a.csv, [csvrows.row(PART, impl, workload, mode, side, 0, "img_per_s", "", "img/s",
                                               setting, status="unsupported",
                                               note=f"unsupported on {backend}: {msg}")])
            say(f"{workload}: {impl}: unsupported on {backend} ({msg})")
            break
        out_dir = os.path.join(work, "out")
        outputs, problems = {}, [f"{len(errors)} error Results ({errors[0].error})"] if errors else []
        for r in res:
            if r.error is not None:
                continue
            try:
                got = sample(r, out_dir)
            except (ValueError, OSError) as e:
                problems.append(f"Result {r.input_key}: {e}")
                continue
            outputs.setdefault(r.input_key, got)
        if len(res) != n:
            problems.append(f"{len(res)} Results for {n} Jobs")
        if rate <= 0:
            problems.append(f"no steady rate over {n} Jobs ({summary})")
        missing = [k for k in range(min(2, len(jobs))) if k not in outputs]
        if missing and caps == runs[0]:
            problems.append(f"no output read back for sample key(s) {missing}")
        files = sum(1 for r in res for x in [r, *r.renditions] if x.file is not None)
        note = (f"kafka_bench drive: {m.group(1)} of {m.group(2)} Results, window {m.group(3)} over "
                f"{m.group(4)} partitions, latency p50 {m.group(6)} ms p99 {m.group(7)} ms (in {m.group(8)}, "
                f"out {m.group(9)} ms); steady after the warm-up window; {files} outputs as --output-dir files")
        if problems:
            csvrows.append(a.csv, [csvrows.row(PART, impl, workload, mode, side, n, "img_per_s", "", "img/s",
                                               setting, status="error", note="; ".join(problems))])
            say(f"{workload}: {impl} [{setting}]: FAILED: {'; '.join(problems)}")
            ok = False
            continue
        # Results that waited for kafka_bench's reader (its group joined after the
        # worker's first Results) arrive as a burst: a rate of a backlog, not kept.
        status = "ok"
        if int(m.group(9)) > 1000:
            status = "suspect"
            note += f"; not a steady rate: the Results waited {m.group(9)} ms (p50) for the reader"
        csvrows.append(a.csv, [
            csvrows.row(PART, impl, workload, mode, side, n, "img_per_s", rate, "img/s", setting, status, note),
            csvrows.row(PART, impl, workload, mode, side, n, "ms_per_img", 1e3 / rate, "ms", setting, status,
                        note)])
        say(f"{workload}: {impl} [{setting}] {rate:.1f} img/s{'' if status == 'ok' else ' (' + status + ')'} "
            f"({note})")
        if caps == runs[0]:
            pairs = [(img, want, fmt) for k in range(min(2, len(jobs)))
                     for (img, fmt), want in zip(outputs[k], jobs[k][1])]
            ok &= check(a, workload, mode, side, pairs, [], backend=backend, impl=impl)
    shutil.rmtree(work, ignore_errors=True)
    return ok


def kafka_thumb(a, scratch, data):
    root, names = path_sources(scratch, data)
    jobs = thumb_jobs(names, PathSources(root))
    say(f"thumb: {len(data)} camera JPEGs as path Jobs through the Kafka worker (embedded broker) -> "
        f"thumbnail{THUMB} -> {jobs[0][2].size} JPEG q{Q}")

    def sample(r, out_dir):
        img = r.image if r.image is not None else (r.file.read(out_dir) if r.file is not None else None)
        if img is None:
            raise ValueError("neither an image nor a file")
        return [(img, "JPEG")]

    n = a.n or (8 if a.quick else 240)
    return kafka_runs(a, a.backend, root, [(j[0], [j[2].replay()] if k < 2 else None) for k, j in enumerate(jobs)],
                      n, "thumbnail256_jpeg", "RGB", "4032x3024", scratch, sample)


def kafka_renditions(a, scratch, data):
    root, names = path_sources(scratch, data)
    jobs = rendition_jobs(names, "jpeg", PathSources(root))
    say(f"renditions: {len(data)} camera JPEGs as path Jobs through the Kafka worker (embedded broker) -> "
        f"{', '.join(str(fit(CAM, s)) for s in REND)} LANCZOS -> JPEG q{Q}")

    def sample(r, out_dir):
        if len(r.renditions) != len(REND):
            raise ValueError(f"{len(r.renditions)} renditions, not {len(REND)}")
        return [(rd.read(out_dir), "JPEG") for rd in r.renditions]

    ok = True
    for be in [a.backend] + (["cpu"] if a.backend == "cuda" else []):
        n = renditions_n(a, be)
        ok &= kafka_runs(a, be, root, jobs, n, "renditions4_jpeg", "RGB", "4032x3024", scratch, sample)
    return ok


def row_png(a, scratch):
    data = png_inputs(scratch, 2 if a.quick else 4)
    ims = [g_png(imgbatch.Image, d) for d in data]
    jobs = [im.to_job(key=k, output="png", compression=6) for k, im in enumerate(ims)]
    if probe(a, jobs, "png2048_lanczos512_png", "RGB", "2048", scratch):
        return True
    twins = raw_twins(a, [im.to_job(key=k) for k, im in enumerate(ims[:2])], [im.replay() for im in ims[:2]],
                      scratch)
    n = a.n or (8 if a.quick else 480)
    res, rate = time_runs(a, jobs, n, "png2048_lanczos512_png", "RGB", "2048", scratch, larger=PNG_CAPS)
    by_key = {x.input_key: x for x in res}
    ok = check(a, "png2048_lanczos512_png", "RGB", "2048",
               [(by_key[k].image, ims[k].replay(), "PNG") for k in range(min(2, len(ims)))], twins)
    pil = pillow_rates("png", data, a.procs, a.budget, a.csv, "png2048_lanczos512_png", "RGB", "2048")
    if rate:
        say(f"png: imgbatch-run-{a.backend} {rate:.1f} img/s = {rate / pil:.2f}x Pillow on {a.procs} cores")
    return ok


# ------------------------------------------------------------ the table

TARGETS = [  # workload, what, target kind, value
    ("resize_lanczos_kernel", "resize kernel only, 4032x3024 RGB -> 256x192 LANCZOS", "abs", 25000),
    ("resize_bicubic_api", "1024x768 RGB -> 256x192 BICUBIC through the API, raw in/out", "abs", 10000),
    ("thumbnail256_jpeg", "12 MP JPEG -> thumbnail(256) (draft) -> JPEG q85, Kafka worker / `imgbatch run`",
     "x", 1.0),
    ("renditions4_jpeg", "12 MP JPEG -> 2048/1024/512/256 JPEG q85, Kafka worker / `imgbatch run`", "x", 3.0),
    ("png2048_lanczos512_png", "PNG 2048^2 -> LANCZOS 512 -> PNG, `imgbatch run`", "x", 3.0),
]
# Issue 26 measures these rows through the Kafka worker (--via kafka): their verdict
# takes the Kafka figure where there is one, else `imgbatch run`'s, and says which.
KAFKA_ROWS = ("thumbnail256_jpeg", "renditions4_jpeg")


def table(csv_path, md):
    rows = []
    if not os.path.exists(csv_path):
        print(f"thumbs_bench: no {csv_path}: no thumbs rows were written")
        return 1
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["part"] == PART]

    def best(wl, impl_pred, metric="img_per_s"):
        v = [float(r["value"]) for r in rows if r["workload"] == wl and impl_pred(r["impl"])
             and r["metric"] == metric and r["status"] == "ok" and r["value"]]
        return max(v) if v else None

    def status(wl, impl_pred):
        return [r for r in rows if r["workload"] == wl and impl_pred(r["impl"]) and r["status"] != "ok"]

    out = ["| what | imgbatch | peer on every core | target | verdict |", "|---|---|---|---|---|"]
    bad = [r for r in rows if r["status"] == "MISMATCH"]
    def figure(wl, pred):
        """(best ok img/s, None) or (None, why: the first row not ok, or None)."""
        v = best(wl, pred)
        st = [r for r in status(wl, pred) if r["metric"] != "checked"]
        if v is not None or not st:
            return v, None
        if st[0]["status"] == "suspect":
            return None, "suspect (its Results waited for the reader)"
        return None, st[0]["note"] or st[0]["status"]

    for wl, what, kind, tv in TARGETS:
        cells = []  # (backend, figure, why none, via): via "run", "Kafka" or None (one way only)
        for be in ("cuda", "cpu"):
            if wl == "resize_lanczos_kernel":
                pred = (lambda i: i == "imgbatch-ncu") if be == "cuda" else (lambda i: False)
            elif wl == "resize_bicubic_api":
                pred = lambda i, be=be: i == f"imgbatch-api-{be}"  # noqa: E731
            else:
                pred = lambda i, be=be: i == f"imgbatch-run-{be}"  # noqa: E731
            v, why = figure(wl, pred)
            if wl in KAFKA_ROWS:
                kv, kwhy = figure(wl, lambda i, be=be: i == f"imgbatch-kafka-{be}")
                if kv is not None or kwhy:
                    cells.append((be, kv, kwhy, "Kafka"))
                if v is not None or why:
                    cells.append((be, v, why, "run"))
            elif v is not None or why:
                cells.append((be, v, why, None))
        pil = best(wl, lambda i: i.startswith("pillow-mp"))
        vips = best(wl, lambda i: i.startswith("libvips-mp"))
        peer = []
        if pil:
            peer.append(f"Pillow {pil:,.1f}/s")
        if vips:
            peer.append(f"libvips {vips:,.1f}/s")
        ib = "; ".join(f"{be}{' ' + via if via else ''}: " + (f"{v:,.1f}/s" if v is not None else why)
                       for be, v, why, via in cells) or "-"
        tgt = f">= {tv:,.0f} img/s" + (" (H200)" if wl == "resize_lanczos_kernel" else "") if kind == "abs" else (
            f">= {tv:g}x Pillow" + (" and libvips" if wl == "thumbnail256_jpeg" else "") + " on every core")
        peers = [p for p in (pil, vips if wl == "thumbnail256_jpeg" else None) if p]

        def judge(v):
            if kind == "abs":
                return "met" if v >= tv else f"missed ({v / tv:.2f} of it)"
            if not peers:
                return "no peer"
            worst = min(v / p for p in peers)
            return f"met ({worst:.2f}x)" if worst >= tv else f"missed ({worst:.2f}x)"

        def pick(backend):
            """The figure a verdict takes (cells list a Kafka figure first) and how it was measured."""
            c = next((c for c in cells if c[1] is not None and c[0] == backend), None)
            if c is None:
                return None, ""
            if c[3] == "Kafka":
                return c[1], " [Kafka worker]"
            if c[3] == "run":
                k = next((c2 for c2 in cells if c2[0] == backend and c2[3] == "Kafka"), None)
                return c[1], f" [`imgbatch run`; Kafka worker: {k[2] if k else 'not measured'}]"
            return c[1], ""

        (main, main_via), (cpu, cpu_via) = pick("cuda"), pick("cpu")
        unsup = next((why for be, v, why, _ in cells if be == "cuda" and v is None), None)
        if main is not None:
            verdict = judge(main) + main_via
        elif unsup:
            verdict = "unsupported on cuda" if "unsupported" in unsup else unsup
        else:
            verdict = "no cuda number in this run"
        if main is None and cpu is not None:
            verdict += ("; cpu backend only (the target is the GPU's)" if kind == "abs" else
                        f"; cpu backend: {judge(cpu)}{cpu_via} (the target is the GPU's)")
        out.append(f"| {what} | {ib} | {', '.join(peer) or '-'} | {tgt} | {verdict} |")
    text = "\n".join(out) + "\n"
    text += ("\nThe Kafka worker rows: the verdict takes the Kafka worker's figure (`thumbs_bench.py ROW --via "
             "kafka`: path Jobs on the embedded broker, kafka_bench drive) where one was measured, else "
             "`imgbatch run`'s, and names which.\n")
    if bad:
        text += f"\nMISMATCH: {len(bad)} check(s) failed: " + "; ".join(r["note"] for r in bad) + "\n"
    print(text)
    if md:
        with open(md, "w") as f:
            f.write(text)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("row", choices=["kernel", "api", "thumb", "renditions", "png", "table"])
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--scratch")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--md")
    ap.add_argument("--bin", default="imgbatch")
    ap.add_argument("--jobs-bench", default="jobs_bench")
    ap.add_argument("--vips-bench", default=shutil.which("vips_thumb_bench") or "")
    ap.add_argument("--procs", type=int, default=0, help="Pillow / libvips processes; 0 = every core")
    ap.add_argument("--budget", type=float, default=3.0, help="seconds per Pillow / libvips case")
    ap.add_argument("--n", type=int, default=0, help="jobs per `imgbatch run` file (0: by row)")
    ap.add_argument("--api-images", type=int, default=0)
    ap.add_argument("--kernel-batch", type=int, default=16)
    ap.add_argument("--caps", default="",
                    help="the `imgbatch run` setting timed beside the defaults (cuda; also with "
                         f"--quick); default: {BEST_CAPS}")
    ap.add_argument("--via", default="run", choices=["run", "kafka"],
                    help="thumb, renditions: through `imgbatch run` (default) or the Kafka worker")
    ap.add_argument("--kafka-bench", default=shutil.which("kafka_bench") or "kafka_bench",
                    help="the kafka_bench binary (--via kafka)")
    ap.add_argument("--kafka-timeout", type=float, default=600,
                    help="seconds a --via kafka drive may take (default 600)")
    a = ap.parse_args()
    if a.via == "kafka" and a.row not in ("thumb", "renditions"):
        ap.error("--via kafka: only the thumb and renditions rows")
    if a.via == "kafka":
        a.kafka_bench = shutil.which(a.kafka_bench) or a.kafka_bench
        if not os.access(a.kafka_bench, os.X_OK):
            ap.error(f"--via kafka: no kafka_bench binary at {a.kafka_bench!r} (--kafka-bench PATH)")
    if a.row == "table":
        sys.exit(table(a.csv, a.md))
    if not a.scratch:
        ap.error("--scratch is required")
    a.procs = a.procs or os.cpu_count()
    a.jobs_bench = shutil.which(a.jobs_bench) or a.jobs_bench
    os.makedirs(a.scratch, exist_ok=True)
    ok = {"kernel": row_kernel, "api": row_api, "thumb": row_thumb, "renditions": row_renditions,
          "png": row_png}[a.row](a, a.scratch)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
