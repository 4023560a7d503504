"""End-to-end harness for `imgbatch worker`: the broker (`imgbatch broker`, the
mock cluster over TCP) and the workers run as real processes; jobs go in with
confluent_kafka.Producer and results come out with confluent_kafka.Consumer.

Mind the mock's retention: librdkafka 2.0.2's mock keeps at most 5 MiB (and
100,000 message sets) per partition and drops the oldest beyond that, so a
test keeps each partition's backlog, jobs and Results alike, under ~4 MiB.

Every wait has a deadline, every process is killed in Env.close(), and every
failure message carries the processes' stderr (Env.why)."""
import collections
import ctypes
import json
import os
import resource
import select
import signal
import subprocess
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition
from google.protobuf.message import DecodeError

from imgbatch import imgbatch_pb2 as pb

BIN = os.environ["IB_BIN"]
BACKEND = os.environ.get("IB_WORKER_BACKEND", "cpu")
JOBS, RESULTS, CONTROL = "imgbatch.jobs", "imgbatch.results", "imgbatch.control"
GROUP = "imgbatch"


def _sanitized(path):
    try:
        with open(path, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


SANITIZED = _sanitized(BIN)
# Deadlines stretch under ASan (about 3x slower) or on request.
SCALE = float(os.environ.get("IB_TIMEOUT_SCALE", "3" if SANITIZED else "1"))


def t(seconds):
    """A deadline in seconds, stretched by SCALE."""
    return seconds * SCALE


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """preexec_fn: the child gets SIGKILL when the test process dies, so that
    no broker or worker outlives a killed pytest."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _tail(lines, n=40):
    lines = list(lines)[-n:]
    return "\n".join(lines) if lines else "(nothing)"


def worker_supports(flag):
    """Whether `imgbatch worker --help` mentions flag (e.g. --fault, built
    only with -DIB_FAULTS=ON)."""
    p = subprocess.run([BIN, "worker", "--help"], capture_output=True, text=True, timeout=30)
    return flag in p.stdout


def coord_key(topic, partition, offset):
    """The key of a job's Result message: the job's coordinates."""
    return f"{topic}/{partition}/{offset}"


class Broker:
    """`imgbatch broker` in its own process; commands on its stdin."""

    # These suites were written for 4 partitions a topic, `imgbatch broker`'s
    # default before it took 64 (more room before the mock deletes): kept,
    # so their spread over partitions and their timing stay as designed.
    FOUR = ("imgbatch.jobs:4", "imgbatch.results:4")

    def __init__(self, workdir, brokers=1, topics=()):
        self.brokers = brokers
        self.stderr_path = os.path.join(workdir, "broker.stderr")
        named = {topic.rsplit(":", 1)[0] for topic in topics}
        topics = [t for t in self.FOUR if t.rsplit(":", 1)[0] not in named] + list(topics)
        argv = [BIN, "broker", "--brokers", str(brokers)]
        for topic in topics:
            argv += ["--topic", topic]
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, bufsize=0,
                                     preexec_fn=_die_with_parent)
        self._buf = b""
        self.frozen = False
        line = self._readline(t(20))
        if not line.startswith("bootstrap="):
            self.stop()
            raise RuntimeError(f"broker did not start: {line!r}\n{self.stderr()}")
        self.bootstrap = line.split("=", 1)[1]

    def _readline(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"broker: no line within {timeout:.0f}s\n{self.stderr()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    raise RuntimeError(f"broker closed stdout (rc {self.proc.poll()})\n"
                                       f"{self.stderr()}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def command(self, line, expect_ok=True):
        """Sends one command and returns its answer ('ok' or 'error: ...');
        raises unless it is 'ok' when expect_ok."""
        self.proc.stdin.write(line.encode() + b"\n")
        answer = self._readline(t(20))
        if expect_ok and answer != "ok":
            raise AssertionError(f"broker command {line!r}: {answer}")
        return answer

    def freeze(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self):
        os.kill(self.proc.pid, signal.SIGCONT)
        self.frozen = False

    def stderr(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return "broker stderr:\n" + _tail(f.read().decode(errors="replace").splitlines())
        except OSError:
            return "broker stderr: (unreadable)"

    def stop(self):
        """SIGTERM (SIGKILL after a deadline); returns the exit code."""
        if self.proc.poll() is None:
            if self.frozen:
                self.thaw()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=t(15))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        for f in (self.proc.stdin, self.proc.stdout, self._err):
            try:
                f.close()
            except OSError:
                pass
        return self.proc.returncode


class Worker:
    """`imgbatch worker` as a process; its JSON stderr lines are parsed into
    `events` as they come (a reader thread)."""

    # The mock broker answers a fetch only when fetch.wait.max.ms ends.
    DEFAULT_X = ("session.timeout.ms=6000", "heartbeat.interval.ms=500", "fetch.wait.max.ms=50")
    # A given --worker-id is the consumer's group.instance.id (static
    # membership: no LeaveGroup at exit). These suites were written for
    # members that leave at exit, so it is off unless a test asks (static).
    DYNAMIC_X = ("group.instance.id=",)

    def __init__(self, workdir, bootstrap, worker_id, args=(), x=(), rlimit_fsize=None,
                 env=None, static=False):
        self.worker_id = worker_id
        self.argv = [BIN, "worker", "--brokers", bootstrap, "--backend", BACKEND,
                     "--worker-id", worker_id]
        for kv in (*self.DEFAULT_X, *(() if static else self.DYNAMIC_X), *x):
            self.argv += ["-X", kv]
        self.argv += [str(a) for a in args]
        self.lines = []
        self.events = []
        self._cond = threading.Condition()
        def preexec():
            _die_with_parent()
            if rlimit_fsize is not None:
                # An ignored SIGXFSZ makes an over-limit write fail with EFBIG
                # (a sink fault) instead of killing the worker.
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (rlimit_fsize, rlimit_fsize))
        self.stdout_path = os.path.join(workdir, f"worker-{worker_id}-{uuid.uuid4().hex[:6]}.out")
        self._out = open(self.stdout_path, "wb")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._out,
                                     stderr=subprocess.PIPE, preexec_fn=preexec,
                                     env={**os.environ, **(env or {})})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            event = None
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    event = None
            with self._cond:
                self.lines.append(line)
                if isinstance(event, dict):
                    event["_t"] = time.monotonic() - self.started_at
                    self.events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    # ---- events

    def named(self, name):
        with self._cond:
            return [e for e in self.events if e.get("event") == name]

    def wait_event(self, name, pred=None, timeout=30, after=0):
        """The first event `name` (at index >= after in self.events) that
        satisfies pred; raises if the process ends or the deadline passes."""
        deadline = time.monotonic() + t(timeout)
        with self._cond:
            while True:
                for e in self.events[after:]:
                    if e.get("event") == name and (pred is None or pred(e)):
                        return e
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(f"worker {self.worker_id} exited "
                                         f"({self.proc.returncode}) before event {name!r}\n"
                                         f"{self.stderr()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"worker {self.worker_id}: no event {name!r} within "
                                         f"{t(timeout):.0f}s\n{self.stderr()}")
                self._cond.wait(min(left, 0.2))

    def wait_assigned(self, timeout=40):
        """Waits for an `assigned` event with at least one partition."""
        return self.wait_event("assigned", lambda e: e.get("partitions"), timeout)

    def owned(self, topic=JOBS):
        """Partitions of topic owned now, per the assigned/revoked/lost events
        (incremental, as cooperative-sticky reports them)."""
        owned = set()
        for e in list(self.events):
            if e.get("event") == "assigned":
                owned |= {p for tp, p in e.get("partitions", []) if tp == topic}
            elif e.get("event") in ("revoked", "lost"):
                owned -= {p for tp, p in e.get("partitions", []) if tp == topic}
        return owned

    # ---- process

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def kill(self):
        """SIGKILL and reap."""
        self.signal(signal.SIGKILL)
        return self.wait_exit(30)

    def wait_exit(self, timeout):
        """The exit code, or an AssertionError if still running after timeout
        (scaled)."""
        try:
            rc = self.proc.wait(timeout=t(timeout))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker {self.worker_id} still running after "
                                 f"{t(timeout):.0f}s\n{self.stderr()}") from None
        self._reader.join(timeout=10)
        return rc

    def stderr(self, n=40):
        with self._cond:
            lines = list(self.lines)
        return f"worker {self.worker_id} (rc {self.proc.poll()}) stderr:\n{_tail(lines, n)}"

    def close(self):
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self._reader.join(timeout=10)
        for f in (self.proc.stderr, self._out):
            try:
                f.close()
            except OSError:
                pass


Message = collections.namedtuple("Message", "topic partition offset key value headers result")


def _headers(msg):
    return {k: (v if v is None else bytes(v)) for k, v in (msg.headers() or [])}


class Reader:
    """Reads a whole topic from the beginning (all partitions assigned, no
    group coordination) and keeps every message; Result values are parsed."""

    def __init__(self, bootstrap, topic, parse=True, hopeless=lambda: None):
        self.topic = topic
        self.hopeless = hopeless
        self.parse = parse
        self.messages = []
        self._c = Consumer({"bootstrap.servers": bootstrap,
                            "group.id": f"e2e-reader-{uuid.uuid4().hex[:8]}",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False,
                            "fetch.wait.max.ms": 50})
        md = self._c.list_topics(topic, timeout=t(20))
        parts = md.topics[topic].partitions
        if not parts:
            raise RuntimeError(f"topic {topic} has no partitions")
        self._c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(parts)])

    def poll(self, seconds=0.2):
        """Reads what arrives within `seconds`; returns the new messages."""
        new = []
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            batch = self._c.consume(num_messages=1000, timeout=max(0.0, min(left, 0.2)))
            for m in batch:
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(m.error())
                result = None
                if self.parse and m.value() is not None:
                    try:
                        result = pb.Result.FromString(m.value())
                    except DecodeError:
                        result = None
                key = m.key().decode(errors="replace") if m.key() is not None else None
                new.append(Message(m.topic(), m.partition(), m.offset(), key, m.value(),
                                   _headers(m), result))
            if left <= 0 and not batch:
                break
        self.messages.extend(new)
        return new

    def by_key(self):
        out = collections.defaultdict(list)
        for m in self.messages:
            out[m.key].append(m)
        return out

    def _give_up(self, deadline, last_chance):
        """Whether to stop waiting: past the deadline, or nothing can come
        (no worker left) and one last poll has been made."""
        if time.monotonic() <= deadline and not self.hopeless():
            return False
        if last_chance[0]:
            return True
        last_chance[0] = True
        self.poll(1.0)
        return False

    def wait_keys(self, keys, timeout, why=lambda: ""):
        """Polls until every key in keys has at least one message; returns
        by_key(). On the deadline, or once no worker is left, raises naming
        the missing keys."""
        keys = set(keys)
        deadline = time.monotonic() + t(timeout)
        last_chance = [False]
        while True:
            have = self.by_key()
            missing = keys - have.keys()
            if not missing:
                return have
            if self._give_up(deadline, last_chance):
                raise AssertionError(f"{len(missing)} of {len(keys)} keys without a message on "
                                     f"{self.topic} ({self.hopeless() or 'deadline'}, "
                                     f"{t(timeout):.0f}s), e.g. {sorted(missing)[:5]}\n{why()}")
            self.poll(0.3)

    def wait_count(self, n, timeout, pred=lambda m: True, why=lambda: ""):
        """Polls until n messages satisfy pred; returns them."""
        deadline = time.monotonic() + t(timeout)
        last_chance = [False]
        while sum(1 for m in self.messages if pred(m)) < n:
            if self._give_up(deadline, last_chance):
                got = sum(1 for m in self.messages if pred(m))
                raise AssertionError(f"{got} of {n} messages on {self.topic} "
                                     f"({self.hopeless() or 'deadline'}, {t(timeout):.0f}s)\n"
                                     f"{why()}")
            self.poll(0.3)
        return [m for m in self.messages if pred(m)]

    def close(self):
        try:
            self._c.close()
        except (KafkaException, RuntimeError):
            pass


class Env:
    """One broker process, its workers, a producer and readers; close() ends
    them all."""

    def __init__(self, workdir, brokers=1, topics=(), jobs_topic=JOBS):
        os.makedirs(workdir, exist_ok=True)
        self.workdir = str(workdir)
        self.jobs_topic = jobs_topic
        self.workers = []
        self.readers = []
        self._ids = 0
        self.broker = Broker(self.workdir, brokers, topics)
        self.bootstrap = self.broker.bootstrap
        self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5,
                                  "enable.idempotence": True, "message.timeout.ms": 30000})
        self._meta = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "e2e-meta"})

    # ---- processes

    def worker(self, *args, worker_id=None, x=(), **kw):
        """Starts a worker on this broker (--grace-seconds 10 unless given)."""
        self._ids += 1
        args = tuple(str(a) for a in args)
        if "--grace-seconds" not in args:
            args += ("--grace-seconds", "10")
        w = Worker(self.workdir, self.bootstrap, worker_id or f"w{self._ids}", args, x, **kw)
        self.workers.append(w)
        return w

    def why(self, note=""):
        """Diagnostics for an assertion message: every process's stderr."""
        parts = [note] if note else []
        parts += [w.stderr() for w in self.workers]
        parts.append(self.broker.stderr())
        return "\n".join(parts)

    def sanitizer_reports(self):
        """Lines where ASan, LSan or UBSan reported on a worker or the broker."""
        marks = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
        lines = [f"{w.worker_id}: {line}" for w in self.workers for line in list(w.lines)
                 if any(m in line for m in marks)]
        try:
            with open(self.broker.stderr_path, "rb") as f:
                lines += [f"broker: {line}" for line in f.read().decode(errors="replace")
                          .splitlines() if any(m in line for m in marks)]
        except OSError:
            pass
        return lines

    def close(self):
        for w in self.workers:
            w.close()
        for r in self.readers:
            r.close()
        # Dropping the last reference destroys the client now, before the
        # broker goes (a live client would keep reconnecting, and logging).
        self.producer = None
        self.readers = []
        self._meta.close()
        return self.broker.stop()

    # ---- kafka

    def partitions(self, topic=None):
        md = self._meta.list_topics(topic or self.jobs_topic, timeout=t(20))
        return sorted(md.topics[topic or self.jobs_topic].partitions)

    def watermarks(self, topic, partition):
        """(low, high): the first offset the mock still holds, the next one."""
        return self._meta.get_watermark_offsets(TopicPartition(topic, partition), timeout=t(20))

    def produce(self, messages, topic=None, partition=None, timeout=60):
        """Publishes messages (bytes, or (value, headers) / (value, headers,
        key) tuples) and returns their (topic, partition, offset) in order.
        partition: None spreads them round-robin over the topic's partitions."""
        topic = topic or self.jobs_topic
        parts = self.partitions(topic) if partition is None else [partition]
        coords = [None] * len(messages)
        errors = []

        def report(i):
            def cb(err, msg):
                if err is not None:
                    errors.append(err)
                else:
                    coords[i] = (msg.topic(), msg.partition(), msg.offset())
            return cb

        for i, m in enumerate(messages):
            if m is None or isinstance(m, (bytes, bytearray)):
                value, headers, key = m, None, None
            else:
                value, headers, key = (tuple(m) + (None, None))[:3]
            while True:
                try:
                    self.producer.produce(topic, value=value, key=key, headers=headers,
                                          partition=parts[i % len(parts)], on_delivery=report(i))
                    break
                except BufferError:
                    self.producer.poll(0.1)
            self.producer.poll(0)
        left = self.producer.flush(t(timeout))
        assert left == 0 and not errors, self.why(f"produce: {left} undelivered, {errors[:3]}")
        for p in {c[1] for c in coords}:
            first = min(c[2] for c in coords if c[1] == p)
            low = self.watermarks(topic, p)[0]
            assert low <= first, (f"the mock dropped {topic}/{p} below {low} (it keeps 5 MiB a "
                                  f"partition): keep the test's backlog smaller")
        return coords

    def hopeless(self):
        """A reason why waiting for more is pointless (every worker started
        has exited), or None."""
        if self.workers and not any(w.alive() for w in self.workers):
            return "every worker has exited"
        return None

    def reader(self, topic=RESULTS, parse=True):
        r = Reader(self.bootstrap, topic, parse, self.hopeless)
        self.readers.append(r)
        return r

    def committed(self, topic=None, group=GROUP):
        """{partition: committed offset} of the group (-1001 where none)."""
        topic = topic or self.jobs_topic
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group,
                      "enable.auto.commit": False})
        try:
            tps = c.committed([TopicPartition(topic, p) for p in self.partitions(topic)],
                              timeout=t(20))
            return {tp.partition: tp.offset for tp in tps}
        finally:
            c.close()

    def end_offsets(self, topic=None):
        topic = topic or self.jobs_topic
        return {p: self.watermarks(topic, p)[1] for p in self.partitions(topic)}

    def wait_committed(self, expected, timeout, topic=None):
        """Waits until the group's committed offsets equal expected
        ({partition: offset}); returns them."""
        deadline = time.monotonic() + t(timeout)
        while True:
            got = self.committed(topic)
            if all(got.get(p) == o for p, o in expected.items()):
                return got
            if time.monotonic() > deadline or self.hopeless():
                raise AssertionError(self.why(f"committed {got}, want {expected}"))
            time.sleep(0.3)


