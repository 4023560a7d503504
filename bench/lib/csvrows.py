"""The one CSV schema of bench/drivers/run.sh's output folder (gpu_bench --csv writes
the same columns): one number per row."""
import csv
import glob
import os

FIELDS = ["part", "impl", "workload", "mode", "side", "n", "metric", "value", "unit", "setting",
          "status", "note"]


def append(path, rows):
    """Append dict rows (missing fields empty) to path, with the header when new."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="raise")
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})


def row(part, impl, workload, mode, side, n, metric, value, unit, setting="", status="ok", note=""):
    return dict(part=part, impl=impl, workload=workload, mode=mode, side=side, n=n, metric=metric,
                value=f"{value:.6g}" if isinstance(value, float) else value, unit=unit,
                setting=setting, status=status, note=note)


def read_all(folder):
    rows = []
    for p in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        with open(p, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows
