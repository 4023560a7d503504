"""The summary of a bench/drivers/run.sh output folder (or several, e.g. the two
device calls of a split run): the target rows of bench/RESULTS.md with "met" or "missed
by X", speedups over Pillow, floors and kernels, correctness. Prints the
targets table and writes DIR/summary.md (markdown rows for bench/RESULTS.md).
Exits 1 when any row says MISMATCH."""
import argparse
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402
import workloads as W  # noqa: E402


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class Rows:
    def __init__(self, rows):
        self.rows = rows

    def find(self, **kw):
        out = []
        for r in self.rows:
            if r["status"] != "ok" or num(r["value"]) is None:
                continue
            if all(str(r.get(k)) == str(v) if not callable(v) else v(r.get(k)) for k, v in kw.items()):
                out.append(r)
        return out

    def best(self, lower=True, **kw):
        """The best row over settings (lowest or highest value), or None."""
        rs = self.find(**kw)
        if not rs:
            return None
        return (min if lower else max)(rs, key=lambda r: num(r["value"]))


def kafka_rounds(R, B):
    """Worker / relay raw MB/s in percent, one value per round that has both (the round is
    in the rows' notes: kafka_report.py csv)."""
    by = {}
    for impl in ("kafka-relay", f"imgbatch-worker-{B}"):
        for r in R.find(part="kafka", impl=impl, workload="raw", metric="mb_per_s"):
            m = re.search(r"round (\d+)", r.get("note", ""))
            if m:
                by.setdefault(int(m.group(1)), {})[impl] = num(r["value"])
    return [100 * d[f"imgbatch-worker-{B}"] / d["kafka-relay"] for _, d in sorted(by.items())
            if len(d) == 2 and d["kafka-relay"]]


def fmt(v, unit=""):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        s = f"{v:,.0f}"
    elif abs(v) >= 10:
        s = f"{v:.1f}"
    elif abs(v) >= 0.1:
        s = f"{v:.3f}"
    else:
        s = f"{v:.4f}"
    return s + (f" {unit}" if unit else "")


def verdict(v, target, higher_better, unit=""):
    """met, or missed by the gap in the target's unit (and relative to the target)."""
    if v is None:
        return "not measured"
    ok = v >= target if higher_better else v <= target
    if ok:
        return "met"
    gap = target - v if higher_better else v - target
    return f"missed by {fmt(gap, unit)} ({100 * gap / target:.0f} %)"


# The targets table's "today" column (bench/RESULTS.md), keyed by the start of the row's label.
TODAY = {"256² RGB invert": "165k/s", "≥ 2048²": "1.03–1.21x", "`imgbatch run`": "not measured against a floor",
         "median 3×3": "0.224 ms (NPP 0.208)", "tone": "0.96 ms", "GaussianBlur(8)": "0.84 ms",
         "fused pointwise chain that folds": "92.6 %", "fused chain that does not fold": "50 %",
         "vs torchvision": "not measured", "Kafka": "77 % (2026-12-03)", "PNG": "-", "first result": "-"}


# The parts whose outputs each target row stands on (a MISMATCH there voids it).
PARTS = {"256² RGB invert": "api", "≥ 2048²": "api", "`imgbatch run`": "run", "median 3×3": "floors kernels",
         "tone": "floors kernels", "GaussianBlur(8)": "floors kernels", "fused": "floors",
         "vs torchvision": "api peers", "Kafka": "kafka", "PNG": "kafka codecs", "first result": "cold"}


def today(what):
    return next((v for k, v in TODAY.items() if what.startswith(k)), "")


