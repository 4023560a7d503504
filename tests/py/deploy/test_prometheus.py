"""deploy/prometheus and deploy/grafana against the real thing: Debian's
Prometheus scrapes a real `imgbatch worker --backend cpu` on the embedded
broker while jobs run, loads deploy/prometheus/alerts.yml, and every
expression of the Grafana dashboard and of the alert rules is evaluated
through its HTTP API. promtool checks the config and the rules and runs
their unit tests (alerts_test.yml). Prometheus comes from scripts/setup.sh's
apt list."""
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
import uuid

import confluent_kafka as ck
import pytest
import yaml

import ibtest
from ibtest import raw_job

BIN = os.environ["IB_BIN"]
DEPLOY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "deploy")
PROM_DIR = os.path.join(DEPLOY, "prometheus")
DASHBOARD = os.path.join(DEPLOY, "grafana", "dashboards", "imgbatch.json")
N_IMAGES, N_GARBAGE = 24, 3


def tool(name):
    path = shutil.which(name)
    assert path, f"{name} not found: scripts/setup.sh installs Debian's prometheus package"
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(fn, timeout=30, every=0.2):
    end, last = time.monotonic() + timeout, None
    while time.monotonic() < end:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"condition not met in {timeout}s (last: {last!r})")


# ---------------------------------------------------------------- expressions


def dashboard_exprs():
    """Every PromQL expression of the dashboard: panel targets and the
    template variable's label_values() metric."""
    dash = json.load(open(DASHBOARD))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for var in dash["templating"]["list"]:
        m = re.fullmatch(r"label_values\((.+), *\w+\)", var["query"]["query"])
        assert m, var["query"]
        exprs.append(m.group(1))
    return exprs


def grafana_to_promql(expr):
    """What Grafana sends for the dashboard's variables: every worker, and
    a rate window that holds several of this test's 1 s scrapes."""
    return expr.replace('"$instance"', '".*"').replace("$__rate_interval", "30s")


def named_metrics():
    """Every imgbatch_* name the dashboard and the alert rules use."""
    text = open(DASHBOARD).read() + open(os.path.join(PROM_DIR, "alerts.yml")).read()
    return set(re.findall(r"\bimgbatch_[a-z_]+", text))


def exported_metrics(metrics_text):
    """The sample names a /metrics page can carry: each family, and a
    histogram's _bucket, _sum and _count."""
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", metrics_text, re.M):
        names.add(name)
        if kind == "histogram":
            names |= {name + "_bucket", name + "_sum", name + "_count"}
    return names


def alert_rules():
    doc = yaml.safe_load(open(os.path.join(PROM_DIR, "alerts.yml")))
    return [r for g in doc["groups"] for r in g["rules"]]


COMPARISON = re.compile(r"(==|!=|>=|<=|>|<)")


def with_bool(expr):
    """expr with `bool` after each comparison outside label matchers, so
    that it returns its series (0 or 1) whether or not the alert fires:
    `up == 0` asks only when the worker is down, `up == bool 0` always."""
    out, depth, quoted, i = [], 0, False, 0
    while i < len(expr):
        c = expr[i]
        if quoted:
            out.append(c)
            if c == "\\":
                out.append(expr[i + 1])
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            out.append(c)
        elif c in "{}":
            depth += 1 if c == "{" else -1
            out.append(c)
        elif depth == 0 and (m := COMPARISON.match(expr, i)):
            out.append(m.group(1) + " bool")
            i += len(m.group(1))
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def test_with_bool_leaves_label_matchers_alone():
    assert with_bool('up{job="a",x!="b"} == 0') == 'up{job="a",x!="b"} == bool 0'
    assert with_bool('a{o=~"x>y"} > 1 and b <= 2') == 'a{o=~"x>y"} > bool 1 and b <= bool 2'


# ---------------------------------------------------------------- promtool


