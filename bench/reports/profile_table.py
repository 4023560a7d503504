"""The table at the end of bench/drivers/profile.sh: one line per profiled kernel
(ncu: duration, SM %, DRAM %, achieved occupancy, registers, busiest pipe,
top stall reasons, a "bound by" verdict) and the API cases' per-phase
breakdown (the backend's host profile, IB_CUDA_PROFILE=1; nsys when it ran;
PCIe in both directions at once).

  profile_table.py --raw DIR      (DIR: profile.sh's profile_raw, manifest.tsv)

Reads `ncu --csv --page raw` (one row per kernel, metric names in the
header, units in the second row) and the long form (one row per metric:
"Metric Name", "Metric Unit", "Metric Value"). A missing file or metric
prints "-", never fails the table."""
import argparse
import csv
import io
import os
import re
import sys

TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "nanosecond": 1e-6, "us": 1e-3, "usecond": 1e-3,
         "microsecond": 1e-3, "ms": 1.0, "msecond": 1.0, "millisecond": 1.0, "s": 1e3, "second": 1e3}
ID_COLS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
           "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name",
           "Metric Unit", "Metric Value"}
# gpu_bench section 1's chains in launch order (gpu_bench.c chain_ids).
CHAIN_ORDER = ["k_chain_fold", "k_chain_unfold3", "k_color_point", "k_tone", "k_median3", "k_kernel3",
               "k_mix5", "k_mix4_notone"]
WHAT = {"k_chain_fold": "chain point>bri>point folded (1 LUT)",
        "k_chain_unfold3": "chain point>bri>point unfolded",
        "k_color_point": "chain color>point",
        "k_tone": "tone",
        "k_median3": "median 3x3",
        "k_mix5": "chain 5-op mix (with tone)",
        "k_mix4_notone": "chain: the mix without tone",
        "k_gauss8": "GaussianBlur(8)",
        "ref_copy": "copy reference (16 B/thread)",
        "npp_median3": "NPP median 3x3"}


def num(v):
    if v is None:
        return None
    v = str(v).strip().replace(",", "")
    try:
        return float(v)
    except ValueError:
        return None


def ncu_rows(path):
    """[(kernel name, {metric: (value str, unit)})] from an ncu CSV (raw
    page or long form), in profiled order."""
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return []
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = list(csv.reader(io.StringIO(text[start:])))
    if not rows:
        return []
    head = [h.strip() for h in rows[0]]
    if "Metric Name" in head and "Metric Value" in head:  # long form
        ix = {h: i for i, h in enumerate(head)}
        out, by_id = [], {}
        for r in rows[1:]:
            if len(r) < len(head):
                continue
            kid = r[ix["ID"]]
            if kid not in by_id:
                by_id[kid] = (r[ix["Kernel Name"]], {})
                out.append(by_id[kid])
            unit = r[ix["Metric Unit"]] if "Metric Unit" in ix else ""
            by_id[kid][1][r[ix["Metric Name"]]] = (r[ix["Metric Value"]], unit)
            for extra in ("Grid Size", "Block Size"):
                if extra in ix:
                    by_id[kid][1][extra] = (r[ix[extra]], "")
        return out
    units = rows[1] if len(rows) > 1 and rows[1] and rows[1][0].strip() == "" else None
    body = rows[2:] if units else rows[1:]
    out = []
    kcol = head.index("Kernel Name") if "Kernel Name" in head else None
    for r in body:
        if not r or len(r) < len(head) // 2:
            continue
        m = {}
        for i, h in enumerate(head):
            if h in ID_COLS or i >= len(r):
                continue
            m[h] = (r[i], units[i] if units and i < len(units) else "")
        for extra in ("Grid Size", "Block Size"):
            if extra in head and head.index(extra) < len(r):
                m[extra] = (r[head.index(extra)], "")
        out.append((r[kcol] if kcol is not None else "?", m))
    return out


def metric(m, name):
    v = m.get(name)
    return num(v[0]) if v else None


def duration_ms(m):
    v = m.get("gpu__time_duration.sum")
    if not v:
        return None
    x = num(v[0])
    unit = (v[1] or "ns").strip().lower()
    return None if x is None else x * TO_MS.get(unit, 1e-6)


def top_pipe(m):
    """The busiest pipe: max over sm__inst_executed_pipe_*/sm__pipe_*_cycles_active
    as % of peak (ComputeWorkloadAnalysis)."""
    best = None
    for k in m:
        g = re.match(r"sm__(?:inst_executed_pipe_|pipe_)([a-z0-9_]+?)(?:_cycles_active)?"
                     r"\.avg\.pct_of_peak_sustained_active$", k)
        if not g:
            continue
        v = metric(m, k)
        if v is not None and (best is None or v > best[1]):
            best = (g.group(1), v)
    return f"{best[0]} {best[1]:.0f}%" if best else "-"


