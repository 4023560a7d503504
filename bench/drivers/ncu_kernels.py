"""Kernel-only time of every op family as imgbatch really launches it: one
job through `imgbatch run --backend cuda` under Nsight Compute
(gpu__time_duration.sum per kernel, --clock-control none), summed over the
job's kernels (a Gaussian is a row pass and column passes; a fused chain is
one kernel). One process per workload running --repeat equal jobs, one job
per submission (--max-jobs 1: jobs of one signature in one submission share
a launch): the row is the last job's kernels, the first job's sum is in the
note. The first launch in a process meets device memory the process has
never touched: its first job is several times slower than the third, as
gpu_bench's events say too. Appends rows (ms_kernel, impl imgbatch-ncu) to --csv; "skipped: no ncu"
without it."""
import argparse
import csv
import io
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402
import workloads as W  # noqa: E402

TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0,
         "s": 1e3, "second": 1e3}


def kernel_times(log):
    """[(kernel name, ms)] from ncu --csv output."""
    text = open(log).read()
    start = text.find('"ID"')
    if start < 0:
        return []
    out = []
    for r in csv.DictReader(io.StringIO(text[start:])):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(r["Metric Value"].replace(",", ""))
        out.append((r["Kernel Name"], v * TO_MS.get(r["Metric Unit"], float("nan"))))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="imgbatch")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--grid", default="all:RGBA:4096")
    ap.add_argument("--dir", required=True, help="scratch folder for job files and logs")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--repeat", type=int, default=3, help="equal jobs per process (the last is reported)")
    a = ap.parse_args()
    ncu = shutil.which("ncu") or ("/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu")
                                  else None)
    if not ncu:
        print("  kernels: ncu: skipped: no ncu", flush=True)
        return
    os.makedirs(a.dir, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for wid, mode, side in W.parse_grid(a.grid):
        job = os.path.join(a.dir, f"{wid}.bin")
        log = os.path.join(a.dir, f"{wid}.ncu.csv")
        subprocess.run([a.python, os.path.join(here, "make_jobs.py"), "--workload", wid, "--mode", mode,
                        "--side", str(side), "--n", str(a.repeat), "--distinct", "1", "--sample", "0",
                        "--jobs", job, "--expect", job + ".exp"], check=True)
        cmd = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
               "--print-units", "base", "--log-file", log, a.bin, "run", "--backend", "cuda",
               "--max-jobs", "1", "--in", job, "--out", os.devnull]
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        ks = kernel_times(log) if os.path.exists(log) else []
        if rc != 0 or not ks or len(ks) % a.repeat:
            csvrows.append(a.csv, [csvrows.row("kernels", "imgbatch-ncu", wid, mode, side, 0, "ms_kernel",
                                               "", "ms", status="error",
                                               note=f"ncu rc {rc}, {len(ks)} kernels; see {log}")])
            print(f"  kernels: {wid} {mode} {side}^2: error (ncu rc {rc}, {len(ks)} kernels)", flush=True)
            continue
        per = len(ks) // a.repeat
        first = sum(t for _, t in ks[:per])
        ms = sum(t for _, t in ks[-per:])
        names = ", ".join(sorted({k.split("(")[0] for k, _ in ks}))
        csvrows.append(a.csv, [csvrows.row("kernels", "imgbatch-ncu", wid, mode, side, per, "ms_kernel", ms,
                                           "ms", note=f"job {a.repeat} of {a.repeat}; the first job's: "
                                           f"{first:.4f} ms; {per} kernels: {names}")])
        print(f"  kernels: {wid} {mode} {side}^2: {ms:.4f} ms in {per} kernels (first job {first:.4f})",
              flush=True)
        os.unlink(job)


if __name__ == "__main__":
    main()
