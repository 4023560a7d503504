"""Composition family against Pillow 12.3: the ImageChops two-image functions
and Image.blend (bytes, mode and size equal; Pillow's refusals answered with
the matching error kind), and the Oklab tone op against its float64
specification (tone_reference.py; within 1 LSB, alpha equal).

Mode classes: each admitted mode paired with itself, and "mixed4": two
different 4-band modes (RGBA/CMYK/RGBX), which Pillow accepts (the output
takes image1's mode; blend at alpha 1 returns image2, in image2's mode).
"""
import math

import numpy as np
import parity
import pytest
from parity import Case
from tone_reference import PARAMS as TONE_PARAMS
from tone_reference import tone_reference

import imgbatch
from imgbatch import Image, ImageChops
from imgbatch._methods import lazy

imgbatch.register_tone_reference(tone_reference)

FUNCS = ("multiply", "screen", "overlay", "hard_light", "soft_light", "difference", "darker",
         "lighter", "add", "subtract", "add_modulo", "subtract_modulo")
SCALED = ("add", "subtract")
MODE_CLASSES = ("L", "LA", "RGB", "RGBA", "CMYK", "RGBX", "mixed4")
FOUR_BAND = ("RGBA", "CMYK", "RGBX")
N = parity.scale(200)


def _modes(r, cls):
    return tuple(r.sample(FOUR_BAND, 2)) if cls == "mixed4" else (cls, cls)


def _scale_offset(r):
    """Random scale/offset inside the contexts the row admits: |a +- b| / |scale|
    + |offset| stays below 2^31 - 256 (Pillow's int conversion is defined)."""
    scale = r.choice([1.0, 2.0, 0.5, -1.0, -3.0, r.uniform(-5, 5), r.uniform(0.01, 1),
                      r.uniform(1, 300)])
    scale = float(np.float32(scale)) or 1.0  # Pillow parses scale as a C float
    offset = r.choice([0, 128, r.randint(-300, 300), r.randint(-10**6, 10**6)])
    if abs(scale) >= 0.01 and r.random() < 0.1:
        offset = r.randint(-(2**31) + 10**6, 2**31 - 10**6)
    return scale, offset


def _chop(fn, a, b, scale=1.0, offset=0):
    f = getattr(ImageChops, fn)
    return f(a, b, scale, offset) if fn in SCALED else f(a, b)


def _pairs(r, cls):
    """N (image1, image2) pairs: edge sizes, random sizes, one near 4096; 40%
    of pairs differ in size (the output is the intersection for chops)."""
    sizes = parity.sizes(r, N - 1)
    for i, s1 in enumerate(sizes):
        m1, m2 = _modes(r, cls)
        s2 = s1 if r.random() < 0.6 else r.choice(sizes[:-1])
        a = parity.random_image(r, m1, s1)
        b = a if i % 40 == 7 and m1 == m2 else parity.random_image(r, m2, s2)  # same node
        yield i, a, b


# ---------------------------------------------------------------- chops


@pytest.mark.parametrize("cls", MODE_CLASSES)
@pytest.mark.parametrize("fn", FUNCS)
def test_chops_matches_pillow(fn, cls):
    r = parity.rng("chops", fn, cls)
    cases = []
    for i, a, b in _pairs(r, cls):
        scale, offset = _scale_offset(r) if fn in SCALED else (1.0, 0)
        cases.append(Case(f"{fn}-{cls}-{i} {a.mode}{a.size} {b.mode}{b.size} "
                          f"scale={scale} offset={offset}", f"chops {fn}", cls,
                          _chop(fn, a, b, scale, offset)))
    parity.assert_exact(cases)


def test_chops_rejects_band_mismatch_as_pillow_does():
    r = parity.rng("chops-bands")
    cases = []
    for fn in FUNCS:
        for i in range(10):
            m1, m2 = r.sample(parity.MODES, 2)
            if parity.BANDS[m1] == parity.BANDS[m2]:
                continue
            a = parity.random_image(r, m1, r.choice(parity.EDGE_SIZES))
            b = parity.random_image(r, m2, (r.randint(1, 9), r.randint(1, 9)))
            cases.append(Case(f"{fn}-{i}-{m1}-{m2}", f"chops {fn}", m1, _chop(fn, a, b),
                              expect_kind="invalid"))
    parity.assert_rejected(cases)


