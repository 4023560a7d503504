"""Import path fallback when run outside ctest (which sets PYTHONPATH=client)."""
import os
import sys

try:
    import imgbatch  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "client"))
