#!/usr/bin/env python3
"""Where the copy engines sit idle: a report on a libibtrace.so CSV.

    trace_report.py TRACE.csv [--trim 0.1] [--window START_NS END_NS]
                    [--images N] [--floor-us F] [--gaps K] [--json OUT]
    trace_report.py table [--md OUT] trace/a.json trace/b.json ...

The trace (bench/trace/ib_trace.c) holds copies, kernels, memsets, driver API
calls (with their host thread) and CUPTI's overhead, on one ns clock. The
range is what the program marked with cuProfilerStart/Stop (gpu_bench
--profile-range 1 marks each timed stream), else the whole trace. The window
is the range from its first to its last H2D copy, less --trim of it at each
end (fill and drain), or --window. For the window: wall time; busy % of the
H2D engine, the D2H engine and kernels (unions of intervals, not sums); % of
wall with both directions copying; the H2D engine's idle gaps, and for the
--gaps largest what the GPU and each host thread were doing in them and when
the next upload was issued (after the gap opened: the host was late; before:
it waited on the device), every gap by that cause; how long after its driver
call each upload, kernel and download started, and the hand-offs (upload end
-> kernel start, kernel end -> download start); driver API counts and host
time per thread; bytes each way and GB/s; the range's fill and drain (before
its first upload, after its last). --images N: the range's wall / N per image (what
gpu_bench times) and the window's per image (images counted by H2D bytes);
--floor-us F: both as a ratio to the per-image floor F.

Exit 1 when the trace cannot be trusted: records dropped, the tracer failed
to start, the trace is cut (no trailer) or holds no H2D copy in the window.

table: one markdown table over --json reports (run.sh's trace part), a row
per traced case, named by its file (CASE.json); exit 1 when one cannot be
read. Standard library only.
"""
import argparse
import bisect
import csv
import json
import os
import re
import sys

COPY_APIS = ("cuMemcpyHtoDAsync", "cuMemcpyBatchAsync", "cuMemcpyAsync", "cuMemcpyHtoD")


class TraceError(Exception):
    """The trace cannot be reported on (exit 1)."""


# The driver's versions of one call (cuMemcpyHtoDAsync_v2, ..._v2_ptsz) count as one.
API_VERSION = re.compile(r"(_v\d+)?(_pt(sz|ds))?$")


def load(path):
    """(rows, meta): the records as dicts with int fields, the trailer's meta rows."""
    rows, meta = [], {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] == "meta":
                if r["name"].startswith("error"):
                    meta["error"] = r["name"]
                elif r["name"] == "skipped_kind":  # kinds the driver refused: less detail
                    meta["skipped_kind"] = r["copy_kind"].strip()
                else:
                    meta[r["name"]] = int(r["bytes"])
                continue
            for k in ("stream", "thread", "start_ns", "end_ns", "bytes", "corr", "channel", "count"):
                r[k] = int(r[k])
            if r["kind"] == "driver":
                r["name"] = API_VERSION.sub("", r["name"])
            rows.append(r)
    return rows, meta


def check(rows, meta):
    if "error" in meta and not rows:
        raise TraceError(f"the trace is empty: the tracer did not start ({meta['error']})")
    if "error" in meta:
        raise TraceError(f"the tracer failed on the way ({meta['error']}): the timeline may have holes")
    if "records" not in meta:
        raise TraceError("the trace is cut: no trailer (the program did not exit normally?)")
    lost = meta.get("dropped", 0) + meta.get("lost_buffers", 0)
    if lost:
        raise TraceError(f"DROPPED: {meta.get('dropped', 0)} records dropped, "
                         f"{meta.get('lost_buffers', 0)} buffers lost: the timeline has holes")
    if not rows:
        raise TraceError("the trace is empty: no records")


def union(iv):
    """Sorted, merged [(a, b)] of intervals."""
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def clip(iv, w0, w1):
    return [(max(a, w0), min(b, w1)) for a, b in iv if b > w0 and a < w1]


def length(iv):
    return sum(b - a for a, b in iv)


