"""Checks a file of Results from `imgbatch run` against the Pillow bytes that
bench/drivers/make_jobs.py kept: every job answered, no error, and every result whose
key is a kept sample equal to Pillow's pixels (PNG outputs decoded). Prints
one line; exits 1 (MISMATCH) on any difference, so a fast wrong answer fails
the benchmark. With --csv, appends a row (metric checked) with the status."""
import argparse
import os
import sys

import imgbatch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--expect", required=True)
    ap.add_argument("--n", type=int, required=True, help="jobs written")
    ap.add_argument("--csv")
    ap.add_argument("--row", default="run,imgbatch,?,?,0", help="part,impl,workload,mode,side")
    ap.add_argument("--setting", default="")
    a = ap.parse_args()
    with open(a.expect, "rb") as f:
        expect = {r.input_key: r.image for r in imgbatch.read_results(f)}
    got = checked = 0
    problem = None
    with open(a.results, "rb") as f:
        for r in imgbatch.read_results(f):
            got += 1
            if r.error is not None:
                problem = problem or f"job {r.input_key}: error {r.error}"
                continue
            want = expect.get(r.input_key)
            if want is None:
                continue
            im = r.image.to_pil()
            if (im.mode, im.size) != (want.mode, want.size) or im.tobytes() != want.data:
                problem = problem or (f"key {r.input_key}: {im.mode} {im.size} differs from "
                                      f"Pillow's {want.mode} {want.size}")
            checked += 1
    if got != a.n:
        problem = problem or f"{got} results for {a.n} jobs"
    if not expect:
        note = "no Pillow equivalent: not checked"
    else:
        note = f"{checked} of {got} results checked against Pillow" if not problem else problem
    status = "MISMATCH" if problem else "ok"
    print(f"{'MISMATCH' if problem else 'ok'}: {note}")
    if a.csv:
        part, impl, wl, mode, side = a.row.split(",")
        csvrows.append(a.csv, [csvrows.row(part, impl, wl, mode, side, got, "checked", checked, "results",
                                           a.setting, status, note)])
    sys.exit(1 if problem else 0)


if __name__ == "__main__":
    main()
