"""Kafka I/O for producers: Producer publishes Jobs, ResultReader reads Results.

Needs confluent-kafka (the [kafka] extra). The worker keys every Result
message `topic/partition/offset` of the job it answers and sets
Result.source to the same coordinates (README, "The Kafka worker"). Delivery is
at-least-once: a worker crash can repeat a job, and the repeated Result has
the same key, outcome and image bytes (job_id, worker_id and timings may
differ). ResultReader therefore yields each key once.
"""

from collections import OrderedDict
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ._proto import CONTRACT_VERSION, pb
from .stream import InputKey, Result, parse_result

Coordinates = Tuple[str, int, int]


def _kafka() -> Any:
    try:
        import confluent_kafka
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("imgbatch: Producer/ResultReader need confluent-kafka: "
                          "pip install 'imgbatch-client[kafka]'") from e
    return confluent_kafka


class Delivery(NamedTuple):
    """Where the broker stored one Job: the Result for it carries these
    coordinates in Result.source and as its message key."""

    topic: str
    partition: int
    offset: int
    input_key: InputKey = None

    @property
    def coordinates(self) -> Coordinates:
        return (self.topic, self.partition, self.offset)

    @property
    def result_key(self) -> str:
        """The Kafka key of the Result message the worker will publish."""
        return f"{self.topic}/{self.partition}/{self.offset}"


class DeliveryError(RuntimeError):
    """Some Jobs were not acknowledged by the broker; .failures lists
    (send index, input key, KafkaError)."""

    def __init__(self, failures: List[Tuple[int, InputKey, Any]]):
        self.failures = failures
        first = failures[0]
        super().__init__(f"imgbatch: {len(failures)} job(s) not delivered; first: "
                         f"#{first[0]} key={first[1]!r}: {first[2]}")


def _job_bytes_and_key(job: Any, key: InputKey, job_kw: Mapping[str, Any]) -> Tuple[bytes, InputKey]:
    """(serialized Job, its input key) from a lazy image, a Job message or Job bytes."""
    if hasattr(job, "to_job"):
        return job.to_job(key=key, **job_kw), key
    if job_kw:
        raise TypeError("imgbatch: output options apply to lazy images only, not to built Jobs")
    P = pb()
    if isinstance(job, P.Job):
        msg = job
    elif isinstance(job, (bytes, bytearray, memoryview)):
        msg = P.Job.FromString(bytes(job))
    else:
        raise TypeError(f"imgbatch: cannot publish {type(job).__name__} as a Job")
    which = msg.WhichOneof("input_key")
    job_key = None if which is None else getattr(msg, which)
    if key is not None and key != job_key:
        raise ValueError(f"imgbatch: key {key!r} differs from the Job's input_key {job_key!r}")
    if msg.contract_version == 0:
        # Every Job this client writes carries the contract; one built by hand
        # without it would be read by the worker as contract 1.
        if msg is job:
            msg = P.Job()
            msg.CopyFrom(job)
        msg.contract_version = CONTRACT_VERSION
    return msg.SerializeToString(), job_key


