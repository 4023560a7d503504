"""bench/drivers/stage_cost.py, on the PNG row at one job a stage: it runs the
real binary for every stage, writes its table, and its ceiling is Pillow's
total over imgbatch's CPU-side total, as the table's rows add up."""
import os
import re
import subprocess
import sys

DRIVER = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "drivers", "stage_cost.py")


def test_the_png_row_adds_up(tmp_path):
    md = tmp_path / "stage.md"
    subprocess.run([sys.executable, DRIVER, "--bin", os.environ["IB_BIN"], "--scratch", str(tmp_path),
                    "--n", "1", "--reps", "1", "--cores", "16", "--rows", "png", "--md", str(md)],
                   check=True, capture_output=True, timeout=120)
    text = md.read_text()
    rows = dict(re.findall(r"^\| ([a-z][^|]*?) \| ([\d.]+) \|", text, re.M))
    assert set(rows) == {"decode PNG 2048x2048", "resize -> 512x512 LANCZOS", "encode 512x512 PNG level 6"}, text
    assert all(float(v) > 0 for v in rows.values()), text
    pillow, ours = map(float, re.search(r"\*\*total\*\* \| \*\*([\d.]+)\*\* \| \*\*([\d.]+)\*\*", text).groups())
    assert abs(pillow - sum(map(float, rows.values()))) < 0.2, text
    assert "on the GPU" in text and ours > 0, text
    ceiling = float(re.search(r"same cores: ([\d.]+)x", text).group(1))
    assert abs(ceiling - pillow / ours) < 0.01, text
    assert re.search(r"rate ceiling on 16 cores: [\d.]+ img/s", text), text


def test_a_binary_that_fails_stops_the_driver(tmp_path):
    bad = tmp_path / "imgbatch"
    bad.write_text("#!/bin/sh\nexit 3\n")
    bad.chmod(0o755)
    r = subprocess.run([sys.executable, DRIVER, "--bin", str(bad), "--scratch", str(tmp_path), "--n", "1",
                        "--reps", "1", "--rows", "png"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and re.search(r"^stage_cost: \S+imgbatch run .* exited 3$", r.stderr, re.M), r.stderr
