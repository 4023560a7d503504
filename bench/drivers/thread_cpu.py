#!/usr/bin/env python3
"""thread_cpu.py - per-thread CPU of a process between two snapshots, by
thread name (a saturated thread is a serial bottleneck: ~100 % of a core).

  thread_cpu.py snap PID > A      (a snapshot: wall time + every thread's ticks)
  thread_cpu.py diff A B          (per name: threads, total %, busiest thread %)
  thread_cpu.py watch PID DIR     (a snapshot every 0.2 s until PID ends)
  thread_cpu.py busiest DIR [S]   (diff over the S seconds (default 1) that used
                                   the most CPU: the steady state of a short run)
"""
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def snap(pid):
    print(f"t {time.monotonic():.6f}")
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        print(f"{tid} {int(f[11]) + int(f[12])} {name.replace(' ', '_')}")


def load(path):
    t, rows = 0.0, {}
    with open(path) as f:
        for line in f:
            a = line.split()
            if a[0] == "t":
                t = float(a[1])
            else:
                rows[a[0]] = (int(a[1]), a[2])
    return t, rows


def diff(a, b):
    ta, ra = load(a)
    tb, rb = load(b)
    wall = tb - ta
    by = {}
    for tid, (ticks, name) in rb.items():
        used = (ticks - ra.get(tid, (0, name))[0]) / HZ / wall * 100
        # Numbered threads (rdk:broker1, ...) grouped by their stem.
        stem = name.rstrip("0123456789")
        by.setdefault(stem, []).append(used)
    print(f"thread CPU over {wall:.2f} s (% of one core): name threads total busiest")
    for stem, v in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        if sum(v) >= 1:
            print(f"  {stem:<18} {len(v):3d} {sum(v):7.1f} {max(v):7.1f}")


def watch(pid, d):
    os.makedirs(d, exist_ok=True)
    i = 0
    while os.path.exists(f"/proc/{pid}"):
        tmp = f"{d}/.tmp"
        with open(tmp, "w") as f:
            sys.stdout = f
            try:
                snap(pid)
            except OSError:
                break
            finally:
                sys.stdout = sys.__stdout__
        os.rename(tmp, f"{d}/{i:05d}")
        i += 1
        time.sleep(0.2)


def busiest(d, secs):
    snaps = sorted(f for f in os.listdir(d) if not f.startswith("."))
    paths = [f"{d}/{f}" for f in snaps]
    loaded = [load(p) for p in paths]
    best, pair = -1.0, None
    for i in range(len(loaded)):
        for j in range(i + 1, len(loaded)):
            if loaded[j][0] - loaded[i][0] >= secs:
                total = sum(t for t, _ in loaded[j][1].values()) - sum(
                    t for t, _ in loaded[i][1].values())
                if total > best:
                    best, pair = total, (paths[i], paths[j])
                break
    gaps = [b[0] - a[0] for a, b in zip(loaded, loaded[1:])]
    if gaps and max(gaps) > 1.0:
        # Reading /proc/PID/task/*/stat can wait while the process maps
        # memory (CUDA start-up, pinned allocations): say so.
        print(f"({len(loaded)} snapshots, the longest gap {max(gaps):.2f} s)")
    if pair:
        diff(*pair)
    elif len(paths) >= 2:
        diff(paths[0], paths[-1])


if __name__ == "__main__":
    if sys.argv[1] == "snap":
        snap(sys.argv[2])
    elif sys.argv[1] == "watch":
        watch(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "busiest":
        busiest(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
    else:
        diff(sys.argv[2], sys.argv[3])
