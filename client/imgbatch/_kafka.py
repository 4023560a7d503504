"""Kafka I/O for producers: Producer publishes Jobs, ResultReader reads Results.

Needs confluent-kafka (the [kafka] extra). The worker keys every Result
message `topic/partition/offset` of the job it answers and sets
Result.source to the same coordinates (README, "The Kafka worker"). Delivery is
at-least-once: a worker crash can repeat a job, and the repeated Result has
the same key, outcome and image bytes (job_id, worker_id and timings may
differ). ResultReader therefore yields each key once.
"""

import hashlib
import logging
import os
import time
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
    Set,
    Tuple,
    Union,
)

from ._proto import contract_for, pb
from .stream import InputKey, Result, parse_result

Coordinates = Tuple[str, int, int]

# librdkafka's default message.max.bytes, the bound the producer enforces.
_DEFAULT_MAX_MESSAGE = 1_000_000
# What a record adds to the Job and its key inside a batch (record headers,
# varints, the batch header): measured under 40 bytes; headers are counted apart.
_RECORD_ENVELOPE = 256
# The embedded broker (`imgbatch broker`, librdkafka 2.0.2's mock; its cluster
# id starts "mockCluster") keeps 5 MiB a partition, and a message that passes
# that with the partition's newest message is deleted with it (rdkafka_mock.c
# removes every older message set, and with the last the start offset passes
# the new one). Messages of at most half of 5 MiB never meet that; the next
# message after one larger than 5 MiB is lost too.
_EMBEDDED_MAX_MESSAGE = 5 * 1024 * 1024 // 2
_EMBEDDED_CLUSTER_ID = "mockCluster"

# librdkafka's own log lines come here (through confluent-kafka's `logger`),
# not to the terminal; `python -m imgbatch produce --verbose` shows them.
LOG = logging.getLogger("imgbatch.kafka")
LOG.addHandler(logging.NullHandler())


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


class ResultGapError(TimeoutError):
    """ResultReader.results() timed out with jobs unanswered, and the broker
    deleted messages they may be among (a broker with little retention: the
    embedded broker keeps about 5 MiB a partition). `missing`: the
    coordinates still unanswered; `jobs_deleted`: those of them whose job the
    broker deleted from the jobs topic (an offset below its partition's log
    start) with no Result seen; `results_deleted`: Results this reader never
    read because the broker deleted them first (anyone's, not only ours)."""

    def __init__(self, timeout: Optional[float], missing: List[Coordinates],
                 jobs_deleted: List[Coordinates], results_deleted: int):
        self.missing, self.jobs_deleted, self.results_deleted = missing, jobs_deleted, results_deleted
        super().__init__(
            f"imgbatch: no Result within {timeout}s for {len(missing)} job(s), e.g. {missing[:3]}; "
            f"the broker deleted {len(jobs_deleted)} of those jobs before they were read, and "
            f"{results_deleted} Result(s) before this reader read them (retention: the embedded "
            f"broker keeps about 5 MiB a partition)")


class BrokerUnreachableError(ConnectionError):
    """No broker of the bootstrap list answered a metadata request in time."""

    def __init__(self, brokers: str, timeout: float, reason: str):
        self.brokers = brokers
        super().__init__(f"imgbatch: no Kafka broker answered at {brokers} within {timeout:g} s ({reason})")


class JobTooLargeError(ValueError):
    """A Job larger than the producer's message.max.bytes that could not be
    made smaller by moving its encoded sources into source_dir."""

    def __init__(self, key: InputKey, size: int, limit: int, why: str = "", embedded: bool = False):
        self.key, self.size, self.limit = key, size, limit
        through_dir = ("send sources through a directory the worker reads as its --source-root "
                       "(produce --source-dir DIR, Producer(source_dir=...))")
        if embedded:
            super().__init__(
                f"imgbatch: the Job for {key!r} is {size} bytes, over {limit} bytes, the most the "
                f"embedded broker keeps safely (it loses a message that passes 5 MiB with the one "
                f"before it on its partition){why}. On the embedded broker {through_dir}; a Kafka "
                f"cluster takes more with -X message.max.bytes=N on the producer and the worker")
            return
        super().__init__(
            f"imgbatch: the Job for {key!r} is {size} bytes, over the producer's message.max.bytes "
            f"({limit}){why}. Either raise message.max.bytes on the producer and the worker "
            f"(-X message.max.bytes=N on both; a Kafka cluster needs its message.max.bytes or the "
            f"topic's max.message.bytes raised too; the embedded broker keeps no message over "
            f"{_EMBEDDED_MAX_MESSAGE} bytes safely), or {through_dir}")


