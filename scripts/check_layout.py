#!/usr/bin/env python3
"""The include structure of the tree, checked (ctest layout/folders; README, "Layout").

1. No folder cycles under worker/. Every #include "x/y.h" in worker/**/*.c
   and *.h draws an edge from the including file's folder to folder x when
   x is a folder of worker/; a folder that reaches, through such edges, a
   folder that reaches back to it fails, and each cycle is printed with one
   include per edge that makes it.

2. No circle of more than two units inside one folder. What counts:
   - The folders are every directory under worker/, kernels/, bench/,
     tests/ and tools/ that holds .c, .h, .cu or .cuh files; each folder is
     judged alone (a subfolder is a folder of its own).
   - A unit is the files of one folder that share a stem: x.c, x.h, x.cu
     and x.cuh are one unit "x". An implementation and its header are one
     thing to a reader: whoever includes x.h depends on what x.c does, and
     x.c may call whatever its own includes declare. So when x.c includes
     y.h and y.c includes x.h, x and y form a circle of two units, although
     no file includes itself through the others. A header without a .c of
     its stem (a types-only header such as kafka/wstate.h) is a unit of its
     own.
   - An edge runs from unit A to unit B of the same folder when a file of A
     has an #include "..." that names a file of B (looked up as the compiler
     does: beside the including file, then under worker/, worker/include/
     and the root). Includes in <...>, and includes of other folders, draw
     no edge here (part 1 judges folders).
   - A circle is a strongly connected component of that graph; one of more
     than two units fails. Two units that need each other are allowed (a
     header and a second header it shares types with; a genuine mutual
     recursion), bigger knots are not: they come from helpers that live in
     the coordinating file instead of a file of their own.
   - ALLOWED below names circles that may stand, each with the reason; an
     entry that matches no circle of today fails too, so the list cannot
     outlive what it excuses.
   - With --objects DIR (ctest passes the library's and the CLI's object
     folders), calls draw edges too: an object file of A that needs a
     global symbol (nm: undefined) that an object file of B of the same
     folder defines. Includes alone cannot see the calls between .c files
     that share one header declaring them all (an "internal.h"); worker/exec
     once had a circle of six files that way and passed.

3. No file under bench/ includes anything under tests/.

Usage: check_layout.py [ROOT] [--objects DIR]... (ROOT default: the
repository root; DIR: a CMake target's object folder, whose object files
mirror the source paths, e.g. build/CMakeFiles/imgbatch_core.dir). Before it
judges ROOT it judges a few small trees of its own (self_test), so a broken
check fails instead of passing everything.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

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


# Circles of more than two units that may stand inside a folder: (folder,
# units, why). `units` is the exact set, so the entry excuses that circle
# and no bigger one. Meant for genuine mutual recursion (functions that call
# each other through three files or more, each step a real recursion), with
# the functions named in why and in a comment at the code.
ALLOWED = []

SOURCE_DIRS = ("worker", "kernels", "bench", "tests", "tools")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")


def unit_of(name):
    return name.rsplit(".", 1)[0]


def resolve_file(root, dirpath, inc):
    """The file an #include "inc" in dirpath names, or None (not ours)."""
    for base in (dirpath, os.path.join(root, "worker"), os.path.join(root, "worker", "include"),
                 root):
        path = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(path):
            return path
    return None


def source_folders(root):
    """{folder relative to root: [source file names]} for every folder that holds sources."""
    out = {}
    for top in SOURCE_DIRS:
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            names = sorted(f for f in files if f.endswith(SOURCE_EXT))
            if names:
                out[os.path.relpath(dirpath, root)] = names
    return out


