"""Build step of imgbatch-client: compile proto/imgbatch.proto into the wheel.

protoc comes from grpcio-tools (a pinned build requirement), so neither a
system protoc nor a committed generated file is needed. protoc >= 26 writes
a runtime-version guard into its Python output that refuses any protobuf
runtime older than itself (6.31 for grpcio-tools 1.85), which would cut the
supported range to the newest runtimes. So protoc is asked only for the
FileDescriptorProto (and the .pyi stub for type checkers), and imgbatch_pb2.py
is written in the form protoc 3.20..25 emit: the serialized descriptor handed
to google.protobuf.internal.builder. Every runtime from 3.20.0 to 7.x loads
that form (tests/py/package proves both ends).
"""

import os
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# client/proto/imgbatch.proto is a symlink to the repository's proto/imgbatch.proto;
# an sdist carries the file itself.
PROTO_DIR = os.path.join(HERE, "proto")

TEMPLATE = '''\
# -*- coding: utf-8 -*-
# Generated from proto/imgbatch.proto by imgbatch-client's build (client/setup.py).
# DO NOT EDIT. No runtime-version guard: protobuf 3.20.0 .. 7.x load this form.
"""Generated protocol buffer code."""
from google.protobuf import descriptor_pool as _descriptor_pool
from google.protobuf import symbol_database as _symbol_database
from google.protobuf.internal import builder as _builder

_sym_db = _symbol_database.Default()

DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile({descriptor!r})

_globals = globals()
_builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, _globals)
_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, 'imgbatch.imgbatch_pb2', _globals)
'''


def generate(out_dir):
    """Write imgbatch_pb2.py and imgbatch_pb2.pyi into out_dir."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        desc = os.path.join(tmp, "imgbatch.desc")
        rc = protoc.main(["protoc", f"-I{PROTO_DIR}", f"--descriptor_set_out={desc}",
                          f"--pyi_out={tmp}", "imgbatch.proto"])
        if rc != 0:
            raise RuntimeError(f"protoc failed ({rc}) on {PROTO_DIR}/imgbatch.proto")
        with open(desc, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
        if len(files) != 1 or files[0].name != "imgbatch.proto":
            raise RuntimeError("protoc: expected one FileDescriptorProto for imgbatch.proto")
        code = TEMPLATE.format(descriptor=files[0].SerializeToString())
        with open(os.path.join(out_dir, "imgbatch_pb2.py"), "w", encoding="utf-8") as f:
            f.write(code)
        with open(os.path.join(tmp, "imgbatch_pb2.pyi"), encoding="utf-8") as f:
            stub = f.read()
        with open(os.path.join(out_dir, "imgbatch_pb2.pyi"), "w", encoding="utf-8") as f:
            f.write(stub)


class BuildPyWithProto(build_py):
    def run(self):
        super().run()
        if not self.dry_run:
            generate(os.path.join(self.build_lib, "imgbatch"))

    def get_outputs(self, include_bytecode=True):
        extra = [os.path.join(self.build_lib, "imgbatch", n) for n in ("imgbatch_pb2.py", "imgbatch_pb2.pyi")]
        return super().get_outputs(include_bytecode) + extra


setup(cmdclass={"build_py": BuildPyWithProto})
