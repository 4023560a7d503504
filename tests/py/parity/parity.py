"""Parity harness: imgbatch's bytes against real Pillow 12.3.0, live.

How to write tests/py/parity/test_<family>.py
=============================================

    import pytest
    import parity
    from parity import Case
    from imgbatch import ImageFilter, ImageOps

    @pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA"])
    def test_median_3x3_matches_pillow(mode):
        r = parity.rng("median3", mode)            # seeded from the session seed
        cases = []
        for i, size in enumerate(parity.sizes(r, 20)):   # edge sizes + random + 1 big
            im = parity.random_image(r, mode, size)
            cases.append(Case(f"median3-{mode}-{i}", "median3", mode,
                              im.filter(ImageFilter.MedianFilter(3))))
        parity.assert_exact(cases)               # one `imgbatch run` for all cases

    def test_solarize_rejects_rgba_as_pillow_does():
        r = parity.rng("solarize-reject")
        im = parity.random_image(r, "RGBA", (5, 3))
        parity.assert_rejected([Case("rgba", "solarize", "RGBA", ImageOps.solarize(im),
                                     expect_kind="unsupported")])

Rules of the harness
- A Case is (case_id, op, mode, image[, expect_kind]): `image` is a lazy
  imgbatch image (any graph); `op` and `mode` are the row and column of the
  session table (use the op family name, or a finer label such as
  "rank_filter 5x5"; mode = the input mode). case_id must be unique in a call.
  Plain tuples in that order work too.
- assert_exact(cases) serializes every case as one Job (output raw), pipes
  them all through ONE `$IB_BIN run --backend cpu` process (IB_BACKEND=cuda
  switches the backend for the GPU run), replays each graph on Pillow and
  compares mode, size and bytes. It fails listing every mismatch (first
  differing pixel, both values, differing-byte count) and the seed.
  A case whose Pillow replay raises is a test bug there: use assert_rejected.
- assert_rejected(cases) wants, per case, an error Result whose kind equals
  case.expect_kind ("invalid", "unsupported", "limit", ...) and, by default,
  a Pillow replay that raises (pillow_raises=False for contexts Pillow takes
  but imgbatch refuses, e.g. modes outside L/LA/RGB/RGBA/CMYK/RGBX).
- run_cases(cases) is the layer below: it returns one Outcome per case
  (status "exact", "mismatch", "error", "replay_error", "crash" or "missing");
  it fills the table but asserts nothing: use it for custom verdicts (xfail,
  tolerance). After a worker crash the unanswered in-flight cases re-run
  one per process; those that die alone are "crash", the rest run on.
- Recorders are permissive: a parameter the wire can carry is sent even if
  Pillow refuses it (the replay raises, the worker must reject), which is
  what rejection tests need; what the wire cannot carry (masks, matrices,
  ModeFilter, ...) raises NotImplementedError when recorded. Beware: Pillow
  12.3 itself dies (SIGFPE) replaying RankFilter(1, 0).
- Randomness: rng(*labels) gives a random.Random seeded from the session
  seed and the labels, so a test's cases do not shift when other tests
  change. The seed is printed in the header, the summary and every failure;
  IB_PARITY_SEED=<n> reproduces a run. IB_PARITY_SCALE=<k> multiplies the
  case counts that tests pass through parity.scale(n).
- Sizes: sizes(r, n) = the edge sizes (1x1, 1xN, Nx1, odd widths, widths
  not a multiple of 4) first, then random small sizes, plus `big` (default
  1) sizes near 4096 (thin strips, so CI stays fast; test_large_sides.py goes to 16384).
  random_image(r, mode, size) draws noise, extremes (0/1/127/128/254/255) or
  smooth gradients at random; pass kind= to pick one.
- Every case lands in the session table op x mode -> (cases, exact), printed
  at the end of the session and written to $IB_PARITY_TABLE if set (JSON if
  the name ends in .json, else the text table).
"""

