"""Hostile Jobs at parse and validate, through the real binary (`imgbatch run`):
each is answered with an error Result of the right stage and kind, the Result
parses in a strict protobuf runtime, and the process goes on to run the next job.
"""
import math
import time

import pytest
from google.protobuf import descriptor as gpd
from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes

import ibtest
from imgbatch import imgbatch_pb2 as pb

CONTRACT_VERSION = 3  # IB_CONTRACT_VERSION in worker/include/imgbatch.h
MAX_SOURCES = 64      # IB_MAX_SOURCES in worker/parse/parse.c

# ---------------------------------------------------------------- wire helpers


def varint(n):
    return _VarintBytes(n)


def field(fn, payload):
    """A length-delimited field."""
    return varint(fn << 3 | 2) + varint(len(payload)) + payload


def vfield(fn, value):
    """A varint field (negative values as protobuf writes int32/int64)."""
    return varint(fn << 3) + varint(value & (2**64 - 1))


def raw_job(key, w=4, h=3, mode="RGB", seed=0):
    """Only the source node: each test appends its own."""
    return ibtest.raw_job(key, w, h, mode, seed, copy=False)


def with_node(job, **set_op):
    """Appends a one-input node reading node 0; set_op = {op: {param: value}}."""
    (op, params), = set_op.items()
    node = job.nodes.add()
    node.inputs.append(0)
    msg = getattr(node, op)
    msg.SetInParent()
    for k, v in params.items():
        if isinstance(v, list):
            getattr(msg, k).extend(v)
        elif isinstance(v, dict):
            sub = getattr(msg, k)
            for kk, vv in v.items():
                setattr(sub, kk, vv)
        else:
            setattr(msg, k, v)
    return job


# ---------------------------------------------------------------- strict parsing


def _string_fields_are_utf8(data, desc):
    """Walks a serialized message by its descriptor and decodes every string
    strictly: the check upb makes, done here so the test does not depend on
    which protobuf runtime is installed."""
    pos = 0
    while pos < len(data):
        key, pos = _DecodeVarint32(data, pos)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            while data[pos] & 0x80:
                pos += 1
            pos += 1
            continue
        if wt in (1, 5):
            pos += 8 if wt == 1 else 4
            continue
        assert wt == 2, f"wire type {wt} in a Result"
        n, pos = _DecodeVarint32(data, pos)
        payload = data[pos:pos + n]
        pos += n
        f = desc.fields_by_number.get(fn)
        if f is None:
            continue
        if f.type == gpd.FieldDescriptor.TYPE_STRING:
            payload.decode("utf-8", errors="strict")
        elif f.type == gpd.FieldDescriptor.TYPE_MESSAGE:
            _string_fields_are_utf8(payload, f.message_type)


def parse_result(data):
    _string_fields_are_utf8(data, pb.Result.DESCRIPTOR)
    r = pb.Result()
    r.ParseFromString(data)
    return r


def test_the_installed_runtime_or_our_check_refuses_bad_utf8():
    bad = b"\x1a\x02\xff\x00"  # Result.key_string = b"\xff\x00"
    with pytest.raises(Exception):
        parse_result(bad)


def run(frames, *args, timeout=60):
    return ibtest.run(frames, *args, timeout=timeout, parse=parse_result)


def answer(hostile_bytes, *args, timeout=60):
    """Runs one hostile frame then a good job keyed 4242; returns the hostile
    one's Result after checking that the process lived and ran the good one."""
    good = raw_job(4242).SerializeToString()
    p, results = run([hostile_bytes, good], *args, timeout=timeout)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert len(results) == 2, (len(results), p.stderr[-2000:])
    good_r = [r for r in results if r.WhichOneof("input_key") == "key_u64" and r.key_u64 == 4242]
    assert len(good_r) == 1 and good_r[0].WhichOneof("outcome") == "image", results
    return next(r for r in results if r is not good_r[0])


def assert_error(r, stage, kind, *words):
    assert r.WhichOneof("outcome") == "error", r
    e = r.error
    assert (pb.Stage.Name(e.stage), pb.ErrorKind.Name(e.kind)) == (stage, kind), e.message
    for w in words:
        assert w in e.message, (w, e.message)
    return e.message


# ---------------------------------------------------------------- 1: nesting


def nested_value(depth, how):
    """A Value nested `depth` lists (or maps) deep around an int."""
    v = vfield(2, 7)  # Value.int_value
    for _ in range(depth):
        if how == "list":
            v = field(7, field(1, v))  # Value.list_value = ValueList{items: [v]}
        else:  # Value.map_value = ValueMap{entries: {"k": v}}
            v = field(8, field(1, field(1, b"k") + field(2, v)))
    return v


def metadata_entry(key, value_bytes):
    return field(7, field(1, key) + field(2, value_bytes))  # Job.metadata


