"""Varint-delimited message streams (the format of `imgbatch run`) and results.

    with open("jobs.bin", "wb") as f:
        imgbatch.write_delimited(f, [im.to_job(key=i) for i, im in enumerate(images)])
    for r in imgbatch.run_local(jobs, binary="build/imgbatch"):
        print(r.input_key, r.image.mode if r.image else r.error)
"""

import io
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ._proto import pb

# What write_delimited and the producers accept as one message.
Message = Union[bytes, bytearray, memoryview, Any]
InputKey = Union[str, int, None]

_MAX_MESSAGE = 1 << 31


def encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _as_bytes(msg: Message) -> bytes:
    if isinstance(msg, (bytes, bytearray, memoryview)):
        return bytes(msg)
    if hasattr(msg, "SerializeToString"):
        return msg.SerializeToString()
    raise TypeError(f"imgbatch: cannot write {type(msg).__name__} as a message")


def write_delimited(stream: IO[bytes], msgs: Union[Message, Iterable[Message]]) -> int:
    """Write each message (bytes or a protobuf message) with a varint length
    prefix; a single bytes/message is accepted too. Returns the count."""
    if isinstance(msgs, (bytes, bytearray, memoryview)) or hasattr(msgs, "SerializeToString"):
        msgs = [msgs]
    n = 0
    for msg in msgs:
        data = _as_bytes(msg)
        stream.write(encode_varint(len(data)))
        stream.write(data)
        n += 1
    return n


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    chunks: List[bytes] = []
    got = 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_delimited(stream: IO[bytes]) -> Iterator[bytes]:
    """Yield each message's bytes from a varint-delimited stream until EOF.

    Raises EOFError on a stream that ends inside a prefix or a message."""
    while True:
        length, shift = 0, 0
        while True:
            b = stream.read(1)
            if not b:
                if shift == 0:
                    return
                raise EOFError("imgbatch: stream ends inside a length prefix")
            length |= (b[0] & 0x7F) << shift
            shift += 7
            if not b[0] & 0x80:
                break
            if shift > 63:
                raise ValueError("imgbatch: length prefix longer than 10 bytes")
        if length >= _MAX_MESSAGE:
            raise ValueError(f"imgbatch: message length {length} exceeds 2 GiB")
        data = _read_exact(stream, length)
        if len(data) != length:
            raise EOFError(f"imgbatch: stream ends inside a message ({len(data)} of {length} bytes)")
        yield data


# ---------------------------------------------------------------- results


def _enum_name(enum_type: Any, value: int, strip: str = "") -> str:
    try:
        name = enum_type.Name(value)
    except ValueError:
        return f"unknown_{value}"
    if strip and name.endswith(strip):
        name = name[: -len(strip)]
    if name.endswith("_UNSPECIFIED"):
        return "unspecified"
    return name.lower()


def from_value(v: Any) -> Any:
    """A proto Value as a Python value (inverse of the Job metadata mapping)."""
    kind = v.WhichOneof("kind")
    if kind is None:
        return None
    if kind == "list_value":
        return [from_value(i) for i in v.list_value.items]
    if kind == "map_value":
        return {k: from_value(i) for k, i in v.map_value.entries.items()}
    return getattr(v, kind)


def _key(msg: Any) -> InputKey:
    which = msg.WhichOneof("input_key")
    return None if which is None else getattr(msg, which)


@dataclass
class ImageData:
    """Result.image: the output image's bytes (raw pixels or an encoded file)."""

    mode: str
    width: int
    height: int
    data: bytes
    format: str  # "raw", "png", "jpeg", "webp", "tiff"

    @property
    def size(self) -> Tuple[int, int]:
        return (self.width, self.height)

    def to_pil(self) -> Any:
        """The image as a PIL.Image (raw bytes via frombytes, else decoded); needs Pillow."""
        import PIL.Image

        if self.format == "raw":
            return PIL.Image.frombytes(self.mode, (self.width, self.height), self.data)
        im = PIL.Image.open(io.BytesIO(self.data))
        im.load()
        return im