def top_stalls(m, n=3):
    """The n largest stall reasons (WarpStateStats: cycles per issued
    instruction a warp spent stalled for each reason)."""
    st = {}
    for k in m:
        g = (re.match(r"smsp__average_warps?_issue_stalled_([a-z0-9_]+?)_per_issue_active\.ratio$", k)
             or re.match(r"smsp__average_warp_latency_issue_stalled_([a-z0-9_]+?)\.ratio$", k))
        if not g or g.group(1) in ("selected", "not_selected"):
            continue
        v = metric(m, k)
        if v is not None and v > 0:
            st[g.group(1)] = max(st.get(g.group(1), 0), v)
    top = sorted(st.items(), key=lambda kv: -kv[1])[:n]
    short = {"long_scoreboard": "long_sb", "short_scoreboard": "short_sb", "math_pipe_throttle": "math_thr",
             "mio_throttle": "mio_thr", "lg_throttle": "lg_thr", "tex_throttle": "tex_thr"}
    return ", ".join(f"{short.get(k, k)} {v:.1f}" for k, v in top) if top else "-"


def occ_limiter(m):
    lim = {}
    for k in m:
        g = re.match(r"launch__occupancy_limit_([a-z_]+)$", k)
        v = metric(m, k)
        if g and v is not None:
            lim[g.group(1)] = v
    if not lim:
        return "-"
    low = min(lim.values())
    return "/".join(sorted(k for k, v in lim.items() if v == low)) + f"={low:.0f}"


def verdict(ms, sm, mem, dram, occ, stalls, pipe):
    """ncu's speed-of-light reading: a unit at >= 60 % of its peak bounds the
    kernel; both lower means latency (too little work in flight or dependent
    stalls); a few microseconds is launch-bound."""
    if ms is None:
        return "-"
    if ms < 0.008:
        return "launch (a few us)"
    sm, mem, dram = sm or 0, mem or 0, dram or 0
    if max(sm, mem) >= 60:
        if sm >= mem:
            return f"compute ({pipe.split(' ')[0]} pipe)" if pipe != "-" else "compute"
        return "memory (DRAM)" if dram >= 60 else "memory (L1/L2/shared)"
    first = stalls.split(",")[0].split(" ")[0] if stalls != "-" else "?"
    return f"latency ({first}; occupancy {occ:.0f}%)" if occ is not None else f"latency ({first})"


def events_ms(out_path):
    """gpu_bench's own event timings from the same process (cross-check of
    the launch ncu picked): {chain id: ms, 'k_gauss8': ms, 'copy': ms}."""
    res = {}
    try:
        text = open(out_path, errors="replace").read()
    except OSError:
        return res
    chains = re.findall(r"^chain 4096\^2 RGBA .*?\s([0-9.]+) ms\s+[0-9.]+ % of copy bw", text, re.M)
    for cid, v in zip(CHAIN_ORDER, chains):
        res[cid] = float(v)
    g = re.search(r"^GaussianBlur\(8\) 4096\^2 RGBA.*?([0-9.]+) ms", text, re.M)
    if g:
        res["k_gauss8"] = float(g.group(1))
    g = re.search(r"^D2D copy 64 MiB\s+([0-9.]+) ms", text, re.M)
    if g:
        res["copy"] = float(g.group(1))
    return res


def fmt(v, spec, dash="-"):
    return dash if v is None else format(v, spec)


