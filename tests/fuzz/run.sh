#!/usr/bin/env bash
# Builds the libFuzzer targets (build-fuzz, clang, ASan + UBSan + libFuzzer)
# and runs each one: first once over every saved finding in
# tests/fuzz/regressions/<target>/ (each must now pass), then SECONDS of
# fuzzing (default 60) from a copy of its seed corpus, so nothing is written
# into the tree. Fails on any crash, leak, timeout, OOM or oracle abort;
# the inputs that failed are kept under build-fuzz/artifacts/<target>/.
#   tests/fuzz/run.sh [SECONDS]
# Environment: IB_FUZZ_ARGS - extra libFuzzer flags (e.g. -fork=1
# -ignore_crashes=1 for long runs that go on past findings).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
seconds=${1:-60}
build="build-fuzz"
export PATH=/usr/local/cuda/bin:$PATH

if ! command -v clang >/dev/null; then
  echo "fuzz: clang is missing (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
# A build dir configured with another compiler cannot switch: start afresh.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_C_COMPILER_ID:.*Clang\|^CMAKE_C_COMPILER:FILEPATH=.*clang' "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
CC=clang cmake -S . -B "$build" -DIB_FUZZ=ON -DIB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_job fuzz_image

# halt_on_error: UBSan findings are crashes; leaks are findings too.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
common=(-timeout=10 -rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1)
# shellcheck disable=SC2206
extra=(${IB_FUZZ_ARGS:-})

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# fuzz_job's source roots (and fork mode's files) land here and go with it.
export TMPDIR=$tmp
failed=()
for target in fuzz_job fuzz_image; do
  name=${target#fuzz_}
  bin=$build/fuzz/$target
  art=$root/$build/artifacts/$target
  mkdir -p "$art"
  # One process per saved input, so every one that still fails is named.
  for reg in tests/fuzz/regressions/"$target"/*; do
    [ -f "$reg" ] || continue
    if ! "$bin" "${common[@]}" -artifact_prefix="$art/" "$reg" >"$tmp/reg.log" 2>&1; then
      grep -E "ERROR|runtime error|FUZZ ORACLE|SUMMARY" "$tmp/reg.log" | head -4 >&2
      echo "fuzz: $target: regression $reg FAILS" >&2
      failed+=("$target:$(basename "$reg")")
    fi
  done
  mkdir -p "$tmp/$name"
  cp -r "tests/fuzz/corpus/$name/." "$tmp/$name/"
  echo "fuzz: $target: ${seconds}s from $(find "$tmp/$name" -type f | wc -l) seeds"
  if ! "$bin" "${common[@]}" -max_len=65536 -max_total_time="$seconds" \
      -artifact_prefix="$art/" "${extra[@]}" "$tmp/$name" >"$tmp/$target.log" 2>&1; then
    grep -E "ERROR|runtime error|FUZZ ORACLE|SUMMARY|Test unit written|#[0-9]+[[:space:]]+(INITED|DONE)" \
      "$tmp/$target.log" | tail -30 >&2
    echo "fuzz: $target FAILED; inputs kept in $art" >&2
    failed+=("$target")
  else
    grep -E "#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units" "$tmp/$target.log" || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all targets clean"
