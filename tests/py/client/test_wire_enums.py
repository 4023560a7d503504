"""The client's copies of wire enums against imgbatch_pb2 (generated from
proto/imgbatch.proto when the package is built): a proto edit that renumbers
or adds a value fails here, not as a wrong op on a worker. The worker's
copies are checked by tests/unit/test_wire_constants.c."""
import PIL.Image

import imgbatch
from imgbatch import Image, ImageChops, ImageEnhance, stream
from imgbatch import _graph

pb = imgbatch.pb()


def test_chops_functions():
    assert ImageChops.FUNCTIONS == {k.lower(): v for k, v in pb.ChopsFunction.items()}
    for name in ImageChops.FUNCTIONS:
        assert callable(getattr(ImageChops, name)), name


def test_enhance_kinds():
    classes = {c.__name__.upper(): c._kind for c in vars(ImageEnhance).values()
               if isinstance(c, type) and hasattr(c, "_kind") and c.__name__ != "_Enhance"}
    assert classes == dict(pb.EnhanceKind.items())


def test_transpose_methods_and_resampling_are_pillows_values():
    # The client sends int(method) / int(resample) as Pillow numbers them.
    assert Image.Transpose is PIL.Image.Transpose
    assert {m.name: int(m) for m in PIL.Image.Transpose} == dict(pb.TransposeMethod.items())
    assert {m.name: int(m) for m in PIL.Image.Resampling} == dict(pb.Resample.items())


def test_output_formats():
    assert _graph._FORMATS == {name.lower(): name for name in pb.Format.keys()}


def _error(stage, kind):
    r = pb.Result()
    r.error.stage = stage
    r.error.kind = kind
    return stream.parse_result(r.SerializeToString()).error


def test_stage_and_error_kind_names_are_the_documented_words():
    # JobError documents stage as the Stage name in lower case and kind as
    # one of these words (ErrorKind less its _ERROR suffix).
    kinds = {"invalid", "unsupported", "limit", "decode", "device", "timeout", "internal"}
    got_kinds = {_error(0, v).kind for _, v in pb.ErrorKind.items() if v}
    assert got_kinds == kinds
    for name, v in pb.Stage.items():
        want = "unspecified" if v == 0 else name.lower()
        assert _error(v, 0).stage == want
    # A value this client does not know is named, never dropped.
    assert _error(max(pb.Stage.values()) + 1, 0).stage.startswith("unknown_")