def kernel_table(raw, man):
    lines = []
    hdr = (f"{'kernel':<40} {'ms':>7} {'events':>7} {'SM%':>4} {'mem%':>4} {'DRAM%':>5} {'occ%':>4} "
           f"{'regs':>4} {'occ.limit':<14} {'grid x blk':<11} {'top pipe':<14} {'top stalls (cycles/instr)':<44} "
           f"bound by")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    copy_ms = None
    parsed = []
    for label, kind, f, note in man:
        if kind != "ncu":
            continue
        rows = ncu_rows(os.path.join(raw, f))
        ev = events_ms(os.path.join(raw, note)) if note else {}
        if not rows:
            why = "no CSV" if not os.path.exists(os.path.join(raw, f)) else "no kernel profiled"
            parsed.append((label, None, None, ev, why))
            continue
        for i, (kname, m) in enumerate(rows):
            parsed.append((label, i, (kname, m), ev, ""))
            if label == "ref_copy" and copy_ms is None:
                copy_ms = duration_ms(m)
    sums = {}
    for label, i, km, ev, why in parsed:
        what = WHAT.get(label, label)
        if km is None:
            lines.append(f"{what:<40} {'-':>7} {fmt(ev.get(label), '7.3f'):>7}  ({why}; see {label}.out)")
            continue
        kname, m = km
        short = kname.split("(")[0]
        if label == "k_gauss8":
            what = f"{what}: {'rows' if short == 'ib_chain' else 'cols pass ' + str(i)}"
        elif label == "ref_copy":
            g = re.findall(r"\d+", m.get("Grid Size", ("?",))[0])
            what = f"copy ref 16 B/thread, grid {g[0] if g else '?'}"
        elif label not in WHAT:
            what = f"{label}: {short}"[:40]
        ms = duration_ms(m)
        if ms is not None:
            sums[label] = sums.get(label, 0.0) + ms
        sm = metric(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
        mem = metric(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
        dram = metric(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed")
        occ = metric(m, "sm__warps_active.avg.pct_of_peak_sustained_active")
        regs = metric(m, "launch__registers_per_thread")
        grid, blk = metric(m, "launch__grid_size"), metric(m, "launch__block_size")
        gb = f"{grid:.0f}x{blk:.0f}" if grid is not None and blk is not None else "-"
        pipe, stalls = top_pipe(m), top_stalls(m)
        evs = ev.get(label) if label not in ("k_gauss8", "ref_copy") else None
        lines.append(f"{what[:40]:<40} {fmt(ms, '7.4f'):>7} {fmt(evs, '7.3f'):>7} {fmt(sm, '4.0f'):>4} "
                     f"{fmt(mem, '4.0f'):>4} {fmt(dram, '5.0f'):>5} {fmt(occ, '4.0f'):>4} {fmt(regs, '4.0f'):>4} "
                     f"{occ_limiter(m):<14} {gb:<11} {pipe:<14} {stalls[:44]:<44} "
                     f"{verdict(ms, sm, mem, dram, occ, stalls, pipe)}")
    lines.append("")
    if "k_gauss8" in sums:
        ev = next((e.get("k_gauss8") for lab, _, _, e, _ in parsed if lab == "k_gauss8"), None)
        lines.append(f"GaussianBlur(8) 4096^2 RGBA, sum of its kernels under ncu: {sums['k_gauss8']:.3f} ms"
                     f" (events, rows + 3 column passes: {fmt(ev, '.3f')} ms)")
    if copy_ms:
        lines.append(f"copy reference {copy_ms:.4f} ms (ncu, capped grid); chains as % of it (the "
                     "'% of copy bandwidth' of RESULTS.md, same bytes):")
        for label in CHAIN_ORDER:
            if label in sums:
                lines.append(f"  {WHAT.get(label, label):<40} {100.0 * copy_ms / sums[label]:5.1f} %")
    lines.append("(events: gpu_bench's CUDA-event median in the same process, a check that ncu timed "
                 "the intended launch; ms under ncu runs without clock control and caches flushed)")
    return lines


def api_block(raw, label, note):
    """The lines of one gpu_bench API run: throughput, host profile."""
    try:
        text = open(os.path.join(raw, label + ".out"), errors="replace").read()
    except OSError:
        return [f"{label}: no output ({note})"]
    out = [f"{label}: {note}"]
    bad = re.findall(r"^(MISMATCH.*|bench: .*failed.*)$", text, re.M)
    out += [f"  !! {b}" for b in bad[:3]]
    ips = re.search(r"256\^2 RGB invert API zero copy, images/s\s+([0-9]+)/s", text)
    floor = re.search(r"PCIe floor, images/s \(overlapped\)\s+([0-9]+)/s", text)
    parse = re.search(r"parse_buffer per image\s+([0-9.]+) ms", text)
    pipe = re.search(r"pipeline only 256\^2 RGB invert, images/s\s+([0-9]+)/s", text)
    wall_us = None
    if ips:
        wall_us = 1e6 / float(ips.group(1))
        out.append(f"  throughput {int(ips.group(1)):,}/s = {wall_us:.2f} us/image"
                   + (f" (PCIe floor {int(floor.group(1)):,}/s)" if floor else "")
                   + (f"; parse_buffer {float(parse.group(1)) * 1e3:.2f} us/image" if parse else "")
                   + (f"; device-only pipeline {int(pipe.group(1)):,}/s" if pipe else ""))
    for g in re.finditer(r"^\s{2}(\S.*?)\s+zero copy ([0-9.]+) ms/img \(parse_buffer ([0-9.]+)", text, re.M):
        wall_us = float(g.group(2)) * 1e3
        out.append(f"  {g.group(1)}: {float(g.group(2)):.3f} ms/image through the API "
                   f"(parse_buffer {float(g.group(3)) * 1e3:.1f} us)")
    for g in re.finditer(r"^(\S.*?)\s+\d+\s+[0-9.]+\s+[0-9.]+ \|\s+([0-9.]+)\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)x\s+"
                         r"([0-9.]+)x", text, re.M):
        out.append(f"  {g.group(1).strip()}: {g.group(3)}x the overlapped PCIe floor, {g.group(4)}x the serial one")
    prof = re.findall(r"cuda host profile \(([^)]*)\): (\d+) submissions, (\d+) jobs; us per job: plan ([0-9.]+), "
                      r"staging ([0-9.]+), launch ([0-9.]+), blocked on device ([0-9.]+), result copies ([0-9.]+)", text)
    for lab, nsub, njobs, plan, stg, lau, dev, res in prof:
        plan, stg, lau, dev, res = map(float, (plan, stg, lau, dev, res))
        host = plan + stg + lau + res
        line = (f"  backend per job ({njobs} jobs / {nsub} submissions, all feeds and warm-ups): plan {plan:.2f} + "
                f"staging {stg:.2f} + launch {lau:.2f} + result {res:.2f} = host {host:.2f} us; "
                f"blocked on device {dev:.2f} us")
        out.append(line)
        if wall_us and wall_us < 100:
            rest = wall_us - host - dev
            out.append(f"  => of {wall_us:.2f} us/image: backend host {100 * host / wall_us:.0f} %, waiting on "
                       f"the device {100 * dev / wall_us:.0f} %, the rest (executor core: parse, admission, "
                       f"delivery, release; feed) {rest:.2f} us = {100 * rest / wall_us:.0f} %")
    if not prof:
        out.append("  (no 'cuda host profile' line: IB_CUDA_PROFILE=1 not honoured or the run failed)")
    return out


def nsys_block(raw, label, f):
    """GPU busy time by kind and the idle gaps, from nsys' cuda_gpu_trace."""
    try:
        text = open(os.path.join(raw, f), errors="replace").read()
    except OSError:
        return [f"{label}: no nsys trace"]
    start = text.find("Start")
    rows = list(csv.DictReader(io.StringIO(text[max(text.rfind("\n", 0, start) + 1, 0):]))) if start >= 0 else []
    ev = []
    for r in rows:
        s = num(r.get("Start (ns)") or r.get("Start"))
        d = num(r.get("Duration (ns)") or r.get("Duration"))
        name = r.get("Name") or ""
        if s is None or d is None:
            continue
        kind = ("H2D" if re.search(r"HtoD|Host-to-Device", name) else
                "D2H" if re.search(r"DtoH|Device-to-Host", name) else
                "memcpy/set" if name.startswith("[") else "kernel")
        ev.append((s, s + d, kind))
    if not ev:
        return [f"{label}: nsys trace without rows"]
    ev.sort()
    t0, t1 = ev[0][0], max(e for _, e, _ in ev)
    busy = {}
    for s, e, k in ev:
        busy[k] = busy.get(k, 0.0) + (e - s)
    idle, cur = 0.0, ev[0][1]
    for s, e, _ in ev[1:]:
        if s > cur:
            idle += s - cur
        cur = max(cur, e)
    span = t1 - t0
    parts = ", ".join(f"{k} {v / 1e6:.2f} ms ({100 * v / span:.0f} %)" for k, v in sorted(busy.items()))
    return [f"{label}: GPU span {span / 1e6:.2f} ms, {len(ev)} activities: {parts}; "
            f"nothing on the GPU for {idle / 1e6:.2f} ms ({100 * idle / span:.0f} %)"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True, help="profile.sh's profile_raw folder")
    a = ap.parse_args()
    man = []
    try:
        for line in open(os.path.join(a.raw, "manifest.tsv")):
            p = line.rstrip("\n").split("\t")
            if len(p) >= 3:
                man.append((p[0], p[1], p[2], p[3] if len(p) > 3 else ""))
    except OSError:
        print(f"profile_table: no manifest.tsv in {a.raw}", file=sys.stderr)
        return 2
    print("== kernels, 4096^2 RGBA (ncu --clock-control none; one launch each) ==")
    if any(k == "ncu" for _, k, _, _ in man):
        for line in kernel_table(a.raw, man):
            print(line)
    else:
        print("(not profiled: " + "; ".join(n for l, k, _, n in man if l == "ncu") + ")")
    print("\n== API cases: where the time goes ==")
    for label, kind, f, note in man:
        if kind == "api":
            for line in api_block(a.raw, label, note):
                print(line)
        elif kind == "nsys":
            for line in nsys_block(a.raw, label, f):
                print(line)
        elif kind == "skipped" and label == "nsys":
            print("nsys: not run (" + note + "): no timeline; the host profile below splits each job's time")
    for label, kind, f, note in man:
        if kind == "bidir":
            try:
                for line in open(os.path.join(a.raw, f), errors="replace"):
                    if line.startswith("bidir:"):
                        print(line.rstrip())
            except OSError:
                print("bidir: no output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
