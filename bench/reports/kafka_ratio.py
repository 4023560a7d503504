"""bench/drivers/kafka_bench.sh's result lines, summed up per case: the median
jobs/s over its runs (--repeat) and that as a percentage of the median
relay in the same log.
Usage: python3 bench/reports/kafka_ratio.py LOG..."""
import re
import statistics
import sys

LINE = re.compile(r"^(\S+)\s+\d+ of \d+ results .*?: ([\d.]+) jobs/s, in ([\d.]+) MB/s")


def main():
    for path in sys.argv[1:]:
        runs = {}
        for line in open(path):
            m = LINE.match(line)
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


if __name__ == "__main__":
    main()