def result_ok(m):
    return m.result is not None and m.result.WhichOneof("outcome") in ("image", "file")


def outcome(m):
    return m.result.WhichOneof("outcome") if m.result is not None else None


def error_of(m):
    e = m.result.error
    return pb.Stage.Name(e.stage), pb.ErrorKind.Name(e.kind), e.message


def input_key(r):
    which = r.WhichOneof("input_key")
    return getattr(r, which) if which else None


def check_result_for(m, coord, key=None):
    """Asserts that Result message m answers the job at coord (and its input
    key). Returns the Result."""
    r = m.result
    assert r is not None, f"{m.key}: value is not a Result"
    assert m.key == coord_key(*coord), (m.key, coord)
    assert (r.source.topic, r.source.partition, r.source.offset) == coord, (r.source, coord)
    if key is not None:
        assert input_key(r) == key, (input_key(r), key)
    return r


def same_outcome(a, b):
    """Whether two Results of one job agree on what matters for a duplicate:
    outcome kind, image bytes, error stage and kind."""
    if a.WhichOneof("outcome") != b.WhichOneof("outcome"):
        return False
    which = a.WhichOneof("outcome")
    if which == "image":
        return (a.image.mode, a.image.width, a.image.height, a.image.format, a.image.data) == (
            b.image.mode, b.image.width, b.image.height, b.image.format, b.image.data)
    if which == "error":
        return (a.error.stage, a.error.kind) == (b.error.stage, b.error.kind)
    if which == "file":
        return (a.file.path, a.file.size, a.file.mode, a.file.width, a.file.height) == (
            b.file.path, b.file.size, b.file.mode, b.file.width, b.file.height)
    return True


