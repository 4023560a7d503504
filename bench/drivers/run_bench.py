"""`imgbatch run --in F --out G` through files (tmpfs) against `cat F > G`
of the same bytes, the I/O floor. Times whole processes: the jobs file
(wall, min of --reps) and a file of its first --warm jobs (process start,
CUDA start-up, kernel compiles from a warm cache, and with --warm > 1 the
pipeline filling up: the pinned blocks of a pipeline's depth are fresh
allocations the first time round); steady throughput = the difference over
the n - warm jobs after them. Appends rows to --csv."""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402


def wall(cmd, reps, **kw):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, **kw)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best


def head(src, dst, k):
    """The first k delimited frames of src copied to dst."""
    with open(src, "rb") as f, open(dst, "wb") as g:
        for _ in range(k):
            n = shift = 0
            hdr = b""
            while True:
                b = f.read(1)
                hdr += b
                n |= (b[0] & 0x7F) << shift
                shift += 7
                if not b[0] & 0x80:
                    break
            g.write(hdr + f.read(n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="imgbatch")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--results", required=True, help="where the Results go (kept for the check)")
    ap.add_argument("--n", type=int, required=True, help="jobs in the file")
    ap.add_argument("--limit", type=int, default=0, help="time only the first LIMIT jobs")
    ap.add_argument("--caps", default="", help="extra `imgbatch run` flags, e.g. --max-in-flight 3")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--warm", type=int, default=1,
                    help="jobs timed as start-up and warm-up; steady = the rest (default 1)")
    ap.add_argument("--row", required=True, help="part,workload,mode,side")
    ap.add_argument("--setting", default="default caps")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--no-cat", action="store_true", help="skip the cat floor (measured already)")
    a = ap.parse_args()
    part, wl, mode, side = a.row.split(",")
    impl = f"imgbatch-run-{a.backend}"
    run = [a.bin, "run", "--backend", a.backend, *a.caps.split()]
    jobs = a.jobs
    if a.limit and a.limit < a.n:
        jobs = a.results + ".head"
        head(a.jobs, jobs, a.limit)
        a.n = a.limit
    size = os.path.getsize(jobs)
    warm = max(1, min(a.warm, a.n - 1)) if a.n > 1 else 1
    one = a.results + ".one.in"
    head(jobs, one, 1)
    t_1 = wall(run + ["--in", one, "--out", a.results + ".one"], a.reps)
    t_w = t_1
    if warm > 1:
        head(jobs, one, warm)
        t_w = wall(run + ["--in", one, "--out", a.results + ".one"], a.reps)
    os.unlink(one)
    os.unlink(a.results + ".one")
    t_n = wall(run + ["--in", jobs, "--out", a.results], a.reps)
    out_size = os.path.getsize(a.results)
    steady = (t_n - t_w) / (a.n - warm) if a.n > warm and t_n > t_w else t_n / a.n
    rows = [
        csvrows.row(part, impl, wl, mode, side, a.n, "s_wall", t_n, "s", a.setting),
        csvrows.row(part, impl, wl, mode, side, 1, "s_one_job", t_1, "s", a.setting,
                    note="process start + device start-up + one job"),
        csvrows.row(part, impl, wl, mode, side, a.n, "ms_per_img", steady * 1e3, "ms", a.setting,
                    note=f"steady: (wall - wall of the first {warm}) / (n - {warm})"),
        csvrows.row(part, impl, wl, mode, side, a.n, "img_per_s", 1 / steady, "img/s", a.setting),
        csvrows.row(part, impl, wl, mode, side, a.n, "mb_per_s", size / a.n / steady / 1e6, "MB/s",
                    a.setting, note=f"jobs file bytes; results {out_size} bytes"),
    ]
    if warm > 1:
        rows.append(csvrows.row(part, impl, wl, mode, side, warm, "s_warm", t_w, "s", a.setting,
                                note=f"the first {warm} jobs: start-up and the pipeline filling"))
    rows.append(csvrows.row(part, impl, wl, mode, side, a.n, "mb_per_s_file", size / t_n / 1e6,
                            "MB/s", a.setting, note="whole file, process start-up included"))
    line = (f"{impl} [{a.setting}] {steady * 1e3:.3f} ms/img steady over {a.n - warm}, "
            f"{size / a.n / steady / 1e6:.0f} MB/s (whole file {size / t_n / 1e6:.0f} MB/s, "
            f"{t_n:.2f} s)")
    if not a.no_cat:
        cat_out = a.results + ".cat"
        t_cat = None
        for _ in range(3):
            with open(cat_out, "wb") as g:
                t = wall(["cat", jobs], 1, stdout=g)
            t_cat = t if t_cat is None else min(t_cat, t)
        os.unlink(cat_out)
        rows += [
            csvrows.row(part, "cat-floor", wl, mode, side, a.n, "mb_per_s", size / t_cat / 1e6, "MB/s",
                        note="cat F > G on the same filesystem"),
            csvrows.row(part, "cat-floor", wl, mode, side, a.n, "ms_per_img", t_cat / a.n * 1e3, "ms"),
        ]
        line += f"; cat {size / t_cat / 1e6:.0f} MB/s ({100 * t_cat / a.n / steady:.0f} % reached)"
    if jobs != a.jobs:
        os.unlink(jobs)
    csvrows.append(a.csv, rows)
    print(f"  {part}: {wl} {mode} {side}^2 x{a.n}: {line}", flush=True)


if __name__ == "__main__":
    main()
