#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: the normal build's ctest
# (Criterion unit tests, NVRTC compile checks, pytest suites against live
# Pillow 12.3.0) and the CPU paths again under ASan + UBSan.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
(cd build && ctest --output-on-failure -j2)
IB_BUILD_DIR=build-asan IB_CMAKE_ARGS="-DIB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" scripts/setup.sh
(cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j2 -L unit)
echo "test.sh: all suites passed"