def intersect(u, v):
    """Intersection of two merged interval lists."""
    out, i, j = [], 0, 0
    while i < len(u) and j < len(v):
        a, b = max(u[i][0], v[j][0]), min(u[i][1], v[j][1])
        if a < b:
            out.append((a, b))
        if u[i][1] < v[j][1]:
            i += 1
        else:
            j += 1
    return out


def gaps(u, w0, w1):
    """The complement of merged `u` inside [w0, w1]."""
    out, t = [], w0
    for a, b in u:
        if a > t:
            out.append((t, min(a, w1)))
        t = max(t, b)
    if t < w1:
        out.append((t, w1))
    return [(a, b) for a, b in out if b > a]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0


def copies(rows, kind):
    return [r for r in rows if r["kind"] == "memcpy" and r["copy_kind"] == kind]


def marked_range(rows):
    """[end of the first cuProfilerStart, start of the last cuProfilerStop], or None."""
    starts = [r["end_ns"] for r in rows if r["kind"] == "driver" and r["name"] == "cuProfilerStart"]
    stops = [r["start_ns"] for r in rows if r["kind"] == "driver" and r["name"] == "cuProfilerStop"]
    if starts and stops and max(stops) > min(starts):
        return min(starts), max(stops), len(starts)
    return None


def pick_window(rows, args):
    """(range (r0, r1), window (w0, w1), how)"""
    mr = marked_range(rows)
    if mr:
        r0, r1 = mr[0], mr[1]
        how = f"{mr[2]} cuProfilerStart/Stop range(s)"
    else:
        r0 = min(r["start_ns"] for r in rows)
        r1 = max(r["end_ns"] for r in rows)
        how = "no cuProfilerStart/Stop: the whole trace"
    if args.window:
        return (r0, r1), tuple(args.window), how + "; window from --window"
    h2d = [r for r in copies(rows, "HtoD") if r["start_ns"] >= r0 and r["end_ns"] <= r1]
    if not h2d:
        raise TraceError("the trace is empty: no H2D copy in the range")
    a, b = min(r["start_ns"] for r in h2d), max(r["end_ns"] for r in h2d)
    cut = int((b - a) * args.trim)
    return (r0, r1), (a + cut, b - cut), how + f"; first to last H2D, trimmed {args.trim:.0%} each end"


def in_window(rows, w0, w1):
    return [r for r in rows if r["end_ns"] > w0 and r["start_ns"] < w1]


def busy(rows, w0, w1):
    return union(clip([(r["start_ns"], r["end_ns"]) for r in rows], w0, w1))


def clipped_bytes(rows, w0, w1):
    """Bytes of copies, those cut by the window in proportion to the part inside."""
    total = 0.0
    for r in rows:
        d = r["end_ns"] - r["start_ns"]
        inside = min(r["end_ns"], w1) - max(r["start_ns"], w0)
        total += r["bytes"] * (1.0 if d <= 0 else max(0, inside) / d)
    return total


def api_table(drv, w0, w1):
    """{thread: {api: [count, host ns inside the window]}}"""
    out = {}
    for r in drv:
        t = out.setdefault(r["thread"], {})
        e = t.setdefault(r["name"], [0, 0])
        e[0] += 1
        e[1] += min(r["end_ns"], w1) - max(r["start_ns"], w0)
    return out


def driving_thread(api):
    """The thread that issues the uploads and launches."""
    score = {t: sum(v[0] for k, v in a.items() if k in COPY_APIS or k.startswith("cuLaunch"))
             for t, a in api.items()}
    return max(score, key=score.get) if score else None


def spread(xs):
    return {"n": len(xs), "p10_us": pct(xs, 0.1), "p50_us": pct(xs, 0.5), "p90_us": pct(xs, 0.9)}


