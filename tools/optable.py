#!/usr/bin/env python3
"""Reads worker/ops/ops.def (the op table) and writes or checks what follows from it.

    python3 tools/optable.py --write   # regenerate client/imgbatch/_optable.py and the README tables
    python3 tools/optable.py --check   # exit 1 naming every place that disagrees with ops.def

Generated: client/imgbatch/_optable.py (the client's OPERATIONS and graph
steps read it) and the README blocks between `<!-- optable:NAME -->` and
`<!-- /optable:NAME -->`. Checked: those are current, proto/imgbatch.proto's
Node oneof lists the same ops in the same order, and each place that keeps
its own per-op code has it for every op: tests/unit/gpu_nodes.h sample_node
(a case, or a table sample of scalars it builds itself), tools/jobgen.h
jg_op, the fuzz corpus (an ok-op-<op> seed per sample). ctest runs --check
(`optable/check`); tests/py/client/test_optable.py checks the rest against
the worker itself (modes, samples, edges). Standard library only.
"""

import os
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEF = os.path.join(ROOT, "worker", "ops", "ops.def")
PY_OUT = os.path.join(ROOT, "client", "imgbatch", "_optable.py")
README = os.path.join(ROOT, "README.md")
MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "RGBX")


class Step(NamedTuple):
    name: str  # what the graph language calls it
    syntax: str  # how it is written, e.g. "solarize(threshold=128)"
    call: str  # ImageOps.f, .m, ImageEnhance.K, ImageFilter.F or _adapter


class Op(NamedTuple):
    field: str
    case: str
    inputs: int
    modes: Tuple[str, ...]
    pillow: str
    note: str
    steps: Tuple[Step, ...]
    sample: Optional[str]
    edge_ok: Tuple[str, ...]
    edge_bad: Tuple[str, ...]


# ---------------------------------------------------------------- reading

_TOKEN = re.compile(r'\s+|/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+|.', re.S)


def _tokens(text: str) -> List[str]:
    out = []
    for m in _TOKEN.finditer(text):
        t = m.group(0)
        if t.isspace() or t.startswith(("/*", "//")):
            continue
        out.append(t)
    return out


