"""What the soak samples, how it judges "flat", and its CSV and SVG.

Figures per sample, summed over the live workers: from /proc (RSS, open
file descriptors, threads) and from each worker's /metrics (credits in use,
module-cache entries and bytes, disk cache size: the disk cache is one
directory, so its largest view), and the GPU's memory in use
(nvidia-smi, cuda runs only), and the backend's pools with their caps
(imgbatch_host_pool_bytes: cuda's pinned pool, the cpu backend's large
blocks; imgbatch_device_pool_bytes: cuda's device blocks), and the PNG
scratch the codec threads keep (imgbatch_codec_scratch_bytes, within its
budget). rss_net_mb is RSS less the host pool and the codec scratch (their
pages are resident, so inside RSS) and
device_net_mb the GPU's memory less the device pool: what is left when the
pools are taken out, judged apart from them.

Flat: after the warm-up (the first 10 % of jobs), a figure's median over the
samples of the last quarter of the jobs must not exceed its median over the
second quarter by more than 5 % (a fall is no leak: it is shown, not failed).
With rolling restarts the figures are a saw-tooth (each restart empties one
worker, which then fills again), and two quarters hold different phases of
it: there the windows are whole restart periods (every worker restarted
once): the quarters when each is a whole number of periods, else the first
period after the warm-up against the last.

Bounded: the caches that keep what they allocated for reuse (the host and
device pools, the codec scratch, the module cache, the disk cache) fill towards their caps for
as long as new sizes and new kernels keep arriving, and each rolling restart
empties one worker's and lets it fill again; the Q2/Q4 rule cannot tell that
from a leak. Such a figure that is not flat passes as "bounded" when no
sample after the warm-up exceeds its cap, summed over the workers scraped at
that sample (cap_* columns, each worker's caps from its /metrics:
imgbatch_{host,device}_pool_cap_bytes, imgbatch_codec_scratch_cap_bytes,
imgbatch_module_cache_cap_bytes and
imgbatch_disk_cache_cap_bytes; the disk cache is one directory, so its
largest cap). A worker that does not report a cap adds none (the soak has
no defaults of its own): where no worker reports one, the figure cannot pass
as bounded and must be flat. RSS passes as bounded when
rss_net_mb is flat and the host pool and codec scratch bounded, the GPU's memory when
device_net_mb is flat and the device pool bounded, the module count when
the modules' bytes are. A leak outside the pools shows in rss_net_mb, fds,
threads or the credits; one inside a pool cannot pass its cap, and a block
never given back shows as a credit still in use at the end.

Credits are load, not leaks: they are judged at the end, where every one
must be back to zero."""
import http.client
import math
import os
import statistics
import subprocess
from typing import Dict, List, Optional

FLAT = ["rss_mb", "rss_net_mb", "fds", "threads", "host_pool_mb", "scratch_mb", "modules", "module_mb",
        "disk_cache_mb", "device_mb", "device_pool_mb", "device_net_mb"]
CREDITS = ["gpu_bytes", "host_bytes", "jobs", "in_flight"]
# A cache's cap (MB, summed over the live workers) for the figures that have one.
CAPPED = {"host_pool_mb": "cap_host_pool_mb", "scratch_mb": "cap_scratch_mb",
          "device_pool_mb": "cap_device_pool_mb",
          "module_mb": "cap_module_mb", "disk_cache_mb": "cap_disk_mb"}
# Figures of the one disk cache directory the workers share: the largest
# worker's view and the largest cap, not their sums.
SHARED = {"disk_cache_mb", "cap_disk_mb"}
# Figures that pass as bounded when the ones named are flat or bounded.
FOLLOWS = {"rss_mb": ("rss_net_mb", "host_pool_mb", "scratch_mb"),
           "device_mb": ("device_net_mb", "device_pool_mb"),
           "modules": ("module_mb",)}
COLUMNS = (["t_s", "answered", "jobs_per_s"] + FLAT + [f"credit_{c}" for c in CREDITS]
           + sorted(CAPPED.values()))
TOLERANCE = 0.05
WARMUP = 0.10
MB = 1 << 20


def proc_figures(pid: int) -> Optional[Dict[str, float]]:
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None  # exited meanwhile
    rss_kb = int(status.get("VmRSS", "0 kB").split()[0])
    return {"rss_mb": rss_kb / 1024, "fds": fds, "threads": int(status["Threads"])}


def scrape(addr: str) -> Optional[Dict[str, float]]:
    """A worker's /metrics, as {name or name{labels}: value}."""
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=3)
    try:
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
    except OSError:
        return None
    finally:
        c.close()
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def metric_figures(m: Dict[str, float]) -> Dict[str, float]:
    # A cap the worker does not export is 0 here, never a default of our
    # own: judge() then finds no cap, and the figure must be flat.
    f = {"host_pool_mb": m.get("imgbatch_host_pool_bytes", 0) / MB,
         "cap_host_pool_mb": m.get("imgbatch_host_pool_cap_bytes", 0) / MB,
         "scratch_mb": m.get("imgbatch_codec_scratch_bytes", 0) / MB,
         "cap_scratch_mb": m.get("imgbatch_codec_scratch_cap_bytes", 0) / MB,
         "device_pool_mb": m.get("imgbatch_device_pool_bytes", 0) / MB,
         "cap_device_pool_mb": m.get("imgbatch_device_pool_cap_bytes", 0) / MB,
         "modules": m.get("imgbatch_module_cache_entries", 0),
         "module_mb": m.get("imgbatch_module_cache_bytes", 0) / MB,
         "cap_module_mb": m.get("imgbatch_module_cache_cap_bytes", 0) / MB,
         "disk_cache_mb": m.get("imgbatch_disk_cache_bytes", 0) / MB,
         "cap_disk_mb": m.get("imgbatch_disk_cache_cap_bytes", 0) / MB}
    for c in CREDITS:
        f[f"credit_{c}"] = m.get(f'imgbatch_credit_in_use{{credit="{c}"}}', 0)
    return f


