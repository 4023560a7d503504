"""Lazy access to the generated protobuf module (imgbatch_pb2).

The module is generated at build time by protoc from proto/imgbatch.proto
(CMake target ib_proto_py); it is not committed. Importing the client works
without it; only building or parsing wire messages needs it.
"""

_pb = None


def pb():
    """Return the generated imgbatch_pb2 module, importing it on first use."""
    global _pb
    if _pb is None:
        try:
            from . import imgbatch_pb2
        except ImportError as e:
            raise ImportError(
                "imgbatch: client/imgbatch/imgbatch_pb2.py is missing; it is generated "
                "by the build (cmake --build build, target ib_proto_py) or by hand with "
                "`protoc -Iproto --python_out=client/imgbatch proto/imgbatch.proto`. "
                "It needs protobuf==4.21.12 (client/requirements.txt)."
            ) from e
        _pb = imgbatch_pb2
    return _pb
