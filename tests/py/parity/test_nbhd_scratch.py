"""Runs the scratch neighbourhood parity driver (rank filters, blurs, kernels
vs Pillow 12.3) under pytest until test_neighbourhood.py replaces both."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import scratch_nbhd  # noqa: E402


def test_neighbourhood_ops_match_pillow_bytes_on_random_images(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["scratch_nbhd", "--n", "40", "--seed", "7"])
    assert scratch_nbhd.main() == 0
