"""Access to the generated protobuf module (imgbatch_pb2) and the contract version.

imgbatch_pb2 is generated when the package is built (client/setup.py, from
proto/imgbatch.proto through grpcio-tools' protoc); it is never committed.
"""

from types import ModuleType
from typing import Optional

# The newest wire contract this client writes (Job.contract_version); equal
# to IB_CONTRACT_VERSION in worker/include/imgbatch.h and the package's major
# version. Workers must be upgraded before producers (README). A Job says
# the oldest contract that holds what it uses (contract_for), so a v2 worker
# still takes every Job that needs nothing of v3.
CONTRACT_VERSION = 3
# v3 = draft (Source.draft_scale), metadata policy, renditions.
_V2 = 2
# Renditions one Job may name (IB_MAX_RENDITIONS in worker/include/imgbatch.h).
MAX_RENDITIONS = 16

_pb: Optional[ModuleType] = None


def pb() -> ModuleType:
    """Return the generated imgbatch_pb2 module, importing it on first use."""
    global _pb
    if _pb is None:
        try:
            from . import imgbatch_pb2
        except ModuleNotFoundError as e:
            if e.name != __package__ + ".imgbatch_pb2":
                raise  # the protobuf runtime itself is missing or too old
            raise ImportError(
                "imgbatch: imgbatch_pb2 is missing; it is generated when the package is "
                "built: install it with `pip install ./client` (not by PYTHONPATH=client)"
            ) from e
        _pb = imgbatch_pb2
    return _pb


def contract_for(job: "object") -> int:
    """The contract version a Job message needs: 3 when it uses a v3 field
    that a v2 worker would skip without an error - renditions, a source's
    draft scale (decoded full size), an output's metadata policy (stripped) -
    else 2. The
    v3 ops (reduce, transform, exif_transpose) need no stamp: a v2 worker
    refuses a node whose op it does not know."""
    sources = [job.source] if job.HasField("source") else []  # type: ignore[attr-defined]
    sources += list(job.extra_sources)  # type: ignore[attr-defined]
    if any(s.draft_scale > 1 for s in sources) or len(job.renditions):  # type: ignore[attr-defined]
        return CONTRACT_VERSION
    if job.HasField("output") and job.output.HasField("cpu") and job.output.cpu.metadata:  # type: ignore[attr-defined]
        return CONTRACT_VERSION
    return _V2
