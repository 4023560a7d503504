#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: the normal build's ctest
# (Criterion unit tests, NVRTC compile checks, pytest suites against live
# Pillow 12.3.0), a Release build of the whole tree, the CPU paths again
# under ASan + UBSan, then the libFuzzer targets (tests/fuzz/run.sh: saved
# findings, then 60 s of fuzzing each). Every build with -DIB_WERROR=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# The test builds compile in fault injection (imgbatch worker --fault) for
# the worker-fault tests; normal builds have no such flag.
IB_CMAKE_ARGS="-DIB_WERROR=ON -DIB_FAULTS=ON" scripts/setup.sh
# The gpu label needs a CUDA device (ctest -L gpu on the GPU machine): left
# out of the counted run, then listed apart, each skipped with its reason.
(cd build && ctest --output-on-failure -j2 -LE gpu)
(cd build && ctest --output-on-failure -L gpu)
# The Release configuration of the whole tree as a user or packager builds it
# (deploy/Dockerfile, no test options): -O3 inlines across files, where GCC's
# flow warnings differ from the -O2 build above. Built, not run: the tests
# above and below ran the same sources.
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DIB_WERROR=ON >/dev/null
cmake --build build-release -j"$(nproc)"
IB_BUILD_DIR=build-asan IB_CMAKE_ARGS="-DIB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DIB_WERROR=ON -DIB_FAULTS=ON" scripts/setup.sh
# Unit tests and the pytest suites (which drive the sanitized binary), at a
# reduced parity scale: the sanitizers check the CPU paths, not coverage.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 IB_PARITY_SCALE=0.3 ctest --output-on-failure -j2 -LE gpu)
tests/fuzz/run.sh 60
echo "test.sh: all suites passed"
