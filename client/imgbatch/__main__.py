"""python -m imgbatch produce FILES... --graph "invert|gaussian_blur(2)" --brokers HOST:PORT

Records the graph (see imgbatch._graphlang for the language) on each file,
publishes one Job per file (key = the file's path as given) and prints
`key<TAB>topic/partition/offset` per Job. With --wait S it then reads the
results topic (duplicates collapsed) until every Job is answered or S
seconds pass, printing `key<TAB>outcome`, and writes images under --out.
Exit codes: 0 all published (and, with --wait, all answered without error),
1 a delivery, a Result error or a timeout, 2 a usage or graph error.
"""

import argparse
import os
import sys
from typing import List, Optional


def _produce(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m imgbatch produce",
                                 description="Publish one imgbatch Job per file.")
    ap.add_argument("files", nargs="+", help="image files (PNG, JPEG, WebP, TIFF, GIF)")
    ap.add_argument("--graph", required=True, help='steps, e.g. "invert|gaussian_blur(2)|convert(L)"')
    ap.add_argument("--brokers", required=True, help="Kafka bootstrap servers")
    ap.add_argument("--topic", default="imgbatch.jobs")
    ap.add_argument("--output", default="png", help="raw, png, jpeg, webp, tiff or gpu (default png)")
    ap.add_argument("--path", action="store_true",
                    help="send Source.path (relative to the worker's --source-root) instead of the bytes")
    ap.add_argument("-X", dest="props", action="append", default=[], metavar="KEY=VALUE",
                    help="librdkafka property for the producer and reader")
    ap.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                    help="then read the Results (duplicates collapsed) for this long")
    ap.add_argument("--results-topic", default="imgbatch.results")
    ap.add_argument("--out", default=None, help="with --wait: write result images here")
    args = ap.parse_args(argv)

    from . import Image
    from ._graphlang import apply_graph, parse_graph
    from ._kafka import DeliveryError, Producer, ResultReader

    props = {}
    for p in args.props:
        k, sep, v = p.partition("=")
        if not sep:
            ap.error(f"-X {p}: want KEY=VALUE")
        props[k] = v
    try:
        steps = parse_graph(args.graph)
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
    try:
        with Producer(args.brokers, args.topic, props) as producer:
            for key, im in jobs:
                producer.send(im, key=key, output=args.output)
            deliveries = producer.flush()
    except DeliveryError as e:
        print(e, file=sys.stderr)
        return 1
    for d in deliveries:
        print(f"{d.input_key}\t{d.topic}/{d.partition}/{d.offset}", flush=True)
    if args.wait is None:
        return 0
    failed = 0
    with ResultReader(args.brokers, args.results_topic, config=props) as reader:
        try:
            for r in reader.results(deliveries, timeout=args.wait):
                if r.error is not None:
                    failed += 1
                    print(f"{r.input_key}\terror {r.error}")
                    continue
                outcome = r.image or r.file or r.resident
                print(f"{r.input_key}\tok {type(outcome).__name__} {getattr(outcome, 'mode', '')}")
                if args.out and r.image is not None:
                    os.makedirs(args.out, exist_ok=True)
                    name = os.path.basename(str(r.input_key)) + "." + r.image.format
                    with open(os.path.join(args.out, name), "wb") as f:
                        f.write(r.image.data)
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
