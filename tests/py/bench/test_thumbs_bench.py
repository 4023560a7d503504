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