def per_setting(rows):
    """{setting: (the median value over the processes that measured it, their values sorted, a row
    of it)}:
    run.sh measures some rows in several processes, whose host speed varies by 10-20 %, and
    folders summed together add more; a median, not the luckiest process, is the figure."""
    by = defaultdict(list)
    for r in rows:
        by[r["setting"]].append(r)
    out = {}
    for k, rs in by.items():
        rs = sorted(rs, key=lambda r: num(r["value"]))
        vs = [num(r["value"]) for r in rs]
        out[k] = (statistics.median(vs), vs, rs[len(rs) // 2])
    return out


def spread(R, row, metric):
    """', median of N streams, LO-HI' when gpu_bench --reps timed the case's row more than
    once (its _min/_max rows, same setting), else ''."""
    k = {f: row[f] for f in ("part", "impl", "workload", "mode", "side", "setting")}
    lo, hi = (R.best(metric=f"{metric}_{e}", **k) for e in ("min", "max"))
    if not lo or not hi:
        return ""
    return f", median of {lo['n']} streams, {num(lo['value']):.3f}-{num(hi['value']):.3f}x"


def targets(R):
    """(what, measured text, target text, verdict) for every row of the targets table. The
    targets are the cuda backend's; with only cpu-backend rows (bench/drivers/run.sh --backend
    cpu) those rows show the cpu numbers, with the verdict "cpu backend only"."""
    out = []
    B = "cuda" if R.find(impl=lambda i: i.endswith("-cuda")) else "cpu"
    fl = R.best(lower=False, part="api", impl="pcie-floor", workload="invert", side=256, metric="img_per_s")
    fl = f" (PCIe floor {fmt(num(fl['value']), '/s')})" if fl else ""
    small = R.find(part="api", impl="imgbatch-api-cuda-batched", workload="invert", mode="RGB", side=256,
                   metric="img_per_s")
    med = per_setting(small)
    for label, pick in (("default caps", "max_jobs=64 max_in_flight=2"), ("best setting", None)):
        k = pick if pick in med else None if pick else max(med, key=lambda s: med[s][0], default=None)
        v = med[k][0] if k else None
        what = f"256² RGB invert through the API, {label}" + (f" ({k})" if k and not pick else "")
        text = fmt(v, "/s")
        vs = med[k][1] if k else []
        if len(vs) > 1:
            text += f", median of {len(vs)} processes ({fmt(vs[0])}-{fmt(vs[-1], '/s')})"
        out.append((what, text + fl, "≥ 200k/s", verdict(v, 200000, True, "/s")))

    big = lambda s: num(s) is not None and num(s) >= 2048  # noqa: E731
    # The overlapped floor assumes each direction at its solo bandwidth; both
    # at once reach less (x_floor_bidir divides by what they measured).
    for metric, floor in (("x_floor_overlap", "overlapped floor"),
                          ("x_floor_bidir", "measured both-directions floor")):
        # Default caps: max_in_flight 2 (docs/credits.md), with one job a submission
        # (max_jobs 2) or the default max_jobs 64 (several images a submission).
        default = ("max_in_flight=2", "max_jobs=64 max_in_flight=2")
        for label, pick in (("default caps (max_in_flight 2)", default), ("best setting", None)):
            worst, where = None, ""
            cases = defaultdict(list)
            for r in R.find(part="api", impl="imgbatch-api-cuda", metric=metric, side=big):
                if pick is None or r["setting"] in pick:
                    cases[(r["workload"], r["mode"], r["side"])].append(r)
            if not cases and metric == "x_floor_bidir":
                continue  # a run from before the floor was measured
            settings = set()
            for key, rs in cases.items():
                # One value a setting (per_setting's median), then the better setting.
                v, vs, b = min(per_setting(rs).values(), key=lambda m: m[0])
                settings.add(b["setting"])
                if worst is None or v > worst:
                    worst, where = v, f"{key[0]} {key[1]} {key[2]}²"
                    where += f", median of {len(vs)} processes" if len(vs) > 1 else spread(R, b, metric)
            what = f"≥ 2048², every family, through the API, {label}"
            if settings:
                what += f" ({', '.join(sorted(settings))})"
            out.append((what, f"worst {fmt(worst, 'x')} {floor} ({where}, {len(cases)} cases)"
                        if worst else "-", "≤ 1.10x", verdict(worst, 1.10, False, "x")))

    per_case = defaultdict(list)  # (workload, mode, side) -> [(% of cat, row, cat row)]
    for r in R.find(part="run", metric="mb_per_s", side=lambda s: num(s) is not None and num(s) >= 1024,
                    impl=f"imgbatch-run-{B}"):
        cat = R.best(lower=False, part="run", impl="cat-floor", workload=r["workload"], mode=r["mode"],
                     side=r["side"], metric="mb_per_s")
        if cat:
            per_case[(r["workload"], r["mode"], r["side"])].append(
                (100 * num(r["value"]) / num(cat["value"]), r, cat))
    for label, pick in (("default caps", "default caps"), ("best setting", None)):
        worst = None
        for key, vs in per_case.items():
            vs = [v for v in vs if pick is None or v[1]["setting"] == pick]
            if vs:
                b = max(vs, key=lambda v: v[0])
                worst = b if worst is None or b[0] < worst[0] else worst
        meas = "-"
        if worst:
            pct, r, cat = worst
            meas = (f"worst {fmt(pct, '%')} ({r['workload']} {r['mode']} {r['side']}² [{r['setting']}]: "
                    f"{fmt(num(r['value']), 'MB/s')} vs cat {fmt(num(cat['value']), 'MB/s')})")
        out.append((f"`imgbatch run`, ≥ 1024² images, vs `cat` of the same bytes, {label}", meas, "≥ 70 %",
                    verdict(worst[0] if worst else None, 70, True, "%-points")))

    for wid, label, tgt in (("k_median3", "median 3×3, 4096² RGBA, kernel only", 0.18),
                            ("k_tone", "tone, 4096² RGBA, kernel only", 0.5),
                            ("k_gauss8", "GaussianBlur(8), 4096² RGBA, kernel only", 0.5)):
        r = R.best(part="kernels", impl="imgbatch-events", workload=wid, metric="ms_kernel")
        fam = wid[2:]
        ncu = R.best(part="kernels", impl="imgbatch-ncu", workload=fam, mode="RGBA", metric="ms_kernel")
        npp = R.best(part="kernels", impl="npp", workload=fam, metric="ms_kernel")
        v = num(r["value"]) if r else None
        extra = []
        if ncu:
            extra.append(f"ncu {fmt(num(ncu['value']), 'ms')}")
        if npp:
            extra.append(f"NPP {fmt(num(npp['value']), 'ms')}")
        out.append((label, fmt(v, "ms") + (f" ({', '.join(extra)})" if extra else ""), f"≤ {tgt} ms",
                    verdict(v, tgt, False, "ms")))

    r = R.best(lower=False, part="kernels", impl="imgbatch-events", workload="k_chain_fold", metric="pct_copy_bw")
    v = num(r["value"]) if r else None
    out.append(("fused pointwise chain that folds (point > brightness > point)", fmt(v, "% of copy bw"),
                "≥ 90 %", verdict(v, 90, True, "%-points")))
    vals = [(num(r["value"]), r["workload"]) for r in
            R.find(part="kernels", impl="imgbatch-events", metric="pct_copy_bw",
                   workload=lambda w: w in ("k_color_point", "k_chain_unfold3", "k_mix5"))]
    v, w = min(vals) if vals else (None, "")
    notone = R.best(lower=False, part="kernels", impl="imgbatch-events", workload="k_mix4_notone",
                    metric="pct_copy_bw")
    beside = f"; the mix without tone {fmt(num(notone['value']), '%')}" if notone else ""
    out.append(("fused chain that does not fold (color>point, 3 unfolded, 5-op mix)",
                f"worst {fmt(v, '%')} ({w}{beside})" if vals else "-", "≥ 85 %",
                verdict(v, 85, True, "%-points")))

    worst, where = None, ""
    for t in R.find(part="peers", impl="torchvision-cuda", metric="ms_per_img"):
        ib = R.best(part="api", impl="imgbatch-api-cuda", workload=t["workload"], mode=t["mode"],
                    side=t["side"], metric="ms_per_img")
        if ib:
            x = num(t["value"]) / num(ib["value"])
            if worst is None or x < worst:
                worst, where = x, f"{t['workload']} {t['mode']} {t['side']}²"
    out.append(("vs torchvision GPU on shared ops, end to end with PCIe",
                f"worst {fmt(worst, 'x')} ({where})" if worst else "-", "≥ 1.5x", verdict(worst, 1.5, True, "x")))

    relay = R.best(lower=False, part="kafka", impl="kafka-relay", workload="raw", metric="mb_per_s")
    wk = R.best(lower=False, part="kafka", impl=f"imgbatch-worker-{B}", workload="raw", metric="mb_per_s")
    best = 100 * num(wk["value"]) / num(relay["value"]) if relay and wk else None
    # The verdict: the median over rounds of each round's worker / relay (kafka_bench.sh
    # --repeat runs them back to back, alternating which goes first), so one slow round of
    # either side on a shared machine moves it less than the best of each would.
    rounds = kafka_rounds(R, B)
    v = statistics.median(rounds) if rounds else best
    how = (f"median of {len(rounds)} paired rounds ({', '.join(fmt(x, '%') for x in rounds)}); best vs best "
           f"{fmt(best, '%')}: " if rounds else "")
    out.append(("Kafka, raw in and out, copy graph, vs a librdkafka relay",
                f"{fmt(v, '%')}, {how}{fmt(num(wk['value']), 'MB/s')} vs {fmt(num(relay['value']), 'MB/s')}"
                if v else "-", "≥ 85 %", verdict(v, 85, True, "%-points")))

    wk = R.find(part="kafka", impl=f"imgbatch-worker-{B}",
                workload=lambda w: w.startswith("png-t"), metric="jobs_per_s")
    wk = max(wk, key=lambda r: num(r["value"])) if wk else None  # the best setting, named
    pil = R.best(lower=False, part="codecs", impl=lambda i: i.startswith("pillow-mp") and i.endswith("png->png"),
                 workload="gauss2-png", mode="RGB", side=128, metric="img_per_s")
    v = num(wk["value"]) / num(pil["value"]) if wk and pil else None
    out.append(("PNG → GaussianBlur(2) → PNG, 128², Kafka worker at its best setting, vs Pillow on every core",
                f"{fmt(v, 'x')} ({wk['workload']}: {fmt(num(wk['value']), 'jobs/s')} vs "
                f"{pil['impl']} {fmt(num(pil['value']), '/s')})" if v else "-", "≥ 2x", verdict(v, 2, True, "x")))

    for state, tgt in (("cold", 2.0), ("warm", 0.5)):
        r = R.best(part="cold", impl=f"imgbatch-run-{B}", metric=f"s_first_result_{state}")
        v = num(r["value"]) if r else None
        out.append((f"first result, {state} NVRTC cache", fmt(v, "s"), f"≤ {tgt} s", verdict(v, tgt, False, "s")))
    if B == "cpu":
        out = [(w, m, t, "cpu backend only" if m != "-" and not m.startswith("- ") else v)
               for w, m, t, v in out]
    return out


def speedups(R):
    """Markdown rows: imgbatch (API, best setting) against Pillow and peers per case."""
    lines = ["| workload | mode | side | imgbatch API ms | Pillow seq ms | speedup | Pillow all cores ms | "
             "speedup | OpenCV ms* | torchvision ms* |", "|---|---|---|---|---|---|---|---|---|---|"]
    api = lambda i: i in ("imgbatch-api-cuda", "imgbatch-api-cuda-batched")  # noqa: E731
    keys = sorted({(r["workload"], r["mode"], int(num(r["side"]))) for r in
                   R.find(part="api", impl=api, metric="ms_per_img")},
                  key=lambda k: (k[0], k[2], k[1]))
    for w, m, s in keys:
        ib = R.best(part="api", impl=api, workload=w, mode=m, side=s, metric="ms_per_img")
        seq = R.best(part="pillow", impl="pillow-seq", workload=w, mode=m, side=s, metric="ms_per_img")
        mp = R.best(part="pillow", impl=lambda i: i.startswith("pillow-mp"), workload=w, mode=m, side=s,
                    metric="ms_per_img")
        cv = R.best(part="peers", impl="opencv-cpu", workload=w, mode=m, side=s, metric="ms_per_img")
        tv = R.best(part="peers", impl="torchvision-cuda", workload=w, mode=m, side=s, metric="ms_per_img")
        v = num(ib["value"])
        g = lambda r: num(r["value"]) if r else None  # noqa: E731
        x = lambda r: f"{g(r) / v:.1f}x" if r else "-"  # noqa: E731
        lines.append(f"| {w} | {m} | {s} | {fmt(v)} | {fmt(g(seq))} | {x(seq)} | {fmt(g(mp))} | {x(mp)} | "
                     f"{fmt(g(cv))} | {fmt(g(tv))} |")
    return lines


def run_table(R, part):
    lines = ["| workload | mode | side | impl | setting | ms/img | MB/s | % of cat | speedup vs Pillow seq | "
             "vs Pillow all cores | one-job process s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in R.find(part=part, metric="ms_per_img", impl=lambda i: i.startswith("imgbatch-run")):
        k = dict(workload=r["workload"], mode=r["mode"], side=r["side"])
        mb = R.best(lower=False, part=part, impl=r["impl"], setting=r["setting"], metric="mb_per_s", **k)
        cat = R.best(lower=False, part=part, impl="cat-floor", metric="mb_per_s", **k)
        seq = R.best(part=part, impl=lambda i: i.startswith("pillow-seq"), metric="ms_per_img", **k)
        mp = R.best(part=part, impl=lambda i: i.startswith("pillow-mp"), metric="ms_per_img", **k)
        one = R.best(part=part, impl=r["impl"], setting=r["setting"], metric="s_one_job", **k)
        v = num(r["value"])
        if R.rows and any(b["status"] == "MISMATCH" and b["part"] == part and b["workload"] == r["workload"]
                          and b["side"] == r["side"] for b in R.rows):
            r = dict(r, setting=r["setting"] + " **MISMATCH**")
        pct = f"{100 * num(mb['value']) / num(cat['value']):.0f} %" if mb and cat else "-"
        x = lambda p: f"{num(p['value']) / v:.1f}x" if p else "-"  # noqa: E731
        lines.append(f"| {r['workload']} | {r['mode']} | {r['side']} | {r['impl']} | {r['setting']} | {fmt(v)} | "
                     f"{fmt(num(mb['value']) if mb else None)} | {pct} | {x(seq)} | {x(mp)} | "
                     f"{fmt(num(one['value']) if one else None)} |")
    return lines


def kernel_table(R):
    """Kernel-only times per family, 4096² RGBA, against the device-memory floor
    (bytes read + written at the measured copy bandwidth) and NPP."""
    bw = R.best(lower=False, part="floors", workload="d2d_copy", metric="gbps")
    bw = num(bw["value"]) if bw else None
    lines = ["| kernel, 4096² RGBA | imgbatch (events) ms | imgbatch (ncu) ms | memory floor ms | x floor | NPP ms | "
             "% of copy bw (events) |", "|---|---|---|---|---|---|---|"]
    names = sorted({r["workload"] for r in R.find(part="kernels")} - {""})
    fams = sorted({n[2:] if n.startswith("k_") else n for n in names})
    for f in fams:
        g = lambda r: fmt(num(r["value"])) if r else "-"  # noqa: E731
        ev = R.best(part="kernels", impl="imgbatch-events", workload="k_" + f, metric="ms_kernel")
        nc = R.best(part="kernels", impl="imgbatch-ncu", workload=f, mode="RGBA", metric="ms_kernel")
        npp = R.best(part="kernels", impl="npp", workload=f, metric="ms_kernel")
        pct = R.best(part="kernels", impl="imgbatch-events", workload="k_" + f, metric="pct_copy_bw")
        floor = x = None
        if bw and f in W.WORKLOADS and nc:
            floor = W.bytes_moved(f, "RGBA", int(num(nc["side"]))) / (bw * 1e9) * 1e3
            x = num(nc["value"]) / floor
        lines.append(f"| {f} | {g(ev)} | {g(nc)} | {fmt(floor)} | {fmt(x)} | {g(npp)} | {g(pct)} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--md", help="markdown output (default: FIRST_DIR/summary.md)")
    a = ap.parse_args()
    rows = [r for d in a.dirs for r in csvrows.read_all(d)]
    R = Rows(rows)
    bad = [r for r in rows if r["status"] == "MISMATCH"]
    errors = [r for r in rows if r["status"] == "error"]
    skipped = [r for r in rows if r["status"] == "skipped"]
    checked = sum(int(num(r["value"]) or 0) for r in rows if r["metric"] == "checked" and r["status"] == "ok")
    T = targets(R)
    bad_parts = {r["part"] for r in bad}
    T = [(w, m, t, "MISMATCH" if any(w.startswith(k) and set(p.split()) & bad_parts for k, p in PARTS.items())
          else v) for w, m, t, v in T]
    w = max(len(t[0]) for t in T)
    print(f"\n{'target (issue 15)':<{w}}  {'target':<9} {'verdict':<32} measured")
    for what, meas, tgt, ver in T:
        print(f"{what:<{w}}  {tgt:<9} {ver:<32} {meas}")
    fl = {k: R.best(lower=False, part="floors", workload=k, metric="gbps") for k in
          ("h2d_pinned", "d2h_pinned", "d2d_copy")}
    print("floors: " + ", ".join(f"{k} {fmt(num(r['value']), 'GB/s')}" for k, r in fl.items() if r) if any(
        fl.values()) else "floors: not measured")
    print(f"correctness: {checked} results checked against Pillow, {len(bad)} MISMATCH")
    for r in bad:
        print(f"MISMATCH {r['part']} {r['impl']} {r['workload']} {r['mode']} {r['side']}: {r['note']}")
    for r in skipped:
        print(f"skipped: {r['part']}: {r['note']}")
    for r in errors[:20]:
        print(f"error: {r['part']} {r['impl']} {r['workload']} {r['mode']} {r['side']}: {r['note']}")
    md = ["| what | today | target | measured | verdict |", "|---|---|---|---|---|"]
    md += [f"| {what} | {today(what)} | {tgt} | {meas} | {ver} |" for what, meas, tgt, ver in T]
    md += ["", "Floors: " + ", ".join(f"{k} {fmt(num(r['value']), 'GB/s')}" for k, r in fl.items() if r), "",
           f"Correctness: {checked} results checked against Pillow 12.3 bytes, {len(bad)} MISMATCH; the "
           "API rows are checked against the CPU backend (itself proven equal to Pillow by the parity suite).",
           "", "### Through the executor API, against Pillow and peers (* not bit-exact)", ""]
    md += speedups(R)
    md += ["", "### `imgbatch run` through files (tmpfs)", ""] + run_table(R, "run")
    md += ["", "### Codecs (PNG/JPEG in -> op -> PNG out)", ""] + run_table(R, "codecs")
    md += ["", "### Kernels only", ""] + kernel_table(R)
    trace = os.path.join(a.dirs[0], "trace.md")  # run.sh's trace part (bench/reports/trace_report.py table)
    if os.path.exists(trace):
        with open(trace) as f:
            md += ["", "### Where the copy engines idle (CUPTI trace, bench/reports/trace_report.py)", "", f.read().rstrip()]
    if skipped:
        md += ["", "Skipped: " + "; ".join(f"{r['part']} ({r['note']})" for r in skipped)]
    path = a.md or os.path.join(a.dirs[0], "summary.md")
    with open(path, "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"markdown rows: {path}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