def _check_cluster(client: Any, brokers: str, timeout: Optional[float]) -> Optional[Any]:
    """Fail fast: a metadata round trip to any bootstrap broker within timeout
    (None: no check), else BrokerUnreachableError naming the address. Returns
    the cluster's metadata (None without the check)."""
    if timeout is None:
        return None
    kafka = _kafka()
    try:
        return client.list_topics(timeout=timeout)
    except kafka.KafkaException as e:
        client.poll(0)  # hands librdkafka's queued log lines to the logger
        err = e.args[0] if e.args else e
        raise BrokerUnreachableError(brokers, timeout, err.str() if hasattr(err, "str") else str(err)) from None


def _client_config(brokers: str, base: Mapping[str, Any], config: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    conf: Dict[str, Any] = {"bootstrap.servers": brokers, "logger": LOG}
    conf.update(base)
    conf.update(config or {})
    return conf


def _job_bytes_and_key(job: Any, key: InputKey, job_kw: Mapping[str, Any]) -> Tuple[bytes, InputKey]:
    """(serialized Job, its input key) from a lazy image, a Job message or Job bytes."""
    if hasattr(job, "to_job"):
        return job.to_job(key=key, **job_kw), key
    if isinstance(job, (list, tuple)):
        from ._graph import renditions_job

        return renditions_job(job, key=key, **job_kw), key
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
        msg.contract_version = contract_for(msg)
    return msg.SerializeToString(), job_key


class Producer:
    """Publishes Jobs to the jobs topic (default imgbatch.jobs).

        with imgbatch.Producer("broker:9092") as p:
            p.send(im, key="a.png", output="png")
            deliveries = p.flush()      # [Delivery(topic, partition, offset, input_key)]

    The Kafka message key is the Job's input key (str, or the decimal integer),
    so jobs for one key stay in order on one partition. The producer is
    idempotent with acks=all; `config` adds or overrides librdkafka properties
    (SASL, SSL, ...). librdkafka's log lines go to the logger "imgbatch.kafka"
    (config "logger" picks another).

    connect_timeout: the constructor asks the cluster for its metadata and
    raises BrokerUnreachableError naming `brokers` when no broker answers
    within this many seconds (None: no check).

    Large sources: a Job over the producer's message.max.bytes (librdkafka's
    default 1,000,000) is never queued. With source_dir, its encoded sources
    are written there (named by their SHA-256, so a retry rewrites nothing)
    and the Job names them as Source.path relative to source_root (default
    source_dir), the directory the worker reads as its --source-root (the
    same volume, perhaps mounted elsewhere). Without it, or when the Job is
    still too large (raw pixels), send() raises JobTooLargeError naming both
    remedies. The files are not removed: a worker may read a Job again until
    its offset is committed, so expire them by age. On the embedded broker
    (`imgbatch broker`, found by its cluster id at the connect check) the
    bound is at most 2.5 MiB whatever message.max.bytes says: it loses a
    message that passes 5 MiB with the one before it on its partition.
    """

    def __init__(self, brokers: str, topic: str = "imgbatch.jobs",
                 config: Optional[Mapping[str, Any]] = None, *,
                 source_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                 source_root: Optional[Union[str, "os.PathLike[str]"]] = None,
                 connect_timeout: Optional[float] = 10.0):
        conf = _client_config(brokers, {"enable.idempotence": True, "acks": "all"}, config)
        self.topic = topic
        self.max_message_bytes = int(conf.get("message.max.bytes", _DEFAULT_MAX_MESSAGE))
        self.source_dir = None if source_dir is None else os.path.abspath(source_dir)
        root = source_root if source_root is not None else source_dir
        self.source_root = None if root is None else os.path.abspath(root)
        if self.source_dir is not None and self.source_root is not None:
            if os.path.commonpath([self.source_dir, self.source_root]) != self.source_root:
                raise ValueError(f"imgbatch: source_dir {self.source_dir} is not inside "
                                 f"source_root {self.source_root}")
            os.makedirs(self.source_dir, exist_ok=True)
        self._producer = _kafka().Producer(conf)
        meta = _check_cluster(self._producer, brokers, connect_timeout)
        self.embedded_broker = str(getattr(meta, "cluster_id", "") or "").startswith(_EMBEDDED_CLUSTER_ID)
        self._pending: List[Optional[Union[Delivery, Tuple[InputKey, Any]]]] = []
        self._base = 0  # send index of _pending[0]

    def _store_source(self, data: bytes) -> str:
        """Writes an encoded source under source_dir once (content-named,
        written whole then renamed); its path relative to source_root."""
        assert self.source_dir is not None and self.source_root is not None
        name = hashlib.sha256(data).hexdigest()
        final = os.path.join(self.source_dir, name)
        if not os.path.exists(final):
            tmp = f"{final}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        return os.path.relpath(final, self.source_root).replace(os.sep, "/")

    def _fit(self, data: bytes, key: InputKey, overhead: int) -> bytes:
        """The Job as it will be sent: itself when it fits message.max.bytes,
        else with its encoded sources moved to source_dir (JobTooLargeError
        when that is not possible or not enough)."""
        cap = self.max_message_bytes
        embedded = self.embedded_broker and cap > _EMBEDDED_MAX_MESSAGE
        if embedded:
            cap = _EMBEDDED_MAX_MESSAGE
        limit = cap - overhead - _RECORD_ENVELOPE
        if len(data) <= limit:
            return data
        if self.source_dir is None:
            raise JobTooLargeError(key, len(data), cap, embedded=embedded)
        job = pb().Job.FromString(data)
        moved = 0
        for src in [job.source, *job.extra_sources]:
            if src.WhichOneof("kind") == "encoded":
                src.path = self._store_source(src.encoded)
                moved += 1
        small = job.SerializeToString()
        if len(small) > limit:
            why = "" if moved else "; only encoded sources can go through source_dir, this one's are not"
            raise JobTooLargeError(key, len(small), cap, why, embedded=embedded)
        return small

    def send(self, job: Any, key: InputKey = None, *, headers: Optional[Mapping[str, Union[str, bytes]]] = None,
             on_delivery: Optional[Callable[[Optional[Delivery], Any], None]] = None,
             **job_kw: Any) -> int:
        """Queue one Job; returns its send index (its place in flush()'s list).

        job: a LazyImage (serialized with to_job(key=key, **job_kw): output,
        metadata, quality, correlation_id, ...), a list of renditions -
        [(image, "JPEG", 85), (other, "WEBP", 80), ...], one Job computing
        every image of one decode (renditions_job; the Result's renditions) -,
        a Job message or Job bytes
        (whose input_key is used when key is None). Jobs are parsed, and one
        without contract_version gets the one it needs (contract_for); bytes that are not a
        Job raise DecodeError (publish poison with a plain Kafka producer). on_delivery(delivery,
        error) is called from poll()/flush() once the broker answers. A Job
        over message.max.bytes goes by source_dir or raises JobTooLargeError
        (see the class), before anything is queued.
        """
        data, job_key = _job_bytes_and_key(job, key, job_kw)
        kafka_key = None if job_key is None else str(job_key).encode()
        hdrs = [(k, v.encode() if isinstance(v, str) else v) for k, v in (headers or {}).items()]
        overhead = len(kafka_key or b"") + sum(len(k) + len(v) for k, v in hdrs)
        data = self._fit(data, job_key, overhead)
        index = self._base + len(self._pending)

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

        kafka = _kafka()
        while True:
            try:
                self._producer.produce(self.topic, value=data, key=kafka_key, headers=hdrs or None,
                                       on_delivery=report)
                break
            except BufferError:  # local queue full: serve delivery reports, retry
                self._producer.poll(0.1)
            except kafka.KafkaException as e:
                if e.args and e.args[0].code() == kafka.KafkaError.MSG_SIZE_TOO_LARGE:
                    raise JobTooLargeError(job_key, len(data), self.max_message_bytes) from None
                raise
        self._pending.append(None)
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

    group: the consumer group; None reads as an anonymous reader: every
    partition of the topic assigned from its start (no group join, so the
    first Result is seen as soon as it arrives; partitions the topic gains
    are picked up within a few seconds), no commits: the right thing for a
    producer waiting for its own jobs. With a group, offsets are committed
    as Results are yielded, and the group resumes where it stopped.
    connect_timeout: as for Producer (BrokerUnreachableError).
    """

    # How often an anonymous reader looks for a topic that does not exist
    # yet, and for partitions added to one it reads.
    _LOOK_FOR_TOPIC_S = 0.05
    _LOOK_FOR_PARTITIONS_S = 5.0

    def __init__(self, brokers: str, topic: str = "imgbatch.results", group: Optional[str] = None,
                 config: Optional[Mapping[str, Any]] = None, *, connect_timeout: Optional[float] = 10.0):
        import uuid

        base: Dict[str, Any] = {
            "group.id": group or f"imgbatch-reader-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": group is not None,
            "enable.partition.eof": False,
        }
        if group is None:
            # The embedded broker answers a fetch only when this ends
            # (librdkafka's default 500 ms), so a Result would wait that long.
            base["fetch.wait.max.ms"] = 50
        conf = _client_config(brokers, base, config)
        self.topic = topic
        self.group = group
        self._consumer = _kafka().Consumer(conf)
        try:
            _check_cluster(self._consumer, brokers, connect_timeout)
        except BrokerUnreachableError:
            self._consumer.close()
            raise
        self._assigned: Set[int] = set()
        # The offset expected next in each results partition (gaps: see
        # _note_offset); an anonymous reader starts each at 0.
        self._next_offset: Dict[int, int] = {}
        self.results_deleted = 0
        self._next_look = 0.0
        if group is not None:
            self._consumer.subscribe([topic])
        else:
            self._assign_new_partitions()
        self._seen = _Seen(1_000_000)

    def _assign_new_partitions(self) -> None:
        """Anonymous reader: assign (from the start) partitions of the topic
        not yet assigned; the topic may not exist yet (no Result written)."""
        kafka = _kafka()
        try:
            meta = self._consumer.list_topics(self.topic, timeout=1.0)
        except kafka.KafkaException:
            meta = None
        t = None if meta is None else meta.topics.get(self.topic)
        parts = set() if t is None or t.error is not None else set(t.partitions)
        new = sorted(parts - self._assigned)
        if new:
            self._consumer.incremental_assign(
                [kafka.TopicPartition(self.topic, p, kafka.OFFSET_BEGINNING) for p in new])
            self._assigned.update(new)
            self._next_offset.update({p: 0 for p in new})
        wait = self._LOOK_FOR_PARTITIONS_S if self._assigned else self._LOOK_FOR_TOPIC_S
        self._next_look = time.monotonic() + wait

    def _messages(self, timeout: Optional[float]) -> Iterator[Tuple[Optional[bytes], Result]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            now = time.monotonic()
            wait = 1.0 if deadline is None else min(1.0, deadline - now)
            if wait <= 0:
                return
            if self.group is None:
                if now >= self._next_look:
                    self._assign_new_partitions()
                if not self._assigned:
                    wait = min(wait, self._LOOK_FOR_TOPIC_S)
            msg = self._consumer.poll(wait)
            if msg is None:
                continue
            if msg.error():
                if msg.error().retriable() or not msg.error().fatal():
                    continue
                raise RuntimeError(f"imgbatch: results consumer: {msg.error()}")
            self._note_offset(msg.partition(), msg.offset())
            yield msg.key(), parse_result(msg.value())

    def _low_watermark(self, topic: str, partition: int) -> Optional[int]:
        kafka = _kafka()
        try:
            return int(self._consumer.get_watermark_offsets(
                kafka.TopicPartition(topic, partition), timeout=2.0, cached=False)[0])
        except kafka.KafkaException:
            return None

    def _note_offset(self, partition: int, offset: int) -> None:
        """A jump past the offset expected next is a loss where the
        partition's log start now lies beyond that offset: the broker deleted
        Results before we read them (librdkafka then moves on to the log
        start without an error). Other jumps (transaction markers) are not."""
        expected = self._next_offset.get(partition)
        self._next_offset[partition] = offset + 1
        if expected is None or offset <= expected:
            return
        lo = self._low_watermark(self.topic, partition)
        if lo is None or lo <= expected:
            return
        deleted = min(lo, offset) - expected
        self.results_deleted += deleted
        LOG.warning("imgbatch: the broker deleted %d Result(s) of %s [%d] (offsets %d to %d) "
                    "before this reader read them", deleted, self.topic, partition, expected,
                    expected + deleted - 1)

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
        jobs_deleted = self._deleted_jobs(missing)
        if jobs_deleted or self.results_deleted:
            raise ResultGapError(timeout, missing, jobs_deleted, self.results_deleted)
        raise TimeoutError(f"imgbatch: no Result within {timeout}s for {len(missing)} job(s), "
                           f"e.g. {missing[:3]}")

    def _deleted_jobs(self, missing: List[Coordinates]) -> List[Coordinates]:
        """Those of `missing` below their jobs partition's log start now."""
        lows: Dict[Tuple[str, int], Optional[int]] = {}
        gone = []
        for topic, partition, offset in missing:
            if (topic, partition) not in lows:
                lows[(topic, partition)] = self._low_watermark(topic, partition)
            lo = lows[(topic, partition)]
            if lo is not None and offset < lo:
                gone.append((topic, partition, offset))
        return gone

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "ResultReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__: Sequence[str] = ["Producer", "ResultReader", "Delivery", "DeliveryError", "BrokerUnreachableError",
                          "ResultGapError",
                          "JobTooLargeError",
                          "result_identity", "collapse_duplicates"]
