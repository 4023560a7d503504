"""Section 3 of several gpu_bench --csv files side by side, against the
measured both-directions PCIe floor: one row per (family, mode, side), one
column per file (its name without .csv, or LABEL=FILE), each cell
"ms/img x-floor". The worst x of each column is printed last.

    python3 bench/reports/floor_table.py [LABEL=]FILE.csv ...
"""
import csv
import os
import sys


def load(path):
    cells = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["part"] != "api" or r["impl"] != "imgbatch-api-cuda":
                continue
            key = (r["workload"], r["mode"], int(r["side"]))
            cells.setdefault(key, {})[r["metric"]] = float(r["value"])
    return cells


def main(args):
    if not args:
        print(__doc__)
        return 2
    cols = []
    for a in args:
        label, _, path = a.rpartition("=")
        if not os.path.exists(path):
            print(f"floor_table: {path}: missing")
            continue
        cols.append((label or os.path.basename(path)[:-4], load(path)))
    keys = sorted({k for _, c in cols for k in c}, key=lambda k: (k[2], k[0], k[1]))
    w = max([18] + [len(label) for label, _ in cols])
    print(f"{'family':10} {'mode':4} {'side':>5} " + " ".join(f"{label:>{w}}" for label, _ in cols))
    for k in keys:
        row = []
        for _, c in cols:
            v = c.get(k)
            row.append(f"{v['ms_per_img']:.3f} ms {v['x_floor_bidir']:.2f}x" if v else "-")
        print(f"{k[0]:10} {k[1]:4} {k[2]:5} " + " ".join(f"{x:>{w}}" for x in row))
    worst = []
    for _, c in cols:
        xs = [(v["x_floor_bidir"], k) for k, v in c.items() if "x_floor_bidir" in v]
        if xs:
            x, k = max(xs)
            worst.append(f"{x:.2f}x {k[0]} {k[1]} {k[2]}")
        else:
            worst.append("-")
    print(f"{'worst':21} " + " ".join(f"{x:>{w}}" for x in worst))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
