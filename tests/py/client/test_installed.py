"""The suites run against the installed imgbatch-client; this fails when the
installed copy is not the source tree's (client/ edited since the install):
rerun scripts/setup.sh, or `pip install --no-deps --force-reinstall ./client`."""
import glob
import os

import imgbatch

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "client", "imgbatch")


def test_installed_package_is_the_source_tree():
    installed = os.path.dirname(imgbatch.__file__)
    stale = []
    for path in sorted(glob.glob(os.path.join(SRC, "*.py"))) + [os.path.join(SRC, "py.typed")]:
        name = os.path.basename(path)
        other = os.path.join(installed, name)
        with open(path, "rb") as a:
            same = os.path.exists(other) and open(other, "rb").read() == a.read()
        if not same:
            stale.append(name)
    assert not stale, (f"installed imgbatch ({installed}) differs from client/imgbatch in {stale}: "
                       "rerun scripts/setup.sh (or pip install --no-deps --force-reinstall ./client)")
    assert os.path.exists(os.path.join(installed, "imgbatch_pb2.py"))
