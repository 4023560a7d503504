"""tests/py on the import path, for the helpers shared by the suites (ibtest)."""
import os
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # ibtest