@pytest.mark.parametrize("how,depth", [("list", 5000), ("map", 3000), ("list", 100000)])
def test_metadata_nested_thousands_deep_is_a_limit_not_a_crash(how, depth):
    job = raw_job(1).SerializeToString() + metadata_entry(b"deep", nested_value(depth, how))
    r = answer(job)
    assert_error(r, "PARSE", "LIMIT", "metadata", "deeper than")


def test_deep_metadata_beside_pixels_parsed_in_place_is_a_limit_too():
    # 80x60 RGB raw pixels are past the in-place threshold: the Job takes the
    # hollowing path (ib_graph_parse_buffer), which must be guarded as well.
    job = raw_job(1, w=80, h=60).SerializeToString() + metadata_entry(
        b"deep", nested_value(5000, "list"))
    assert_error(answer(job), "PARSE", "LIMIT", "metadata", "deeper than")
    bad_key = raw_job(1, w=80, h=60).SerializeToString() + field(1, b"\xff")
    assert_error(answer(bad_key), "PARSE", "INVALID", "key_string", "\\xff")


@pytest.mark.parametrize("how", ["list", "map"])
def test_metadata_past_8_levels_but_shallow_on_the_wire_stays_invalid(how):
    job = raw_job(1).SerializeToString() + metadata_entry(b"m", nested_value(8, how))
    r = answer(job)
    assert_error(r, "VALIDATE", "INVALID", "deeper than 8")
    ok = raw_job(2).SerializeToString() + metadata_entry(b"m", nested_value(6, how))
    assert answer(ok).WhichOneof("outcome") == "image"


# ---------------------------------------------------------------- 2: strings


def test_a_key_that_is_not_utf8_is_invalid_at_parse_and_not_echoed():
    job = raw_job(0).SerializeToString() + field(1, b"ab\xffc")  # Job.key_string
    r = answer(job)
    msg = assert_error(r, "PARSE", "INVALID", "key_string", "\\xff", "not valid UTF-8")
    assert r.WhichOneof("input_key") is None, msg


def string_case(name):
    """(serialized job, words its message must hold) for a bad string in `name`."""
    j = raw_job("k")
    if name == "raw mode NUL":
        j.source.raw.mode = "L"
        j.source.raw.width, j.source.raw.height = 1, 1
        j.source.raw.data = b"\x00"
        data = j.SerializeToString() + field(3, field(3, field(1, b"L\x00x")))
        return data, ["source.raw.mode", "'L\\x00x'", "NUL"]
    if name == "convert mode":
        data = with_node(j, convert={}).SerializeToString()
        # nodes[1].convert.mode, merged into the last node
        data += field(5, field(18, field(1, b"RGB\xfe")))
        return data, ["nodes[", "convert.mode", "\\xfe"]
    if name == "metadata key":
        return j.SerializeToString() + metadata_entry(b"k\xc3", vfield(2, 1)), \
            ["metadata[0].key", "\\xc3"]
    if name == "metadata string value":
        return j.SerializeToString() + metadata_entry(b"k", field(5, b"\xed\xa0\x80")), \
            ["metadata[0].value.string_value", "\\xed\\xa0\\x80"]
    if name == "nested metadata map key":
        v = field(8, field(1, field(1, b"x\x00y") + field(2, vfield(1, 1))))
        return j.SerializeToString() + metadata_entry(b"k", v), \
            ["metadata[0].value.map_value.entries[0].key", "x\\x00y"]
    if name == "correlation id":
        return j.SerializeToString() + field(8, b"corr\xc0\xafid"), ["correlation_id", "\\xc0"]
    if name == "overlong and past U+10FFFF":
        return j.SerializeToString() + field(8, b"\xf4\x90\x80\x80"), ["correlation_id", "\\xf4"]
    raise KeyError(name)


@pytest.mark.parametrize("name", ["raw mode NUL", "convert mode", "metadata key",
                                  "metadata string value", "nested metadata map key",
                                  "correlation id", "overlong and past U+10FFFF"])
def test_a_string_that_is_not_utf8_or_holds_a_nul_is_invalid_naming_the_field(name):
    data, words = string_case(name)
    r = answer(data)
    assert_error(r, "VALIDATE", "INVALID", *words)
    assert r.key_string == "k"  # the key itself was fine, so it is echoed


def test_a_path_with_a_nul_is_invalid_not_read_as_its_prefix(tmp_path):
    from PIL import Image
    Image.new("RGB", (3, 2), (1, 2, 3)).save(tmp_path / "ok.png")
    j = raw_job("p")
    j.source.ClearField("raw")
    j.source.path = "ok.png"
    # Same job with the path "ok.png\0../..": protobuf-c would read "ok.png".
    data = j.SerializeToString() + field(3, field(2, b"ok.png\x00../.."))
    r = answer(data, "--source-root", str(tmp_path))
    assert_error(r, "VALIDATE", "INVALID", "source.path", "ok.png\\x00../..", "NUL")
    # The path itself works.
    p, results = run([j.SerializeToString()], "--source-root", str(tmp_path))
    assert results[0].WhichOneof("outcome") == "image", results[0].error.message


