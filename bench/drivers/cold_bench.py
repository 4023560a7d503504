"""Time to the first result of a fresh `imgbatch run` process: once with an
empty kernel cache directory (IB_CACHE_DIR: every kernel compiled by NVRTC)
and once more with the cache it left (warm). The jobs file holds a few
different graphs; the Results are read from a pipe as they come. Appends
rows (s_first_result, s_all_results) to --csv."""
import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402


def read_frame(f):
    n = shift = 0
    while True:
        b = f.read(1)
        if not b:
            return None
        n |= (b[0] & 0x7F) << shift
        shift += 7
        if not b[0] & 0x80:
            break
    body = b""
    while len(body) < n:
        chunk = f.read(n - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def one_run(binary, backend, jobs, cache):
    env = dict(os.environ, IB_CACHE_DIR=cache)
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "run", "--backend", backend, "--in", jobs], stdout=subprocess.PIPE,
                         env=env, bufsize=0)
    first, got = None, 0
    while read_frame(p.stdout) is not None:
        got += 1
        first = first or time.perf_counter() - t0
    rc = p.wait()
    return first, time.perf_counter() - t0, got, rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="imgbatch")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--cache", required=True, help="a kernel cache folder this script empties")
    ap.add_argument("--workload", default="mix")
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.cache, ignore_errors=True)
    rows = []
    impl = f"imgbatch-run-{a.backend}"
    for state in ("cold", "warm"):
        first, total, got, rc = one_run(a.bin, a.backend, a.jobs, a.cache)
        status = "ok" if rc == 0 and got == a.n else "error"
        note = f"{state} kernel cache; {got} of {a.n} results, rc {rc}"
        rows += [csvrows.row("cold", impl, a.workload, "-", 0, a.n, f"s_first_result_{state}",
                             first if first is not None else "", "s", status=status, note=note),
                 csvrows.row("cold", impl, a.workload, "-", 0, a.n, f"s_all_results_{state}", total, "s",
                             status=status, note=note)]
        print(f"  cold: {impl} {state} cache: first result {first or float('nan'):.3f} s, "
              f"all {got} in {total:.3f} s (rc {rc})", flush=True)
    csvrows.append(a.csv, rows)


if __name__ == "__main__":
    main()