def rss_bytes(pid):
    """VmRSS of pid in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def wait_until(pred, timeout, why=lambda: "", step=0.2, hopeless=lambda: None):
    """Polls pred() until it is truthy (returns its value); raises
    AssertionError with why() once the scaled deadline passes or hopeless()
    gives a reason."""
    deadline = time.monotonic() + t(timeout)
    while True:
        value = pred()
        if value:
            return value
        reason = hopeless()
        if reason or time.monotonic() > deadline:
            raise AssertionError(f"{reason or f'not within {t(timeout):.0f}s'}\n{why()}")
        time.sleep(step)


def check_commits_only_for_owned(worker, topic=JOBS):
    """Every `committed` event of worker names a partition it owned at that
    moment (per its assigned/revoked/lost events before it)."""
    owned = set()
    for e in list(worker.events):
        name = e.get("event")
        if name == "assigned":
            owned |= {(tp, p) for tp, p in e.get("partitions", [])}
        elif name in ("revoked", "lost"):
            owned -= {(tp, p) for tp, p in e.get("partitions", [])}
        elif name == "committed" and e.get("topic") == topic:
            assert (topic, e.get("partition")) in owned, (
                f"worker {worker.worker_id} committed {e} for a partition it does not own "
                f"(owned {sorted(owned)})\n{worker.stderr()}")


class Feeder:
    """A steady stream of jobs: each step publishes `batch` more (round-robin
    over the partitions) and reads Results for `pause` seconds, so that a
    test's kills and joins land mid-stream however fast the worker is."""

    def __init__(self, env, reader, make_job, batch=10, pause=0.1):
        self.env, self.reader, self.make_job = env, reader, make_job
        self.batch, self.pause = batch, pause
        self.jobs, self.coords = [], []

    def step(self, n=None):
        made = [self.make_job(len(self.jobs) + i) for i in range(n or self.batch)]
        self.coords.extend(self.env.produce([j for j, _ in made], timeout=30))
        self.jobs.extend(made)
        self.reader.poll(self.pause)

    def until(self, pred, timeout, what):
        """Steps until pred() holds; fails after the (scaled) timeout or once
        every worker has exited."""
        deadline = time.monotonic() + t(timeout)
        while not pred():
            assert time.monotonic() < deadline, self.env.why(f"no {what} within {timeout}s")
            reason = self.env.hopeless()
            assert not reason, self.env.why(f"{reason}, waiting for {what}")
            self.step()

    def keys(self):
        return [coord_key(*c) for c in self.coords]