@pytest.mark.parametrize("pad", range(4))
def test_long_messages_are_cut_between_code_points(pad):
    # An unsupported mode of 3-byte characters echoed into a 320-byte message:
    # one of the paddings puts the cut inside a character.
    mode = "x" * pad + "\u20ac" * 200
    j = raw_job("€")
    j.source.raw.mode = mode
    r = answer(j.SerializeToString())
    msg = assert_error(r, "VALIDATE", "UNSUPPORTED", "mode '")
    assert len(msg.encode()) >= 300  # it was cut
    assert r.key_string == "€"


def test_valid_utf8_everywhere_is_accepted_and_echoed():
    j = raw_job("clé-😀")
    j.correlation_id = "ид-☃"
    j.metadata["ключ"].string_value = "значение 😀"
    p, results = run([j.SerializeToString()])
    r = results[0]
    assert r.WhichOneof("outcome") == "image", r.error.message
    assert r.key_string == "clé-😀" and r.correlation_id == "ид-☃"
    assert r.metadata["ключ"].string_value == "значение 😀"


# ---------------------------------------------------------------- 3: floats

NONFINITE = [math.nan, math.inf, -math.inf]


def float_cases():
    rgb = lambda: raw_job("f")  # noqa: E731
    two = lambda: _two_input_job()  # noqa: E731
    cases = []
    for x in NONFINITE:
        cases += [
            ("box_blur", "radius_x", lambda x=x: with_node(rgb(), box_blur={"radius_x": x})),
            ("gaussian_blur", "radius_y",
             lambda x=x: with_node(rgb(), gaussian_blur={"radius_x": 1.0, "radius_y": x})),
            ("kernel", "kernel[4]", lambda x=x: with_node(
                rgb(), kernel={"size": 3, "kernel": [1.0] * 4 + [x] + [1.0] * 4, "scale": 9.0})),
            ("kernel", "scale", lambda x=x: with_node(
                rgb(), kernel={"size": 3, "kernel": [1.0] * 9, "scale": x})),
            ("kernel", "offset", lambda x=x: with_node(
                rgb(), kernel={"size": 3, "kernel": [1.0] * 9, "scale": 9.0, "offset": x})),
            ("enhance", "factor", lambda x=x: with_node(rgb(), enhance={"kind": 0, "factor": x})),
            ("enhance", "factor", lambda x=x: with_node(rgb(), enhance={"kind": 2, "factor": x})),
            ("tone", "shadows", lambda x=x: with_node(rgb(), tone={"shadows": x})),
            ("resize", "box.right", lambda x=x: with_node(
                rgb(), resize={"width": 2, "height": 2,
                               "box": {"left": 0.0, "top": 0.0, "right": x, "bottom": 1.0}})),
            ("blend", "alpha", lambda x=x: two_input(two(), "blend", alpha=x)),
            ("chops", "scale", lambda x=x: two_input(two(), "chops", function=8, scale=x)),
            ("chops", "offset", lambda x=x: two_input(two(), "chops", function=9, scale=1.0,
                                                      offset=x)),
            ("chops", "scale", lambda x=x: two_input(two(), "chops", function=0, scale=x)),
        ]
    return cases


def _two_input_job():
    j = raw_job("f")
    j.extra_sources.add().CopyFrom(j.source)
    j.nodes.add().source.index = 1
    return j


def two_input(j, op, **params):
    node = j.nodes.add()
    node.inputs.extend([0, 1])
    msg = getattr(node, op)
    msg.SetInParent()
    for k, v in params.items():
        setattr(msg, k, v)
    return j


@pytest.mark.parametrize("op,param,make", float_cases(),
                         ids=[f"{o}-{p}-{i}" for i, (o, p, _) in enumerate(float_cases())])
def test_every_float_parameter_refuses_nan_and_inf_naming_op_and_param(op, param, make):
    r = answer(make().SerializeToString())
    assert_error(r, "VALIDATE", "INVALID", f"op {op}", f"{param}=", "not finite")


def test_finite_enhance_factors_still_run():
    for f in (0.0, 0.5, 2.0, -1.0, 1e300):
        r = answer(with_node(raw_job("f"), enhance={"kind": 1, "factor": f}).SerializeToString())
        assert r.WhichOneof("outcome") == "image", (f, r.error.message)


# ---------------------------------------------------------------- 4: enums


