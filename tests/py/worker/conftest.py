import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # ibtest

from harness import Env, worker_supports  # noqa: E402


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def make_env(tmp_path, request):
    """make_env(brokers=1, topics=()) -> a started Env (own broker process);
    everything it started is ended at teardown, and the processes' stderr is
    printed when the test failed."""
    envs = []

    def make(**kw):
        env = Env(tmp_path / f"env{len(envs)}", **kw)
        envs.append(env)
        return env

    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    reports = []
    for env in envs:
        if failed:
            print(env.why(f"--- {request.node.name}: processes at failure"))
        env.close()
        reports += env.sanitizer_reports()
    if reports:
        pytest.fail("sanitizer reports:\n" + "\n".join(reports[:20]), pytrace=False)


@pytest.fixture(scope="session")
def faults_supported():
    return worker_supports("--fault")


@pytest.fixture
def need_faults(faults_supported):
    if not faults_supported:
        pytest.skip("this build has no --fault (configure with -DIB_FAULTS=ON)")
