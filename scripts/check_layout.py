#!/usr/bin/env python3
"""No folder cycles under worker/ (README, "Layout").

Reads every #include "x/y.h" in worker/**/*.c and *.h, draws an edge from
the including file's folder to folder x when x is a folder of worker/, and
fails (exit 1) when any folder reaches, through such edges, a folder that
reaches back to it: each cycle is printed with one include per edge that
makes it. Also fails when a file under bench/ includes anything under
tests/. Usage: check_layout.py [ROOT] (default: the repository root).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE.findall(f.read())


def folder_graph(worker):
    """{folder: {target folder: 'file -> include' (the first seen)}}"""
    folders = sorted(d for d in os.listdir(worker) if os.path.isdir(os.path.join(worker, d)))
    graph = {d: {} for d in folders}
    for d in folders:
        for dirpath, _, files in os.walk(os.path.join(worker, d)):
            for name in sorted(files):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                for inc in includes(path):
                    target = resolve(worker, dirpath, inc)
                    if target and target != d and target in graph:
                        rel = os.path.relpath(path, os.path.dirname(worker))
                        graph[d].setdefault(target, f'{rel} includes "{inc}"')
    return graph


def resolve(worker, dirpath, inc):
    """The worker/ folder an include names, or None (kernels/, proto/...)."""
    local = os.path.normpath(os.path.join(dirpath, inc))
    if os.path.exists(local):  # relative to the including file
        rel = os.path.relpath(local, worker)
    elif os.path.exists(os.path.join(worker, inc)):  # -I worker
        rel = inc
    elif os.path.exists(os.path.join(worker, "include", inc)):  # -I worker/include
        rel = os.path.join("include", inc)
    else:
        return None
    head = rel.split(os.sep)[0]
    return None if head == ".." else head


def strongly_connected(graph):
    """Tarjan: the components of more than one folder (or a self edge)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def a_cycle(graph, comp):
    """One cycle through the component's first folder (BFS back to it)."""
    start, members = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v]):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def bench_on_tests(root):
    bad = []
    bench = os.path.join(root, "bench")
    for dirpath, _, files in os.walk(bench):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            for inc in includes(path):
                target = os.path.relpath(os.path.normpath(os.path.join(dirpath, inc)), root)
                if target.startswith("tests" + os.sep) or inc.startswith("tests/"):
                    bad.append(f'{os.path.relpath(path, root)} includes "{inc}"')
    return bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    worker = os.path.join(root, "worker")
    graph = folder_graph(worker)
    failed = False
    for comp in strongly_connected(graph):
        failed = True
        cycle = a_cycle(graph, comp)
        print("folder cycle under worker/: " + " -> ".join(cycle) +
              f"  (all of {', '.join(comp)} reach each other)")
        for a, b in zip(cycle, cycle[1:]):
            print(f"  {a} -> {b}: {graph[a][b]}")
    for line in bench_on_tests(root):
        failed = True
        print("bench reaches into tests/: " + line)
    if failed:
        return 1
    order = " ".join(f"{d}->{{{','.join(sorted(graph[d]))}}}" for d in sorted(graph))
    print(f"check_layout: no folder cycles under worker/ ({len(graph)} folders: {order})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
