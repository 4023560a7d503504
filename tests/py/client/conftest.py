"""The suite tests the installed imgbatch-client package (scripts/setup.sh
installs ./client into .venv), never the source tree: that has no generated
imgbatch_pb2 module."""
import os
import sys

import imgbatch

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # ibtest

_src = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "client"))
if os.path.realpath(imgbatch.__file__).startswith(_src + os.sep):
    raise ImportError(f"imgbatch is imported from the source tree ({imgbatch.__file__}); "
                      "install it: pip install ./client (scripts/setup.sh does)")