def test_an_unknown_output_format_is_unsupported_at_validate():
    j = raw_job("fmt")
    j.output.cpu.format = 99
    r = answer(j.SerializeToString())
    assert_error(r, "VALIDATE", "UNSUPPORTED", "output.cpu.format", "value 99",
                 "upgrade the worker")


@pytest.mark.parametrize("op,params,path", [
    ("resize", {"width": 2, "height": 2, "resample": 99}, "resize.resample"),
    ("transpose", {"method": 7}, "transpose.method"),
    ("enhance", {"kind": 3, "factor": 1.0}, "enhance.kind"),
    ("chops", {"function": 12, "scale": 1.0}, "chops.function"),
    ("chops", {"function": -1, "scale": 1.0}, "chops.function"),
], ids=["resample", "transpose", "enhance", "chops-12", "chops-minus-1"])
def test_an_unknown_enum_value_is_unsupported_at_validate(op, params, path):
    if op == "chops":
        j = two_input(_two_input_job(), "chops", **params)
    else:
        j = with_node(raw_job("e"), **{op: params})
    r = answer(j.SerializeToString())
    assert_error(r, "VALIDATE", "UNSUPPORTED", path, "upgrade the worker")


# ---------------------------------------------------------------- 5: sources


def test_sources_are_bounded():
    j = raw_job("s")
    for _ in range(MAX_SOURCES - 1):
        j.extra_sources.add().CopyFrom(j.source)
    assert answer(j.SerializeToString()).WhichOneof("outcome") == "image"
    j.extra_sources.add().CopyFrom(j.source)
    r = answer(j.SerializeToString())
    assert_error(r, "VALIDATE", "LIMIT", f"{MAX_SOURCES + 1}", f"bound of {MAX_SOURCES}")


def test_200000_unused_sources_are_refused_quickly():
    one = field(4, field(1, b"\x89PNG not really"))  # Job.extra_sources{encoded}
    data = raw_job("s").SerializeToString() + one * 200000
    t = time.monotonic()
    r = answer(data)
    assert time.monotonic() - t < 3.0
    assert_error(r, "VALIDATE", "LIMIT", "200001")


def test_only_sources_a_source_node_reads_are_probed():
    # Unused extra sources that are not images (and a path with no source
    # root) are never opened or probed; the job runs.
    j = raw_job("u")
    for k in range(20):
        j.extra_sources.add().encoded = b"garbage %d" % k
    j.extra_sources.add().path = "nowhere.png"
    r = answer(j.SerializeToString())
    assert r.WhichOneof("outcome") == "image", r.error.message
    # Reading one of them is still checked.
    j.nodes.add().source.index = 3
    r = answer(j.SerializeToString())
    assert_error(r, "DECODE", "DECODE_ERROR", "source 3")


# ---------------------------------------------------------------- 6: contract evolution


def test_a_job_for_a_newer_contract_is_unsupported_naming_the_version():
    j = raw_job("v")
    j.contract_version = CONTRACT_VERSION + 1
    r = answer(j.SerializeToString())
    assert_error(r, "VALIDATE", "UNSUPPORTED",
                 f"job written for contract version {CONTRACT_VERSION + 1}",
                 f"this worker reads up to {CONTRACT_VERSION}", "upgrade the worker")
    assert r.key_string == "v"
    for v in (0, 1, CONTRACT_VERSION):
        j.contract_version = v
        assert answer(j.SerializeToString()).WhichOneof("outcome") == "image"


def test_a_newer_contract_wins_over_what_would_otherwise_be_invalid():
    j = raw_job("v")
    j.contract_version = 7
    data = j.SerializeToString() + field(5, field(40, b""))  # a node with an op from the future
    assert_error(answer(data), "VALIDATE", "UNSUPPORTED", "contract version 7")


@pytest.mark.parametrize("where,extra,path", [
    ("node op", field(5, vfield(1, 0) + field(40, field(1, b"x"))), "nodes[1]: field 40"),
    ("source kind", field(4, field(9, b"future")), "extra_sources[0]: field 9"),
    ("output target", field(6, field(3, b"")), "output: field 3"),
    ("job field", vfield(99, 1), "Job: field 99"),
    ("op param", field(5, vfield(1, 0) + field(25, vfield(7, 1))), "gaussian_blur: field 7"),
], ids=["node op", "source kind", "output target", "job field", "op param"])
def test_an_op_field_or_kind_newer_than_the_worker_is_unsupported_not_invalid(where, extra, path):
    data = raw_job("n").SerializeToString() + extra
    r = answer(data)
    assert_error(r, "VALIDATE", "UNSUPPORTED", path, "newer than this worker",
                 "upgrade the worker")


def test_a_node_without_any_op_is_still_invalid():
    data = raw_job("n").SerializeToString() + field(5, vfield(1, 0))
    assert_error(answer(data), "VALIDATE", "INVALID", "no op set")