def gap_causes(g, h2d, corr_api):
    """Every gap by who ended it: the upload after it issued after the gap
    opened (the host was late) or before (the device held it back)."""
    h2d = sorted(h2d, key=lambda r: r["start_ns"])
    starts = [r["start_ns"] for r in h2d]
    out = {"host_late": [0, 0.0], "device": [0, 0.0], "unknown": [0, 0.0]}
    for a, b in g:
        i = bisect.bisect_left(starts, b)
        api = corr_api.get(h2d[i]["corr"]) if i < len(h2d) else None
        k = "unknown" if not api else "host_late" if api["start_ns"] > a else "device"
        out[k][0] += 1
        out[k][1] += (b - a) / 1e3
    return {k: {"count": n, "us": us} for k, (n, us) in out.items()}


def issue_to_start(rows, corr_api):
    """GPU start - its driver call's start, per kind (us): a few us means the
    engine took work as soon as the host gave it (fed just in time)."""
    out = {}
    for r in rows:
        api = corr_api.get(r["corr"]) if r["corr"] else None
        if api:
            what = r["copy_kind"] if r["kind"] == "memcpy" else r["kind"]
            out.setdefault(what, []).append((r["start_ns"] - api["start_ns"]) / 1e3)
    return {k: spread(v) for k, v in out.items()}


def hops(later, earlier):
    """For each op of `later`, its start - the latest end of `earlier` before
    it (us; under 1 ms): upload -> kernel and kernel -> download hand-offs."""
    ends = sorted(r["end_ns"] for r in earlier)
    out = []
    for r in later:
        i = bisect.bisect_right(ends, r["start_ns"])
        if i and r["start_ns"] - ends[i - 1] < 1_000_000:
            out.append((r["start_ns"] - ends[i - 1]) / 1e3)
    return spread(out)


def describe_gap(g, rows, drv, corr_api, t_origin):
    a, b = g
    gpu = [r for r in rows if r["kind"] in ("memcpy", "kernel", "memset")]
    before = [r for r in gpu if r["end_ns"] <= a]
    last = max(before, key=lambda r: r["end_ns"]) if before else None
    during = [r for r in gpu if r["end_ns"] > a and r["start_ns"] < b]
    nxt = [r for r in copies(rows, "HtoD") if r["start_ns"] >= b]
    nxt = min(nxt, key=lambda r: r["start_ns"]) if nxt else None
    issued = corr_api.get(nxt["corr"]) if nxt else None
    threads = {}
    for r in drv:
        if r["end_ns"] > a and r["start_ns"] < b:
            e = threads.setdefault(r["thread"], {})
            x = e.setdefault(r["name"], [0, 0])
            x[0] += 1
            x[1] += min(r["end_ns"], b) - max(r["start_ns"], a)

    def op(r):
        return {"kind": r["kind"], "what": r["copy_kind"] if r["kind"] == "memcpy" else r["name"],
                "stream": r["stream"], "bytes": r["bytes"],
                "start_us": (r["start_ns"] - t_origin) / 1e3, "end_us": (r["end_ns"] - t_origin) / 1e3}

    d = {"start_us": (a - t_origin) / 1e3, "us": (b - a) / 1e3,
         "last_gpu_op": op(last) if last else None, "gpu_during": [op(r) for r in during],
         "threads": {str(t): {k: {"calls": v[0], "us": v[1] / 1e3} for k, v in e.items()}
                     for t, e in threads.items()}}
    if issued:
        d["next_h2d_issued_us"] = (issued["start_ns"] - a) / 1e3
        d["next_h2d_api"] = issued["name"]
        d["next_h2d_thread"] = issued["thread"]
        d["cause"] = ("host late: the next upload was issued after the engine went idle"
                      if issued["start_ns"] > a else
                      "device: the next upload was queued before the gap (a stream wait or "
                      "another engine's work held it)")
    else:
        d["cause"] = "unknown: the next upload's driver call is not in the trace"
    return d


def phases(h2d, r0, r1):
    """The range before its first upload and after its last (fill, drain)."""
    inside = [r for r in h2d if r["start_ns"] >= r0 and r["end_ns"] <= r1]
    if not inside:
        return {"before_first_h2d": 0, "after_last_h2d": 0}
    return {"before_first_h2d": (min(r["start_ns"] for r in inside) - r0) / 1e3,
            "after_last_h2d": (r1 - max(r["end_ns"] for r in inside)) / 1e3}


