"""bench/reports/summary.py's Kafka raw row: the verdict is the median of the per-round worker / relay
ratios that `kafka_report.py csv` pairs through kafka_bench.sh's `round R` lines."""
import os
import subprocess
import sys

from summary_out import REPORTS, summary_line


def line(name, mbs):
    return (f"{name:18s} 8000 of 8000 results (window 170 over 4 partitions, 49194-byte jobs): "
            f"{mbs * 20:.1f} jobs/s, in {mbs:.1f} MB/s, out {mbs:.1f} MB/s, latency p50 20.0 ms p99 30.0 ms")


def summary_row(tmp_path, rounds):
    log = ["kafka_bench: backend cuda, 8000 raw 128x128 RGB jobs"]
    for i, (relay, worker) in enumerate(rounds, 1):
        log.append(f"round {i}")
        pair = [line("relay-raw", relay), line("worker-raw", worker)]
        log += pair if i % 2 else pair[::-1]
        log.append(line("worker-raw-mj256", worker * 2))  # not the default caps: not in the row
    (tmp_path / "kafka.txt").write_text("\n".join(log) + "\n")
    subprocess.run([sys.executable, os.path.join(REPORTS, "kafka_report.py"), "csv", "--log", str(tmp_path / "kafka.txt"),
                    "--backend", "cuda", "--csv", str(tmp_path / "kafka.csv")], check=True, capture_output=True)
    return summary_line(tmp_path, lambda r: r.startswith("Kafka, raw"))


def test_median_of_paired_rounds(tmp_path):
    # Best vs best would be 90/100 = 90 % (met); the rounds' own ratios are 50, 80, 90 and 70 %.
    row = summary_row(tmp_path, [(100, 50), (50, 40), (100, 90), (70, 49)])
    assert "75.0 %, median of 4 paired rounds (50.0 %, 80.0 %, 90.0 %, 70.0 %)" in row, row
    assert "best vs best 90.0 %" in row, row
    assert "missed" in row, row


def test_one_slow_round_does_not_decide(tmp_path):
    row = summary_row(tmp_path, [(100, 95), (100, 40), (100, 92)])
    assert "92.0 %, median of 3 paired rounds" in row, row
    assert "missed" not in row, row