def _unquote(lit: str) -> str:
    body = lit[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _arg(tokens: List[str], where: str) -> object:
    """A column: joined string literals, NULL (None), an integer or a bare expression."""
    if tokens and all(t.startswith('"') for t in tokens):
        return "".join(_unquote(t) for t in tokens)
    if tokens == ["NULL"]:
        return None
    if len(tokens) == 1 and re.fullmatch(r"-?[0-9]+", tokens[0]):
        return int(tokens[0])
    if not tokens:
        raise ValueError(f"{where}: empty column")
    return " ".join(tokens)


def _modes(expr: str, where: str) -> Tuple[str, ...]:
    if expr == "IB_OPM_ALL":
        return MODES
    parts = [p.strip() for p in expr.split("|")]
    got = []
    for p in parts:
        m = re.fullmatch(r"IB_OPM \( (\w+) \)", p)
        if not m or m.group(1) not in MODES:
            raise ValueError(f"{where}: modes must be IB_OPM_ALL or IB_OPM(m) | ..., not {expr!r}")
        got.append(m.group(1))
    return tuple(sorted(got, key=MODES.index))


def _steps(text: str, where: str) -> Tuple[Step, ...]:
    steps = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        syntax, sep, call = part.rpartition(": ")
        m = re.match(r"[a-z_][a-z0-9_]*", syntax)
        if not sep or not m or not re.fullmatch(r"(ImageOps|ImageEnhance|ImageFilter)\.\w+|\.\w+|_\w+", call):
            raise ValueError(f"{where}: step {part!r} is not 'syntax: call'")
        steps.append(Step(m.group(0), syntax, call))
    return tuple(steps)


def _alts(text: str) -> Tuple[str, ...]:
    return tuple(a.strip() for a in text.split(" | ") if a.strip())


def read(path: str = DEF) -> List[Op]:
    toks = _tokens(open(path, encoding="utf-8").read())
    ops: List[Op] = []
    i = 0
    while i < len(toks):
        if toks[i] != "IB_OP" or toks[i + 1] != "(":
            raise ValueError(f"{path}: expected IB_OP(, found {toks[i]!r} after {len(ops)} entries")
        i += 2
        cols: List[List[str]] = [[]]
        depth = 0
        while depth or toks[i] != ")":
            t = toks[i]
            depth += t == "("
            depth -= t == ")"
            if t == "," and depth == 0:
                cols.append([])
            else:
                cols[-1].append(t)
            i += 1
        i += 1
        where = f"{path}: entry {len(ops) + 1}"
        if len(cols) != 10:
            raise ValueError(f"{where}: {len(cols)} columns, not 10")
        v = [_arg(c, where) for c in cols]
        field, case = cols[0][0], cols[1][0]
        if not isinstance(v[2], int) or any(not isinstance(v[k], str) for k in (4, 5, 6, 8, 9)):
            raise ValueError(f"{where} ({field}): inputs is a number; pillow, note, steps, edges strings")
        if v[7] is not None and not isinstance(v[7], str):
            raise ValueError(f"{where} ({field}): sample is a string or NULL")
        ops.append(Op(field, case, v[2], _modes(str(v[3]), where), str(v[4]), str(v[5]),
                      _steps(str(v[6]), where), v[7], _alts(str(v[8])), _alts(str(v[9]))))  # type: ignore[arg-type]
    return ops


def modes_text(op: Op) -> str:
    return ", ".join(op.modes) + op.note


# ---------------------------------------------------------------- generating

PY_HEAD = '''"""The op table, generated from worker/ops/ops.def by tools/optable.py: do not
edit (`python3 tools/optable.py --write` rewrites it; ctest optable/check
fails when it is stale). docs/ops.md explains the columns."""

from typing import NamedTuple, Optional, Tuple

MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "RGBX")


class Step(NamedTuple):
    name: str
    syntax: str
    call: str


class Op(NamedTuple):
    field: str
    inputs: int
    modes: Tuple[str, ...]
    pillow: str
    note: str
    steps: Tuple[Step, ...]
    sample: Optional[str]
    edge_ok: Tuple[str, ...]
    edge_bad: Tuple[str, ...]


OPS: Tuple[Op, ...] = (
'''


def python_module(ops: List[Op]) -> str:
    out = [PY_HEAD]
    for o in ops:
        out.append(f"    Op(\n        {o.field!r}, {o.inputs}, {o.modes!r},\n        {o.pillow!r},\n"
                   f"        {o.note!r},\n        (")
        out.extend(f"\n            Step({s.name!r}, {s.syntax!r}, {s.call!r})," for s in o.steps)
        out.append(f"{chr(10) + '        ' if o.steps else ''}),\n        {o.sample!r},\n"
                   f"        {o.edge_ok!r},\n        {o.edge_bad!r},\n    ),\n")
    out.append(")\n")
    return "".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def readme_blocks(ops: List[Op]) -> Dict[str, str]:
    steps = ["| Steps | Records |", "|---|---|"]
    for o in ops:
        if not o.steps:
            continue
        calls = ", ".join(f"`{s.syntax}`" for s in o.steps)
        steps.append(f"| {_md(calls)} | `{o.field}`: {_md(o.pillow)} |")
    table = ["| op | Pillow call | modes |", "|---|---|---|"]
    for o in ops:
        table.append(f"| `{o.field}` | {_md(o.pillow)} | {_md(modes_text(o))} |")
    return {"steps": "\n".join(steps), "ops": "\n".join(table)}


_BLOCK = re.compile(r"(<!-- optable:(\w+) [^\n]*-->\n)(.*?)(\n<!-- /optable:\2 -->)", re.S)


def readme_with(text: str, blocks: Dict[str, str]) -> Tuple[str, List[str]]:
    """README text with each block replaced; the names it has."""
    found: List[str] = []

    def sub(m: "re.Match[str]") -> str:
        found.append(m.group(2))
        return m.group(1) + blocks.get(m.group(2), m.group(3)) + m.group(4)

    return _BLOCK.sub(sub, text), found


# ---------------------------------------------------------------- checking


def proto_ops(path: str) -> List[Tuple[str, str]]:
    """(message type, field) of each field of Node's `op` oneof, in order."""
    text = open(path, encoding="utf-8").read()
    node = re.search(r"\nmessage Node \{(.*?)\n\}", text, re.S)
    oneof = node and re.search(r"oneof op \{(.*?)\}", node.group(1), re.S)
    if not oneof:
        raise ValueError(f"{path}: no `oneof op` in message Node")
    return re.findall(r"(\w+) (\w+) = \d+;", oneof.group(1))


def _section(text: str, start: str, end: str) -> str:
    a = text.find(start)
    b = text.find(end, a + 1)
    return text[a:b] if a >= 0 and b > a else ""


def check(ops: List[Op]) -> List[str]:
    bad: List[str] = []
    fields = [o.field for o in ops]
    if len(set(fields)) != len(fields):
        bad.append("ops.def: an op is listed twice")
    for o in ops:
        if o.case != o.field.upper():
            bad.append(f"ops.def: {o.field}: CASE {o.case} is not {o.field.upper()}")
    steps = [s.name for o in ops for s in o.steps]
    for s in sorted({s for s in steps if steps.count(s) > 1}):
        bad.append(f"ops.def: graph step {s!r} is declared twice")

    if open(PY_OUT, encoding="utf-8").read() != python_module(ops):
        bad.append(f"{os.path.relpath(PY_OUT, ROOT)} is stale: python3 tools/optable.py --write")
    readme = open(README, encoding="utf-8").read()
    new, found = readme_with(readme, readme_blocks(ops))
    if sorted(found) != ["ops", "steps"]:
        bad.append(f"README.md: optable blocks {found}, want ops and steps")
    elif new != readme:
        bad.append("README.md: an op table is stale: python3 tools/optable.py --write")

    proto = proto_ops(os.path.join(ROOT, "proto", "imgbatch.proto"))
    if [f for _, f in proto] != fields:
        bad.append(f"proto Node.op fields {[f for _, f in proto]} != ops.def {fields}")

    def need(path: str, start: str, end: str, what: str, ops_: List[Op]) -> None:
        text = _section(open(os.path.join(ROOT, path), encoding="utf-8").read(), start, end)
        if not text:
            bad.append(f"{path}: cannot find {start!r}..{end!r}")
            return
        for o in ops_:
            if f"IMGBATCH__V1__NODE__OP_{o.case}" not in text:
                bad.append(f"{path}: {what} has no case for op {o.field} (ops.def)")

    nodes = [o for o in ops if o.inputs > 0]
    # sample_node builds an op without its own case from its table sample
    # when that is scalars only (gpu_nodes.h tn_table_sample).
    scalar = [o for o in nodes if o.sample is None or "[" in o.sample]
    need("tests/unit/gpu_nodes.h", "static inline bool sample_node(", "#endif", "sample_node", scalar)
    need("tools/jobgen.h", "static inline int jg_op(", "static inline int jg_admitted", "jg_op", nodes)
    corpus = os.path.join(ROOT, "tests", "fuzz", "corpus", "job")
    for o in nodes:
        if o.sample is not None and not os.path.exists(os.path.join(corpus, f"ok-op-{o.field}")):
            bad.append(f"tests/fuzz/corpus/job has no ok-op-{o.field}: run tests/fuzz/make_corpus.py")
    return bad


def main(argv: List[str]) -> int:
    if argv[1:] not in (["--write"], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    ops = read()
    if argv[1] == "--write":
        with open(PY_OUT, "w", encoding="utf-8") as f:
            f.write(python_module(ops))
        readme = open(README, encoding="utf-8").read()
        new, found = readme_with(readme, readme_blocks(ops))
        with open(README, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"optable: {len(ops)} ops; wrote {os.path.relpath(PY_OUT, ROOT)}, README blocks {found}")
        return 0
    bad = check(ops)
    for b in bad:
        print("optable:", b, file=sys.stderr)
    if not bad:
        print(f"optable: {len(ops)} ops, every generated and checked place agrees with ops.def")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