def unit_graph(root, folder, names):
    """{unit: {unit: 'file includes "x"' (the first seen)}} inside one folder."""
    dirpath = os.path.join(root, folder)
    graph = {unit_of(n): {} for n in names}
    for name in names:
        a = unit_of(name)
        for inc in includes(os.path.join(dirpath, name)):
            target = resolve_file(root, dirpath, inc)
            if not target or os.path.dirname(target) != os.path.normpath(dirpath):
                continue
            b = unit_of(os.path.basename(target))
            if b != a and b in graph:
                graph[a].setdefault(b, f'{name} includes "{inc}"')
    return graph


def symbols(obj):
    """(defined, needed) global symbols of one object file (nm)."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        if parts[1] == "U":
            needed.add(parts[0])
        elif parts[1] in "TDBRCVW":  # global text, data, bss, read-only, common, weak
            defined.add(parts[0])
    return defined, needed


def call_edges(objects):
    """{folder: {unit: {unit: 'a.c calls sym'}}} from object folders whose
    files mirror the source tree (worker/exec/job.c.o is unit job of
    worker/exec)."""
    units = {}  # object path -> (folder, unit, source name)
    for top in objects:
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if name.endswith(".o"):
                    src = name[:-2]
                    units[os.path.join(dirpath, name)] = (
                        os.path.relpath(dirpath, top), unit_of(src), src)
    syms = {obj: symbols(obj) for obj in units}
    owner = {}  # (folder, symbol) -> unit
    for obj, (folder, unit, _) in units.items():
        for sym in syms[obj][0]:
            owner[(folder, sym)] = unit
    edges = {}
    for obj, (folder, unit, src) in units.items():
        for sym in sorted(syms[obj][1]):
            b = owner.get((folder, sym))
            if b and b != unit:
                edges.setdefault(folder, {}).setdefault(unit, {}).setdefault(b, f"{src} calls {sym}")
    return edges


def folder_circles(root, objects=()):
    """[(folder, units, graph)] for every circle of two units or more."""
    out = []
    calls = call_edges(objects) if objects else {}
    for folder, names in sorted(source_folders(root).items()):
        graph = unit_graph(root, folder, names)
        for a, targets in calls.get(folder, {}).items():
            for b, why in targets.items():
                if a in graph and b in graph:
                    graph[a].setdefault(b, why)
        for comp in strongly_connected(graph):
            out.append((folder, comp, graph))
    return out


def judge_circles(root, allow, objects=()):
    """(failures, notes) of part 2; `allow` is the allow-list to judge by."""
    failures, notes, used = [], [], set()
    for folder, comp, graph in folder_circles(root, objects):
        what = f"{folder}: {len(comp)} units in a circle ({', '.join(comp)})"
        edges = [f"  {a} -> {b}: {graph[a][b]}" for a in comp for b in sorted(graph[a])
                 if b in comp]
        if len(comp) <= 2:
            notes.append(what + " - two may need each other")
            continue
        entry = next((e for e in allow if e[0] == folder and sorted(e[1]) == comp), None)
        if entry:
            used.add(id(entry))
            notes.append(what + f" - allowed: {entry[2]}")
        else:
            failures.append(f"circle of more than two units inside {what}:")
            failures.extend(edges)
    for entry in allow:
        if id(entry) not in used:
            failures.append(f"stale allow-list entry (no such circle of more than two units "
                            f"today; delete it): {entry[0]} {entry[1]}")
    return failures, notes


def self_test():
    """Judges small trees whose verdicts are known; returns what it got wrong."""
    cases = [
        # x.c -> y.h, y.c -> x.h: two units need each other, allowed.
        ("pair", {"x.c": ["x.h", "y.h"], "x.h": [], "y.c": ["x.h"], "y.h": []}, [], 0),
        # a -> b -> c -> a through .c files and the others' headers.
        ("three", {"a.c": ["b.h"], "a.h": [], "b.c": ["c.h"], "b.h": [], "c.c": ["a.h"],
                   "c.h": []}, [], 1),
        # The same three, excused by an exact entry.
        ("three allowed", {"a.c": ["b.h"], "a.h": [], "b.c": ["c.h"], "b.h": [],
                           "c.c": ["a.h"], "c.h": []}, [("worker/k", ["a", "b", "c"], "t")], 0),
        # An entry for a circle that is not there is stale.
        ("stale", {"a.c": ["a.h"], "a.h": []}, [("worker/k", ["a", "b", "c"], "t")], 1),
        # One types-only header that every .c includes ties nothing.
        ("shared header", {"s.h": [], "a.c": ["s.h"], "b.c": ["s.h"], "c.c": ["s.h"]}, [], 0),
        # Headers alone in a loop of three (include guards make it compile).
        ("headers", {"p.h": ["q.h"], "q.h": ["r.h"], "r.h": ["p.h"]}, [], 1),
    ]
    wrong = []
    # One shared header and calls a -> b -> c -> a: only the objects tell.
    calls = {"s.h": "void fa(void); void fb(void); void fc(void);\n",
             "a.c": '#include "s.h"\nvoid fa(void) { fb(); }\n',
             "b.c": '#include "s.h"\nvoid fb(void) { fc(); }\n',
             "c.c": '#include "s.h"\nvoid fc(void) { fa(); }\n'}
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc or not shutil.which("nm"):
        wrong.append("self-test 'calls': no C compiler or nm to build its objects")
    for with_objects in ([False, True] if cc and shutil.which("nm") else []):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "worker", "k")
            objdir = os.path.join(tmp, "obj", "worker", "k")
            os.makedirs(folder)
            os.makedirs(objdir)
            for f, text in calls.items():
                with open(os.path.join(folder, f), "w", encoding="utf-8") as out:
                    out.write(text)
                if f.endswith(".c"):
                    subprocess.run([cc, "-c", os.path.join(folder, f), "-o",
                                    os.path.join(objdir, f + ".o")], check=True)
            objects = [os.path.join(tmp, "obj")] if with_objects else []
            failures, _ = judge_circles(tmp, [], objects)
            if bool(failures) != with_objects:
                wrong.append(f"self-test 'calls' (objects {with_objects}): expected "
                             f"{'a failure' if with_objects else 'a pass'}, got {failures or 'a pass'}")
    for name, files, allow, want in cases:
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "worker", "k")
            os.makedirs(folder)
            for f, incs in files.items():
                with open(os.path.join(folder, f), "w", encoding="utf-8") as out:
                    out.write("".join(f'#include "k/{i}"\n' if n % 2 else f'#include "{i}"\n'
                                      for n, i in enumerate(incs)))
            failures, _ = judge_circles(tmp, allow)
            if bool(failures) != bool(want):
                wrong.append(f"self-test '{name}': expected {'a failure' if want else 'a pass'},"
                             f" got {failures or 'a pass'}")
    return wrong


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
    args, objects = sys.argv[1:], []
    while "--objects" in args:
        i = args.index("--objects")
        if i + 1 >= len(args) or not os.path.isdir(args[i + 1]):
            print("check_layout: --objects needs an object folder")
            return 2
        objects.append(os.path.abspath(args[i + 1]))
        del args[i:i + 2]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    wrong = self_test()
    for line in wrong:
        print(line)
    if wrong:
        return 1
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
    failures, notes = judge_circles(root, ALLOWED, objects)
    for line in failures:
        failed = True
        print(line)
    for line in bench_on_tests(root):
        failed = True
        print("bench reaches into tests/: " + line)
    for line in notes:
        print("note: " + line)
    if failed:
        return 1
    order = " ".join(f"{d}->{{{','.join(sorted(graph[d]))}}}" for d in sorted(graph))
    print(f"check_layout: no folder cycles under worker/ ({len(graph)} folders: {order})")
    print(f"check_layout: no circle of more than two units inside a folder "
          f"({len(source_folders(root))} folders; "
          f"{'includes and calls' if objects else 'includes only: no --objects'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
