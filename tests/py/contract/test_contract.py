"""Contract evolution: proto/imgbatch.proto may only change in ways every
released contract (proto/released/*.desc) can live with, and the versions
the C library, the proto and the client state agree."""
import glob
import os
import re
import subprocess

import pytest
from google.protobuf import descriptor_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RELEASED = sorted(glob.glob(os.path.join(ROOT, "proto", "released", "*.desc")))


def load(path):
    fds = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as f:
        fds.ParseFromString(f.read())
    return fds


def current(tmp_path):
    out = tmp_path / "current.desc"
    subprocess.run(["protoc", "-I" + os.path.join(ROOT, "proto"), "--descriptor_set_out", str(out),
                    "imgbatch.proto"], check=True)
    return load(out)


def messages(fds):
    """Every message by full name, nested ones included."""
    out = {}

    def walk(prefix, msgs):
        for m in msgs:
            name = f"{prefix}.{m.name}"
            out[name] = m
            walk(name, m.nested_type)

    for f in fds.file:
        walk(f.package, f.message_type)
    return out


def enums(fds):
    out = {}
    for f in fds.file:
        for e in f.enum_type:
            out[f"{f.package}.{e.name}"] = e
    return out


def alone_in_new_oneof(om, nm, nf, of, new_oneof):
    """A singular field moved into a oneof that did not exist before and holds
    only it: the same bytes on the wire, presence added (protobuf's
    "Updating A Message Type": a single field can safely move into a new
    oneof). How proto3 fields gain presence where protoc-c 1.4 refuses
    `optional`."""
    if of.HasField("oneof_index") or new_oneof is None:
        return False
    if new_oneof in {o.name for o in om.oneof_decl}:
        return False
    return [f.number for f in nm.field if f.HasField("oneof_index")
            and f.oneof_index == nf.oneof_index] == [nf.number]


def breaking_changes(old, new):
    """Human-readable list of the changes old readers/writers cannot take."""
    problems = []
    new_msgs = messages(new)
    for name, om in messages(old).items():
        nm = new_msgs.get(name)
        if nm is None:
            problems.append(f"message {name} removed")
            continue
        reserved_nums = {n for r in nm.reserved_range for n in range(r.start, r.end)}
        reserved_names = set(nm.reserved_name)
        new_fields = {f.number: f for f in nm.field}
        for of in om.field:
            nf = new_fields.get(of.number)
            where = f"{name}.{of.name} (= {of.number})"
            if nf is None:
                if of.number not in reserved_nums or of.name not in reserved_names:
                    problems.append(f"field {where} removed without reserving its number and name")
                continue
            if nf.type != of.type or nf.type_name.lstrip(".") != of.type_name.lstrip("."):
                problems.append(f"field {where} changed type")
            if nf.label != of.label:
                problems.append(f"field {where} changed label")
            old_oneof = om.oneof_decl[of.oneof_index].name if of.HasField("oneof_index") else None
            new_oneof = nm.oneof_decl[nf.oneof_index].name if nf.HasField("oneof_index") else None
            if old_oneof != new_oneof and not alone_in_new_oneof(om, nm, nf, of, new_oneof):
                problems.append(f"field {where} moved from oneof {old_oneof} to {new_oneof}")
    new_enums = enums(new)
    for name, oe in enums(old).items():
        ne = new_enums.get(name)
        if ne is None:
            problems.append(f"enum {name} removed")
            continue
        values = {v.number: v.name for v in ne.value}
        for v in oe.value:
            if v.number not in values:
                problems.append(f"enum value {name}.{v.name} (= {v.number}) removed")
    return problems


def test_released_contracts_exist():
    assert RELEASED, "proto/released holds no descriptor"


@pytest.mark.parametrize("path", RELEASED, ids=os.path.basename)
def test_current_proto_is_backward_compatible_with(path, tmp_path):
    problems = breaking_changes(load(path), current(tmp_path))
    assert not problems, "\n".join(problems)


def test_the_check_catches_breaking_changes(tmp_path):
    # The checker itself: a removed field, a changed type and a removed enum
    # value in a copy of the proto are each reported.
    src = open(os.path.join(ROOT, "proto", "imgbatch.proto")).read()
    broken = src.replace("{ uint32 threshold = 1; }", "{ int64 threshold = 1; }")
    broken = broken.replace("{ string correlation_id = 8; }", "{ string correlation = 18; }")
    broken = broken.replace("  TRANSVERSE = 6;\n", "")
    assert broken != src
    (tmp_path / "imgbatch.proto").write_text(broken)
    out = tmp_path / "broken.desc"
    subprocess.run(["protoc", "-I" + str(tmp_path), "--descriptor_set_out", str(out),
                    "imgbatch.proto"], check=True)
    problems = "\n".join(breaking_changes(current(tmp_path), load(out)))
    assert "SolarizeOp.threshold (= 1) changed type" in problems
    assert "Job.correlation_id (= 8) removed" in problems
    assert "TransposeMethod.TRANSVERSE (= 6) removed" in problems


def test_a_field_may_move_alone_into_a_new_oneof_only(tmp_path):
    # contract-1 has CpuOutput.quality outside any oneof; the current proto
    # moved it alone into quality_present (accepted above). With a second
    # member that oneof is a move old writers cannot live with.
    src = open(os.path.join(ROOT, "proto", "imgbatch.proto")).read()
    two = src.replace("oneof quality_present { uint32 quality = 2; }",
                      "oneof quality_present { uint32 quality = 2; uint32 q2 = 99; }")
    assert two != src
    (tmp_path / "imgbatch.proto").write_text(two)
    out = tmp_path / "two.desc"
    subprocess.run(["protoc", "-I" + str(tmp_path), "--descriptor_set_out", str(out),
                    "imgbatch.proto"], check=True)
    released = load(os.path.join(ROOT, "proto", "released", "contract-1.desc"))
    assert "CpuOutput.quality (= 2) moved from oneof None to quality_present" in "\n".join(
        breaking_changes(released, load(out)))
    assert not breaking_changes(released, current(tmp_path))


def test_contract_version_is_one_past_the_newest_release_or_equal():
    header = open(os.path.join(ROOT, "worker", "include", "imgbatch.h")).read()
    version = int(re.search(r"#define IB_CONTRACT_VERSION (\d+)u", header).group(1))
    released = [int(re.search(r"contract-(\d+)\.desc", p).group(1)) for p in RELEASED]
    assert max(released) in (version, version - 1), (version, released)
