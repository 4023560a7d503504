"""bench/drivers/thumbs_bench.py at --quick on the cpu backend: every row runs
the real binaries on its generated inputs, checks its sample against Pillow
(a MISMATCH exits 1) and writes its CSV rows, and the table reads them. The
GPU machine runs the same driver for its numbers (bench/drivers/run.sh
thumbs); this keeps the script from rotting where there is no GPU."""
import csv
import os
import subprocess
import sys

DRIVER = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "drivers", "thumbs_bench.py")
ROWS = {"kernel": "resize_lanczos_kernel", "api": "resize_bicubic_api", "thumb": "thumbnail256_jpeg",
        "renditions": "renditions4_jpeg", "png": "png2048_lanczos512_png"}


def test_every_row_runs_checks_against_pillow_and_tabulates(tmp_path):
    bin_ = os.environ["IB_BIN"]
    tools = os.path.join(os.path.dirname(bin_), "tests")
    out = tmp_path / "thumbs.csv"
    common = ["--backend", "cpu", "--quick", "--bin", bin_, "--scratch", str(tmp_path / "s"),
              "--csv", str(out), "--procs", "2", "--budget", "0.5",
              "--jobs-bench", os.path.join(tools, "jobs_bench"),
              "--vips-bench", os.path.join(tools, "vips_thumb_bench")]
    for row in ROWS:
        r = subprocess.run([sys.executable, DRIVER, row, *common], capture_output=True, text=True,
                           timeout=240)
        assert r.returncode == 0, f"{row}: {r.stdout[-2000:]}{r.stderr[-2000:]}"
        assert "MISMATCH" not in r.stdout, r.stdout
    with open(out) as f:
        rows = list(csv.DictReader(f))
    checked = {x["workload"] for x in rows if x["metric"] == "checked" and x["status"] == "ok"}
    assert checked >= set(ROWS.values()), checked
    rates = {x["workload"] for x in rows if x["impl"] == "imgbatch-run-cpu" and x["metric"] == "img_per_s"}
    assert {"thumbnail256_jpeg", "renditions4_jpeg", "png2048_lanczos512_png"} <= rates, rates
    md = tmp_path / "thumbs.md"
    subprocess.run([sys.executable, DRIVER, "table", "--csv", str(out), "--md", str(md)], check=True,
                   capture_output=True, timeout=60)
    table = md.read_text()
    for what in ("resize kernel only", "through the API", "thumbnail(256)", "2048/1024/512/256", "PNG 2048^2"):
        assert what in table, table


def test_thumb_and_renditions_through_the_kafka_worker(tmp_path):
    """--via kafka: path Jobs through `imgbatch broker` + `imgbatch worker` and
    kafka_bench drive --jobs; a few jobs, so that it stays cheap (about 20 s)."""
    bin_ = os.environ["IB_BIN"]
    out = tmp_path / "thumbs.csv"
    common = ["--via", "kafka", "--backend", "cpu", "--quick", "--n", "6", "--bin", bin_,
              "--kafka-bench", os.path.join(os.path.dirname(bin_), "tests", "kafka_bench"),
              "--scratch", str(tmp_path / "s"), "--csv", str(out)]
    for row in ("thumb", "renditions"):
        r = subprocess.run([sys.executable, DRIVER, row, *common], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{row}: {r.stdout[-2000:]}{r.stderr[-2000:]}"
        assert "MISMATCH" not in r.stdout, r.stdout
    with open(out) as f:
        rows = [x for x in csv.DictReader(f) if x["impl"] == "imgbatch-kafka-cpu"]
    # "suspect": the driver's reader joined late on a loaded machine (a burst, not kept).
    rates = {x["workload"]: float(x["value"]) for x in rows
             if x["metric"] == "img_per_s" and x["status"] in ("ok", "suspect")}
    assert set(rates) == {"thumbnail256_jpeg", "renditions4_jpeg"} and min(rates.values()) > 0, rows
    checked = {x["workload"] for x in rows if x["metric"] == "checked" and x["status"] == "ok"}
    assert checked == {"thumbnail256_jpeg", "renditions4_jpeg"}, rows
    assert not os.path.exists(tmp_path / "s" / "kafka-thumbnail256_jpeg"), "the case's files were not removed"
    md = tmp_path / "thumbs.md"
    subprocess.run([sys.executable, DRIVER, "table", "--csv", str(out), "--md", str(md)], check=True,
                   capture_output=True, timeout=60)
    table = md.read_text()
    assert "cpu Kafka: " in table and "Kafka worker" in table, table
