"""The README's main job (scripts/demo.sh) runs scripts/demo_jobs.py: its
sample graphs must come back equal to Pillow and be written as PNG files."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_demo_jobs_match_pillow_and_write_pngs(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "demo_jobs.py"), "--bin",
                        os.environ["IB_BIN"], "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    pngs = sorted(os.listdir(tmp_path))
    assert len(pngs) == 6 and all(n.endswith(".png") for n in pngs)
    assert p.stdout.count("equal to Pillow 12.3: True") == 6
