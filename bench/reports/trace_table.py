#!/usr/bin/env python3
"""One markdown table over bench/reports/trace_report.py's --json reports (run.sh's
trace part): a row per traced case, named by its file (CASE.json).

    trace_table.py [--md OUT] trace/a.json trace/b.json ...
"""
import argparse
import json
import os
import sys


def row(path):
    with open(path) as f:
        o = json.load(f)
    case = os.path.basename(path).removesuffix(".json")
    b, g, x = o["busy_pct"], o["h2d_gaps"], o.get("x_floor", {})
    drive = o["threads"].get(str(o["driving_thread"]), {"driver_us": 0})
    gc, ph = o["gap_causes"], o["range_phases_us"]
    xs = f"{x['range']:.2f}x / {x['window']:.2f}x" if x else "-"
    return (f"| {case} | {xs} | {b['h2d']:.0f} | {b['d2h']:.0f} | {o['both_copy_directions_pct']:.0f} | "
            f"{b['kernels']:.0f} | {g['count']} ({g['over_5us']}) | {g['p90_us']:.1f} / {g['max_us']:.1f} | "
            f"{gc['host_late']['us']:.0f} / {gc['device']['us']:.0f} | "
            f"{100 * drive['driver_us'] / o['wall_us']:.0f} | {ph['before_first_h2d']:.0f} / "
            f"{ph['after_last_h2d']:.0f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--md")
    ap.add_argument("reports", nargs="+")
    a = ap.parse_args(argv)
    lines = ["| case | per image x floor: range / steady window | H2D busy % | D2H busy % | "
             "both ways % | kernels % | H2D gaps (>= 5 us) | gap p90 / max us | gap us: host late / "
             "device | driving thread in driver calls % | fill / drain us |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    bad = 0
    for p in a.reports:
        try:
            lines.append(row(p))
        except (OSError, KeyError, ValueError) as e:
            lines.append(f"| {os.path.basename(p)} | no report ({e}) |")
            bad += 1
    print("\n".join(lines))
    if a.md:
        with open(a.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
