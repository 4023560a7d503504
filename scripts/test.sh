#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: the normal build's ctest
# (Criterion unit tests, NVRTC compile checks, pytest suites against live
# Pillow 12.3.0), the CPU paths again under ASan + UBSan, then the libFuzzer
# targets (tests/fuzz/run.sh: saved findings, then 60 s of fuzzing each).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# The test builds compile in fault injection (imgbatch worker --fault) for
# the worker-fault tests; normal builds have no such flag.
IB_CMAKE_ARGS="-DIB_FAULTS=ON" scripts/setup.sh
(cd build && ctest --output-on-failure -j2)
IB_BUILD_DIR=build-asan IB_CMAKE_ARGS="-DIB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DIB_FAULTS=ON" scripts/setup.sh
# Unit tests and the pytest suites (which drive the sanitized binary), at a
# reduced parity scale: the sanitizers check the CPU paths, not coverage.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 IB_PARITY_SCALE=0.3 ctest --output-on-failure -j2)
tests/fuzz/run.sh 60
echo "test.sh: all suites passed"
