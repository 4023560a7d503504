"""bench/drivers/kafka_bench.sh's output, three ways:

    kafka_report.py csv --log LOG --backend B --csv OUT   (run.sh's kafka part)
    kafka_report.py ratio LOG...
    kafka_report.py phases OUT_DIR_OR_LOGS...

csv: the result lines (`NAME N of N results (...): X jobs/s, in A MB/s, out
B MB/s, latency p50 P ms p99 Q ms`) as CSV rows; the raw cases' notes name
their round (`round R` lines), which summary.py pairs.

ratio: the result lines summed up per case: the median jobs/s over its runs
(--repeat) and that as a percentage of the median relay in the same log.

phases: where the Kafka worker's time went, per case: its status lines (one
a second, each averaging the jobs of its interval) summed up over the run,
weighted by the jobs each interval consumed. Columns: fetch (the Job's
CreateTime -> fetched), wait (fetched -> the executor), exec, pool (result
-> Result produced), deliver (produced -> acknowledged), settle
(acknowledged -> a commit covering it answered), in ms; full = ms the
executor asked for input while max_jobs refused it; live = most jobs live at
once; woken = idle waits cut short / all; standby = the standby thread's
woken services (Results out, deliveries served while the driving thread was
in the executor)."""
import argparse
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402

LINE = re.compile(r"^(\S+)\s+(\d+) of (\d+) results \(window \d+(?: over \d+ partitions)?, (\d+)-byte jobs\): ([\d.]+) jobs/s, "
                  r"in ([\d.]+) MB/s, out ([\d.]+) MB/s, latency p50 ([\d.]+) ms p99 ([\d.]+) ms")
# Any result line, whatever its parenthesis holds (ratio also reads older logs).
RATE = re.compile(r"^(\S+)\s+\d+ of \d+ results .*?: ([\d.]+) jobs/s, in ([\d.]+) MB/s")
# kafka_bench.sh's round markers (--repeat): the raw cases after one belong to that round.
ROUND = re.compile(r"^round (\d+)$")
PHASES = ("fetch", "wait", "exec", "pool", "deliver", "settle")


def to_csv(argv):
    ap = argparse.ArgumentParser(prog="kafka_report.py csv")
    ap.add_argument("--log", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--csv", required=True)
    a = ap.parse_args(argv)
    rows = []
    rnd = 0
    for line in open(a.log):
        r = ROUND.match(line)
        if r:
            rnd = int(r.group(1))
            continue
        m = LINE.match(line)
        if not m:
            continue
        name, got, n, size = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        jps, mb_in, mb_out, p50, p99 = map(float, m.groups()[4:])
        impl = "kafka-relay" if name.startswith("relay") else f"imgbatch-worker-{a.backend}"
        wl = name.split("-", 1)[1]  # raw, png-t16, ...
        status = "ok" if got == n else "error"
        note = f"{size}-byte jobs; {got} of {n} results"
        if wl.startswith("raw") and rnd:
            note += f"; round {rnd}"
        for metric, v, unit in (("jobs_per_s", jps, "jobs/s"), ("mb_per_s", mb_in, "MB/s in"),
                                ("mb_per_s_out", mb_out, "MB/s out"), ("ms_p50", p50, "ms"),
                                ("ms_p99", p99, "ms")):
            rows.append(csvrows.row("kafka", impl, wl, "RGB", 0, got, metric, v, unit, status=status,
                                    note=note))
    csvrows.append(a.csv, rows)
    print(f"  kafka: {len(rows) // 5} cases parsed from {a.log}", flush=True)
    return 0


def ratio(paths):
    for path in paths:
        runs = {}
        for line in open(path):
            m = RATE.match(line)
            if m:
                runs.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3))))
        if not runs:
            continue
        relay = statistics.median(j for j, _ in runs.get("relay-raw", [(float("nan"), 0)]))
        print(f"{path}:")
        for name, v in sorted(runs.items()):
            jps = statistics.median(j for j, _ in v)
            mbs = statistics.median(m for _, m in v)
            print(f"  {name:22s} {jps:8.1f} jobs/s {mbs:6.1f} MB/s  {100 * jps / relay:5.1f} % of relay"
                  f"  (runs: {', '.join(f'{j:.0f}' for j, _ in v)})")
    return 0


def summarize_phases(path):
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


def phases(args):
    paths = []
    for a in args:
        paths += sorted(glob.glob(os.path.join(a, "*.worker.log"))) if os.path.isdir(a) else [a]
    print(f"{'case':28s} {'jobs':>6s} " + " ".join(f"{p:>7s}" for p in PHASES)
          + f" {'full':>6s} {'live':>5s} {'woken':>11s} {'standby':>7s}")
    for path in paths:
        s = summarize_phases(path)
        if s:
            name = os.path.basename(path).replace(".worker.log", "")
            print(f"{name:28s} {s['jobs']:6d} " + " ".join(f"{s[p]:7.2f}" for p in PHASES)
                  + f" {s['full']:6d} {s['live']:5d} {s['woken']:>11s} {s['standby']:7d}")
    return 0


def main(argv):
    commands = {"csv": to_csv, "ratio": ratio, "phases": phases}
    if not argv or argv[0] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
