"""The op table (worker/ops/ops.def, in the client as imgbatch._optable)
against the worker and the wire: each op's sample parameters run on every
mode the table admits and are refused, naming op and mode, on every other;
its edge parameters are admitted and the ones just past them refused at
validation naming the op; the ops are the proto's Node oneof, in order."""
import pytest
from google.protobuf import text_format

import ibtest
import imgbatch
from imgbatch import imgbatch_pb2 as pb
from imgbatch._optable import MODES, OPS

W, H = 9, 7


def node_job(op, params, mode, key):
    """Raw source(s) of `mode` -> one `op` node with `params` (text format)."""
    job = ibtest.raw_job(key, W, H, mode, copy=False)
    inputs = [0]
    if op.inputs == 2:
        src = job.extra_sources.add().raw
        src.mode, src.width, src.height = mode, W, H
        src.data = ibtest.ramp(W, H, ibtest.bands_of(mode), seed=5)
        job.nodes.add().source.index = 1
        inputs = [0, 1]
    node = job.nodes.add()
    node.inputs.extend(inputs)
    msg = getattr(node, op.field)
    msg.SetInParent()
    text_format.Parse(params, msg)
    return job


def run_keyed(jobs):
    """{key: Result} for jobs given as {key: Job}."""
    proc, results = ibtest.run(list(jobs.values()))
    assert proc.returncode == 0, proc.stderr.decode()
    got = {r.key_string: r for r in results}
    assert set(got) == set(jobs)
    return got


def edge_mode(op):
    return "RGB" if "RGB" in op.modes else op.modes[0]


def test_the_table_is_the_proto_node_oneof_in_order():
    oneof = pb.Node.DESCRIPTOR.oneofs_by_name["op"]
    assert [f.name for f in oneof.fields] == [op.field for op in OPS]
    assert list(imgbatch.OPERATIONS) == [op.field for op in OPS]


SAMPLED = [op for op in OPS if op.inputs > 0 and op.sample is not None]


@pytest.mark.parametrize("op", SAMPLED, ids=[op.field for op in SAMPLED])
def test_sample_runs_on_the_admitted_modes_and_is_refused_naming_op_and_mode_on_others(op):
    jobs = {f"{op.field}/{m}": node_job(op, op.sample, m, f"{op.field}/{m}") for m in MODES}
    got = run_keyed(jobs)
    for mode in MODES:
        r = got[f"{op.field}/{mode}"]
        if mode in op.modes:
            assert r.WhichOneof("outcome") == "image", f"{op.field} on {mode}: {r.error}"
        else:
            assert r.WhichOneof("outcome") == "error", f"{op.field} on {mode} ran"
            assert r.error.stage == pb.VALIDATE and r.error.kind == pb.UNSUPPORTED, r.error
            assert op.field in r.error.message and mode in r.error.message, r.error.message


EDGED = [op for op in OPS if op.edge_ok or op.edge_bad]


@pytest.mark.parametrize("op", EDGED, ids=[op.field for op in EDGED])
def test_edge_parameters_are_admitted_and_the_next_ones_refused_naming_the_op(op):
    mode = edge_mode(op)
    jobs = {}
    for i, params in enumerate(op.edge_ok):
        jobs[f"ok{i}"] = node_job(op, params, mode, f"ok{i}")
    for i, params in enumerate(op.edge_bad):
        jobs[f"bad{i}"] = node_job(op, params, mode, f"bad{i}")
    got = run_keyed(jobs)
    for i, params in enumerate(op.edge_ok):
        r = got[f"ok{i}"]
        assert r.WhichOneof("outcome") == "image", f"{op.field} {params!r} on {mode}: {r.error}"
    for i, params in enumerate(op.edge_bad):
        r = got[f"bad{i}"]
        assert r.WhichOneof("outcome") == "error", f"{op.field} {params!r} on {mode} ran"
        assert r.error.stage == pb.VALIDATE, (params, r.error)
        assert op.field in r.error.message, (params, r.error.message)


def test_every_graph_step_of_the_table_is_a_step_of_the_language():
    from imgbatch import _graphlang

    assert sorted(_graphlang._STEPS) == sorted(s.name for op in OPS for s in op.steps)
