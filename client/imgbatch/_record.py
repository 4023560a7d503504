"""What every recorder shares, below LazyImage (_methods.py) and the recorders
that only build nodes (_transform.py): the check against real Pillow, the
colour Pillow resolves, and a node over its inputs."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, Sequence, Tuple

import PIL.Image

from ._graph import GraphImage, Node

_checks = [True]
_SMALL = 1 << 16


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Record without calling Pillow first: a call Pillow rejects is recorded
    as is (its replay() raises), so the worker's rejection can be tested."""
    _checks.append(False)
    try:
        yield
    finally:
        _checks.pop()


def checking() -> bool:
    return _checks[-1]


def _stand_in(im: Any, exact: bool) -> Any:
    w, h = im.size
    if not exact and w * h > _SMALL:
        w, h = min(w, 32), min(h, 32)
    return PIL.Image.new(im.mode, (w, h))


def pillow_check(fn: Callable[..., Any], *args: Any, exact: bool = False) -> None:
    """Make Pillow's call fn(*args) with each lazy image replaced by a blank
    Pillow image of its mode and size (exact: always the full size); Pillow's
    exception propagates unchanged."""
    if _checks[-1]:
        fn(*(_stand_in(a, exact) if isinstance(a, GraphImage) else a for a in args))


def mark_loaded(nodes: Sequence[Node]) -> None:
    """Pillow loads an image's pixels when a call reads it; from then on a
    JPEG's draft() does nothing (its tile is gone), so thumbnail() resizes
    the full-size decode."""
    for n in nodes:
        if n.source is not None:
            n.source.loaded = True


def node(op: str, params: Dict[str, Any], inputs: Sequence[GraphImage], mode: str,
         size: Tuple[int, int], replay_fn: Callable[..., Any]) -> Node:
    """A node for op over the inputs' nodes (which Pillow would now load)."""
    nodes = [i._node for i in inputs]
    mark_loaded(nodes)
    return Node(op, params, nodes, mode, size, replay_fn)


def resolve_color(mode: str, color: Any) -> bytes:
    """One byte per band, as Pillow resolves `color` for Image.new(mode, ...)."""
    return PIL.Image.new(mode, (1, 1), color).tobytes()
