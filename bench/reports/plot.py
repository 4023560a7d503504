"""Plots of bench/drivers/run.sh output folders, drawn off the GPU machine (it has no
matplotlib): `pip install -r bench/requirements.txt`, then
    bench/reports/plot.py OUT [OUT2 ...] [--to DIR]
speedup_pillow_seq.png / speedup_pillow_cores.png: imgbatch through the API
(best setting) over Pillow by op, mode and size; floor.png: percent of the
floors (API vs the overlapped PCIe floor, fused kernels vs device copy
bandwidth, `imgbatch run` vs cat); run_path.png: `imgbatch run` and codecs
over Pillow."""
import argparse
import os
import sys

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402
from summary import Rows, num  # noqa: E402
from workloads import CHAINS, FAMILIES  # noqa: E402

MODES = ["L", "RGB", "RGBA"]


def bars(ax, groups, series, values, ylabel, log=False, ref=None):
    """Grouped bars: values[(group, series)] -> number (missing: no bar)."""
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ys = [values.get((g, s)) for g in groups]
        ax.bar([x for x, y in zip(xs, ys) if y], [y for y in ys if y], width, label=str(s))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    if ref is not None:
        ax.axhline(ref, color="k", lw=0.8, ls="--")
    ax.grid(axis="y", alpha=0.3)


def speedup_plot(R, pillow_impl, title, path):
    wls = FAMILIES + CHAINS + ["invert"]
    sides = sorted({int(num(r["side"])) for r in R.find(part="api", impl="imgbatch-api-cuda")})
    per_mode = {}
    for m in MODES:
        vals = {}
        for w in wls:
            for s in sides:
                ib = R.best(part="api", impl="imgbatch-api-cuda", workload=w, mode=m, side=s, metric="ms_per_img")
                pil = R.best(part="pillow", impl=pillow_impl, workload=w, mode=m, side=s, metric="ms_per_img")
                if ib and pil:
                    vals[(w, s)] = num(pil["value"]) / num(ib["value"])
        if vals:
            per_mode[m] = vals
    if not per_mode:
        return False
    fig, axes = plt.subplots(len(per_mode), 1, figsize=(12, 3.2 * len(per_mode) + 0.6), squeeze=False)
    for ax, (m, vals) in zip(axes[:, 0], per_mode.items()):
        groups = [w for w in wls if any((w, s) in vals for s in sides)]
        bars(ax, groups, [s for s in sides if any((g, s) in vals for g in groups)], vals,
             f"{m}: x faster", log=True, ref=1)
        ax.legend(title="side", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def floor_plot(R, path):
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    drawn = False
    vals = {}
    for r in R.find(part="api", impl="imgbatch-api-cuda", metric="x_floor_overlap",
                    side=lambda s: num(s) is not None and num(s) >= 2048):
        k = (f"{r['workload']} {r['mode']}", f"{r['side']}² {r['setting']}")
        vals[k] = max(vals.get(k, 0), 100 / num(r["value"]))
    if vals:
        drawn = True
        bars(axes[0], sorted({k[0] for k in vals}), sorted({k[1] for k in vals}), vals,
             "% of overlapped PCIe floor", ref=100 / 1.10)
        axes[0].legend(fontsize=6)
        axes[0].set_title("through the API (line: target 1.10x)")
    kv = {(r["workload"][2:], "events"): num(r["value"]) for r in
          R.find(part="kernels", impl="imgbatch-events", metric="pct_copy_bw")}
    if kv:
        drawn = True
        bars(axes[1], sorted({k[0] for k in kv}), ["events"], kv, "% of device copy bandwidth", ref=85)
        axes[1].set_title("kernels only, 4096² RGBA")
    rv = {}
    for r in R.find(part="run", metric="mb_per_s", impl=lambda i: i.startswith("imgbatch-run")):
        cat = R.best(lower=False, part="run", impl="cat-floor", workload=r["workload"], mode=r["mode"],
                     side=r["side"], metric="mb_per_s")
        if cat:
            rv[(f"{r['workload']} {r['side']}²", f"{r['impl']} {r['setting']}")] = (
                100 * num(r["value"]) / num(cat["value"]))
    if rv:
        drawn = True
        bars(axes[2], sorted({k[0] for k in rv}), sorted({k[1] for k in rv}), rv, "% of cat throughput",
             ref=70)
        axes[2].legend(fontsize=6)
        axes[2].set_title("imgbatch run vs cat (line: target 70 %)")
    for ax in axes:
        if not ax.has_data():
            ax.set_visible(False)
    if drawn:
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return drawn


def run_plot(R, path):
    vals = {}
    for part in ("run", "codecs"):
        for r in R.find(part=part, metric="ms_per_img", impl=lambda i: i.startswith("imgbatch-run")):
            k = dict(workload=r["workload"], mode=r["mode"], side=r["side"])
            for lab, pick in (("vs Pillow seq", "pillow-seq"), ("vs Pillow all cores", "pillow-mp")):
                p = R.best(part=part, impl=lambda i: i.startswith(pick), metric="ms_per_img", **k)
                if p:
                    key = (f"{r['workload']} {r['side']}²", f"{r['impl']} {r['setting']} {lab}")
                    vals[key] = max(vals.get(key, 0), num(p["value"]) / num(r["value"]))
    if not vals:
        return False
    fig, ax = plt.subplots(figsize=(12, 4.5))
    bars(ax, sorted({k[0] for k in vals}), sorted({k[1] for k in vals}), vals, "x faster than Pillow",
         log=True, ref=1)
    ax.legend(fontsize=6)
    ax.set_title("imgbatch run (files on tmpfs) and codecs, over Pillow on the same jobs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--to", help="folder for the PNGs (default: the first DIR)")
    a = ap.parse_args()
    R = Rows([r for d in a.dirs for r in csvrows.read_all(d)])
    to = a.to or a.dirs[0]
    os.makedirs(to, exist_ok=True)
    cores = next((r["impl"] for r in R.find(part="pillow", impl=lambda i: i.startswith("pillow-mp"))),
                 "pillow-mp")
    plots = [("speedup_pillow_seq.png", lambda p: speedup_plot(
                 R, "pillow-seq", "imgbatch API (cuda) over sequential Pillow 12.3", p)),
             ("speedup_pillow_cores.png", lambda p: speedup_plot(
                 R, cores, f"imgbatch API (cuda) over Pillow on every core ({cores})", p)),
             ("floor.png", lambda p: floor_plot(R, p)),
             ("run_path.png", lambda p: run_plot(R, p))]
    for name, draw in plots:
        path = os.path.join(to, name)
        print(f"plot: {path}" if draw(path) else f"plot: {name}: no data")


if __name__ == "__main__":
    main()
