"""python -m imgbatch produce FILES... --graph "invert|gaussian_blur(2)" --brokers HOST:PORT

Records the graph (see imgbatch._graphlang for the language) on each file,
publishes one Job per file (key = the file's path as given) and prints one
line per file: `key<TAB>topic/partition/offset`, or `key<TAB>error <why>`
for a file that was not published (too large for a message, not delivered).
With --wait S it then reads the results topic (duplicates collapsed) until
every Job is answered or S seconds pass, printing `key<TAB>ok ...` or
`key<TAB>error ...`, and writes images under --out (named after the keys).

The cluster is checked first: no broker answering within --connect-timeout
(default 10 s, at most --wait) is one line naming the address and exit 1.
librdkafka's own log lines are shown only with --verbose.

A file whose Job exceeds the producer's message.max.bytes (librdkafka's
default, 1,000,000 bytes) is sent through --source-dir when given (the
worker reads that volume as its --source-root), else reported naming both
remedies (-X message.max.bytes=N on producer and worker, or --source-dir).

Exit codes: 0 all published (and, with --wait, all answered without error),
1 a file not published, a Result error, a timeout or no broker, 2 a usage,
file or graph error (nothing published).
"""

import argparse
import logging
import os
import shutil
import sys
from typing import Any, Dict, List, Optional, Tuple


def _parser() -> argparse.ArgumentParser:
    from ._graph import _FORMATS

    ap = argparse.ArgumentParser(prog="python -m imgbatch produce",
                                 description="Publish one imgbatch Job per file.")
    ap.add_argument("files", nargs="+", help="image files (PNG, JPEG, WebP, TIFF, GIF)")
    ap.add_argument("--graph", default=None, help='steps, e.g. "invert|gaussian_blur(2)|convert(L)"')
    ap.add_argument("--renditions", default=None, metavar="N,N,...",
                    help="one Job per file computing several sizes from one decode: each N is the "
                         "longest side (resize BICUBIC, aspect kept, never enlarged), after --graph; "
                         "--out writes NAME.N.EXT per size")
    ap.add_argument("--quality", type=int, default=None, help="JPEG/WebP quality (Pillow's save(quality=))")
    ap.add_argument("--brokers", required=True, help="Kafka bootstrap servers")
    ap.add_argument("--topic", default="imgbatch.jobs")
    ap.add_argument("--output", default="png", choices=sorted(_FORMATS) + ["gpu"],
                    help="the Result's format (default png)")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--path", action="store_true",
                     help="send Source.path (relative to the worker's --source-root) instead of the bytes")
    src.add_argument("--source-dir", default=None, metavar="DIR",
                     help="write sources of Jobs too large for a message here and send their path "
                          "(DIR is inside the worker's --source-root, on a shared volume)")
    ap.add_argument("--source-root", default=None, metavar="DIR",
                    help="with --source-dir: this machine's path of the worker's --source-root "
                         "(default: --source-dir itself)")
    ap.add_argument("-X", dest="props", action="append", default=[], metavar="KEY=VALUE",
                    help="librdkafka property for the producer and reader (e.g. message.max.bytes=16000000)")
    ap.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                    help="then read the Results (duplicates collapsed) for this long")
    ap.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                    help="fail when no broker answers within this long (default 10, at most --wait)")
    ap.add_argument("--results-topic", default="imgbatch.results")
    ap.add_argument("--out", default=None, help="with --wait: write result images here")
    ap.add_argument("--output-dir", default=None, metavar="DIR",
                    help="with --out: this machine's path of the worker's --output-dir, from which "
                         "results too large for a message (file Results) are copied")
    ap.add_argument("-v", "--verbose", action="store_true", help="show librdkafka's log lines on stderr")
    return ap


def _out_names(keys: List[str]) -> List[str]:
    """One output name per key (in order): the file's path relative to the
    directory all the files share, so that a/x.png and b/x.png stay apart;
    a key given twice gets ~2, ~3, ... ."""
    if not keys:
        return []
    full = [os.path.abspath(k) for k in keys]
    common = os.path.commonpath(full) if len(set(full)) > 1 else os.path.dirname(full[0])
    names, used = [], set()
    for f in full:
        base = os.path.relpath(f, common)
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}~{n}"
        used.add(name)
        names.append(name)
    return names


