"""deploy/'s manifests, offline: yamllint, kubernetes-validate on the
kustomize output (Kubernetes 1.32), the compose file's structure,
systemd-analyze verify, and every flag and IMGBATCH_* variable the deploy
files use checked against `imgbatch worker --help`."""
import base64
import glob
import os
import re
import shutil
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

BIN = os.environ["IB_BIN"]
DEPLOY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "deploy"))
K8S_VERSION = "1.32.0"


def yaml_files():
    return sorted(glob.glob(f"{DEPLOY}/**/*.y*ml", recursive=True))


def test_yamllint_every_yaml():
    conf = "{extends: default, rules: {line-length: {max: 200}, document-start: disable, truthy: {check-keys: false}}}"
    p = subprocess.run([sys.executable, "-m", "yamllint", "-s", "-d", conf, *yaml_files()],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def merge(base, patch):
    """Strategic merge as kustomize does it for these files: maps merge,
    lists of named maps merge by name, other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base[k], v) if k in base else v
        return out
    if isinstance(base, list) and isinstance(patch, list) and patch and all(
            isinstance(x, dict) and "name" in x for x in base + patch):
        out = [dict(x) for x in base]
        for x in patch:
            i = next((i for i, y in enumerate(out) if y["name"] == x["name"]), None)
            if i is None:
                out.insert(0, x)
            else:
                out[i] = merge(out[i], x)
        return out
    return patch


def render(d):
    """kustomize build of d, for the features deploy/k8s uses."""
    k = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
    docs = []
    for r in k.get("resources", []):
        path = os.path.join(d, r)
        docs += render(path) if os.path.isdir(path) else list(yaml.safe_load_all(open(path)))
    for g in k.get("configMapGenerator", []):
        data = {}
        for env in g["envs"]:
            for line in open(os.path.join(d, env)):
                if line.strip() and not line.startswith("#"):
                    key, val = line.rstrip("\n").split("=", 1)
                    data[key] = val
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": g["name"]}, "data": data})
    for p in k.get("patches", []):
        patch = yaml.safe_load(open(os.path.join(d, p["path"])))
        for i, doc in enumerate(docs):
            if doc["kind"] == patch["kind"] and doc["metadata"]["name"] == patch["metadata"]["name"]:
                docs[i] = merge(doc, patch)
    if "namespace" in k:
        for doc in docs:
            if doc["kind"] != "Namespace":
                doc["metadata"]["namespace"] = k["namespace"]
    for img in k.get("images", []):
        for doc in docs:
            for c in pod_spec(doc).get("containers", []) if pod_spec(doc) else []:
                if c["image"] == img["name"]:
                    c["image"] = f'{img["newName"]}:{img["newTag"]}'
    return docs


def pod_spec(doc):
    if doc["kind"] in ("Deployment", "Job"):
        return doc["spec"]["template"]["spec"]
    return None


def find(docs, kind):
    return [d for d in docs if d["kind"] == kind]


@pytest.mark.parametrize("tree", ["base", "overlays/gpu"])
def test_kustomize_output_validates_against_kubernetes(tree):
    docs = render(os.path.join(DEPLOY, "k8s", tree))
    for doc in docs:
        if doc["kind"] == "ScaledObject":
            continue
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    if shutil.which("kubectl"):  # the real kustomize, where installed
        out = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, "k8s", tree)],
                             capture_output=True, text=True, check=True).stdout
        real = list(yaml.safe_load_all(out))
        assert sorted((d["kind"], d["metadata"]["name"].split("-6")[0]) for d in real if d["kind"] != "ConfigMap") == \
            sorted((d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] != "ConfigMap")
        ours = find(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
        theirs = find(real, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
        assert ours["args"] == theirs["args"] and ours["resources"] == theirs["resources"]


def env_file(path):
    return dict(line.strip().split("=", 1) for line in open(path) if "=" in line and not line.startswith("#"))


def test_gpu_overlay_worker_contract():
    docs = render(os.path.join(DEPLOY, "k8s", "overlays", "gpu"))
    dep = find(docs, "Deployment")[0]
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    env = env_file(os.path.join(DEPLOY, "k8s", "base", "worker.env"))
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "cuda" in c["args"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    port = env["IMGBATCH_METRICS_ADDR"].rsplit(":", 1)[1]
    assert dep["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == port
    assert str(c["ports"][0]["containerPort"]) == port
    assert spec["terminationGracePeriodSeconds"] > int(env["IMGBATCH_GRACE_SECONDS"])
    assert "group.instance.id=$(POD_NAME)" in c["args"]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in c["env"]
    pdb = find(docs, "PodDisruptionBudget")[0]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    so = find(docs, "ScaledObject")[0]
    assert so["apiVersion"] == "keda.sh/v1alpha1" and so["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    trig = so["spec"]["triggers"][0]
    assert trig["type"] == "kafka" and all(isinstance(v, str) for v in trig["metadata"].values())
    assert trig["metadata"]["consumerGroup"] == env["IMGBATCH_GROUP"]
    assert trig["metadata"]["topic"] == env["IMGBATCH_JOBS_TOPIC"]
    # max replicas = partitions of the jobs topic, in the k8s Job and in compose.
    job = find(docs, "Job")[0]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    parts = {int(m) for m in re.findall(r"--topic imgbatch.jobs --partitions (\d+)", job)}
    compose = open(os.path.join(DEPLOY, "compose.yaml")).read()
    parts |= {int(m) for m in re.findall(r"--topic imgbatch.jobs --partitions (\d+)", compose)}
    assert parts == {so["spec"]["maxReplicaCount"]}


def assert_kafka_uuid(text):
    """What Kafka's Uuid.fromString takes (kafka-storage format refuses any
    other cluster id): 16 bytes in URL-safe base64 without padding, 22
    characters, and not one of the two ids Kafka reserves (zero, and the
    metadata topic's 1)."""
    assert isinstance(text, str) and re.fullmatch(r"[A-Za-z0-9_-]{22}", text), text
    raw = base64.urlsafe_b64decode(text + "==")
    assert len(raw) == 16 and base64.urlsafe_b64encode(raw).decode().rstrip("=") == text, text
    assert int.from_bytes(raw, "big") > 1, text


def test_kafka_uuid_check_refuses_what_kafka_refuses():
    assert_kafka_uuid("JU6eJIXPRvKY9catRq32_w")
    for bad in ("imgbatch-compose-kraft-0", "JU6eJIXPRvKY9catRq32_", "AAAAAAAAAAAAAAAAAAAAAA",
                "JU6eJIXPRvKY9catRq32/w"):
        with pytest.raises(AssertionError):
            assert_kafka_uuid(bad)


def test_compose_structure():
    c = yaml.safe_load(open(os.path.join(DEPLOY, "compose.yaml")))
    s = c["services"]
    assert s["kafka"]["image"].startswith("apache/kafka:")
    assert "controller" in s["kafka"]["environment"]["KAFKA_PROCESS_ROLES"]
    assert_kafka_uuid(s["kafka"]["environment"]["CLUSTER_ID"])
    topics = s["topics"]["command"][0]
    assert "cleanup.policy=compact,delete" in topics and "retention.ms" in topics and "imgbatch.dlq" in topics
    assert s["topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    grace = int(env_file(os.path.join(DEPLOY, "worker.env"))["IMGBATCH_GRACE_SECONDS"])
    for name in ("worker-1", "worker-2"):
        w = s[name]
        assert w["profiles"] == ["gpu"]
        dev = w["deploy"]["resources"]["reservations"]["devices"][0]
        assert dev["driver"] == "nvidia" and dev["capabilities"] == ["gpu"]
        assert "0.0.0.0:9100" in w["command"]
        assert int(w["stop_grace_period"].rstrip("s")) > grace
        assert w["depends_on"]["topics"]["condition"] == "service_completed_successfully"
    for name in ("worker-cpu-1", "worker-cpu-2"):
        assert s[name]["profiles"] == ["cpu"] and "cpu" in s[name]["command"]
    assert "producer" in s and "prometheus" in s and "grafana" in s
    for svc in s.values():  # bind mounts and build files exist
        for v in svc.get("volumes", []):
            src = v.split(":")[0]
            if src.startswith("."):
                assert os.path.exists(os.path.join(DEPLOY, src)), src
        if "build" in svc:
            assert os.path.exists(os.path.join(DEPLOY, svc["build"]["context"], svc["build"]["dockerfile"]))


def test_systemd_unit_verifies(tmp_path):
    unit = tmp_path / "imgbatch-worker@0.service"
    text = open(os.path.join(DEPLOY, "systemd", "imgbatch-worker@.service")).read()
    unit.write_text(text)
    p = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    assert "KillSignal=SIGTERM" in text and "DynamicUser=yes" in text and "EnvironmentFile=" in text
    grace = int(env_file(os.path.join(DEPLOY, "systemd", "imgbatch-worker.env"))["IMGBATCH_GRACE_SECONDS"])
    assert int(re.search(r"TimeoutStopSec=(\d+)", text).group(1)) > grace


def test_dockerfile_matches_ci_packages():
    text = open(os.path.join(DEPLOY, "Dockerfile")).read()
    assert len(re.findall(r"^FROM ", text, re.M)) >= 3 and "HEALTHCHECK" in text
    assert re.search(r"^USER 10001", text, re.M) and "VOLUME" in text
    assert os.path.exists(os.path.join(DEPLOY, "Dockerfile.dockerignore"))
    pins = {"librdkafka1": "LIBRDKAFKA_VERSION", "libvips42": "LIBVIPS_VERSION",
            "libprotobuf-c1": "PROTOBUF_C_VERSION", "libmicrohttpd12": "LIBMICROHTTPD_VERSION",
            "libdeflate0": "LIBDEFLATE_VERSION", "libpng16-16": "LIBPNG_VERSION",
            "libjpeg62-turbo": "LIBJPEG_VERSION"}
    for pkg, arg in pins.items():
        have = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True).stdout
        assert set(re.findall(rf"ARG {arg}=(\S+)", text)) == {have}, (pkg, have)


def test_every_flag_and_variable_exists_in_worker_help():
    help_text = subprocess.run([BIN, "worker", "--help"], capture_output=True, text=True, check=True).stdout
    flags = set(re.findall(r"--([a-z][a-z-]+)", help_text)) | {"X", "help"}
    used_flags, used_vars = set(), set()
    for path in glob.glob(f"{DEPLOY}/**/*", recursive=True):
        if os.path.isdir(path) or "producer" in path:
            continue
        text = open(path, errors="replace").read()
        used_vars |= set(re.findall(r"IMGBATCH_[A-Z_]+", text))
        for cmd in re.findall(r'(?:imgbatch worker|"worker",)([^\n\]]*(?:\n\s+"[^\n]*)*)', text):
            used_flags |= set(re.findall(r"--([a-z][a-z-]+)", cmd))
    assert used_flags and used_vars
    assert used_flags <= flags, used_flags - flags
    for v in used_vars:
        flag = v[len("IMGBATCH_"):].lower().replace("_", "-")
        assert flag in flags or v == "IMGBATCH_CONFIG", v


def test_shell_scripts_lint():
    scripts = glob.glob(f"{DEPLOY}/**/*.sh", recursive=True)
    assert scripts
    checker = shutil.which("shellcheck")
    assert checker, "shellcheck not found: scripts/setup.sh installs Debian's shellcheck"
    p = subprocess.run([checker, *scripts], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
