"""Geometric ops vs Pillow 12.3 (interim: direct Job protobufs through
scratch_geom until the client's parity harness lands on main)."""
import os
import random

import pytest

import scratch_geom as sg


@pytest.mark.parametrize("mode", sg.MODES)
@pytest.mark.parametrize("op", sorted(sg.CASES))
def test_geometry_matches_pillow(op, mode):
    rng = random.Random(f"{os.environ.get('IB_PARITY_SEED', '1')}:{op}:{mode}")
    cases = [sg.CASES[op](rng, mode) for _ in range(40)]
    results = sg.run_jobs(os.environ["IB_BIN"], [c[0] for c in cases])
    bad = [f"{i}: {m}" for i, (c, r) in enumerate(zip(cases, results)) if (m := sg.check(r, c[1]))]
    assert not bad, "\n".join(bad[:20])
