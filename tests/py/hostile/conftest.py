"""Import paths: tests/py for the shared helpers (ibtest), and the client as a
fallback when it is not installed."""
import os
import sys

try:
    import imgbatch  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "client"))
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # ibtest