class Producer:
    """Publishes Jobs to the jobs topic (default imgbatch.jobs).

        with imgbatch.Producer("broker:9092") as p:
            p.send(im, key="a.png", output="png")
            deliveries = p.flush()      # [Delivery(topic, partition, offset, input_key)]

    The Kafka message key is the Job's input key (str, or the decimal integer),
    so jobs for one key stay in order on one partition. The producer is
    idempotent with acks=all; `config` adds or overrides librdkafka properties
    (SASL, SSL, ...).
    """

    def __init__(self, brokers: str, topic: str = "imgbatch.jobs",
                 config: Optional[Mapping[str, Any]] = None):
        conf: Dict[str, Any] = {"bootstrap.servers": brokers, "enable.idempotence": True, "acks": "all"}
        conf.update(config or {})
        self.topic = topic
        self._producer = _kafka().Producer(conf)
        self._pending: List[Optional[Union[Delivery, Tuple[InputKey, Any]]]] = []
        self._base = 0  # send index of _pending[0]

    def send(self, job: Any, key: InputKey = None, *, headers: Optional[Mapping[str, Union[str, bytes]]] = None,
             on_delivery: Optional[Callable[[Optional[Delivery], Any], None]] = None,
             **job_kw: Any) -> int:
        """Queue one Job; returns its send index (its place in flush()'s list).

        job: a LazyImage (serialized with to_job(key=key, **job_kw): output,
        metadata, quality, correlation_id, ...), a Job message or Job bytes
        (whose input_key is used when key is None). Jobs are parsed, and one
        without contract_version gets CONTRACT_VERSION; bytes that are not a
        Job raise DecodeError (publish poison with a plain Kafka producer). on_delivery(delivery,
        error) is called from poll()/flush() once the broker answers.
        """
        data, job_key = _job_bytes_and_key(job, key, job_kw)
        index = self._base + len(self._pending)
        self._pending.append(None)

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                self._pending[index - self._base] = (job_key, err)
                if on_delivery:
                    on_delivery(None, err)
                return
            d = Delivery(msg.topic(), msg.partition(), msg.offset(), job_key)
            self._pending[index - self._base] = d
            if on_delivery:
                on_delivery(d, None)

        kafka_key = None if job_key is None else str(job_key).encode()
        hdrs = [(k, v.encode() if isinstance(v, str) else v) for k, v in (headers or {}).items()]
        while True:
            try:
                self._producer.produce(self.topic, value=data, key=kafka_key, headers=hdrs or None,
                                       on_delivery=report)
                break
            except BufferError:  # local queue full: serve delivery reports, retry
                self._producer.poll(0.1)
        self._producer.poll(0)
        return index

    def poll(self, timeout: float = 0) -> int:
        """Serve delivery reports; returns how many were served."""
        return int(self._producer.poll(timeout))

    def flush(self, timeout: Optional[float] = None) -> List[Delivery]:
        """Wait for every queued Job's delivery report. Returns the Deliveries of
        the Jobs sent since the previous flush, in send order; raises
        DeliveryError if any failed, TimeoutError if reports are still missing."""
        left = self._producer.flush(-1 if timeout is None else timeout)
        pending, self._pending = self._pending, []
        first = self._base
        self._base += len(pending)
        if left or any(p is None for p in pending):
            raise TimeoutError(f"imgbatch: {left} job(s) still waiting for delivery reports")
        failures = [(first + i, p[0], p[1]) for i, p in enumerate(pending)
                    if p is not None and not isinstance(p, Delivery)]
        if failures:
            raise DeliveryError(failures)
        return [p for p in pending if isinstance(p, Delivery)]

    def publish(self, jobs: Iterable[Any], **job_kw: Any) -> List[Delivery]:
        """Send every Job (lazy images keyed by position unless job_kw has key
        semantics of its own) and flush; returns their Deliveries in order."""
        for i, job in enumerate(jobs):
            self.send(job, key=i if hasattr(job, "to_job") else None, **job_kw)
        return self.flush()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.flush()
        else:
            self._producer.flush(10)


def result_identity(kafka_key: Optional[bytes], result: Result) -> Optional[str]:
    """What makes two Result messages the same answer: the message key
    `topic/partition/offset` of the job, or Result.source when the message has
    no key; None when neither exists (such results are never collapsed)."""
    if kafka_key:
        return bytes(kafka_key).decode("utf-8", "replace")
    if result.source is not None:
        return "%s/%d/%d" % result.source
    return None


class _Seen:
    """The identities already yielded; the newest `remember` are kept."""

    def __init__(self, remember: int):
        self.remember = remember
        self._ids: "OrderedDict[str, None]" = OrderedDict()

    def first(self, kafka_key: Optional[bytes], result: Result) -> bool:
        ident = result_identity(kafka_key, result)
        if ident is None:
            return True
        if ident in self._ids:
            return False
        self._ids[ident] = None
        if len(self._ids) > self.remember:
            self._ids.popitem(last=False)
        return True


