"""The lazy graph: nodes, the LazyImage handle, Job serialization and replay.

A node is immutable: an op name (the proto `Node.op` oneof field), its
params (a dict mirroring the op's params message), its input nodes, the
output mode and size computed the way Pillow computes them, and a replay
function that performs the same call on real Pillow. A LazyImage is a
mutable handle on a node, because Pillow's paste() mutates in place.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ._proto import CONTRACT_VERSION, MAX_RENDITIONS, contract_for, pb

_FORMATS = {"raw": "RAW", "png": "PNG", "jpeg": "JPEG", "webp": "WEBP", "tiff": "TIFF"}
_U64 = 1 << 64
_I64 = 1 << 63


class Node:
    __slots__ = ("op", "params", "inputs", "mode", "size", "replay_fn", "source")

    def __init__(self, op: str, params: Dict[str, Any], inputs: Any, mode: str, size: Tuple[int, int],
                 replay_fn: Callable[..., Any], source: Optional[SourceSpec] = None):
        self.op = op
        self.params = params
        self.inputs = tuple(inputs)
        self.mode = mode
        self.size = (int(size[0]), int(size[1]))
        self.replay_fn = replay_fn
        self.source = source


class SourceSpec:
    """What a SourceOp reads: kind is 'encoded', 'path', 'raw' or 'fill'."""

    __slots__ = ("kind", "mode", "size", "data", "format", "opener", "draft", "loaded")

    def __init__(self, kind: str, mode: Optional[str], size: Optional[Tuple[int, int]], data: Any,
                 format: Optional[str] = None, opener: Optional[Callable[[], Any]] = None,
                 draft: Optional[int] = None):
        self.kind = kind
        self.mode = mode
        self.size = size
        self.data = data
        # Pillow's format of an encoded/path source ("JPEG", ...): thumbnail()
        # drafts a JPEG. Not part of the key: the bytes already are.
        self.format = format
        # The file opened by Pillow and not loaded yet (what draft() needs).
        self.opener = opener
        # The scale Pillow's draft() chose (1, 2, 4, 8), None before a draft.
        self.draft = draft
        # Pillow's image has loaded its pixels (an op read it): draft() is
        # then a no-op, as Pillow's needs the file's tile still pending.
        self.loaded = False

    def key(self) -> Tuple[Any, ...]:
        return (self.kind, self.mode, self.size, self.data, self.draft_scale())

    def draft_scale(self) -> int:
        """Source.draft_scale: 0 unless the draft scales the decode."""
        return self.draft if self.draft is not None and self.draft > 1 else 0

    def fill_pb(self, src: Any) -> None:
        if self.draft_scale():
            src.draft_scale = self.draft_scale()
        if self.kind == "encoded":
            src.encoded = self.data
        elif self.kind == "path":
            src.path = self.data
        else:
            msg = getattr(src, self.kind)
            assert self.size is not None
            msg.mode = self.mode
            msg.width, msg.height = self.size
            if self.kind == "raw":
                msg.data = self.data
            else:
                msg.color = self.data


def source_node(spec: SourceSpec, replay_fn: Callable[[], Any], mode: str, size: Tuple[int, int]) -> Node:
    return Node("source", {}, (), mode, size, replay_fn, source=spec)


def topo_order(root: Node) -> List[Node]:
    """Nodes reachable from root in post-order (inputs before users), each once."""
    order: List[Node] = []
    seen = set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for inp in reversed(node.inputs):
            if id(inp) not in seen:
                stack.append((inp, False))
    return order


def _fill_msg(msg: Any, params: Mapping[str, Any]) -> None:
    msg.SetInParent()
    for name, value in params.items():
        if isinstance(value, dict):
            _fill_msg(getattr(msg, name), value)
        elif isinstance(value, (list, tuple)):
            getattr(msg, name).extend(value)
        else:
            setattr(msg, name, value)


def to_value(value: Any, depth: int = 0) -> Any:
    """A Python value as a proto Value (bool, int, float, str, bytes, list, dict)."""
    if depth > 64:
        raise ValueError("imgbatch: metadata nested too deeply")
    v = pb().Value()
    if isinstance(value, bool):
        v.bool_value = value
    elif isinstance(value, int):
        if -_I64 <= value < _I64:
            v.int_value = value
        elif 0 <= value < _U64:
            v.uint_value = value
        else:
            raise ValueError(f"imgbatch: metadata integer {value} does not fit 64 bits")
    elif isinstance(value, float):
        v.double_value = value
    elif isinstance(value, str):
        v.string_value = value
    elif isinstance(value, (bytes, bytearray, memoryview)):
        v.bytes_value = bytes(value)
    elif isinstance(value, (list, tuple)):
        v.list_value.SetInParent()
        for item in value:
            v.list_value.items.append(to_value(item, depth + 1))
    elif isinstance(value, dict):
        v.map_value.SetInParent()
        for k, item in value.items():
            if not isinstance(k, str):
                raise TypeError(f"imgbatch: metadata map keys must be str, not {type(k).__name__}")
            v.map_value.entries[k].CopyFrom(to_value(item, depth + 1))
    else:
        raise TypeError(f"imgbatch: metadata value of type {type(value).__name__} is not on the wire")
    return v


def set_key(msg: Any, key: Any) -> None:
    """Set a Job/Result input_key oneof from a str or a non-negative int (None: unset)."""
    if key is None:
        return
    if isinstance(key, bool):
        raise TypeError("imgbatch: input_key must be str or int, not bool")
    if isinstance(key, str):
        msg.key_string = key
    elif isinstance(key, int):
        if not 0 <= key < _U64:
            raise ValueError(f"imgbatch: integer input_key {key} is not an unsigned 64-bit value")
        msg.key_u64 = key
    else:
        raise TypeError(f"imgbatch: input_key must be str or int, not {type(key).__name__}")


def build_graph(job: Any, root: Node) -> None:
    """Append root's graph to job.nodes; fill job.source and job.extra_sources.

    SourceOp indices: the first source reached (depth first, first input
    first) is Job.source (index 0), the others extra_sources[index-1].
    Identical sources and structurally identical nodes are emitted once.
    """
    build_graphs(job, [root])


def build_graphs(job: Any, roots: List[Node]) -> List[int]:
    """build_graph for several outputs sharing one graph (renditions): every
    root's nodes, sources and shared nodes emitted once; returns each root's
    index in job.nodes."""
    P = pb()
    src_index: Dict[Tuple[Any, ...], int] = {}
    node_index: Dict[int, int] = {}
    struct: Dict[bytes, int] = {}
    order = [n for root in roots for n in topo_order(root)]
    for node in order:
        if id(node) in node_index:
            continue
        params = node.params
        if node.source is not None:
            skey = node.source.key()
            index = src_index.get(skey)
            if index is None:
                index = len(src_index)
                src_index[skey] = index
                node.source.fill_pb(job.source if index == 0 else job.extra_sources.add())
            params = {"index": index}
        npb = P.Node()
        npb.inputs.extend(node_index[id(i)] for i in node.inputs)
        _fill_msg(getattr(npb, node.op), params)
        skey = npb.SerializeToString(deterministic=True)
        index = struct.get(skey)
        if index is None:
            index = len(job.nodes)
            job.nodes.append(npb)
            struct[skey] = index
        node_index[id(node)] = index
    return [node_index[id(r)] for r in roots]


# Pillow's save(subsampling=) values (JpegImagePlugin): its strings, its
# numbers, and -1 for libjpeg's default; "4:1:1" has meant 4:2:0 since 4.3.
_SUBSAMPLING = {None: "SUBSAMPLING_DEFAULT", -1: "SUBSAMPLING_DEFAULT", 0: "SUBSAMPLING_444",
                1: "SUBSAMPLING_422", 2: "SUBSAMPLING_420", "4:4:4": "SUBSAMPLING_444",
                "4:2:2": "SUBSAMPLING_422", "4:2:0": "SUBSAMPLING_420", "4:1:1": "SUBSAMPLING_420"}


_KEEP_METADATA = {"strip": "METADATA_STRIP", "keep": "METADATA_KEEP",
                  "keep_reset_orientation": "METADATA_KEEP_RESET_ORIENTATION"}


def _output_pb(out: Any, output: str, quality: Optional[int], compression: int, lossless: bool,
               subsampling: Any = None, progressive: bool = False, optimize: bool = False,
               keep_metadata: str = "strip") -> None:
    if output == "gpu":
        out.gpu.SetInParent()
        return
    fmt = _FORMATS.get(output)
    if fmt is None:
        raise ValueError(f"imgbatch: output must be one of {sorted(_FORMATS) + ['gpu']}, not {output!r}")
    if subsampling not in _SUBSAMPLING:
        raise ValueError(f"imgbatch: subsampling must be one of '4:4:4', '4:2:2', '4:2:0', 0, 1, 2 or -1, "
                         f"not {subsampling!r}")
    cpu = out.cpu
    cpu.SetInParent()
    cpu.format = getattr(pb(), fmt)
    # None (and Pillow's -1) leave quality unset: the encoder's default, as
    # Pillow's (JPEG 75, WebP 80). The worker refuses over 100.
    if quality is not None and quality != -1:
        if not isinstance(quality, int) or isinstance(quality, bool) or not 0 <= quality <= 100:
            raise ValueError(f"imgbatch: quality must be an int in 0..100, not {quality!r}")
        cpu.quality = quality
    cpu.compression = compression
    cpu.lossless = lossless
    cpu.subsampling = getattr(pb(), _SUBSAMPLING[subsampling])
    cpu.progressive = bool(progressive)
    cpu.optimize = bool(optimize)
    if keep_metadata not in _KEEP_METADATA:
        raise ValueError(f"imgbatch: keep_metadata must be one of {sorted(_KEEP_METADATA)}, "
                         f"not {keep_metadata!r}")
    cpu.metadata = getattr(pb(), _KEEP_METADATA[keep_metadata])


# Pillow's format names (save(fp, format)) and this client's output names.
_RENDITION_FORMATS = {"RAW": "raw", "PNG": "png", "JPEG": "jpeg", "JPG": "jpeg", "WEBP": "webp",
                      "TIFF": "tiff"}


def set_envelope(job: Any, metadata: Optional[Mapping[str, Any]], correlation_id: Optional[str],
                 deadline_unix_ms: Optional[int]) -> Any:
    """The Job's fields beside its graph and outputs: metadata (str keys),
    correlation_id, deadline_unix_ms. Returns job."""
    for k, v in (metadata or {}).items():
        if not isinstance(k, str):
            raise TypeError("imgbatch: metadata keys must be str")
        job.metadata[k].CopyFrom(to_value(v))
    if correlation_id is not None:
        job.correlation_id = correlation_id
    if deadline_unix_ms is not None:
        job.deadline_unix_ms = deadline_unix_ms
    return job


def renditions_job_message(renditions: Any, key: Any = None, metadata: Optional[Mapping[str, Any]] = None,
                           *, correlation_id: Optional[str] = None,
                           deadline_unix_ms: Optional[int] = None) -> Any:
    """One Job computing several images of one graph (contract version 3):
    the sources are decoded and uploaded once and the Result carries every
    image, in this order (Result.renditions).

    renditions: a sequence of (image, format), (image, format, quality) or
    (image, format, {save options}) - the arguments of Pillow's
    image.save(fp, format, **options): format is "JPEG", "WEBP", "PNG",
    "TIFF" or "RAW" (any case), options quality, compression, lossless,
    subsampling, progressive, optimize, and keep_metadata as to_job takes it
    (each rendition its own policy). Every image must be a lazy image.
    """
    items = list(renditions)
    if not items:
        raise ValueError("imgbatch: renditions must name at least one image")
    if len(items) > MAX_RENDITIONS:
        raise ValueError(f"imgbatch: at most {MAX_RENDITIONS} renditions per job, not {len(items)}")
    roots, outs = [], []
    for i, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise TypeError(f"imgbatch: renditions[{i}] must be (image, format[, quality or options])")
        im, fmt = item[0], item[1]
        opts = item[2] if len(item) == 3 else {}
        if not isinstance(im, GraphImage):
            raise TypeError(f"imgbatch: renditions[{i}]: {type(im).__name__} is not a lazy image")
        if not isinstance(fmt, str) or fmt.upper() not in _RENDITION_FORMATS:
            raise ValueError(f"imgbatch: renditions[{i}]: format must be one of "
                             f"{sorted(_RENDITION_FORMATS)}, not {fmt!r}")
        if opts is None or isinstance(opts, int) and not isinstance(opts, bool):
            opts = {"quality": opts}
        if not isinstance(opts, Mapping):
            raise TypeError(f"imgbatch: renditions[{i}]: the third item is a quality or a dict of options")
        roots.append(im._node)
        outs.append((_RENDITION_FORMATS[fmt.upper()], dict(opts)))
    job = pb().Job()
    job.contract_version = CONTRACT_VERSION
    set_key(job, key)
    for i, index in enumerate(build_graphs(job, roots)):
        r = job.renditions.add()
        r.node = index
        fmt, opts = outs[i]
        spec = pb().OutputSpec()
        try:
            _output_pb(spec, fmt, opts.pop("quality", None), opts.pop("compression", 0),
                       opts.pop("lossless", False), opts.pop("subsampling", None),
                       opts.pop("progressive", False), opts.pop("optimize", False),
                       opts.pop("keep_metadata", "strip"))
        except ValueError as e:
            raise ValueError(f"imgbatch: renditions[{i}]: {str(e).replace('imgbatch: ', '')}") from None
        if opts:
            raise TypeError(f"imgbatch: renditions[{i}]: unknown save options {sorted(opts)}")
        r.output.CopyFrom(spec.cpu)
    return set_envelope(job, metadata, correlation_id, deadline_unix_ms)


def renditions_job(renditions: Any, key: Any = None, metadata: Optional[Mapping[str, Any]] = None,
                   **kw: Any) -> bytes:
    """Serialized Job bytes of renditions_job_message."""
    data: bytes = renditions_job_message(renditions, key, metadata, **kw).SerializeToString()
    return data


class GraphImage:
    """Handle on a graph node: attributes, to_job, replay. The recorded Pillow
    methods are in _methods.LazyImage."""

    __slots__ = ("_node", "__weakref__")

    def __init__(self, node: Node):
        self._node = node

    # ---- attributes Pillow exposes
    @property
    def mode(self) -> str:
        return self._node.mode

    @property
    def size(self) -> Tuple[int, int]:
        return self._node.size

    @property
    def width(self) -> int:
        return self._node.size[0]

    @property
    def height(self) -> int:
        return self._node.size[1]

    def getbands(self) -> Tuple[str, ...]:
        from PIL import ImageMode

        return ImageMode.getmode(self._node.mode).bands

    def __repr__(self) -> str:
        return f"<imgbatch.LazyImage mode={self.mode} size={self.width}x{self.height} op={self._node.op}>"

    # ---- output
    def to_job_message(self, key: Any = None, output: str = "raw", metadata: Optional[Mapping[str, Any]] = None,
                       *, quality: Optional[int] = None, compression: int = 0, lossless: bool = False,
                       subsampling: Any = None, progressive: bool = False, optimize: bool = False,
                       keep_metadata: str = "strip", correlation_id: Optional[str] = None, deadline_unix_ms: Optional[int] = None) -> Any:
        """The Job as a protobuf message (see to_job)."""
        job = pb().Job()
        set_key(job, key)
        build_graph(job, self._node)
        _output_pb(job.output, output, quality, compression, lossless, subsampling, progressive, optimize,
                   keep_metadata)
        job.contract_version = contract_for(job)
        return set_envelope(job, metadata, correlation_id, deadline_unix_ms)

    def to_job(self, key: Any = None, output: str = "raw", metadata: Optional[Mapping[str, Any]] = None,
               **kw: Any) -> bytes:
        """Serialized Job bytes computing this image.

        key: str or unsigned int (Job.input_key), output: raw|png|jpeg|webp|tiff|gpu,
        metadata: dict of bool/int/float/str/bytes/list/dict; keyword-only
        quality (None: the format's default, as Pillow's), compression, lossless, and for
        JPEG subsampling ('4:4:4'/'4:2:2'/'4:2:0' or Pillow's 0/1/2), progressive, optimize
        (CpuOutput, as Pillow's save() takes them), keep_metadata ('strip', Pillow's save()
        default; 'keep' or 'keep_reset_orientation': the source's EXIF/XMP/ICC in a PNG, JPEG or
        WebP file), correlation_id, deadline_unix_ms.
        """
        data: bytes = self.to_job_message(key, output, metadata, **kw).SerializeToString()
        return data

    def replay(self) -> Any:
        """Compute the same graph with real Pillow; returns a PIL.Image.Image.

        Raises whatever Pillow raises for the recorded calls.
        """
        memo: Dict[int, Any] = {}
        for node in topo_order(self._node):
            args = [memo[id(i)] for i in node.inputs]
            memo[id(node)] = node.replay_fn(*args)
        return memo[id(self._node)]

