#!/usr/bin/env bash
# tests/gpu/run.sh - the CUDA backend's proof on a GPU machine, in one call.
# Builds nothing: expects a packed build in .devpack/ (see
# /work/shared/device/README.md): bin/gpu_check, bin/gpu_bench, bin/imgbatch.
#   1. parity: cuda == cpu byte for byte (every op x mode x variant, random
#      chains, one 200-job same-signature submission, 4096^2 images);
#   2. the module cache: a second process start compiles nothing;
#   3. compute-sanitizer memcheck (and racecheck) on a subset;
#   4. the benchmark;
#   5. the live parity suite (tests/py/parity, the Python client and real
#      Pillow 12.3 of the GPU machine) through `imgbatch run --backend cuda`,
#      when .whl/ carries its pure-Python wheels (protobuf, pytest) and the
#      client's (pip wheel --no-deps -w .whl ./client).
# Full logs go to $OUT (or /tmp/ib_gpu_out); a short table is printed last.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source .devpack/env.sh
export PATH=$PATH:/usr/local/cuda/bin
out=${OUT:-/tmp/ib_gpu_out}
mkdir -p "$out"
export IB_CACHE_DIR=/tmp/ib_nvrtc_cache
rm -rf "$IB_CACHE_DIR"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem --format=csv; } >"$out/device.txt" 2>&1

t=$(date +%s)
timeout 300 gpu_check --random "${IB_RANDOM:-300}" --log "$out/parity.log" >"$out/parity.txt" 2>&1
rc_parity=$?
t_parity=$(( $(date +%s) - t ))

# A second process start with the same cache dir: nothing compiled.
IB_BLUR_GLOBAL_ROWS=1 timeout 120 gpu_check --random 20 --big 0 --log "$out/parity2.log" >"$out/parity2.txt" 2>&1
rc_parity2=$?

t=$(date +%s)
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 gpu_check --random 15 --big 0 --batch 8 \
  --log "$out/memcheck.log" >"$out/memcheck.txt" 2>&1
rc_mem=$?
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 gpu_check --random 5 --big 0 --batch 8 \
  --log "$out/racecheck.log" >"$out/racecheck.txt" 2>&1
rc_race=$?
t_san=$(( $(date +%s) - t ))

t=$(date +%s)
IB_CUDA_PROFILE=1 timeout 200 gpu_bench --big 24 >"$out/bench.txt" 2>&1
rc_bench=$?
t_bench=$(( $(date +%s) - t ))

rc_py=skipped
if ls .whl/imgbatch_client-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/ib_site .whl/*.whl >"$out/pip.txt" 2>&1
  # The machine's own site-packages has a newer protobuf's compiled upb
  # module, which the pure-Python 4.21 runtime would try (and crash) to load.
  mkdir -p /tmp/ib_site/google/_upb
  echo 'raise ImportError("pure-Python protobuf 4.21 only")' >/tmp/ib_site/google/_upb/__init__.py
  t=$(date +%s)
  PYTHONPATH="/tmp/ib_site" PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python \
    PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 IB_PARITY_SCALE="${IB_PARITY_SCALE:-0.3}" \
    IB_BIN="$root/.devpack/bin/imgbatch" IB_BACKEND=cuda IB_PARITY_TABLE="$out/pytable.txt" \
    timeout 300 python3 -m pytest -q -p no:cacheprovider tests/py/parity >"$out/pytest.txt" 2>&1
  rc_py=$?
  t_py=$(( $(date +%s) - t ))
fi

echo "imgbatch version:"; timeout 30 imgbatch version; echo "rc=$?"
echo "imgbatch run --backend cuda (no jobs):"; timeout 30 imgbatch run --backend cuda </dev/null; echo "rc=$?"
echo "================ device"; cat "$out/device.txt"
echo "================ parity (rc=$rc_parity, ${t_parity}s)"; tail -n 32 "$out/parity.txt"
echo "---- first differences/failures"; grep -E "^(FAIL|DIFF|TONE|submission)" "$out/parity.log" | head -n 16
echo "================ second start (rc=$rc_parity2)"; grep -E "^(TOTAL|nvrtc)" "$out/parity2.txt"
echo "================ sanitizers (${t_san}s): memcheck rc=$rc_mem racecheck rc=$rc_race"
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|^TOTAL" "$out/memcheck.txt" "$out/racecheck.txt"
echo "================ bench (rc=$rc_bench, ${t_bench}s)"
grep -E "^MISMATCH|^bench:|cuda host profile" "$out/bench.txt"
[ "$rc_bench" -eq 0 ] || tail -n 12 "$out/bench.txt"
awk '/^measure/{p=1} p' "$out/bench.txt"
echo "================ live parity vs Pillow 12.3 through imgbatch run --backend cuda (rc=$rc_py, ${t_py:-0}s)"
grep -E "IB_PARITY_SEED|passed|failed|^total" "$out/pytest.txt" | tail -n 6
