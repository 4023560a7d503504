#!/usr/bin/env bash
# bench/drivers/run_io.sh - `imgbatch run --in F --out G` against `cat F > G` on
# tmpfs for a few large raw workloads (the bench/RESULTS.md target: >= 70 % of cat
# at >= 1024^2), each result file checked against Pillow, then one run per
# case with IB_RUN_PROFILE=1: where the reader, driver and writer threads
# spent their time. Smaller and quicker than `bench/drivers/run.sh run` (no Pillow
# timings); same jobs (bench/drivers/make_jobs.py) and timing (bench/drivers/run_bench.py).
#   bench/drivers/run_io.sh [--backend cuda|cpu] [CASE...]
# CASE is workload:mode:side:n[:caps, commas for spaces], e.g.
# copy:RGBA:4096:24 or copy:RGBA:4096:24:--max-in-flight,4. Default: the
# 4096^2 RGBA copy and 2048^2 RGB gauss8 at the default caps and at the best
# setting of bench/drivers/run.sh, as many jobs as its `run` part. At >= 1024^2 the
# first third of the jobs counts as start-up and warm-up (run_bench.py
# --warm): the steady rate is that of the rest. The profile run prints the
# CUDA backend's pinned pool too (fresh blocks, parse buffers on the heap).
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
backend=cuda
[ "${1:-}" = --backend ] && { backend=$2; shift 2; }
if ! command -v imgbatch >/dev/null && [ -f .devpack/env.sh ]; then source .devpack/env.sh; fi
command -v imgbatch >/dev/null || export PATH=$root/build:$PATH
PY=${IB_PYTHON:-}
[ -n "$PY" ] || { [ -x .venv/bin/python ] && PY=$root/.venv/bin/python || PY=python3; }
if ! "$PY" -c "import imgbatch" 2>/dev/null && ls .whl/imgbatch_client-*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/ib_site .whl/imgbatch_client-*.whl .whl/protobuf-*.whl >/dev/null 2>&1
  mkdir -p /tmp/ib_site/google/_upb # as bench/drivers/run.sh: the pure-Python protobuf only
  echo 'raise ImportError("pure-Python protobuf 4.21 only")' >/tmp/ib_site/google/_upb/__init__.py
  export PYTHONPATH=/tmp/ib_site${PYTHONPATH:+:$PYTHONPATH} PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
fi
best="--max-in-flight,4,--max-jobs,256,--gpu-bytes,8G,--host-bytes,8G"
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(copy:RGBA:4096:24 "copy:RGBA:4096:24:$best" gauss8:RGB:2048:96
  "gauss8:RGB:2048:96:$best")
d=/dev/shm/ib_runio.$$
mkdir -p "$d" || exit 2
trap 'rm -rf "$d"' EXIT
export IB_CACHE_DIR=${IB_CACHE_DIR:-$d/kernel_cache}
rc=0 made=
for c in "${cases[@]}"; do
  IFS=: read -r w m s n caps <<<"$c"
  caps=${caps//,/ }
  if [ "$made" != "$w:$m:$s:$n" ]; then
    "$PY" bench/drivers/make_jobs.py --workload "$w" --mode "$m" --side "$s" --n "$n" --distinct 2 \
      --sample 1 --jobs "$d/jobs" --expect "$d/exp" || exit 2
    made="$w:$m:$s:$n"
  fi
  warm=1
  [ "$s" -ge 1024 ] && warm=$((n / 3))
  echo "== $w $m ${s}^2 x$n, caps: ${caps:-default}"
  "$PY" bench/drivers/run_bench.py --backend "$backend" --jobs "$d/jobs" --results "$d/res" --n "$n" \
    --caps "$caps" --setting "${caps:-default caps}" --row "run,$w,$m,$s" --warm "$warm" \
    --csv "$d/rows.csv" | sed 's/^ *//'
  "$PY" bench/drivers/check_results.py --results "$d/res" --expect "$d/exp" --n "$n" || rc=1
  # shellcheck disable=SC2086 # caps are words
  IB_RUN_PROFILE=1 imgbatch run --backend "$backend" $caps --in "$d/jobs" --out "$d/res" 2>&1 |
    grep "profile"
  rm -f "$d/res"
done
exit $rc