def report(rows, args):
    (r0, r1), (w0, w1), how = pick_window(rows, args)
    if w1 <= w0:
        raise TraceError("the window is empty (--trim too large?)")
    wall = w1 - w0
    h2d, d2h = copies(rows, "HtoD"), copies(rows, "DtoH")
    kern = [r for r in rows if r["kind"] == "kernel"]
    u_h, u_d, u_k = busy(h2d, w0, w1), busy(d2h, w0, w1), busy(kern, w0, w1)
    u_any = union(u_h + u_d + u_k + busy([r for r in rows if r["kind"] == "memset"], w0, w1))
    g = gaps(u_h, w0, w1)
    g_us = [(b - a) / 1e3 for a, b in g]
    drv = [r for r in rows if r["kind"] == "driver"]
    drv_w = in_window(drv, w0, w1)
    corr_api = {r["corr"]: r for r in drv if r["corr"]}
    api = api_table(drv_w, w0, w1)
    drive = driving_thread(api)
    bh, bd = clipped_bytes(in_window(h2d, w0, w1), w0, w1), clipped_bytes(in_window(d2h, w0, w1), w0, w1)
    over = in_window([r for r in rows if r["kind"] == "overhead"], w0, w1)
    out = {
        "window": {"start_ns": w0, "end_ns": w1, "how": how, "range_start_ns": r0, "range_end_ns": r1},
        "wall_us": wall / 1e3,
        "range_wall_us": (r1 - r0) / 1e3,
        "busy_pct": {"h2d": 100 * length(u_h) / wall, "d2h": 100 * length(u_d) / wall,
                     "kernels": 100 * length(u_k) / wall, "any_gpu": 100 * length(u_any) / wall},
        "both_copy_directions_pct": 100 * length(intersect(u_h, u_d)) / wall,
        "h2d_gaps": {"count": len(g), "total_us": sum(g_us), "p50_us": pct(g_us, 0.5),
                     "p90_us": pct(g_us, 0.9), "max_us": max(g_us, default=0),
                     "over_5us": sum(1 for x in g_us if x >= 5)},
        "bytes": {"h2d": bh, "d2h": bd},
        "gb_per_s": {"h2d": bh / wall, "d2h": bd / wall,
                     "h2d_while_busy": bh / length(u_h) if u_h else 0,
                     "d2h_while_busy": bd / length(u_d) if u_d else 0},
        "copies_in_window": {"h2d": len(in_window(h2d, w0, w1)), "d2h": len(in_window(d2h, w0, w1)),
                             "kernels": len(in_window(kern, w0, w1))},
        "driving_thread": drive,
        "threads": {str(t): {"driver_us": sum(v[1] for v in a.values()) / 1e3,
                             "apis": {k: {"calls": v[0], "us": v[1] / 1e3} for k, v in
                                      sorted(a.items(), key=lambda kv: -kv[1][1])}}
                    for t, a in api.items()},
        "cupti_overhead": {"count": len(over), "us": length(busy(over, w0, w1)) / 1e3},
        "gap_causes": gap_causes(g, h2d, corr_api),
        "issue_to_start": issue_to_start(in_window(h2d + d2h + kern, w0, w1), corr_api),
        "hops": {"h2d_to_kernel": hops(in_window(kern, w0, w1), h2d),
                 "kernel_to_d2h": hops(in_window(d2h, w0, w1), kern)},
        "range_phases_us": phases(h2d, r0, r1),
        "largest_h2d_gaps": [describe_gap(x, rows, drv, corr_api, w0)
                             for x in sorted(g, key=lambda x: x[0] - x[1])[:args.gaps]],
    }
    if args.images:
        total_h2d = clipped_bytes(h2d, r0, r1)
        img_in_window = args.images * bh / total_h2d if total_h2d else 0
        out["per_image_us"] = {"range": (r1 - r0) / 1e3 / args.images,
                               "window": wall / 1e3 / img_in_window if img_in_window else 0,
                               "images_in_window": img_in_window}
        if args.floor_us:
            out["x_floor"] = {k: v / args.floor_us for k, v in out["per_image_us"].items()
                              if k != "images_in_window"}
    return out


