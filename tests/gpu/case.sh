#!/usr/bin/env bash
# tests/gpu/case.sh NAME - one GPU case of tests/gpu/cases.cmake: the CUDA
# backend against the CPU reference, byte for byte. Exit 0 passed, 77
# skipped ("no CUDA device", as ctest's SKIP_RETURN_CODE), else failed.
# Runs from a build tree (ctest -L gpu sets IB_GPU_PATH, IB_PYTHON, OUT) or
# from a pack on the GPU machine (tests/gpu/run.sh, or ctest --test-dir
# tests/gpu); tests/gpu/lib.sh finds the binaries and the Python.
#   gpu_check       every op x mode x variant, random chains, a 200-job
#                   same-signature submission, 4096^2 images; from an empty
#                   module cache (IB_RANDOM chains, default 300)
#   gpu_check_warm  a second process on that cache: byte-equal and nothing
#                   compiled (the blur on global-memory passes)
#   memcheck        compute-sanitizer memcheck on a subset: 0 errors
#   racecheck       compute-sanitizer racecheck on a subset: 0 hazards
#   interp_check    the interpreter tier's stages == the specialised kernels
#   storm_check     compile storms: sampled results == the CPU's, every job done
#   capacity        4096^2 RGBA Kernel/blur jobs through `imgbatch run --backend
#                   cuda` at the default caps, each == Pillow (capacity_run.py)
#   worker          tests/gpu/worker_run.sh: `imgbatch demo` and the worker
#                   suite (tests/py/worker) on --backend cuda
#   parity_live     tests/py/parity through `imgbatch run --backend cuda`
#                   against the machine's Pillow 12.3 (IB_PARITY_SCALE, 0.3)
#   renditions_live tests/py/renditions through `imgbatch run --backend cuda`
# Logs go to $OUT (default /tmp/ib_gpu_out); the module cache to
# $IB_GPU_CACHE (default /tmp/ib_nvrtc_cache).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
# shellcheck source=tests/gpu/lib.sh
source tests/gpu/lib.sh
name=${1:-}
[ -n "$name" ] || { echo "usage: tests/gpu/case.sh NAME (tests/gpu/cases.cmake)" >&2; exit 2; }
grep -q "^ib_gpu_case($name " tests/gpu/cases.cmake || { echo "case.sh: no case $name" >&2; exit 2; }
ib_gpu_tools || exit 1
ib_gpu_require_device
out=${OUT:-/tmp/ib_gpu_out}
mkdir -p "$out"
export IB_CACHE_DIR=${IB_GPU_CACHE:-/tmp/ib_nvrtc_cache}
mkdir -p "$IB_CACHE_DIR"

python_suite() { # SUITE ENV...: a pytest folder against the cuda backend
  local suite=$1
  shift
  ib_gpu_python || exit 1
  env IB_BIN="$(command -v imgbatch)" "$@" "$PY" -m pytest -q -rs -p no:cacheprovider "$suite"
}

case $name in
  gpu_check)
    rm -rf "$IB_CACHE_DIR"
    gpu_check --random "${IB_RANDOM:-300}" --log "$out/gpu_check.log"
    ;;
  gpu_check_warm)
    IB_BLUR_GLOBAL_ROWS=1 gpu_check --random 20 --big 0 --log "$out/gpu_check_warm.log" \
      | tee "$out/gpu_check_warm.txt"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || exit "$rc"
    grep -q '^nvrtc: 0 compiled' "$out/gpu_check_warm.txt" || {
      echo "FAILED: the second start compiled kernels (expected every module from $IB_CACHE_DIR)"
      exit 1
    }
    ;;
  memcheck)
    compute-sanitizer --tool memcheck --error-exitcode 9 gpu_check --random 15 --big 0 --batch 8 \
      --log "$out/memcheck.log"
    ;;
  racecheck)
    compute-sanitizer --tool racecheck --error-exitcode 9 gpu_check --random 5 --big 0 --batch 8 \
      --log "$out/racecheck.log"
    ;;
  interp_check)
    interp_check --random 30 --log "$out/interp_check.log"
    ;;
  storm_check)
    storm_check --warm 100 --storm 100 --heads 4 --log "$out/storm_check.log"
    ;;
  capacity)
    "${IB_PYTHON:-python3}" tests/gpu/capacity_run.py cuda
    ;;
  worker)
    IB_KAFKA_BENCH=0 OUT="$out/worker" bash tests/gpu/worker_run.sh
    ;;
  parity_live)
    python_suite tests/py/parity IB_BACKEND=cuda IB_PARITY_SCALE="${IB_PARITY_SCALE:-0.3}" \
      IB_PARITY_TABLE="$out/parity_table.txt"
    ;;
  renditions_live)
    python_suite tests/py/renditions IB_BACKEND=cuda
    ;;
esac