def device_mb() -> float:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
        return float(sum(float(x) for x in out.split()))
    except (OSError, ValueError, subprocess.SubprocessError):
        return 0.0


def windows(total: int, period: float = 0.0):
    """The early and the late window, in jobs answered: the second and the
    last quarter, or with restarts every `period` jobs per worker round
    (workers x jobs / (restarts + 1)) whose quarters are not whole periods
    the first whole period after the warm-up and the last whole one. When a
    quarter is a whole number of periods (2 workers, 15 restarts: 2 periods
    a quarter) the quarters hold the same phases of the saw-tooth, and each
    window's median is taken over several periods rather than one."""
    quarters = (max(0.25, WARMUP) * total, 0.5 * total), (0.75 * total, 1.0 * total)
    if period > 0:
        k = total / 4 / period
        if k >= 1 and abs(k - round(k)) < 1e-6:
            return quarters
        first = math.ceil(WARMUP * total / period - 1e-9)
        last = math.floor(total / period + 1e-9) - 1
        if last > first:
            return (first * period, (first + 1) * period), (last * period, (last + 1) * period)
    return quarters


def windows_text(total: int, period: float = 0.0) -> str:
    (a, b), (c, d) = windows(total, period)
    n = (b - a) / period if period > 0 else 0
    whole = n >= 1 and abs(n - round(n)) < 1e-6 and abs((d - c) - (b - a)) < 1e-6
    what = "quarters" if abs((b - a) - total / 4) < 1e-6 else "windows"
    if whole:
        what = (f"quarters, {round(n)} whole restart period{'s' if round(n) > 1 else ''} each"
                if what == "quarters" else "whole restart periods")
    return f"judged: jobs {a:.0f}..{b:.0f} against {c:.0f}..{d:.0f} ({what})"


def judge(samples: List[Dict[str, float]], total: int,
          period: float = 0.0) -> List[Dict[str, object]]:
    """Per figure: the early and late windows' medians (windows()), the
    change, the verdict (flat, fell, bounded, GREW or TOO FEW SAMPLES) and,
    for a capped figure, its largest value after the warm-up and the cap
    there."""
    (a2, b2), (a4, b4) = windows(total, period)
    q2 = [s for s in samples if a2 <= s["answered"] < b2]
    q4 = [s for s in samples if a4 <= s["answered"] < b4]
    after = [s for s in samples if WARMUP * total <= s["answered"]]
    rows = {}
    for name in FLAT:
        if not q2 or not q4:
            rows[name] = {"figure": name, "q2": None, "q4": None, "change": None,
                          "verdict": "TOO FEW SAMPLES"}
            continue
        a = statistics.median(s[name] for s in q2)
        b = statistics.median(s[name] for s in q4)
        change = (b - a) / a if a else (0.0 if b == 0 else float("inf"))
        verdict = "GREW" if change > TOLERANCE else "fell" if change < -TOLERANCE else "flat"
        row = {"figure": name, "q2": a, "q4": b, "change": change, "verdict": verdict}
        cap = CAPPED.get(name)
        if cap and all(cap in s for s in after):
            worst = max(after, key=lambda s: s[name] - s[cap])
            row["peak"], row["cap"] = worst[name], worst[cap]
            if verdict == "GREW" and worst[cap] > 0 and worst[name] <= worst[cap]:
                row["verdict"] = "bounded"
        rows[name] = row
    for name, by in FOLLOWS.items():
        if rows[name]["verdict"] == "GREW" and all(
                rows[b]["verdict"] in ("flat", "fell", "bounded") for b in by):
            rows[name]["verdict"] = "bounded"
    return [rows[name] for name in FLAT]


def write_csv(path: str, samples: List[Dict[str, float]]) -> None:
    with open(path, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for s in samples:
            f.write(",".join(f"{s.get(c, 0):.3f}" for c in COLUMNS) + "\n")


def write_svg(path: str, samples: List[Dict[str, float]], title: str) -> None:
    """One small panel per figure against jobs answered, written by hand
    (matplotlib is not among the pinned requirements)."""
    names = FLAT + [f"credit_{c}" for c in CREDITS]
    cols, pw, ph = 3, 300, 150
    rows = (len(names) + cols - 1) // cols
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * pw}" height="{rows * ph + 30}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="8" y="18" font-size="14">{title}</text>']
    xmax = max([s["answered"] for s in samples] + [1])
    for i, name in enumerate(names):
        x0, y0 = (i % cols) * pw + 40, (i // cols) * ph + 40
        w, h = pw - 55, ph - 40
        ys = [s.get(name, 0) for s in samples]
        lo, hi = min(ys + [0]), max(ys + [1e-9])
        pts = " ".join(f"{x0 + w * s['answered'] / xmax:.1f},{y0 + h - h * (v - lo) / (hi - lo or 1):.1f}"
                       for s, v in zip(samples, ys))
        out += [f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>',
                f'<text x="{x0}" y="{y0 - 4}">{name} (max {hi:.4g})</text>',
                f'<polyline points="{pts}" fill="none" stroke="#2060c0"/>']
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
