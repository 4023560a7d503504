"""pytest glue for the parity suite: import paths, the seed, the session table."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import imgbatch  # noqa: E402  (the installed imgbatch-client: scripts/setup.sh)
import parity  # noqa: E402


@pytest.fixture(autouse=True)
def _record_unchecked():
    # Rejection cases record calls Pillow refuses, for the worker to reject;
    # the client's record-time Pillow check is tested in tests/py/client.
    with imgbatch.unchecked():
        yield


def pytest_report_header(config):
    return (f"imgbatch parity: IB_PARITY_SEED={parity.SEED} backend={parity.backend()} "
            f"IB_BIN={os.environ.get('IB_BIN', '(unset)')}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        rep.sections.append(("imgbatch parity", f"reproduce with IB_PARITY_SEED={parity.SEED}"))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    text = parity.format_table()
    tr = terminalreporter
    tr.section("imgbatch parity table")
    tr.write_line(text if text else f"no parity cases ran (IB_PARITY_SEED={parity.SEED})")
    path = os.environ.get("IB_PARITY_TABLE")
    if path:
        parity.write_table(path)
        tr.write_line(f"table written to {path}")
