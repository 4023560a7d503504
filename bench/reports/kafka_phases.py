"""Where the Kafka worker's time went, per bench/drivers/kafka_bench.sh case: its
status lines (one a second, each averaging the jobs of its interval) summed
up over the run, weighted by the jobs each interval consumed.
Columns: fetch (the Job's CreateTime -> fetched), wait (fetched -> the
executor), exec, pool (result -> Result produced), deliver (produced ->
acknowledged), settle (acknowledged -> a commit covering it answered), in
ms; full = ms the executor asked for input while max_jobs refused it;
live = most jobs live at once; woken = idle waits cut short / all;
standby = the standby thread's woken services (Results out, deliveries
served while the driving thread was in the executor).
Usage: python3 bench/reports/kafka_phases.py OUT_DIR_OR_LOGS..."""
import glob
import json
import os
import sys

PHASES = ("fetch", "wait", "exec", "pool", "deliver", "settle")


def summarize(path):
    sums = dict.fromkeys(PHASES, 0.0)
    weight = 0
    last = 0
    full = live = waits = woken = standby = 0
    for line in open(path, errors="replace"):
        if '"event":"status"' not in line:
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        n = d.get("consumed", 0) - last
        last = d.get("consumed", 0)
        full += d.get("window_full_ms", 0)
        live = max(live, d.get("live_max", 0))
        waits += d.get("idle_waits", 0)
        woken += d.get("idle_woken", 0)
        standby += d.get("standby_sends", 0)
        if n <= 0:
            continue
        weight += n
        for p in PHASES:
            sums[p] += n * d.get("phase_avg_us", {}).get(p, 0)
    if not weight:
        return None
    return {p: sums[p] / weight / 1e3 for p in PHASES} | {
        "jobs": last, "full": full, "live": live, "woken": f"{woken}/{waits}",
        "standby": standby}


def main():
    paths = []
    for a in sys.argv[1:]:
        paths += sorted(glob.glob(os.path.join(a, "*.worker.log"))) if os.path.isdir(a) else [a]
    print(f"{'case':28s} {'jobs':>6s} " + " ".join(f"{p:>7s}" for p in PHASES)
          + f" {'full':>6s} {'live':>5s} {'woken':>11s} {'standby':>7s}")
    for path in paths:
        s = summarize(path)
        if s:
            name = os.path.basename(path).replace(".worker.log", "")
            print(f"{name:28s} {s['jobs']:6d} " + " ".join(f"{s[p]:7.2f}" for p in PHASES)
                  + f" {s['full']:6d} {s['live']:5d} {s['woken']:>11s} {s['standby']:7d}")


if __name__ == "__main__":
    main()