import json
import os
import random
from collections import namedtuple

import numpy as np
import pytest

import imgbatch
from imgbatch import Image

MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "RGBX")
BANDS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "CMYK": 4, "RGBX": 4}
EDGE_SIZES = [(1, 1), (1, 9), (9, 1), (2, 2), (3, 5), (5, 3), (7, 7), (13, 11), (6, 1),
              (33, 2), (2, 33), (17, 31)]
BIG_SIZES = [(4096, 3), (3, 4096), (4093, 5), (5, 4095)]


def _session_seed():
    env = os.environ.get("IB_PARITY_SEED")
    if env:
        return int(env, 0)
    return random.SystemRandom().randrange(1 << 32)


SEED = _session_seed()
TABLE = {}  # (op, mode) -> [cases, exact]
REJECT_TABLE = {}  # (op, mode) -> [cases, rejected as expected]


def rng(*labels):
    """random.Random seeded from the session seed and these labels."""
    return random.Random(f"{SEED}:" + ":".join(map(str, labels)))


def scale(n):
    """n times $IB_PARITY_SCALE (default 1), at least 1."""
    return max(1, int(n * float(os.environ.get("IB_PARITY_SCALE", "1"))))


def backend():
    return os.environ.get("IB_BACKEND", "cpu")


def binary():
    path = os.environ.get("IB_BIN")
    if not path:
        pytest.skip("IB_BIN is not set (path of the imgbatch binary)")
    return path


def sizes(r, n, big=1, max_side=48):
    """n sizes: edge sizes first, then random ones up to max_side; plus `big` near 4096
    (test_large_sides.py covers 4097 to 16384)."""
    out = list(EDGE_SIZES[:n])
    while len(out) < n:
        w, h = r.randint(1, max_side), r.randint(1, max_side)
        if r.random() < 0.5:
            w |= 1  # odd widths, never a multiple of 4
        out.append((w, h))
    return out + r.sample(BIG_SIZES, min(big, len(BIG_SIZES)))


