"""imgbatch producer client: a Pillow-shaped lazy graph builder and Kafka I/O.

    from imgbatch import Image, ImageOps, ImageFilter, ImageChops, ImageEnhance
    im = ImageOps.invert(Image.open("a.png").filter(ImageFilter.GaussianBlur(2)))
    job = im.to_job(key="a.png", output="png")   # serialized imgbatch.v1.Job
    ref = im.replay()                            # same graph on real Pillow

    with imgbatch.Producer("localhost:9092") as p:      # extra [kafka]
        coords = p.send(job, key="a.png")               # (topic, partition, offset)
    for r in imgbatch.ResultReader("localhost:9092").results({coords}):
        print(r.input_key, r.source, r.error or r.image.size)

Calls mirror Pillow's signatures; each returns a LazyImage whose .mode and
.size are what Pillow (or, for decoded sources, the worker) gives. The
Pillow-shaped modules (Image, ImageOps, ImageFilter, ImageChops,
ImageEnhance) record through Pillow and need the [pillow] extra; they are
imported on first access, so the wire layer (write_delimited, parse_result,
Result) and Kafka (Producer, ResultReader; the [kafka] extra) work without
Pillow. Every Job written carries the contract_version it needs: 2, or
CONTRACT_VERSION (3) when it uses renditions, a draft-decoded source or a metadata
policy.

Operations the worker executes (README, "Operations"; modes L, LA, RGB, RGBA, CMYK,
RGBX, 8 bits per band; anything else is refused by the worker naming op and
mode). OPERATIONS maps each wire op (the proto Node field) to the Pillow
call it mirrors and the modes the worker runs it on, as the op table
worker/ops/ops.def declares them (docs/ops.md); print it with
    python -c "import imgbatch; [print(k, *v, sep=' | ') for k, v in imgbatch.OPERATIONS.items()]"
"""

from typing import TYPE_CHECKING, Any, Dict, Tuple

from . import _optable
from ._proto import CONTRACT_VERSION, MAX_RENDITIONS, pb
from .stream import (
    ImageData,
    ImageFile,
    JobError,
    Rendition,
    Resident,
    Result,
    parse_result,
    read_delimited,
    read_results,
    run_local,
    write_delimited,
)

__version__ = "3.0.0"

# op (proto Node field) -> (the Pillow call it mirrors, the modes the worker runs it on),
# from the op table (worker/ops/ops.def, generated into _optable).
OPERATIONS: Dict[str, Tuple[str, str]] = {
    op.field: (op.pillow, ", ".join(op.modes) + op.note) for op in _optable.OPS
}

_LAZY = {
    "Image": (".Image", None), "ImageChops": (".ImageChops", None),
    "ImageEnhance": (".ImageEnhance", None), "ImageFilter": (".ImageFilter", None),
    "ImageOps": (".ImageOps", None), "LazyImage": ("._methods", "LazyImage"),
    "unchecked": ("._record", "unchecked"), "tone": ("._tone", "tone"), "register_tone_reference": ("._tone", "register_tone_reference"),
    "Producer": ("._kafka", "Producer"), "ResultReader": ("._kafka", "ResultReader"),
    "Delivery": ("._kafka", "Delivery"), "result_identity": ("._kafka", "result_identity"),
    "collapse_duplicates": ("._kafka", "collapse_duplicates"),
    "ResultGapError": ("._kafka", "ResultGapError"),
    "parse_graph": ("._graphlang", "parse_graph"), "apply_graph": ("._graphlang", "apply_graph"),
    "renditions_job": ("._graph", "renditions_job"),
    "renditions_job_message": ("._graph", "renditions_job_message"),
}

if TYPE_CHECKING:  # pragma: no cover - what the lazy names are, for type checkers
    from . import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps
    from ._graph import renditions_job, renditions_job_message
    from ._graphlang import apply_graph, parse_graph
    from ._kafka import (Delivery, Producer, ResultGapError, ResultReader, collapse_duplicates,
                         result_identity)
    from ._methods import LazyImage
    from ._record import unchecked
    from ._tone import register_tone_reference, tone


def __getattr__(name: str) -> Any:
    # PEP 562: Pillow (and confluent-kafka) are imported only when their
    # part of the package is first used, so both stay optional extras.
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module 'imgbatch' has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(spec[0], __name__)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "PIL":
            raise ImportError(f"imgbatch.{name} records through Pillow (PIL), which is not installed: "
                              "pip install 'imgbatch-client[pillow]'") from e
        raise
    value = module if spec[1] is None else getattr(module, spec[1])
    globals()[name] = value
    return value


__all__ = [
    "CONTRACT_VERSION", "OPERATIONS", "Image", "ImageChops", "ImageEnhance", "ImageFilter",
    "ImageOps", "LazyImage", "unchecked", "tone", "register_tone_reference", "write_delimited",
    "read_delimited", "read_results", "parse_result", "run_local", "Result", "ImageData",
    "ImageFile", "Resident", "JobError", "Producer", "ResultReader", "ResultGapError",
    "Delivery",
    "result_identity", "collapse_duplicates", "parse_graph", "apply_graph", "pb",
    "MAX_RENDITIONS", "Rendition", "renditions_job", "renditions_job_message",
]
