"""Runs bench/reports/summary.py over a folder of CSV rows and returns the one line of its targets
table that `pick` selects (the tests of the summary's rules share it)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BENCH = os.path.join(ROOT, "bench")
REPORTS = os.path.join(BENCH, "reports")
LIB = os.path.join(BENCH, "lib")


def summary_line(folder, pick):
    out = subprocess.run([sys.executable, os.path.join(REPORTS, "summary.py"), str(folder)],
                         capture_output=True, text=True).stdout
    hit = [r for r in out.splitlines() if pick(r)]
    assert len(hit) == 1, out
    return hit[0]