def test_chops_rejects_offsets_pillow_cannot_parse():
    # Pillow reads offset as a C int: TypeError for a non-integer, OverflowError past int32.
    r = parity.rng("chops-offset")
    a, b = parity.random_image(r, "RGB", (5, 4)), parity.random_image(r, "RGB", (4, 5))
    cases = [Case(f"{fn}-offset={off}", f"chops {fn}", "RGB", _chop(fn, a, b, 1.0, off),
                  expect_kind="invalid")
             for fn in SCALED for off in (0.5, -1.25, 2**31, -(2**31) - 1, math.inf, math.nan)]
    parity.assert_rejected(cases)


def test_chops_rejects_scales_that_leave_pillow_undefined():
    # Pillow raises nothing here, but divides by a zero or non-finite float scale
    # (a double beyond float range is inf, a tiny one 0, once narrowed) and
    # converts inf/NaN/out-of-range floats to int: undefined behaviour in C.
    r = parity.rng("chops-scale")
    a, b = parity.random_image(r, "LA", (6, 3)), parity.random_image(r, "LA", (6, 3))
    invalid = [Case(f"{fn}-scale={s}", f"chops {fn}", "LA", _chop(fn, a, b, s, 0),
                    expect_kind="invalid")
               for fn in SCALED for s in (0.0, -0.0, 1e-50, 1e39, math.inf, -math.inf, math.nan)]
    overflow = [Case(f"{fn}-scale={s}-offset={o}", f"chops {fn}", "LA", _chop(fn, a, b, s, o),
                     expect_kind="unsupported")
                for fn in SCALED for s, o in ((1e-8, 0), (1.0, 2**31 - 1), (1e-3, -(2**31)))]
    parity.assert_rejected(invalid + overflow, pillow_raises=False)


def test_chops_rejects_unknown_functions():
    # A value this contract lacks may be a newer worker's: Unsupported, never Invalid.
    r = parity.rng("chops-fn")
    a = parity.random_image(r, "L", (3, 3))
    cases = [Case(f"function={f}", "chops", "L",
                  lazy("chops", {"function": f, "scale": 1.0}, [a, a], "L", a.size, None),
                  expect_kind="unsupported") for f in (12, 99, -1)]
    parity.assert_rejected(cases, pillow_raises=False)


def test_chops_ignores_scale_and_offset_outside_add_and_subtract():
    r = parity.rng("chops-unused")
    a, b = parity.random_image(r, "RGBA", (7, 5)), parity.random_image(r, "RGBA", (7, 5))
    cases = []
    for fn in FUNCS:
        if fn not in SCALED:
            im = _chop(fn, a, b)
            im._node.params.update(scale=0.0, offset=0.5)
            cases.append(Case(f"{fn}-unused", f"chops {fn}", "RGBA", im))
    parity.assert_exact(cases)


# ---------------------------------------------------------------- blend


@pytest.mark.parametrize("cls", MODE_CLASSES)
def test_blend_matches_pillow(cls):
    r = parity.rng("blend", cls)
    cases = []
    for i, a, b in _pairs(r, cls):
        if b is not a and b.size != a.size:
            b = parity.random_image(r, b.mode, a.size)
        alpha = r.choice([0.0, 1.0, 0.5, r.random(), r.random(), r.random(), r.uniform(-3, 4),
                          r.uniform(-100, 100), 1.0 + 1e-12, -1e-30])
        cases.append(Case(f"blend-{cls}-{i} {a.mode} {b.mode} {a.size} alpha={alpha!r}", "blend",
                          cls, Image.blend(a, b, alpha)))
    parity.assert_exact(cases)


def test_blend_rejects_mismatches_as_pillow_does():
    r = parity.rng("blend-mismatch")
    cases = []
    for i in range(60):
        m1, m2 = r.choice(parity.MODES), r.choice(parity.MODES)
        s1, s2 = (r.randint(1, 9), r.randint(1, 9)), (r.randint(1, 9), r.randint(1, 9))
        if parity.BANDS[m1] == parity.BANDS[m2] and s1 == s2:
            continue
        a, b = parity.random_image(r, m1, s1), parity.random_image(r, m2, s2)
        cases.append(Case(f"blend-{i} {m1}{s1} {m2}{s2}", "blend", m1, Image.blend(a, b, 0.5),
                          expect_kind="invalid"))
    parity.assert_rejected(cases)