@dataclass
class ImageFile:
    """Result.file: an output too large for a Kafka message, written by the
    worker under its --output-dir; `path` is relative to that directory, which
    readers must share (same volume)."""

    path: str
    mode: str
    width: int
    height: int
    format: str
    size_bytes: int
    worker_id: str

    def read(self, output_dir: Union[str, "os.PathLike[str]"]) -> ImageData:
        """The file's bytes, read from output_dir (the worker's --output-dir)."""
        with open(os.path.join(output_dir, self.path), "rb") as f:
            data = f.read()
        return ImageData(self.mode, self.width, self.height, data, self.format)


@dataclass
class JobError:
    """Result.error: stage and kind in lower case (docs/wire.md)."""

    stage: str  # "parse", "validate", "admit", "decode", ... (Stage, lower case)
    kind: str  # "invalid", "unsupported", "limit", "decode", "device", "timeout", "internal"
    message: str
    job_id: Optional[int] = None
    input_key: InputKey = None

    def __str__(self) -> str:
        return f"{self.stage}/{self.kind}: {self.message}"


@dataclass
class Resident:
    """Result.resident: a HandleRef to an image kept on a worker's GPU."""

    worker_id: str
    handle_id: int
    generation: int
    mode: str
    width: int
    height: int


@dataclass
class Rendition:
    """One of Result.renditions: the graph node it came from and its image,
    in the message (image) or, past the worker's --max-result-bytes, as a
    file (file)."""

    node: int
    image: Optional[ImageData] = None
    file: Optional[ImageFile] = None

    def read(self, output_dir: Optional[Union[str, "os.PathLike[str]"]] = None) -> ImageData:
        """The image: from the message, or read from output_dir (the worker's --output-dir)."""
        if self.image is not None:
            return self.image
        if self.file is None or output_dir is None:
            raise ValueError("imgbatch: this rendition is a file: read(output_dir) needs the worker's --output-dir")
        return self.file.read(output_dir)


@dataclass
class Result:
    """A parsed imgbatch.v1.Result; exactly one of image, file, resident, error is set, or
    (a Job with renditions) renditions."""

    input_key: InputKey  # str, int or None
    job_id: Optional[int]  # None: no ID assigned
    worker_id: str = ""
    image: Optional[ImageData] = None
    error: Optional[JobError] = None
    resident: Optional[Resident] = None
    file: Optional[ImageFile] = None
    metadata: Dict[str, Any] = field(default_factory=dict)
    correlation_id: Optional[str] = None
    timings: Dict[str, int] = field(default_factory=dict)
    source: Optional[Tuple[str, int, int]] = None  # (topic, partition, offset) of the job
    contract_version: int = 0  # the writing worker's contract version
    raw: Optional[bytes] = field(default=None, repr=False)
    # A Job with renditions: one per rendition, in the order asked (image and file are then None).
    renditions: List[Rendition] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_result(data: Union[bytes, bytearray, memoryview]) -> Result:
    """Parse serialized Result bytes into a Result."""
    P = pb()
    r = P.Result()
    r.ParseFromString(bytes(data))
    out = Result(
        input_key=_key(r),
        job_id=r.job_id if r.WhichOneof("job_id_present") else None,
        worker_id=r.worker_id,
        metadata={k: from_value(v) for k, v in r.metadata.items()},
        correlation_id=r.correlation_id if r.WhichOneof("correlation_present") else None,
        contract_version=r.contract_version,
        raw=bytes(data),
    )
    if r.HasField("timings"):
        t = r.timings
        out.timings = {"queue_us": t.queue_us, "decode_us": t.decode_us,
                       "gpu_us": t.gpu_us, "encode_us": t.encode_us}
    if r.HasField("source"):
        out.source = (r.source.topic, r.source.partition, r.source.offset)
    for x in r.renditions:
        rend = Rendition(x.node)
        if x.WhichOneof("outcome") == "image":
            i = x.image
            rend.image = ImageData(i.mode, i.width, i.height, bytes(i.data), _enum_name(P.Format, i.format))
        elif x.WhichOneof("outcome") == "file":
            f = x.file
            rend.file = ImageFile(f.path, f.mode, f.width, f.height, _enum_name(P.Format, f.format),
                                  f.size, f.worker_id)
        out.renditions.append(rend)
    which = r.WhichOneof("outcome")
    if which == "image":
        i = r.image
        fmt = _enum_name(P.Format, i.format)
        out.image = ImageData(i.mode, i.width, i.height, bytes(i.data), fmt)
    elif which == "error":
        e = r.error
        out.error = JobError(
            stage=_enum_name(P.Stage, e.stage),
            kind=_enum_name(P.ErrorKind, e.kind, strip="_ERROR"),
            message=e.message,
            job_id=e.job_id if e.WhichOneof("job_id_present") else None,
            input_key=_key(e),
        )
    elif which == "file":
        f = r.file
        out.file = ImageFile(f.path, f.mode, f.width, f.height, _enum_name(P.Format, f.format),
                             f.size, f.worker_id)
    elif which == "resident":
        h = r.resident
        out.resident = Resident(h.worker_id, h.handle_id, h.generation, h.mode, h.width, h.height)
    return out


