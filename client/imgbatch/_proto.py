"""Access to the generated protobuf module (imgbatch_pb2) and the contract version.

imgbatch_pb2 is generated when the package is built (client/setup.py, from
proto/imgbatch.proto through grpcio-tools' protoc); it is never committed.
"""

from types import ModuleType
from typing import Optional

# The wire contract this client writes (Job.contract_version); equal to
# IB_CONTRACT_VERSION in worker/include/imgbatch.h and the package's major
# version. Workers must be upgraded before producers (README).
CONTRACT_VERSION = 3
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