def _write_out(out: str, name: str, fmt: str, data: Optional[bytes], copy_from: Optional[str] = None) -> str:
    path = os.path.join(out, f"{name}.{fmt}")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if copy_from is not None:
        shutil.copyfile(copy_from, path)
    else:
        assert data is not None
        with open(path, "wb") as f:
            f.write(data)
    return path


def _rendition_sizes(text: str) -> List[int]:
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        raise ValueError(f"--renditions {text!r}: want sizes like 2048,1024,512") from None
    if not sizes or any(n < 1 for n in sizes) or len(set(sizes)) != len(sizes):
        raise ValueError(f"--renditions {text!r}: sizes must be distinct and at least 1")
    return sizes


def _rendition(im: Any, n: int) -> Any:
    """im with its longest side n (Pillow's resize, BICUBIC, round()ed
    other side), or im itself when it is not larger."""
    w, h = im.size
    if max(w, h) <= n:
        return im
    if w >= h:
        return im.resize((n, max(1, round(h * n / w))))
    return im.resize((max(1, round(w * n / h)), n))


def _describe_renditions(r: Any, args: argparse.Namespace, name: str) -> str:
    """As _describe, one part a size; a file rendition --out could not copy
    says why once, at the end, as a single file Result's line does."""
    parts, why = [], ""
    for n, rend in zip(args.sizes, r.renditions):
        if rend.image is not None:
            if args.out:
                _write_out(args.out, f"{name}.{n}", rend.image.format, rend.image.data)
            parts.append(f"{n}:{rend.image.width}x{rend.image.height}")
        elif rend.file is not None:
            f = rend.file
            part = f"{n}:{f.width}x{f.height} file {f.path}"
            src = os.path.join(args.output_dir, f.path) if args.output_dir else None
            if args.out and src and os.access(src, os.R_OK):
                _write_out(args.out, f"{name}.{n}", f.format, None, copy_from=src)
                part += " (copied)"
            elif args.out and src:
                why = f" (files under worker {f.worker_id or '?'}'s --output-dir; not readable here as {src})"
            elif args.out:
                why = f" (files under worker {f.worker_id or '?'}'s --output-dir; pass --output-dir DIR to copy them)"
            parts.append(part)
    return "ok renditions " + " ".join(parts) + why


def _describe(r: Any, args: argparse.Namespace, name: str) -> str:
    """The ok line's text for Result r, writing its image under --out."""
    if r.renditions:
        return _describe_renditions(r, args, name)
    if r.image is not None:
        if args.out:
            _write_out(args.out, name, r.image.format, r.image.data)
        return f"ok ImageData {r.image.mode}"
    if r.file is not None:
        f = r.file
        where = f"{f.path} under worker {f.worker_id or '?'}'s --output-dir"
        if args.out and args.output_dir:
            src = os.path.join(args.output_dir, f.path)
            if os.access(src, os.R_OK):
                _write_out(args.out, name, f.format, None, copy_from=src)
                return f"ok ImageFile {f.mode} (copied from {src})"
            return f"ok ImageFile {f.mode} ({where}; not readable here as {src})"
        if args.out:
            return f"ok ImageFile {f.mode} ({where}; pass --output-dir DIR to copy it)"
        return f"ok ImageFile {f.mode} ({where})"
    if r.resident is not None:
        return f"ok Resident {r.resident.mode} (worker {r.resident.worker_id})"
    return "ok"


def _not_delivered(err: Any) -> str:
    from ._kafka import _kafka

    text = f"not delivered: {err.str() if hasattr(err, 'str') else err}"
    if hasattr(err, "code") and err.code() == _kafka().KafkaError.MSG_SIZE_TOO_LARGE:
        text += (" (the broker refused its size: raise the broker's message.max.bytes or the "
                 "topic's max.message.bytes, or send it through --source-dir)")
    return text