def show(o):
    p = print
    p(f"window: {o['window']['how']}")
    p(f"  wall {o['wall_us']:.1f} us of a {o['range_wall_us']:.1f} us range")
    b = o["busy_pct"]
    p(f"busy: H2D {b['h2d']:.1f} %  D2H {b['d2h']:.1f} %  kernels {b['kernels']:.1f} %  "
      f"any GPU work {b['any_gpu']:.1f} %;  both copy directions {o['both_copy_directions_pct']:.1f} %")
    c, r = o["copies_in_window"], o["gb_per_s"]
    p(f"moved: H2D {o['bytes']['h2d'] / 1e6:.1f} MB at {r['h2d']:.2f} GB/s ({r['h2d_while_busy']:.2f} "
      f"while busy), D2H {o['bytes']['d2h'] / 1e6:.1f} MB at {r['d2h']:.2f} GB/s "
      f"({r['d2h_while_busy']:.2f} while busy); {c['h2d']} H2D, {c['d2h']} D2H, {c['kernels']} kernels")
    g = o["h2d_gaps"]
    p(f"H2D idle gaps: {g['count']} ({g['over_5us']} >= 5 us), total {g['total_us']:.1f} us, "
      f"p50 {g['p50_us']:.2f} p90 {g['p90_us']:.2f} max {g['max_us']:.2f} us")
    if "per_image_us" in o:
        pi, x = o["per_image_us"], o.get("x_floor")
        xr = f" ({x['range']:.2f}x floor)" if x else ""
        xw = f" ({x['window']:.2f}x floor)" if x else ""
        p(f"per image: range {pi['range']:.1f} us{xr}, window {pi['window']:.1f} us{xw} "
          f"({pi['images_in_window']:.1f} images by H2D bytes)")
    ph = o["range_phases_us"]
    p(f"range: {ph['before_first_h2d']:.1f} us before its first upload, {ph['after_last_h2d']:.1f} us "
      "after its last (fill, drain)")
    gc = o["gap_causes"]
    p("H2D gaps by cause: " + ", ".join(f"{k} {v['count']} ({v['us']:.1f} us)" for k, v in gc.items()))
    p("issue -> GPU start (us, p10/p50/p90): " + ", ".join(
        f"{k} {v['p10_us']:.1f}/{v['p50_us']:.1f}/{v['p90_us']:.1f}" for k, v in o["issue_to_start"].items()))
    h = o["hops"]
    p(f"hand-offs (us, p50/p90): upload end -> kernel start {h['h2d_to_kernel']['p50_us']:.1f}/"
      f"{h['h2d_to_kernel']['p90_us']:.1f}, kernel end -> download start {h['kernel_to_d2h']['p50_us']:.1f}/"
      f"{h['kernel_to_d2h']['p90_us']:.1f}")
    if o.get("skipped_kinds"):
        p(f"note: the tracer ran without {o['skipped_kinds']} records (the driver refused them)")
    ov = o["cupti_overhead"]
    p(f"CUPTI overhead records in the window: {ov['count']} ({ov['us']:.1f} us)")
    p(f"driver API per host thread (driving thread: {o['driving_thread']}):")
    for t, e in sorted(o["threads"].items(), key=lambda kv: -kv[1]["driver_us"]):
        p(f"  thread {t}{' (driving)' if str(o['driving_thread']) == t else ''}: "
          f"{e['driver_us']:.1f} us in driver calls ({100 * e['driver_us'] / o['wall_us']:.1f} % of wall)")
        for k, v in list(e["apis"].items())[:10]:
            p(f"    {k:<28} {v['calls']:>7} calls {v['us']:>10.1f} us {v['us'] / v['calls']:>8.2f} us/call")
    p("largest H2D gaps:")
    for d in o["largest_h2d_gaps"]:
        p(f"  at {d['start_us']:.1f} us: {d['us']:.2f} us idle; {d['cause']}"
          + (f" ({d['next_h2d_api']} on thread {d['next_h2d_thread']} at "
             f"{d['next_h2d_issued_us']:+.2f} us)" if "next_h2d_api" in d else ""))
        if d["last_gpu_op"]:
            L = d["last_gpu_op"]
            p(f"    last GPU op before: {L['kind']} {L['what']} stream {L['stream']} "
              f"ended {L['end_us']:.1f} us")
        busy_ops = ", ".join(f"{x['kind']} {x['what'][:30]} s{x['stream']}" for x in d["gpu_during"][:4])
        p(f"    GPU during: {busy_ops or 'nothing'}")
        for t, a in d["threads"].items():
            calls = ", ".join(f"{k} x{v['calls']} {v['us']:.1f} us" for k, v in
                              sorted(a.items(), key=lambda kv: -kv[1]["us"])[:4])
            p(f"    thread {t}: {calls}")
        if not d["threads"]:
            p("    no host thread was in a driver call")


