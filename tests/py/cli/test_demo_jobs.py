"""The README's main job: scripts/demo_jobs.py writes the sample jobs and
Pillow's bytes for each; `imgbatch demo` runs them through the embedded
broker and a real worker and must find every output equal to Pillow, the
poison answered with the expected errors, and the worker drained."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_demo_matches_pillow_through_kafka_and_writes_pngs(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "demo_jobs.py"), "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([os.environ["IB_BIN"], "demo", "--backend", "cpu", "--jobs",
                        str(tmp_path / "jobs.bin"), "--expect", str(tmp_path / "expected.bin"),
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    log = (tmp_path / "worker.log").read_text() if (tmp_path / "worker.log").exists() else ""
    assert p.returncode == 0, p.stdout + p.stderr + log[-3000:]
    assert p.stdout.count(" yes\n") == 17, p.stdout
    assert p.stdout.count("expected error") == 2, p.stdout
    assert "all as expected; worker drained and exited 0" in p.stdout
    pngs = [n for n in os.listdir(tmp_path) if n.endswith(".png")]
    assert len(pngs) == 18, pngs