def _publish(args: argparse.Namespace, props: Dict[str, str], jobs: List[Tuple[str, Any]],
             connect_timeout: float) -> Tuple[List[Any], int]:
    """Sends every job; prints one line per file; returns the Deliveries
    (with their place in jobs) and how many files were not published."""
    from ._kafka import JobTooLargeError, Producer, _kafka

    kafka = _kafka()
    producer = Producer(args.brokers, args.topic, props, source_dir=args.source_dir,
                        source_root=args.source_root, connect_timeout=connect_timeout)
    outcome: Dict[int, Any] = {}
    lines: List[Optional[str]] = [None] * len(jobs)
    for i, (key, im) in enumerate(jobs):
        def report(d: Any, err: Any, i: int = i) -> None:
            outcome[i] = d if err is None else err

        try:
            if args.sizes:
                fmt = args.output.upper()
                producer.send([(_rendition(im, n), fmt, args.quality) for n in args.sizes], key=key,
                              on_delivery=report)
            elif args.quality is not None:
                producer.send(im, key=key, output=args.output, quality=args.quality, on_delivery=report)
            else:
                producer.send(im, key=key, output=args.output, on_delivery=report)
        except (JobTooLargeError, kafka.KafkaException, ValueError, TypeError, OSError) as e:
            lines[i] = f"error {e}"
    try:
        producer.flush()
    except (RuntimeError, TimeoutError):
        pass  # each failure is in outcome, reported per file below
    deliveries = []
    for i, (key, _) in enumerate(jobs):
        got = outcome.get(i)
        if lines[i] is None:
            if got is None:
                lines[i] = "error no delivery report"
            elif hasattr(got, "coordinates"):
                lines[i] = f"{got.topic}/{got.partition}/{got.offset}"
                deliveries.append((i, got))
            else:
                lines[i] = f"error {_not_delivered(got)}"
        print(f"{key}\t{lines[i]}", flush=True)
    return deliveries, len(jobs) - len(deliveries)


def _produce(argv: List[str]) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.source_root and not args.source_dir:
        ap.error("--source-root needs --source-dir")
    if args.output_dir and not args.out:
        ap.error("--output-dir needs --out")
    if args.out and args.wait is None:
        ap.error("--out needs --wait SECONDS: results are written while they are awaited")
    if args.graph is None and args.renditions is None:
        ap.error("--graph or --renditions is required")
    args.sizes = []
    if args.renditions is not None:
        if args.output == "gpu":
            ap.error("--renditions are encoded on the worker's host: --output gpu does not apply")
        try:
            args.sizes = _rendition_sizes(args.renditions)
        except ValueError as e:
            ap.error(str(e))
    if args.verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        kafka_log = logging.getLogger("imgbatch.kafka")
        kafka_log.addHandler(handler)
        kafka_log.setLevel(logging.DEBUG)

    from . import Image
    from ._graphlang import apply_graph, parse_graph
    from ._kafka import BrokerUnreachableError, ResultReader, _kafka

    props = {}
    for p in args.props:
        k, sep, v = p.partition("=")
        if not sep:
            ap.error(f"-X {p}: want KEY=VALUE")
        props[k] = v
    try:
        steps = parse_graph(args.graph) if args.graph else []
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    jobs = []
    for path in args.files:
        try:
            src = Image.open_path(path, root=".") if args.path else Image.open(path)
            jobs.append((path, apply_graph(steps, src)))
        except (OSError, ValueError, TypeError, NotImplementedError) as e:
            print(f"{path}: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
    connect_timeout = args.connect_timeout if args.wait is None else min(args.connect_timeout, args.wait)
    reader: Optional[Any] = None
    try:
        deliveries, failed = _publish(args, props, jobs, connect_timeout)
        if args.wait is None:
            return 1 if failed else 0
        reader = ResultReader(args.brokers, args.results_topic, config=props, connect_timeout=connect_timeout)
    except BrokerUnreachableError as e:
        print(e, file=sys.stderr)
        return 1
    except ValueError as e:  # --source-dir outside --source-root
        print(e, file=sys.stderr)
        return 2
    except OSError as e:  # --source-dir not writable
        print(f"imgbatch produce: {e}", file=sys.stderr)
        return 1
    except _kafka().KafkaException as e:  # a -X property librdkafka refuses
        print(f"imgbatch produce: {e.args[0].str() if e.args else e}", file=sys.stderr)
        return 2
    names = _out_names([k for k, _ in jobs])
    place = {d.coordinates: i for i, d in deliveries}
    with reader:
        try:
            for r in reader.results([d for _, d in deliveries], timeout=args.wait):
                i = place[r.source]
                if r.error is not None:
                    failed += 1
                    print(f"{jobs[i][0]}\terror {r.error}", flush=True)
                    continue
                print(f"{jobs[i][0]}\t{_describe(r, args, names[i])}", flush=True)
        except TimeoutError as e:
            print(e, file=sys.stderr)
            return 1
    return 1 if failed else 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] != "produce":
        print(f"imgbatch: unknown command {argv[0]!r} (commands: produce)", file=sys.stderr)
        return 2
    return _produce(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