def test_promtool_checks_config_and_rules():
    promtool = tool("promtool")
    for args in (["check", "config", os.path.join(PROM_DIR, "prometheus.yml")],
                 ["check", "rules", os.path.join(PROM_DIR, "alerts.yml")]):
        p = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr


def test_promtool_unit_tests_cover_every_alert_firing_and_not():
    p = subprocess.run([tool("promtool"), "test", "rules", os.path.join(PROM_DIR, "alerts_test.yml")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    tests = yaml.safe_load(open(os.path.join(PROM_DIR, "alerts_test.yml")))["tests"]
    fires, quiet = set(), set()
    for t in tests:
        for a in t.get("alert_rule_test", []):
            (fires if a["exp_alerts"] else quiet).add(a["alertname"])
    names = {r["alert"] for r in alert_rules()}
    assert fires == names, f"alerts never tested firing: {names - fires}"
    assert quiet == names, f"alerts never tested quiet: {names - quiet}"


# ---------------------------------------------------------------- live


class Prometheus:
    def __init__(self, tmp, target):
        self.target = target
        conf = yaml.safe_load(open(os.path.join(PROM_DIR, "prometheus.yml")))
        conf["global"].update(scrape_interval="1s", evaluation_interval="1s")
        conf["rule_files"] = [os.path.abspath(os.path.join(PROM_DIR, r)) for r in conf["rule_files"]]
        job = conf["scrape_configs"][0]
        assert job["job_name"] == "imgbatch"  # the alert rules select job="imgbatch"
        del job["dns_sd_configs"]  # the compose network's DNS; here the one worker
        job["static_configs"] = [{"targets": [target]}]
        path = os.path.join(tmp, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(conf, f)
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(tmp, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            [tool("prometheus"), f"--config.file={path}", f"--storage.tsdb.path={tmp}/data",
             f"--web.listen-address={self.url[7:]}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for(self.ready)

    def ready(self):
        assert self.proc.poll() is None, "prometheus exited"
        try:
            return urllib.request.urlopen(self.url + "/-/ready", timeout=2).status == 200
        except OSError:
            return False

    def api(self, path, **params):
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr):
        data = self.api("query", query=expr)
        return data["result"]

    def scalar(self, expr):
        res = self.query(expr)
        assert len(res) == 1, (expr, res)
        return float(res[0]["value"][1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A worker on the embedded broker scraped by Prometheus, before any job
    (yields broker, worker, topics, Prometheus)."""
    tmp = str(tmp_path_factory.mktemp("prom"))
    tag = uuid.uuid4().hex[:8]
    topics = {"jobs": f"jobs-{tag}", "results": f"results-{tag}", "dlq": f"dlq-{tag}"}
    with ibtest.broker() as (_, brokers):
        log_path = os.path.join(tmp, "worker.log")
        with open(log_path, "wb") as log:
            worker = subprocess.Popen(
                [BIN, "worker", "--brokers", brokers, "--backend", "cpu", "--group", f"g-{tag}",
                 "--jobs-topic", topics["jobs"], "--results-topic", topics["results"],
                 "--dlq-topic", topics["dlq"], "--metrics-addr", "127.0.0.1:0",
                 "-X", "session.timeout.ms=6000"],
                stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)

        def http_addr():
            for line in open(log_path, errors="replace"):
                if '"event":"http"' in line:
                    return json.loads(line)["addr"]
            assert worker.poll() is None, open(log_path).read()[-2000:]
            return None

        prom = None
        try:
            prom = Prometheus(tmp, wait_for(http_addr))
            yield brokers, topics, prom
        finally:
            if prom:
                prom.stop()
            worker.terminate()
            try:
                worker.wait(15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(10)


def test_prometheus_scrapes_a_worker_and_every_expression_returns_series(live):
    brokers, topics, prom = live
    wait_for(lambda: prom.query('up{job="imgbatch"} == 1'))
    # Scraped before any job: the counters start at zero.
    wait_for(lambda: prom.query("imgbatch_partitions_assigned >= 1"))
    assert prom.scalar("sum(imgbatch_messages_consumed_total)") == 0

    payloads = [raw_job(k, 16, 12, seed=k).SerializeToString() for k in range(N_IMAGES)]
    payloads += [b"\xff\xfe not a Job %d" % i for i in range(N_GARBAGE)]
    p = ck.Producer({"bootstrap.servers": brokers})
    for i, v in enumerate(payloads):
        p.produce(topics["jobs"], value=v, key=str(i).encode())
    assert p.flush(20) == 0

    # The counters move with the jobs, as Prometheus scraped them.
    n = len(payloads)
    wait_for(lambda: prom.query(f"sum(imgbatch_messages_consumed_total) == {n}"))
    wait_for(lambda: prom.query(f'sum(imgbatch_results_total{{outcome="image"}}) == {N_IMAGES}'))
    wait_for(lambda: prom.query(f'sum(imgbatch_results_total{{outcome="error"}}) == {N_GARBAGE}'))
    assert prom.scalar("sum(imgbatch_consumed_bytes_total)") == sum(len(v) for v in payloads)
    assert prom.scalar("sum(imgbatch_result_bytes_total)") > 0
    wait_for(lambda: prom.query("sum(imgbatch_commits_total) >= 1"))
    assert prom.scalar("sum(increase(imgbatch_messages_consumed_total[5m]))") > 0
    # Credits return to zero and nothing is left unfinished at the end.
    for credit in ("gpu_bytes", "host_bytes", "jobs", "in_flight"):
        wait_for(lambda: prom.query(f'sum(imgbatch_credit_in_use{{credit="{credit}"}}) == 0'))
        assert prom.scalar(f'sum(imgbatch_credit_cap{{credit="{credit}"}})') > 0
    wait_for(lambda: prom.query("sum(imgbatch_results_uncommitted) == 0"))
    wait_for(lambda: prom.query("sum(imgbatch_consumer_lag_messages) == 0"))
    wait_for(lambda: prom.query("max(imgbatch_oldest_uncommitted_seconds) == 0"))
    # Enough scrapes after the jobs for every rate window of 30 s to see them.
    time.sleep(3)

    # Every metric the dashboard and the rules name is one this worker
    # exports: read from its own /metrics, not through Prometheus (where an
    # "or" or an absent() could hide a name that never existed).
    with urllib.request.urlopen(f"http://{prom.target}/metrics", timeout=10) as r:
        exported = exported_metrics(r.read().decode())
    assert named_metrics() - exported == set(), "named but not exported by the worker"
    assert "imgbatch_compile_queue_depth" in named_metrics()

    missing = []
    for expr in dashboard_exprs():
        q = grafana_to_promql(expr)
        if not prom.query(q):
            missing.append(q)
    for rule in alert_rules():
        q = with_bool(rule["expr"])
        if not prom.query(q):
            missing.append(f'{rule["alert"]}: {q}')
    assert not missing, "expressions without series:\n" + "\n".join(missing)

    # Latency percentiles are numbers once jobs ran (not NaN).
    for name in ("queue", "exec", "encode"):
        v = prom.scalar(f"histogram_quantile(0.5, sum by (le) (rate(imgbatch_{name}_seconds_bucket[1m])))")
        assert v == v and v > 0, name
    # The throughput panel saw the images.
    rate = prom.query(grafana_to_promql(dashboard_exprs()[0]))
    assert {r["metric"]["outcome"]: float(r["value"][1]) for r in rate}["image"] > 0

    # Prometheus loaded and evaluated every rule without error; none fires.
    groups = wait_for(lambda: [g for g in prom.api("rules")["groups"]
                               if all(r.get("lastEvaluation", "").startswith("2") and
                                      not r["lastEvaluation"].startswith("0001") for r in g["rules"])])
    rules = [r for g in groups for r in g["rules"]]
    assert sorted(r["name"] for r in rules) == sorted(r["alert"] for r in alert_rules())
    assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules]
    assert [a for a in prom.api("alerts")["alerts"] if a["state"] == "firing"] == []