def random_bytes(r, n, kind=None):
    kind = kind or r.choice(("noise", "noise", "extremes", "smooth"))
    if kind == "noise":
        return r.randbytes(n)
    if kind == "extremes":
        return bytes(r.choice((0, 1, 127, 128, 254, 255)) for _ in range(n))
    if kind == "smooth":
        a, b = r.randrange(256), r.choice((1, 3, 7, 251))
        return bytes((a + i * b // 7) & 0xFF for i in range(n))
    raise ValueError(f"unknown kind {kind!r}")


def random_image(r, mode, size, kind=None):
    """Lazy Image.frombytes(mode, size) of random pixels (kind: noise|extremes|smooth)."""
    w, h = size
    n = BANDS.get(mode) or len(Image.new(mode, (1, 1)).getbands())
    return Image.frombytes(mode, (w, h), random_bytes(r, w * h * n, kind))


Case = namedtuple("Case", "case_id op mode image expect_kind", defaults=(None,))
Outcome = namedtuple("Outcome", "case status result detail")


def _diff(ours, ref, mode, size):
    """Text naming the first differing pixel and the extent of the difference."""
    a = np.frombuffer(ours, dtype=np.uint8).astype(np.int16)
    b = np.frombuffer(ref, dtype=np.uint8).astype(np.int16)
    diff = np.flatnonzero(a != b)
    first = int(diff[0])
    bands = max(1, len(ref) // max(1, size[0] * size[1]))
    px = first // bands
    worst = int(np.abs(a - b).max())
    return (f"first difference at x={px % size[0]} y={px // size[0]} band={first % bands}: "
            f"imgbatch {ours[first]} vs Pillow {ref[first]}; {len(diff)} of {len(ref)} bytes "
            f"differ, max |diff| {worst}")


def _compare(case, result):
    if result is None:
        return Outcome(case, "missing", None, "no Result came back")
    if result.error is not None:
        return Outcome(case, "error", result, str(result.error))
    try:
        ref = case.image.replay()
    except Exception as e:  # noqa: BLE001 - Pillow refused this graph
        return Outcome(case, "replay_error", result, f"Pillow raised {type(e).__name__}: {e}")
    got = result.image
    if got.format != "raw":
        return Outcome(case, "mismatch", result, f"format {got.format}, expected raw")
    if (got.mode, got.size) != (ref.mode, ref.size):
        return Outcome(case, "mismatch", result,
                       f"imgbatch {got.mode} {got.size} vs Pillow {ref.mode} {ref.size}")
    ref_bytes = ref.tobytes()
    if got.data != ref_bytes:
        if len(got.data) != len(ref_bytes):
            return Outcome(case, "mismatch", result,
                           f"{len(got.data)} bytes vs Pillow {len(ref_bytes)}")
        return Outcome(case, "mismatch", result, _diff(got.data, ref_bytes, ref.mode, ref.size))
    return Outcome(case, "exact", result, "")


def as_cases(cases):
    """Cases as Case tuples (plain (case_id, op, mode, image[, expect_kind]) tuples accepted)."""
    return [c if isinstance(c, Case) else Case(*c) for c in cases]


def _check_ids(cases):
    seen = set()
    for c in cases:
        if c.case_id in seen:
            raise ValueError(f"duplicate case_id {c.case_id!r}")
        seen.add(c.case_id)


MAX_CRASHES = 10



def _run_once(cases, indices, timeout, results):
    """One `imgbatch run` over cases[indices]; fills results; returns the
    failure text if the process died before answering every job."""
    jobs = (cases[i].image.to_job(key=i, output="raw") for i in indices)
    wanted = set(indices)
    try:
        for res in imgbatch.run_local(jobs, binary=binary(), backend=backend(), timeout=timeout):
            if res.input_key in wanted:
                results[res.input_key] = res
    except (RuntimeError, TimeoutError) as e:
        if any(i not in results for i in indices):
            return str(e)
    return None


SUSPECTS = 16  # unanswered cases re-run alone after a crash (the in-flight window)


def run_results(cases, timeout=None):
    """Run cases through `imgbatch run`; return ({index: Result}, {index: crash text}).

    One process serves every case. If it dies, the first SUSPECTS cases left
    without a result run one per process (results may complete out of order,
    so the culprit is among the unanswered in-flight ones); each that dies
    alone is blamed, and the rest run on in a fresh process, up to
    MAX_CRASHES times."""
    cases = as_cases(cases)
    _check_ids(cases)
    timeout = timeout or float(os.environ.get("IB_PARITY_TIMEOUT", "900"))
    results, crashes = {}, {}
    pending = list(range(len(cases)))
    deaths = 0
    while pending:
        failure = _run_once(cases, pending, timeout, results)
        pending = [i for i in pending if i not in results]
        if failure is None or not pending:
            break
        deaths += 1
        if deaths > MAX_CRASHES:
            raise AssertionError(f"imgbatch run died {deaths} times (IB_PARITY_SEED={SEED}); "
                                 f"last: {failure}")
        for i in pending[:SUSPECTS]:
            alone = _run_once(cases, [i], timeout, results)
            if alone is not None and i not in results:
                crashes[i] = alone
        pending = [i for i in pending if i not in results and i not in crashes]
    return results, crashes


def run_cases(cases, timeout=None, record=True):
    """One Outcome per case (same order); records exactness in the session table."""
    cases = as_cases(cases)
    results, crashes = run_results(cases, timeout)
    outcomes = []
    for i, case in enumerate(cases):
        if i in crashes:
            out = Outcome(case, "crash", None, f"imgbatch run died on this case: {crashes[i][-1500:]}")
        else:
            out = _compare(case, results.get(i))
        results.pop(i, None)  # free the pixels as we go
        outcomes.append(out)
        if record:
            record_case(case.op, case.mode, out.status == "exact")
    return outcomes


def record_case(op, mode, exact, table=None):
    row = (TABLE if table is None else table).setdefault((op, mode), [0, 0])
    row[0] += 1
    row[1] += bool(exact)


def _fail(lines, total, what):
    shown = lines[:25]
    more = f"\n... and {len(lines) - 25} more" if len(lines) > 25 else ""
    raise AssertionError(f"{len(lines)} of {total} cases {what} (IB_PARITY_SEED={SEED}, "
                         f"backend {backend()}):\n" + "\n".join(shown) + more)


def assert_exact(cases, timeout=None):
    """Every case's bytes, mode and size equal Pillow's; else fail listing all misses."""
    outcomes = run_cases(cases, timeout)
    cases = as_cases(cases)
    bad = [f"  {o.case.case_id} [{o.case.op} {o.case.mode}] {o.status}: {o.detail}"
           for o in outcomes if o.status != "exact"]
    if bad:
        _fail(bad, len(cases), "not exact")
    return outcomes


def assert_rejected(cases, pillow_raises=True, timeout=None):
    """Every case is answered with an error of case.expect_kind (and Pillow raises)."""
    cases = as_cases(cases)
    results, crashes = run_results(cases, timeout)
    bad = []
    for i, case in enumerate(cases):
        res = results.get(i)
        problem = None
        if i in crashes:
            problem = f"imgbatch run died on this case: {crashes[i][-1500:]}"
        elif res is None:
            problem = "no Result came back"
        elif res.error is None:
            problem = f"imgbatch accepted it ({res.image.mode} {res.image.size})"
        elif case.expect_kind and res.error.kind != case.expect_kind:
            problem = f"kind {res.error.kind}, expected {case.expect_kind}: {res.error}"
        elif pillow_raises:
            try:
                case.image.replay()
                problem = f"Pillow did not raise (imgbatch said {res.error})"
            except Exception:  # noqa: BLE001 - the expected refusal
                pass
        record_case(case.op, case.mode, problem is None, REJECT_TABLE)
        if problem:
            bad.append(f"  {case.case_id} [{case.op} {case.mode}]: {problem}")
    if bad:
        _fail(bad, len(cases), "not rejected as expected")


# ---------------------------------------------------------------- session table


def format_table():
    lines = []
    for title, table, col in (("parity: op x mode -> exact/cases", TABLE, "exact"),
                              ("rejections: op x mode -> as expected/cases", REJECT_TABLE, "ok")):
        if not table:
            continue
        modes = [m for m in MODES if any(k[1] == m for k in table)]
        modes += sorted({k[1] for k in table} - set(modes))
        ops = sorted({k[0] for k in table})
        width = max(len(o) for o in ops) + 2
        lines.append(f"{title} (IB_PARITY_SEED={SEED}, backend {backend()})")
        lines.append("op".ljust(width) + "".join(m.rjust(12) for m in modes))
        for op in ops:
            cells = []
            for m in modes:
                row = table.get((op, m))
                cells.append((f"{row[1]}/{row[0]}" + ("" if row[1] == row[0] else "!")).rjust(12)
                             if row else "-".rjust(12))
            lines.append(op.ljust(width) + "".join(cells))
        total = sum(r[0] for r in table.values())
        good = sum(r[1] for r in table.values())
        lines.append(f"total {good}/{total} {col}")
        lines.append("")
    return "\n".join(lines)


def table_json():
    def rows(table, col):
        return [{"op": op, "mode": mode, "cases": n, col: k}
                for (op, mode), (n, k) in sorted(table.items())]

    return {"seed": SEED, "backend": backend(), "parity": rows(TABLE, "exact"),
            "rejections": rows(REJECT_TABLE, "as_expected")}


def write_table(path):
    with open(path, "w") as f:
        if path.endswith(".json"):
            json.dump(table_json(), f, indent=1)
        else:
            f.write(format_table())