def collapse_duplicates(messages: Iterable[Tuple[Optional[bytes], Result]],
                        remember: int = 1_000_000) -> Iterator[Result]:
    """Yield each (kafka_key, Result)'s Result the first time its identity is
    seen (result_identity); repeats from re-executed jobs are dropped. The
    newest `remember` identities are kept."""
    seen = _Seen(remember)
    for kafka_key, result in messages:
        if seen.first(kafka_key, result):
            yield result


class ResultReader:
    """Reads Results from the results topic (default imgbatch.results), each
    job's Result once (duplicates collapsed, see collapse_duplicates).

        reader = imgbatch.ResultReader("broker:9092")
        for r in reader.results(deliveries, timeout=60):   # what Producer.flush() returned
            print(r.input_key, r.source, r.error or r.image.size)
        reader.close()

    group: the consumer group; None reads as a fresh anonymous reader
    (a random group id, no commits) from the start of the topic, the right
    thing for a producer waiting for its own jobs. With a group, offsets are
    committed as Results are yielded, and the group resumes where it stopped.
    """

    def __init__(self, brokers: str, topic: str = "imgbatch.results", group: Optional[str] = None,
                 config: Optional[Mapping[str, Any]] = None):
        import uuid

        conf: Dict[str, Any] = {
            "bootstrap.servers": brokers,
            "group.id": group or f"imgbatch-reader-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": group is not None,
            "enable.partition.eof": False,
        }
        conf.update(config or {})
        self.topic = topic
        self._consumer = _kafka().Consumer(conf)
        self._consumer.subscribe([topic])
        self._seen = _Seen(1_000_000)

    def _messages(self, timeout: Optional[float]) -> Iterator[Tuple[Optional[bytes], Result]]:
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
            if wait <= 0:
                return
            msg = self._consumer.poll(wait)
            if msg is None:
                continue
            if msg.error():
                if msg.error().retriable() or not msg.error().fatal():
                    continue
                raise RuntimeError(f"imgbatch: results consumer: {msg.error()}")
            yield msg.key(), parse_result(msg.value())

    def __iter__(self) -> Iterator[Result]:
        return self.read()

    def read(self, timeout: Optional[float] = None) -> Iterator[Result]:
        """Yield Results as they arrive, duplicates collapsed; stops after
        `timeout` seconds (None: never)."""
        for kafka_key, result in self._messages(timeout):
            if self._seen.first(kafka_key, result):
                yield result

    def results(self, expected: Iterable[Union[Delivery, Coordinates]],
                timeout: Optional[float] = 60.0) -> Iterator[Result]:
        """Yield one Result for each expected job (Deliveries from
        Producer.flush(), or (topic, partition, offset) tuples), matched by
        Result.source and, when the Delivery knows it, the input key; other
        Results on the topic are skipped. Raises TimeoutError naming the
        missing coordinates if they are not all answered within timeout."""
        want: Dict[Coordinates, InputKey] = {}
        for e in expected:
            if isinstance(e, Delivery):
                want[e.coordinates] = e.input_key
            else:
                topic, partition, offset = e
                want[(topic, int(partition), int(offset))] = None
        if not want:
            return
        for r in self.read(timeout):
            if r.source is None or r.source not in want:
                continue
            key = want[r.source]
            if key is not None and r.input_key is not None and r.input_key != key:
                continue  # coordinates reused by another producer's job
            del want[r.source]
            yield r
            if not want:
                return
        missing = sorted(want)
        raise TimeoutError(f"imgbatch: no Result within {timeout}s for {len(missing)} job(s), "
                           f"e.g. {missing[:3]}")

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "ResultReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__: Sequence[str] = ["Producer", "ResultReader", "Delivery", "DeliveryError",
                          "result_identity", "collapse_duplicates"]
