"""Helpers shared by the pytest suites under tests/py: Job builders over the
protobuf (no client), `imgbatch run` over varint-delimited frames, and the
embedded broker (`imgbatch broker`).

A plain module, not a suite folder (every folder under tests/py is a ctest
suite): each suite's conftest.py puts tests/py on sys.path, so that
`import ibtest` works under ctest, scripts/test.sh and the GPU machine's
`python3 -m pytest tests/py/<suite>` with nothing installed. The binary is
read from IB_BIN when a helper runs, not at import."""
import contextlib
import os
import subprocess

from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes

from imgbatch import imgbatch_pb2 as pb


def binary():
    return os.environ["IB_BIN"]


# ---------------------------------------------------------------- jobs


def keyed_job(key):
    """An empty Job keyed key_u64 for an int, key_string otherwise."""
    return pb.Job(key_u64=key) if isinstance(key, int) else pb.Job(key_string=key)


def bands_of(mode):
    return 4 if mode == "RGBX" else len(mode)


def ramp(w, h, bands=3, seed=0):
    """w*h*bands bytes of a cheap deterministic pattern for seed."""
    return bytes((i * 7 + seed) % 256 for i in range(w * h * bands))


def copy_graph(job, sources=1):
    """Appends a source node for each of the job's `sources` sources (the last
    one first: every source is read by a node, and unread ones are never
    opened) and one copy node of the first source; returns job."""
    for i in range(sources - 1, -1, -1):
        job.nodes.add().source.index = i
    node = job.nodes.add()
    node.copy.SetInParent()
    node.inputs.append(sources - 1)
    return job


def raw_job(key, w=4, h=3, mode="RGB", seed=0, data=None, copy=True):
    """A Job over raw pixels (data, or ramp() for seed): source -> copy, or
    only the source node when not copy (for tests that append their own)."""
    job = keyed_job(key)
    job.source.raw.mode = mode
    job.source.raw.width = w
    job.source.raw.height = h
    job.source.raw.data = ramp(w, h, bands_of(mode), seed) if data is None else data
    if copy:
        return copy_graph(job)
    job.nodes.add().source.index = 0
    return job


def path_job(key, *paths):
    """A copy of the file at paths[0]; further paths are extra sources that
    are read too."""
    job = keyed_job(key)
    job.source.path = paths[0]
    for p in paths[1:]:
        job.extra_sources.add().path = p
    return copy_graph(job, len(paths))


def encoded_job(key, data):
    """A copy of an encoded image (PNG, JPEG, ...) given as bytes."""
    job = keyed_job(key)
    job.source.encoded = data
    return copy_graph(job)


# ---------------------------------------------------------------- imgbatch run


def frames(msgs):
    """The varint-delimited stream of msgs (bytes or protobuf messages)."""
    out = []
    for m in msgs:
        data = m if isinstance(m, bytes) else m.SerializeToString()
        out.append(_VarintBytes(len(data)) + data)
    return b"".join(out)


def results_of(out, parse=pb.Result.FromString):
    """Every message of a varint-delimited stream, through parse."""
    pos, results = 0, []
    while pos < len(out):
        n, pos = _DecodeVarint32(out, pos)
        results.append(parse(out[pos:pos + n]))
        pos += n
    return results


def run(msgs, *args, timeout=60, parse=pb.Result.FromString):
    """`imgbatch run *args` over msgs: (CompletedProcess, [Result])."""
    p = subprocess.run([binary(), "run", *args], input=frames(msgs), capture_output=True,
                       timeout=timeout)
    return p, results_of(p.stdout, parse)


# ---------------------------------------------------------------- broker


@contextlib.contextmanager
def broker(*args, stderr=subprocess.DEVNULL):
    """`imgbatch broker *args` for the block: yields (process, bootstrap).
    Ended with SIGTERM, the broker's own stop (it closes its mock cluster and
    exits 0), and SIGKILL only when that takes over 10 s, so that teardown
    never hangs; the exit status is the process's returncode."""
    proc = subprocess.Popen([binary(), "broker", *args], stdout=subprocess.PIPE, stderr=stderr,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("bootstrap="), line
        yield proc, line.split("=", 1)[1]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
