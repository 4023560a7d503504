"""bench/drivers/kafka_bench.sh's result lines (`NAME N of N results (...): X jobs/s,
in A MB/s, out B MB/s, latency p50 P ms p99 Q ms`) as CSV rows; the raw cases'
notes name their round (`round R` lines), which summary.py pairs."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402

LINE = re.compile(r"^(\S+)\s+(\d+) of (\d+) results \(window \d+(?: over \d+ partitions)?, (\d+)-byte jobs\): ([\d.]+) jobs/s, "
                  r"in ([\d.]+) MB/s, out ([\d.]+) MB/s, latency p50 ([\d.]+) ms p99 ([\d.]+) ms")
# kafka_bench.sh's round markers (--repeat): the raw cases after one belong to that round.
ROUND = re.compile(r"^round (\d+)$")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
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


if __name__ == "__main__":
    main()
