#!/usr/bin/env python3
"""Soak: the embedded broker and real worker processes over a mixed workload
of a set number of jobs, sampled every few seconds; fails unless every job's
coordinates are matched to a Result, every figure stays flat and every
credit is back to zero at the end (soak_figures.py says what flat means).

    tests/soak/soak.py --jobs 20000 --profile small --backend cpu          # CI
    tests/soak/soak.py --jobs 200000 --profile mixed --backend cuda \\
        --workers 2 --restarts 15 --new-graph-rate 0.005 --sample-seconds 2 \\
        --worker-arg=--module-cache-bytes --worker-arg=1M \\
        --worker-arg=--disk-cache-bytes --worker-arg=4M \\
        --out soak-gpu                                                      # GPU machine

(about 330 s on an H100 host.) With restarts the figures are judged over
whole restart periods (soak_figures.windows): with 2 workers, 15 restarts
make a period of 25,000 jobs, two to a quarter, so the quarters themselves
are judged (jobs 50,000-100,000 against 150,000-200,000), each median over
two whole periods.

New graphs (new kernel signatures) arrive all along, so the module and disk
caches grow until their bounds: set them small (--worker-arg) so that they
fill in the warm-up, or those figures are judged on their filling. The bounds
judged are those each worker reports in /metrics (soak_figures: "bounded").

Writes OUT/samples.csv, OUT/figures.svg, OUT/summary.txt and each process's
log; prints the samples as a table and the verdict per figure. Exit 0 on a
pass, 1 on a failure (named), 2 on a usage error."""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_figures as figs  # noqa: E402
import soak_jobs  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from imgbatch import imgbatch_pb2 as pb  # noqa: E402

JOBS, RESULTS, CONTROL = "imgbatch.jobs", "imgbatch.results", "imgbatch.control"
# Bytes of unanswered Jobs a partition may hold: the embedded broker keeps
# 5 MiB a partition and deletes the oldest past that, consumed or not. A
# window counted in jobs alone let 36 jobs of ~150 KB (the mixed profile's
# encoded photos) outgrow it on a partition that a restart left waiting.
PART_BYTES = 2 << 20