def test_blend_rejects_non_finite_float32_alpha():
    # Pillow narrows alpha to a C float and would convert NaN to UINT8 (undefined).
    r = parity.rng("blend-alpha")
    a, b = parity.random_image(r, "RGB", (4, 4)), parity.random_image(r, "RGB", (4, 4))
    cases = [Case(f"alpha={x}", "blend", "RGB", Image.blend(a, b, x), expect_kind="invalid")
             for x in (math.inf, -math.inf, math.nan, 1e39)]
    parity.assert_rejected(cases, pillow_raises=False)


# ---------------------------------------------------------------- tone


def _tone_verdict(outcome):
    """None when the worker's bytes are within 1 LSB of the float64 reference
    (alpha equal), else a description."""
    if outcome.status == "exact":
        return None
    if outcome.status != "mismatch":
        return f"{outcome.status}: {outcome.detail}"
    ref, got = outcome.case.image.replay(), outcome.result.image
    if (got.mode, got.size) != (ref.mode, ref.size):
        return outcome.detail
    bands = parity.BANDS[ref.mode]
    g = np.frombuffer(got.data, np.uint8).reshape(-1, bands).astype(int)
    w = np.frombuffer(ref.tobytes(), np.uint8).reshape(-1, bands).astype(int)
    worst = int(np.abs(g[:, :3] - w[:, :3]).max())
    if worst > 1:
        return f"off by {worst} LSB: {outcome.detail}"
    if bands == 4 and not np.array_equal(g[:, 3], w[:, 3]):
        return "alpha changed"
    return None


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_tone_within_one_lsb_of_float64_reference(mode):
    r = parity.rng("tone", mode)
    cases = []
    for i, size in enumerate(parity.sizes(r, N - 1)):
        params = {"exposure_ev": r.choice([0.0, r.uniform(-8, 8), r.uniform(-2, 2), 8.0, -8.0])}
        for k in TONE_PARAMS[1:]:
            params[k] = r.choice([0.0, r.uniform(-1, 1), r.choice([-1.0, 1.0])])
        if i == 0:
            params = dict.fromkeys(TONE_PARAMS, 0.0)
        im = parity.random_image(r, mode, size)
        cases.append(Case(f"tone-{mode}-{i} {size} {params}", "tone (1 LSB of f64)", mode,
                          imgbatch.tone(im, **params)))
    outcomes = parity.run_cases(cases, record=False)
    bad = []
    for o in outcomes:
        why = _tone_verdict(o)
        parity.record_case(o.case.op, o.case.mode, why is None)
        if why:
            bad.append(f"  {o.case.case_id}: {why}")
    assert not bad, f"{len(bad)} of {len(cases)} (IB_PARITY_SEED={parity.SEED}):\n" + \
        "\n".join(bad[:25])


def test_tone_with_zero_params_is_the_identity():
    r = parity.rng("tone-identity")
    cases = []
    for m in ("RGB", "RGBA"):
        im = imgbatch.tone(parity.random_image(r, m, (64, 32)))
        im._node.replay_fn = lambda x: x.copy()  # expected: the input, bit for bit
        cases.append(Case(f"identity-{m}", "tone identity", m, im))
    parity.assert_exact(cases)


def test_tone_rejects_out_of_range_params_naming_them():
    r = parity.rng("tone-range")
    im = parity.random_image(r, "RGB", (3, 2))
    cases = []
    for k in TONE_PARAMS:
        limit = 8.0 if k == "exposure_ev" else 1.0
        for v in (limit * 1.001, -limit * 1.001, math.inf, math.nan):
            cases.append(Case(f"{k}={v}", "tone", "RGB", imgbatch.tone(im, **{k: v}),
                              expect_kind="invalid"))
    parity.assert_rejected(cases)
    for o in parity.run_cases(cases, record=False):
        assert o.case.case_id.split("=")[0] in o.result.error.message, o.result.error.message


def test_tone_rejects_modes_other_than_rgb_and_rgba():
    r = parity.rng("tone-modes")
    cases = [Case(f"tone-{m}", "tone", m, imgbatch.tone(parity.random_image(r, m, (3, 2)), 1.0),
                  expect_kind="unsupported") for m in ("L", "LA", "CMYK", "RGBX")]
    parity.assert_rejected(cases)
