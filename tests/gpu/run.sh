#!/usr/bin/env bash
# tests/gpu/run.sh [NAME...] - the CUDA backend's proof on a GPU machine, in
# one call: the cases of tests/gpu/cases.cmake (what `ctest -L gpu` runs, each
# through tests/gpu/case.sh) and `bench`, gpu_bench's quick table. NAMEs:
# cases and/or bench; default all of them, in cases.cmake's order, bench last.
# Builds nothing: expects a pack (see /work/shared/device/README.md):
# .devpack/bin/ with imgbatch, gpu_check, interp_check, storm_check,
# gpu_bench and kafka_bench (demo/ optional), and .whl/ with the client's,
# protobuf's, pytest's and confluent-kafka's wheels (tests/gpu/wheels.sh)
# for the worker, parity_live and renditions_live cases. All of it takes more than one
# 10-minute device call; split it, e.g.
#   tests/gpu/run.sh gpu_check gpu_check_warm memcheck racecheck interp_check storm_check capacity bench
#   tests/gpu/run.sh worker parity_live renditions_live
# Full logs go to $OUT (or /tmp/ib_gpu_out); a short table is printed last.
# Exit 0 when every case passed, 77 when there is no CUDA device, else 1.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
# shellcheck source=tests/gpu/lib.sh
source tests/gpu/lib.sh
ib_gpu_tools || exit 1
export OUT=${OUT:-/tmp/ib_gpu_out}
mkdir -p "$OUT"
# NAME:TIMEOUT, one per case
mapfile -t cases < <(sed -n 's/^ib_gpu_case(\([a-z_0-9]*\) \([0-9]*\))$/\1:\2/p' tests/gpu/cases.cmake)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${cases[@]%%:*}" bench)
for n in "${names[@]}"; do
  [ "$n" = bench ] || printf '%s\n' "${cases[@]}" | grep -q "^$n:" ||
    { echo "run.sh: unknown case $n (${cases[*]%%:*} bench)" >&2; exit 2; }
done
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem --format=csv; } \
  >"$OUT/device.txt" 2>&1

declare -A rc secs
for n in "${names[@]}"; do
  t=$(date +%s)
  if [ "$n" = bench ]; then
    (ib_gpu_require_device && IB_CUDA_PROFILE=1 timeout 200 gpu_bench --big 24) >"$OUT/bench.txt" 2>&1
  else
    to=$(printf '%s\n' "${cases[@]}" | sed -n "s/^$n://p")
    timeout "$to" bash tests/gpu/case.sh "$n" >"$OUT/$n.txt" 2>&1
  fi
  rc[$n]=$?
  secs[$n]=$(($(date +%s) - t))
done

# What each case's log says in a few lines.
digest() {
  case $1 in
    gpu_check)
      tail -n 32 "$OUT/gpu_check.txt"
      echo "---- first differences/failures"
      grep -sE "^(FAIL|DIFF|TONE|submission)" "$OUT/gpu_check.log" | head -n 16 ;;
    gpu_check_warm) grep -E "^(TOTAL|nvrtc|FAILED)" "$OUT/$1.txt" ;;
    memcheck | racecheck) grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^TOTAL" "$OUT/$1.txt" ;;
    parity_live) grep -E "IB_PARITY_SEED|passed|failed|^total" "$OUT/$1.txt" | tail -n 6 ;;
    bench)
      grep -E "^MISMATCH|^bench:|cuda host profile" "$OUT/bench.txt"
      [ "${rc[bench]}" -eq 0 ] || tail -n 4 "$OUT/bench.txt"
      awk '/^measure/{p=1} p' "$OUT/bench.txt" ;;
    *) tail -n 16 "$OUT/$1.txt" ;;
  esac
}

echo "imgbatch version:"; timeout 30 imgbatch version
echo "================ device"; cat "$OUT/device.txt"
for n in "${names[@]}"; do
  echo "================ $n (rc=${rc[$n]}, ${secs[$n]}s)"
  [ "${rc[$n]}" = 77 ] || digest "$n"
done
echo "================ summary"
status=0
for n in "${names[@]}"; do
  case ${rc[$n]} in
    0) s=passed ;;
    77) s="skipped ($(grep -m1 -o 'no CUDA device.*' "$OUT/$n.txt"))"; [ $status = 1 ] || status=77 ;;
    *) s="FAILED (rc ${rc[$n]})"; status=1 ;;
  esac
  printf '%-16s %5ss  %s\n' "$n" "${secs[$n]}" "$s"
done
exit $status