class Worker:
    """`imgbatch worker` with its /metrics address and warning events read
    from its stderr (a thread), which also goes to a log file."""

    def __init__(self, args, bootstrap, wid):
        self.wid = wid
        argv = [args.bin, "worker", "--brokers", bootstrap, "--backend", args.backend,
                "--worker-id", wid, "--metrics-addr", "127.0.0.1:0", "--output-dir",
                os.path.join(args.out, "files"), "--output-ttl", "30", "--grace-seconds", "30",
                "-X", "fetch.wait.max.ms=50", "-X", "session.timeout.ms=6000",
                "-X", "heartbeat.interval.ms=500", *args.worker_arg]
        self.log = open(os.path.join(args.out, f"worker-{wid}.log"), "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.PIPE)
        self.addr = None
        self.joined = False
        self.deleted = 0
        self.warnings = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.log.write(line)
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") == "http":
                self.addr = e["addr"]
            elif e.get("event") == "assigned":
                self.joined = True
            elif e.get("event") == "jobs_deleted_unconsumed":
                self.deleted += int(e["count"])
            if e.get("level") in ("warn", "error") and e.get("event") != "librdkafka":
                self.warnings.append(e.get("event"))

    def stop(self, timeout=90):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def start_broker(args):
    err = open(os.path.join(args.out, "broker.log"), "wb")
    p = subprocess.Popen([args.bin, "broker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=err)
    line = p.stdout.readline().decode().strip()
    if not line.startswith("bootstrap="):
        raise SystemExit(f"soak: the broker did not start: {line!r}")
    return p, line.split("=", 1)[1]


class Run:
    def __init__(self, args):
        self.args = args
        self.broker, self.bootstrap = start_broker(args)
        self.workers = [Worker(args, self.bootstrap, f"soak{i}-0") for i in range(args.workers)]
        self.generation = 0
        self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "log_level": 4,
                                  "message.max.bytes": 1_000_000, "enable.idempotence": True})
        self.consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-reader", "log_level": 4,
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        parts = self.consumer.list_topics(RESULTS, timeout=20).topics[RESULTS].partitions
        self.consumer.assign([TopicPartition(RESULTS, p, 0) for p in parts])
        # Round robin over the jobs partitions: a keyless producer sticks to
        # one partition for a while, and a burst there before the workers
        # joined overflowed its 5 MiB (the workers reported the loss).
        self.job_parts = len(self.consumer.list_topics(JOBS, timeout=20).topics[JOBS].partitions)
        end = time.monotonic() + 60
        while (not all(w.joined for w in self.workers) and time.monotonic() < end
               and not self.died()):
            time.sleep(0.1)
        self.workload = soak_jobs.Workload(args.seed, args.profile, args.backend,
                                           poison=args.poison,
                                           new_graph_rate=args.new_graph_rate)
        self._books()

    def _books(self):
        """What the run keeps of jobs, Results, handles and restarts."""
        self.kind = {}  # "topic/partition/offset" -> kind, once delivered
        self.answered = {}  # key -> outcome
        self.errors = {}  # "stage/kind: message" of error Results of graphs -> count
        self.produced = self.delivered = self.failed = 0
        self.part_bytes = {}  # jobs partition -> bytes produced there, not yet answered
        self.job_bytes = {}  # job key -> its bytes, delivered and not yet answered
        self.pending = None  # (bytes, kind, partition): the next job, waiting for room
        self.downloads = {}  # control coordinates -> (HandleRef bytes, owner), awaiting a Result
        self.released = self.download_results = 0
        self.handles = {}  # job key -> the HandleRef bytes of its first resident Result
        self.repeat_residents = 0  # repeated resident Results with a handle of their own
        self.samples = []
        self.t0 = time.monotonic()
        self.restarts_done = 0
        self.restart_codes = []
        self.retired = []  # workers sent SIGTERM, not yet exited
        # Worker ids whose process has exited: a resident image lives and dies
        # with its worker, and a Download addressed to an id no process has
        # any more reaches nobody (every restart here takes a new id).
        self.exited = set()
        self.early = set()  # Download Results seen before their command's delivery report
        # Download commands produced whose delivery report has not come yet:
        # the run is not over while one may still be owed a Result (the last
        # resident Result's Download, sent as the last jobs are answered).
        self.unacked = 0

    # ---- jobs out, Results in

    def _on_delivery(self, kind):
        def cb(err, msg):
            if msg.topic() == CONTROL and kind is not None:
                self.unacked -= 1
            if err is not None:
                self.failed += 1
                if msg.topic() == JOBS:
                    self._unhold(msg.partition(), len(msg.value()))
                return
            self.delivered += 1
            key = f"{msg.topic()}/{msg.partition()}/{msg.offset()}"
            if msg.topic() == JOBS:
                self.kind[key] = kind
                if key in self.answered:  # its Result came before this report
                    self._unhold(msg.partition(), len(msg.value()))
                else:
                    self.job_bytes[key] = len(msg.value())
            elif key in self.early:
                self.early.discard(key)
                self._release(kind)
            else:  # a Download command: its HandleRef bytes, and the worker that holds it
                self.downloads[key] = (kind, pb.HandleRef.FromString(kind).worker_id)
        return cb

    def _unhold(self, part, n):
        self.part_bytes[part] = self.part_bytes.get(part, 0) - n

    def produce(self):
        while (self.produced < self.args.jobs
               and self.produced - len(self.answered) < self.args.window):
            if self.pending is None:
                data, kind = self.workload.next()
                self.pending = (data, kind, self.produced % self.job_parts)
            data, kind, part = self.pending
            held = self.part_bytes.get(part, 0)
            if held and held + len(data) > PART_BYTES:
                break  # round robin waits for this partition's answers
            try:
                self.producer.produce(JOBS, data, partition=part, on_delivery=self._on_delivery(kind))
            except BufferError:
                break
            self.part_bytes[part] = held + len(data)
            self.pending = None
            self.produced += 1
        self.producer.poll(0)

    def consume(self):
        for msg in self.consumer.consume(1000, 0.05):
            if msg.error():
                continue
            key = (msg.key() or b"").decode()
            r = pb.Result()
            try:
                r.ParseFromString(msg.value())
            except Exception:  # noqa: BLE001 - a Result we cannot read is a failure below
                self.answered.setdefault(key, "unreadable")
                continue
            self.on_result(key, r)

    def on_result(self, key, r):
        outcome = r.WhichOneof("outcome")
        if key.startswith(CONTROL + "/"):
            self.download_results += 1
            pending = self.downloads.pop(key, None)
            if pending is None:
                self.early.add(key)
            else:
                self._release(pending[0])
            return
        if key in self.answered:
            # A repeat (at-least-once): same key, same outcome. A job redone
            # by the new owner of a revoked partition answers with a handle of
            # its own, which holds its worker's credits until released (or
            # until its lease ends): release it, as any reader must.
            handle = r.resident.SerializeToString() if outcome == "resident" else None
            if handle and handle != self.handles.get(key):
                self.repeat_residents += 1
                self._release(handle)
            return
        self.answered[key] = outcome
        if key in self.job_bytes:
            self._unhold(int(key.split("/")[1]), self.job_bytes.pop(key))
        if outcome == "error" and self.kind.get(key) in ("image", "resident"):
            why = f"{r.error.stage}/{r.error.kind}: {r.error.message[:100]}"
            self.errors[why] = self.errors.get(why, 0) + 1
        if outcome == "resident":
            self.handles[key] = r.resident.SerializeToString()
            self._control(pb.Control(download=pb.Download(
                handle=r.resident, output=pb.CpuOutput(format=pb.PNG))),
                handle=self.handles[key])

    def _release(self, handle):
        self._control(pb.Control(release=pb.Release(handle=pb.HandleRef.FromString(handle))))
        self.released += 1

    def _control(self, command, handle=None):
        if handle:
            self.unacked += 1
        self.producer.produce(CONTROL, command.SerializeToString(),
                              on_delivery=self._on_delivery(handle) if handle else None)

    # ---- figures, restarts

    def sample(self):
        now = time.monotonic() - self.t0
        s = {c: 0.0 for c in figs.COLUMNS}
        s["t_s"], s["answered"] = now, len(self.answered)
        prev = self.samples[-1] if self.samples else None
        if prev and now > prev["t_s"]:
            s["jobs_per_s"] = (s["answered"] - prev["answered"]) / (now - prev["t_s"])
        for w in self.workers:
            p = figs.proc_figures(w.proc.pid) if w.proc.poll() is None else None
            m = figs.scrape(w.addr) if p and w.addr else None
            for k, v in (p or {}).items():
                s[k] += v
            for k, v in (figs.metric_figures(m) if m else {}).items():
                s[k] = max(s[k], v) if k in figs.SHARED else s[k] + v
        s["rss_net_mb"] = s["rss_mb"] - s["host_pool_mb"] - s["scratch_mb"]
        if self.args.backend == "cuda":
            s["device_mb"] = figs.device_mb()
            s["device_net_mb"] = s["device_mb"] - s["device_pool_mb"]
        self.samples.append(s)
        if len(self.samples) % 20 == 1:
            print(" ".join(f"{c[:13]:>13}" for c in figs.COLUMNS), flush=True)
        print(" ".join(f"{s[c]:13.1f}" for c in figs.COLUMNS), flush=True)

    def maybe_restart(self):
        """Rolling SIGTERM restarts, evenly spread over the jobs: restart k
        (1..R) when k/(R+1) of them are answered, worker (k-1) mod M."""
        a = self.args
        k = self.restarts_done + 1
        if k > a.restarts or len(self.answered) < k * a.jobs / (a.restarts + 1):
            return
        i = (k - 1) % len(self.workers)
        old = self.workers[i]
        old.proc.send_signal(signal.SIGTERM)
        self.generation += 1
        self.workers[i] = Worker(a, self.bootstrap, f"soak{i}-{self.generation}")
        self.retired.append(old)
        self.restarts_done += 1
        print(f"soak: restart {k}/{a.restarts}: worker {old.wid} -> {self.workers[i].wid}",
              flush=True)

    def loop(self):
        a = self.args
        next_sample = 0.0
        deadline = time.monotonic() + a.timeout
        while len(self.answered) < a.jobs or self.awaited() or self.unacked:
            if time.monotonic() > deadline:
                break
            if any(w.deleted for w in self.workers + self.retired):
                break  # lost for good: no Result will come (reported below)
            if self.died():
                break  # a worker nobody stopped has exited (reported below)
            self.produce()
            self.consume()
            self.maybe_restart()
            if time.monotonic() >= next_sample:
                self.sample()
                next_sample = time.monotonic() + a.sample_seconds
            for old in list(self.retired):
                if old.proc.poll() is not None:
                    self.restart_codes.append((old.wid, old.proc.returncode))
                    self.retired.remove(old)
                    self.exited.add(old.wid)
        self.producer.flush(30)

    def died(self):
        """Running workers (not retired by a restart) whose process has
        exited: the run cannot finish as asked, so it stops at once rather
        than waiting out its timeout."""
        return [(w.wid, w.proc.returncode) for w in self.workers if w.proc.poll() is not None]

    def awaited(self):
        """Downloads still owed a Result: those whose owner is running."""
        return [k for k, (_, owner) in self.downloads.items() if owner not in self.exited]

    def settle(self):
        """After the last Result: credits must return to zero."""
        end = time.monotonic() + 30
        while True:
            self.sample()
            s = self.samples[-1]
            if all(s[f"credit_{c}"] == 0 for c in figs.CREDITS) or time.monotonic() > end:
                return s
            time.sleep(1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--profile", choices=["small", "mixed"], default="small")
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--restarts", type=int, default=0, help="rolling SIGTERM restarts")
    ap.add_argument("--poison", type=float, default=0.02)
    ap.add_argument("--new-graph-rate", type=float, default=0.01,
                    help="share of jobs that carry a graph not seen before")
    ap.add_argument("--window", type=int, default=2000, help="jobs produced, not yet answered")
    ap.add_argument("--sample-seconds", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds for all Results")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default=os.environ.get("IB_BIN", "build/imgbatch"))
    ap.add_argument("--out", default="soak-out")
    ap.add_argument("--worker-arg", action="append", default=[],
                    help="one more argument for every worker (repeat)")
    args = ap.parse_args(argv)
    gaps = soak_jobs.coverage_gaps()
    if gaps:
        ap.error(f"the op table has families this workload does not make: {gaps}")
    os.makedirs(os.path.join(args.out, "files"), exist_ok=True)
    run = Run(args)
    failures = []
    try:
        run.loop()
        end = run.settle()
        died = run.died()  # before the workers are stopped below
        if died:
            failures.append(f"worker died: {died} (worker id, exit code) exited while running; "
                            f"see {args.out}/worker-ID.log")
    finally:
        codes = [(w.wid, w.stop()) for w in run.workers + run.retired] + run.restart_codes
        run.consumer.close()
        run.producer.flush(10)
        run.consumer = run.producer = None  # destroyed before their broker goes
        run.broker.terminate()
        run.broker.wait(30)
    return report(run, end, codes, failures)


def report(run, end, codes, failures):
    a = run.args
    elapsed = time.monotonic() - run.t0
    lost = [k for k in run.kind if k not in run.answered]
    if lost or len(run.kind) < a.jobs or run.failed:
        failures.append(f"lost: {len(lost)} of {len(run.kind)} delivered jobs have no Result "
                        f"(e.g. {lost[:3]}), {run.failed} deliveries failed, "
                        f"{a.jobs - len(run.kind)} never delivered")
    awaited = run.awaited()
    orphaned = len(run.downloads) - len(awaited)
    if awaited:
        failures.append(f"resident: {len(awaited)} downloads to a running worker without a Result")
    for c in figs.CREDITS:
        if end[f"credit_{c}"] != 0:
            failures.append(f"credit {c}: {end[f'credit_{c}']:.0f} still in use at the end")
    deleted = sum(w.deleted for w in run.workers + run.retired)
    if deleted:
        failures.append(f"broker: {deleted} jobs deleted before a worker consumed them")
    bad_exits = [(w, c) for w, c in codes if c != 0]
    if bad_exits:
        failures.append(f"worker exits: {bad_exits}")
    period = a.workers * a.jobs / (a.restarts + 1) if run.restarts_done else 0.0
    verdicts = figs.judge(run.samples, a.jobs, period)
    failures += [f"{v['figure']}: {v['verdict']} ({v['q2']} -> {v['q4']})" for v in verdicts
                 if v["verdict"] in ("GREW", "TOO FEW SAMPLES")]
    kinds = {}
    for k, kind in run.kind.items():
        kinds.setdefault(kind, {}).setdefault(run.answered.get(k, "none"), 0)
        kinds[kind][run.answered.get(k, "none")] += 1
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    lines = [f"soak {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit "
             f"{commit or 'unknown'}, {' '.join(sys.argv[1:])}",
             f"soak: {len(run.answered)} of {a.jobs} jobs answered in {elapsed:.0f} s "
             f"({len(run.answered) / elapsed:.0f} jobs/s), backend {a.backend}, profile "
             f"{a.profile}, {a.workers} worker(s), {run.restarts_done} restart(s), "
             f"{len(run.workload.graphs)} graphs, {run.download_results} downloads, "
             f"{run.released} releases ({run.repeat_residents} of repeated resident Results, "
             f"each with a handle of its own), {orphaned} downloads unanswered because "
             f"their worker had stopped (a restart; its resident images went with it)",
             f"outcomes by kind: {json.dumps(kinds, sort_keys=True)}",
             *(f"  graph error x{n}: {why}" for why, n in
               sorted(run.errors.items(), key=lambda e: -e[1])[:8]),
             figs.windows_text(a.jobs, period),
             f"{'figure':>14} {'start':>10} {'early med':>10} {'late med':>10} {'end':>10} "
             f"{'change':>8}  verdict"]
    first = run.samples[0]
    for v in verdicts:
        q2 = "-" if v["q2"] is None else f"{v['q2']:.1f}"
        q4 = "-" if v["q4"] is None else f"{v['q4']:.1f}"
        ch = "-" if v["change"] is None else f"{100 * v['change']:+.1f}%"
        bound = (f" (peak {v['peak']:.1f} of cap {v['cap']:.1f})" if v.get("cap")
                 else " (no cap: must be flat)" if "cap" in v else "")
        lines.append(f"{v['figure']:>14} {first[v['figure']]:10.1f} {q2:>10} {q4:>10} "
                     f"{end[v['figure']]:10.1f} {ch:>8}  {v['verdict']}{bound}")
    lines.append("credits at the end: " + ", ".join(f"{c} {end[f'credit_{c}']:.0f}"
                                                    for c in figs.CREDITS))
    lines += [f"FAIL {f}" for f in failures] or ["PASS: nothing lost, every figure flat or "
                                                 "bounded, every credit back to zero"]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    figs.write_csv(os.path.join(a.out, "samples.csv"), run.samples)
    figs.write_svg(os.path.join(a.out, "figures.svg"), run.samples,
                   f"imgbatch soak: {a.jobs} jobs, {a.backend}, {a.workers} worker(s), "
                   f"{run.restarts_done} restarts")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