def read_results(stream: IO[bytes]) -> Iterator[Result]:
    """Yield parsed Results from a varint-delimited stream."""
    for data in read_delimited(stream):
        yield parse_result(data)


# ---------------------------------------------------------------- run_local


def find_binary(binary: Optional[str] = None) -> str:
    """The imgbatch binary: the argument, $IB_BIN, or `imgbatch` on PATH."""
    path = binary or os.environ.get("IB_BIN") or shutil.which("imgbatch")
    if not path:
        raise FileNotFoundError("imgbatch: no binary (pass binary=..., set IB_BIN or put it on PATH)")
    return path


def _job_bytes(job: Any, index: int) -> bytes:
    if hasattr(job, "to_job"):
        return job.to_job(key=index)
    return _as_bytes(job)


def run_local(jobs: Iterable[Any], binary: Optional[str] = None, backend: str = "cpu",
              args: Sequence[str] = (), timeout: Optional[float] = None) -> Iterator[Result]:
    """Stream jobs through `imgbatch run --backend <backend>`; yield Results.

    jobs: an iterable of Job bytes, Job messages or lazy images (keyed by
    their position). Lazy images are written with contract_version set
    (to_job); bytes and messages are written exactly as given, so hostile or
    old-contract Jobs can be sent on purpose. A writer thread feeds stdin while results are read as
    they come, so neither side is buffered whole. If the process fails, a
    RuntimeError carrying its stderr is raised after the last result.
    timeout (seconds, None = none) kills the process when exceeded.
    """
    cmd = [find_binary(binary), "run", "--backend", backend, *args]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0)
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    assert stdin is not None and stdout is not None and stderr is not None
    failure: List[BaseException] = []
    captured: List[bytes] = [b""]
    killed: List[bool] = []

    def write() -> None:
        try:
            for i, job in enumerate(jobs):
                data = _job_bytes(job, i)
                stdin.write(encode_varint(len(data)) + data)
        except BrokenPipeError:
            pass
        except BaseException as e:  # noqa: BLE001 - reported to the reader
            failure.append(e)
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def drain_stderr() -> None:
        captured[0] = stderr.read()

    threads = [threading.Thread(target=write, daemon=True),
               threading.Thread(target=drain_stderr, daemon=True)]
    for t in threads:
        t.start()
    timer = None
    if timeout:
        def kill() -> None:
            killed.append(True)
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.daemon = True
        timer.start()
    finished = False
    truncated: Optional[EOFError] = None
    try:
        try:
            for data in read_delimited(io.BufferedReader(stdout)):  # type: ignore[type-var]
                yield parse_result(data)
        except EOFError as e:
            truncated = e
        finished = True
    finally:
        if not finished:
            proc.kill()
        rc = proc.wait()
        for t in threads:
            t.join(5)
        if timer:
            timer.cancel()
    if failure:
        raise failure[0]
    if killed:
        raise TimeoutError(f"imgbatch run exceeded {timeout}s; stderr:\n"
                           + captured[0].decode(errors="replace")[-4000:])
    if rc != 0 or truncated:
        raise RuntimeError(f"{' '.join(cmd)} exited {rc}{'; ' + str(truncated) if truncated else ''}; stderr:\n"
                           + captured[0].decode(errors="replace")[-4000:])