def table_row(path):
    with open(path) as f:
        o = json.load(f)
    case = os.path.basename(path).removesuffix(".json")
    b, g, x = o["busy_pct"], o["h2d_gaps"], o.get("x_floor", {})
    drive = o["threads"].get(str(o["driving_thread"]), {"driver_us": 0})
    gc, ph = o["gap_causes"], o["range_phases_us"]
    xs = f"{x['range']:.2f}x / {x['window']:.2f}x" if x else "-"
    return (f"| {case} | {xs} | {b['h2d']:.0f} | {b['d2h']:.0f} | {o['both_copy_directions_pct']:.0f} | "
            f"{b['kernels']:.0f} | {g['count']} ({g['over_5us']}) | {g['p90_us']:.1f} / {g['max_us']:.1f} | "
            f"{gc['host_late']['us']:.0f} / {gc['device']['us']:.0f} | "
            f"{100 * drive['driver_us'] / o['wall_us']:.0f} | {ph['before_first_h2d']:.0f} / "
            f"{ph['after_last_h2d']:.0f} |")


def table(argv):
    ap = argparse.ArgumentParser(prog="trace_report.py table",
                                 description="one markdown table over --json reports")
    ap.add_argument("--md")
    ap.add_argument("reports", nargs="+")
    a = ap.parse_args(argv)
    lines = ["| case | per image x floor: range / steady window | H2D busy % | D2H busy % | "
             "both ways % | kernels % | H2D gaps (>= 5 us) | gap p90 / max us | gap us: host late / "
             "device | driving thread in driver calls % | fill / drain us |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    bad = 0
    for p in a.reports:
        try:
            lines.append(table_row(p))
        except (OSError, KeyError, ValueError) as e:
            lines.append(f"| {os.path.basename(p)} | no report ({e}) |")
            bad += 1
    print("\n".join(lines))
    if a.md:
        with open(a.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if bad else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["table"]:
        return table(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--trim", type=float, default=0.1)
    ap.add_argument("--window", type=int, nargs=2, metavar=("START_NS", "END_NS"))
    ap.add_argument("--images", type=int, default=0)
    ap.add_argument("--floor-us", type=float, default=0)
    ap.add_argument("--gaps", type=int, default=5, help="largest gaps described (default 5)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if not 0 <= args.trim < 0.5:
        ap.error("--trim in [0, 0.5)")
    try:
        rows, meta = load(args.csv)
        check(rows, meta)
        o = report(rows, args)
        o["skipped_kinds"] = meta.get("skipped_kind", "")
    except (OSError, KeyError, ValueError, TraceError) as e:
        print(f"trace_report: {args.csv}: {e}", file=sys.stderr)
        return 1
    show(o)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(o, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
