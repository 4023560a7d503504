"""Parity of the pointwise ops with Pillow 12.3 (interim: drives the scratch
job builder until the Python client's harness lands)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import scratch_pointwise  # noqa: E402


def test_pointwise_ops_match_pillow_bytes_and_refusals(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["scratch_pointwise", "60"])
    assert scratch_pointwise.main() == 0
