"""The imgbatch binary's front ends: version, help, broker over TCP, run."""
import os
import re
import shutil
import subprocess
import time

import pytest

import ibtest

BIN = os.environ["IB_BIN"]


def test_version_reports_libraries_and_no_gpu_cleanly():
    out = subprocess.run([BIN, "version"], capture_output=True, text=True, check=True).stdout
    for lib in ("librdkafka 2.", "libvips 8.", "protobuf-c 1.", "nvrtc "):
        assert lib in out
    assert re.search(r"^(cuda device 0: .+|no CUDA device: .+)$", out, re.M)


@pytest.mark.parametrize("cmd", ["version", "broker", "run", "worker", "demo"])
def test_every_subcommand_has_help(cmd):
    p = subprocess.run([BIN, cmd, "--help"], capture_output=True, text=True)
    assert p.returncode == 0
    assert p.stdout.startswith("usage: imgbatch " + cmd)
    assert "exit codes" in p.stdout


def test_unknown_command_is_a_usage_error():
    assert subprocess.run([BIN, "frobnicate"], capture_output=True).returncode == 2


@pytest.fixture
def broker():
    with ibtest.broker("--topic", "t:2", stderr=None) as (p, bootstrap):
        yield p, bootstrap
    assert p.returncode == 0  # SIGTERM is the broker's clean stop


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")
def test_broker_serves_produce_consume_round_trip_to_kcat(broker):
    _, bootstrap = broker
    msgs = [f"message-{i}" for i in range(10)]
    subprocess.run(["kcat", "-b", bootstrap, "-P", "-t", "t", "-p", "1"],
                   input="\n".join(msgs) + "\n", text=True, check=True, timeout=30)
    deadline = time.time() + 30
    got = []
    while time.time() < deadline and len(got) < len(msgs):
        out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", "t", "-p", "1", "-o",
                              "beginning", "-e", "-q"], capture_output=True, text=True,
                             timeout=30).stdout
        got = out.split()
    assert got == msgs
    meta = subprocess.run(["kcat", "-b", bootstrap, "-L", "-t", "t"], capture_output=True,
                          text=True, timeout=30).stdout
    assert "2 partitions" in meta


def test_broker_rejects_bad_topic_spec():
    p = subprocess.run([BIN, "broker", "--topic", "t:zero"], capture_output=True, text=True,
                       timeout=20)
    assert p.returncode == 2
    assert "NAME:PARTITIONS" in p.stderr


def test_run_answers_truncated_stream_with_parse_error_and_exit_1():
    p = subprocess.run([BIN, "run"], input=b"\x80", capture_output=True, timeout=20)
    assert p.returncode == 1
    assert b"truncated" in p.stdout


def test_run_with_empty_input_writes_nothing():
    p = subprocess.run([BIN, "run"], input=b"", capture_output=True, timeout=20)
    assert p.returncode == 0 and p.stdout == b""


def test_run_tune_sets_a_library_setting_and_the_job_runs():
    p, results = ibtest.run([ibtest.raw_job("a", 5, 3)], "--tune", "ramp_jobs=4", "--tune",
                            "cuda_pieces=1")
    assert p.returncode == 0, p.stderr
    assert [r.WhichOneof("outcome") for r in results] == ["image"]


def test_run_takes_name_equals_value_as_the_two_arguments():
    job = [ibtest.raw_job("a", 5, 3)]
    p, results = ibtest.run(job, "--max-jobs=4", "--tune=ramp_jobs=4", "--backend=cpu")
    assert p.returncode == 0, p.stderr
    assert [r.WhichOneof("outcome") for r in results] == ["image"]
    p = subprocess.run([BIN, "run", "--max-jobs=four"], input="", capture_output=True, text=True,
                       timeout=20)
    assert p.returncode == 2 and "bad argument '--max-jobs'" in p.stderr


def test_worker_takes_name_equals_value_and_names_a_bad_one():
    # --tune=KEY=VALUE reaches the tuning check only once it is split
    p = subprocess.run([BIN, "worker", "--brokers=127.0.0.1:1", "--tune=cuda_peices=2"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 2 and 'unknown key "cuda_peices"' in p.stderr, p.stderr
    p = subprocess.run([BIN, "worker", "--brokers=127.0.0.1:1", "--disk-cache-bytes=4Q"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 2 and "bad argument '--disk-cache-bytes'" in p.stderr, p.stderr


@pytest.mark.parametrize("cmd", [["run"], ["worker", "--brokers", "127.0.0.1:1"]])
@pytest.mark.parametrize("tune,says", [
    ("cuda_peices=2", 'unknown key "cuda_peices"'),
    ("cuda_pieces=9", 'cuda_pieces: bad value "9" (accepted: 1..4)'),
    ("cuda_pipe_kib=0", 'cuda_pipe_kib: bad value "0" (accepted: -1 (off) or 1..1048576)'),
    ("cuda_profile=yes", 'cuda_profile: bad value "yes" (accepted: true, false, 1 or 0)'),
    ("ramp_jobs", '"ramp_jobs" is not KEY=VALUE'),
])
def test_tune_refuses_an_unknown_key_or_a_bad_value_by_name(cmd, tune, says):
    p = subprocess.run([BIN, *cmd, "--tune", tune], input=b"", capture_output=True, timeout=20)
    assert p.returncode == 2
    assert says in p.stderr.decode()


def test_worker_config_file_tune_line_is_checked(tmp_path):
    conf = tmp_path / "w.conf"
    conf.write_text("brokers = 127.0.0.1:1\ntune = compile_queue=0\n")
    p = subprocess.run([BIN, "worker", "--config", str(conf)], capture_output=True, text=True,
                       timeout=20)
    assert p.returncode == 2
    assert 'compile_queue: bad value "0" (accepted: 1..65536)' in p.stderr


def test_worker_without_a_gpu_names_the_reason_and_suggests_the_cpu_backend():
    # CUDA_VISIBLE_DEVICES="" hides every device where a driver exists, so the
    # default (cuda) backend fails the same way on the GPU machine as in CI.
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    p = subprocess.run([BIN, "worker", "--brokers", "127.0.0.1:1"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 1, p.stderr
    failed = [line for line in p.stderr.splitlines() if '"event":"start_failed"' in line]
    assert len(failed) == 1, p.stderr
    assert re.search(r'"message":"no CUDA (driver|device): ', failed[0])
    assert '"hint":"no usable GPU here: --backend cpu runs the CPU reference backend"' in failed[0]
