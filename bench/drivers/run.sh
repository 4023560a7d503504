#!/usr/bin/env bash
# bench/drivers/run.sh - the benchmark (docs/design.md, "The benchmark") in one command: imgbatch on
# every path a user takes, against Pillow 12.3 (sequential and on every core),
# OpenCV / torchvision / NPP (not bit-exact) and the physical floors, all
# measured in the same run. Writes CSV files (one schema: bench/lib/csvrows.py),
# log.txt and summary.md to the output folder; prints a line per step and the
# targets table last. Plots are drawn afterwards, off the GPU machine:
# bench/reports/plot.py OUT... (needs bench/requirements.txt).
#
#   bench/drivers/run.sh [--quick] [--backend cuda|cpu] [--out DIR] [--keep] [PART...]
#
# DIR: --out, else $OUT, else /tmp/ib_bench; its CSV files, log and summary
# are replaced unless --keep (then rows are appended; summary.py and plot.py
# also take several folders, e.g. those of two device calls).
#
# PARTs (default: all, in this order):
#   floors   gpu_bench sections 1, 2, 5 (D2D copy, pinned H2D/D2H, kernel-only
#            events for the fused chains, median, tone, GaussianBlur(8)) + NPP
#   api      gpu_bench: every family x L/RGB/RGBA x 256..4096 + chains through
#            the executor API at the default caps (max_in_flight 2; at the default
#            max_jobs 64 each >= 2048^2 case the median of 3 streams), then
#            max_in_flight 3 and 4 at 2048/4096 RGBA (the best is reported too)
#   kernels  kernel-only time of every family as launched (ncu, one job each)
#   cold     time to the first result, empty and warm NVRTC cache
#   pillow   Pillow sequential and on every core over the API matrix
#   peers    OpenCV (CPU) and torchvision (GPU) over the API matrix
#   run      `imgbatch run --in F --out G` on tmpfs vs `cat F > G`, default caps
#            and a larger setting, the cpu backend, Pillow on the same jobs;
#            >= 1024^2: 0.6-1.2 GB of jobs, steady over the last 2/3 of them
#   codecs   PNG / JPEG in -> GaussianBlur(2) -> PNG out through `imgbatch run`
#            vs Pillow doing the same decode, op and encode
#   kafka    bench/drivers/kafka_bench.sh (worker vs a plain librdkafka relay)
#   trace    a CUPTI timeline (bench/trace/ib_trace.c, libibtrace.so with the
#            libcupti.so.13 it was built against beside it) of the worst
#            >= 2048^2 API cases at the default caps: chain5 and invert L,
#            chain5 RGBA, transpose RGBA 4096^2; bench/reports/trace_report.py on each (engine busy %, H2D
#            idle gaps and what the host was doing in them) -> trace/CASE.csv
#            (the timeline; not a bench CSV, hence the folder), trace/CASE.json,
#            trace.md (summary.py shows it). No tracer or libcupti: the part fails.
#   thumbs   the thumbnail and rendition rows (bench/drivers/thumbs_bench.py): LANCZOS
#            resize kernel only 4032x3024 -> 256 (ncu); 1024x768 -> 256 BICUBIC
#            through the API (jobs_bench); 12 MP JPEG -> thumbnail(256) -> JPEG q85,
#            -> renditions 2048/1024/512/256 JPEG, and PNG 2048^2 -> LANCZOS 512 -> PNG
#            through `imgbatch run`, the thumbnail and renditions also through the
#            Kafka worker (--via kafka); Pillow on every core beside each, libvips
#            (vips_thumb_bench) beside the thumbnail; a backend answering
#            Unsupported gives an "unsupported on BACKEND" row; renditions also on
#            the cpu backend -> thumbs.csv, thumbs.md. Not in the default list (run
#            it by name: CI's bench/quick stays as it was); about 5 min on the GPU.
# GPU-only parts print "skipped: no GPU" with --backend cpu. --quick: small
# sizes and few images (CI smoke test; numbers mean nothing).
# Every benchmarked output is checked (against Pillow, or for the API against
# the CPU backend); a MISMATCH fails the run (exit 1). Exit 2: usage/setup.
#
# Binaries: imgbatch, gpu_bench, kafka_bench from PATH, else .devpack (sourced
# when present), else build/ and build/tests/. Python: $IB_PYTHON, else
# .venv/bin/python, else python3; the client (import imgbatch) from there,
# else installed from .whl/ into /tmp/ib_site (as tests/gpu/run.sh does).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
all_parts="floors api kernels cold pillow peers run codecs kafka trace"
named_parts="thumbs" # run only when named
quick=0 backend=cuda out=${OUT:-/tmp/ib_bench} keep=0 parts=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --backend) backend=${2:-}; shift ;;
    --out) out=${2:-}; shift ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) [[ " $all_parts $named_parts " == *" $1 "* ]] ||
         { echo "run.sh: unknown part $1 ($all_parts $named_parts)" >&2; exit 2; }
       parts+=("$1") ;;
  esac
  shift
done
[ "$backend" = cuda ] || [ "$backend" = cpu ] || { echo "run.sh: --backend cuda|cpu" >&2; exit 2; }
[ ${#parts[@]} -gt 0 ] || read -r -a parts <<<"$all_parts"

# ---- tools
if ! command -v imgbatch >/dev/null && [ -f .devpack/env.sh ]; then source .devpack/env.sh; fi
command -v imgbatch >/dev/null || export PATH=$root/build:$root/build/tests:$PATH
export PATH=$PATH:/usr/local/cuda/bin
command -v imgbatch >/dev/null || { echo "run.sh: no imgbatch binary (build it or pack .devpack)" >&2; exit 2; }
PY=${IB_PYTHON:-}
[ -n "$PY" ] || { [ -x .venv/bin/python ] && PY=$root/.venv/bin/python || PY=python3; }
if ! "$PY" -c "import imgbatch" 2>/dev/null && ls .whl/imgbatch_client-*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/ib_site .whl/imgbatch_client-*.whl .whl/protobuf-*.whl >/dev/null 2>&1
  # The machine's own newer protobuf has a compiled upb module that the
  # pure-Python 4.21 runtime would try (and crash) to load.
  mkdir -p /tmp/ib_site/google/_upb
  echo 'raise ImportError("pure-Python protobuf 4.21 only")' >/tmp/ib_site/google/_upb/__init__.py
  export PYTHONPATH=/tmp/ib_site${PYTHONPATH:+:$PYTHONPATH} PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
fi
"$PY" -c "import imgbatch, PIL, numpy" || { echo "run.sh: $PY lacks imgbatch/Pillow/numpy" >&2; exit 2; }
gpu=0
[ "$backend" = cuda ] && nvidia-smi -L >/dev/null 2>&1 && gpu=1
if [ "$backend" = cuda ] && [ $gpu = 0 ]; then
  echo "run.sh: no GPU here (nvidia-smi): run with --backend cpu" >&2; exit 2
fi

mkdir -p "$out" || exit 2
[ $keep = 1 ] || rm -f "$out"/*.csv "$out"/log.txt "$out"/summary.md "$out"/kafka.txt
[ $keep = 1 ] || rm -rf "$out"/trace "$out"/trace.md "$out"/thumbs.md
log=$out/log.txt
scratch=/dev/shm/ib_bench.$$
[ -d /dev/shm ] || scratch=$out/scratch
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
# The kernel cache: warm after the first part (the cold part uses its own).
export IB_CACHE_DIR=${IB_CACHE_DIR:-$scratch/kernel_cache}
t_start=$(date +%s)
nerr=0 nbad=0

say() { printf '[%4ds] %s\n' $(($(date +%s) - t_start)) "$*" | tee -a "$log"; }
status_row() { # part status note
  "$PY" -c 'import sys; sys.path.insert(0, "bench/lib"); import csvrows as c
c.append(sys.argv[1], [c.row(sys.argv[2], "run.sh", "", "", "", "", "", "", "", status=sys.argv[3], note=sys.argv[4])])' \
    "$out/status.csv" "$1" "$2" "$3"
}
skip() { say "$1: skipped: $2"; status_row "$1" skipped "$2"; }
# step PART TIMEOUT CMD...: runs CMD, its output into the log, its progress
# lines ("  ..." and MISMATCH/skipped/error lines) on the terminal too.
step() {
  local part=$1 to=$2 rc
  shift 2
  timeout "$to" "$@" >"$scratch/step.txt" 2>&1
  rc=$?
  cat "$scratch/step.txt" >>"$log"
  grep -E '^  |^section|^relay|^worker|MISMATCH|skipped|error|^bench:' "$scratch/step.txt" | head -n 400
  if grep -q MISMATCH "$scratch/step.txt"; then
    nbad=$((nbad + 1)); status_row "$part" MISMATCH "$(grep -m1 MISMATCH "$scratch/step.txt")"
  elif [ $rc -ne 0 ]; then
    nerr=$((nerr + 1)); say "$part: FAILED (rc $rc): $*"
    status_row "$part" error "rc $rc: $(basename "$1") $(tail -n 1 "$scratch/step.txt" | cut -c1-150)"
  fi
  return $rc
}
q() { [ $quick = 1 ] && echo "$1" || echo "$2"; } # q QUICK FULL

{
  echo "bench/drivers/run.sh $(date -u +%FT%TZ) quick=$quick backend=$backend parts=${parts[*]}"
  # The GPU machine's copy of the tree carries stale git metadata: the
  # packer writes the commit it built into .devpack/COMMIT
  # (git rev-parse --short HEAD > .devpack/COMMIT after pack.sh).
  if [ -f .devpack/COMMIT ]; then
    echo "commit: $(cat .devpack/COMMIT) (packed)"
  elif git rev-parse --git-dir >/dev/null 2>&1; then
    echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (+ uncommitted changes)')"
  else
    echo "commit: ? (no git metadata here; say which commit was packed)"
  fi
  imgbatch version 2>&1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
  "$PY" -c 'import PIL, numpy, platform; print("python", platform.python_version(), "Pillow", PIL.__version__, "numpy", numpy.__version__)'
  for m in cv2 torch torchvision cupy; do
    "$PY" -c "import $m; print('$m', $m.__version__)" 2>/dev/null || echo "$m: not installed"
  done
  echo "cores: $(nproc)"
} >"$out/versions.txt" 2>&1
cat "$out/versions.txt" | tee -a "$log"

fams_all=point,convert_l,tone,median3,kernel3,gauss2,gauss8,box5,resize_half,transpose,add,blend,chain5,chain_pw
grid=$(q "all:RGB:64/128,invert:RGB:256" "all:L/RGB/RGBA:256/1024/2048/4096,invert:RGB:256")
budget=$(q 0.02 0.25)

part_floors() {
  if [ $gpu = 0 ]; then skip floors "no GPU (--backend cpu)"; return; fi
  say "floors: gpu_bench sections 1, 2, 5 (copy, PCIe, kernel-only events, pipeline)"
  step floors 240 gpu_bench --sections 1,5 --images "$(q 2048 20480)" --batch "$(q 128 512)" \
    --csv "$out/floors.csv"
  say "floors: NPP kernel-only (CuPy + ctypes)"
  step floors 120 "$PY" bench/drivers/npp_bench.py --side "$(q 1024 4096)" --csv "$out/npp.csv"
}

part_api() {
  if [ $gpu = 0 ]; then skip api "no GPU (--backend cpu)"; return; fi
  say "api: every family x modes x sizes through the executor API at the default caps (max_in_flight 2; 256^2 invert max_jobs 64)"
  step api 300 gpu_bench --sections 3 --inflight 2 --feeds zc --families "$fams_all" \
    --sizes "$(q 256,1024 256,1024,2048,4096)" --modes "$(q RGB L,RGB,RGBA)" --big "$(q 2 12)" \
    --csv "$out/api.csv"
  # 256^2 (section 4): 61440 images a feed (~0.3 s), in processes of their own, three of them
  # (summary.py: the median): run after section 3 in one process it read slower than in a
  # process of its own, and a process's rate varies between processes (bench/RESULTS.md).
  for r in $(q 1 "1 2 3"); do
    say "api: 256^2 RGB invert, default caps (max_jobs 64), process $r"
    step api 90 gpu_bench --sections 4 --inflight 2 --batch 64 --feeds zc --images "$(q 2048 61440)" \
      --csv "$out/api.csv"
  done
  # --big 96: 192 images of 2048^2 (96 of 4096^2), the steady state. The trace part showed a
  # 48-image stream at the floor in its steady window but not over the whole of it: its fill
  # (the first submission staged before its first upload) and drain weigh four times as much
  # in 48 images as in 192 (bench/RESULTS.md).
  # (Zero-copy inputs are written ahead in rounds of 2 GiB: 4096^2 RGB/RGBA run 3 rounds of 32.)
  # --reps 3: each case's stream three times back to back, the median kept (one stream varies
  # between processes); x_floor_bidir_min/_max the spread.
  say "api: >= 2048^2 at max_in_flight 2 with SPEC's max_jobs 64 (several images a submission), median of 3 streams"
  step api 420 gpu_bench --sections 3 --inflight 2 --api-jobs 64 --feeds zc --families "$fams_all" \
    --sizes "$(q 1024 2048,4096)" --modes "$(q RGB L,RGB,RGBA)" --big "$(q 2 96)" --reps 3 \
    --csv "$out/api.csv"
  for f in $(q "3" "3 4"); do
    say "api: max_in_flight $f at $(q 1024 2048,4096) $([ "$f" = 3 ] && echo "RGBA" || echo "L, RGB, RGBA, every family") (looking for the best setting)"
    # At 4 in flight every family and mode of the >= 2048^2 target, chains included.
    step api 300 gpu_bench --sections 3 --inflight "$f" \
      --feeds zc --families "$([ "$f" = 3 ] && echo all || echo "$fams_all")" \
      --sizes "$(q 1024 2048,4096)" --modes "$([ "$f" = 3 ] && echo RGBA || echo "$(q RGBA L,RGB,RGBA)")" \
      --big "$(q 2 48)" --csv "$out/api_sweep.csv"
  done
  say "api: 256^2 RGB invert at max_jobs 512 (looking for the best setting)"
  step api 90 gpu_bench --sections 4 --inflight 2 --batch 512 --feeds zc --images "$(q 2048 20480)" \
    --csv "$out/api_sweep.csv"
}

part_kernels() {
  if [ $gpu = 0 ]; then skip kernels "no GPU (--backend cpu)"; return; fi
  say "kernels: every family as launched, one job per process under ncu"
  step kernels 300 "$PY" bench/drivers/ncu_kernels.py --grid "$(q all:RGBA:512 all:RGBA:4096)" \
    --dir "$scratch/ncu" --csv "$out/kernels.csv"
}

part_cold() {
  say "cold: first result with an empty and a warm kernel cache"
  local f=$scratch/cold.bin
  : >"$f"
  for w in gauss8 median3 chain5 tone; do
    "$PY" bench/drivers/make_jobs.py --workload "$w" --mode RGB --side "$(q 128 1024)" --n 1 --distinct 1 \
      --sample 0 --jobs "$scratch/c1.bin" --expect "$scratch/c1.exp" && cat "$scratch/c1.bin" >>"$f"
  done
  step cold 120 "$PY" bench/drivers/cold_bench.py --backend "$backend" --jobs "$f" --n 4 \
    --cache "$scratch/cold_cache" --workload "gauss8+median3+chain5+tone RGB $(q 128 1024)^2" \
    --csv "$out/cold.csv"
}

part_pillow() {
  say "pillow: Pillow sequential and on every core over the API matrix (${budget}s a case)"
  step pillow 600 "$PY" bench/drivers/pillow_bench.py --grid "$grid" --procs 1,0 --budget "$budget" \
    --csv "$out/pillow.csv"
}

part_peers() {
  say "peers: OpenCV on the CPU (not bit-exact)"
  step peers 300 "$PY" bench/drivers/peers_bench.py --impl opencv --grid "$grid" --budget "$(q 0.01 0.1)" \
    --csv "$out/peers.csv"
  if [ $gpu = 0 ]; then skip peers "torchvision: no GPU (--backend cpu)"; return; fi
  say "peers: torchvision on the GPU, end to end with PCIe (not bit-exact)"
  step peers 300 "$PY" bench/drivers/peers_bench.py --impl torchvision --grid "$grid" --budget "$(q 0.01 0.1)" \
    --csv "$out/peers.csv"
}

best_caps="--max-in-flight 4 --max-jobs 256 --gpu-bytes 8G --host-bytes 8G"
# run_case PART WORKLOAD MODE SIDE N SOURCE [PILLOW_GRID_EXTRA]: jobs file ->
# imgbatch run (default caps, best caps, cpu backend) each checked -> Pillow.
run_case() {
  local part=$1 w=$2 m=$3 s=$4 n=$5 src=$6 j=$scratch/jobs.bin e=$scratch/jobs.exp r=$scratch/results.bin
  local outfmt=raw label=$w
  [ "$src" = raw ] || outfmt=png label=$w-$src
  local row="$part,$label,$m,$s"
  say "$part: $w $m ${s}^2, $n jobs, $src in, $outfmt out"
  step "$part" 300 "$PY" bench/drivers/make_jobs.py --workload "$w" --mode "$m" --side "$s" --n "$n" \
    --distinct 4 --sample "$([ "$s" -ge 2048 ] && echo 1 || echo 2)" --source "$src" --output "$outfmt" \
    --jobs "$j" --expect "$e" || return
  local -a settings=("default caps|")
  [ "$backend" = cuda ] && settings+=("$best_caps|$best_caps")
  # Large images: the first third of the jobs is start-up and warm-up
  # (the pinned blocks of the pipeline's depth are fresh the first time
  # round), the steady rate comes from the rest (bench/drivers/run_bench.py).
  local warm=1
  [ "$s" -ge 1024 ] && warm=$((n / 3))
  local setting caps nocat=()
  for sc in "${settings[@]}"; do
    setting=${sc%%|*} caps=${sc#*|}
    step "$part" 300 "$PY" bench/drivers/run_bench.py --backend "$backend" --jobs "$j" --results "$r" --n "$n" \
      --caps "$caps" --row "$row" --setting "$setting" --warm "$warm" "${nocat[@]}" --csv "$out/$part.csv" &&
      step "$part" 300 "$PY" bench/drivers/check_results.py --results "$r" --expect "$e" --n "$n" \
        --csv "$out/$part.csv" --row "$part,imgbatch-run-$backend,$label,$m,$s" --setting "$setting"
    nocat=(--no-cat) # the cat floor once per jobs file
  done
  if [ "$backend" = cuda ]; then # imgbatch's own CPU backend on the first jobs
    local k=$((n / 4 > 2 ? n / 4 : 2))
    [ "$s" -ge 1024 ] && [ $k -gt 8 ] && k=8 # seconds an image on the cpu backend
    step "$part" 300 "$PY" bench/drivers/run_bench.py --backend cpu --jobs "$j" --results "$r" --n "$n" \
      --limit "$k" --row "$row" --no-cat --reps 1 --csv "$out/$part.csv" &&
      step "$part" 300 "$PY" bench/drivers/check_results.py --results "$r" --expect "$e" --n "$k" \
        --csv "$out/$part.csv" --row "$part,imgbatch-run-cpu,$label,$m,$s"
  fi
  step "$part" 300 "$PY" bench/drivers/pillow_bench.py --part "$part" --label "$label" --grid "$w:$m:$s" --source "$src" \
    --output "$outfmt" --procs 1,0 --budget "$budget" --csv "$out/$part.csv"
  rm -f "$j" "$e" "$r"
}

part_run() {
  run_case run invert RGB "$(q 64 256)" "$(q 200 2000)" raw
  # >= 1024^2: enough bytes (0.6-1.2 GB) that start-up noise and the
  # pipeline's warm-up do not decide the % of cat.
  run_case run chain5 RGB "$(q 128 1024)" "$(q 40 192)" raw
  run_case run gauss8 RGB "$(q 128 2048)" "$(q 20 72)" raw
  run_case run median3 RGB "$(q 128 2048)" "$(q 20 72)" raw
  run_case run copy RGBA "$(q 256 4096)" "$(q 20 18)" raw
}

part_codecs() {
  run_case codecs gauss2 RGB "$(q 128 1024)" "$(q 16 48)" png
  run_case codecs gauss2 RGB "$(q 128 1024)" "$(q 16 48)" jpeg
  say "codecs: Pillow PNG 128^2 -> GaussianBlur(2) -> PNG (the Kafka codec case)"
  step codecs 120 "$PY" bench/drivers/pillow_bench.py --part codecs --label gauss2-png --grid gauss2:RGB:128 --source png \
    --output png --procs 1,0 --budget "$(q 0.05 1)" --csv "$out/codecs.csv"
}

part_kafka() {
  command -v kafka_bench >/dev/null || { skip kafka "no kafka_bench binary"; return; }
  say "kafka: worker vs a plain librdkafka relay on the embedded broker"
  # Raw cases four times, interleaved, 8000 jobs each (summary.py: the median of the paired
  # rounds): one case of the relay alone varies too much between runs to compare.
  OUT=$scratch/kafka step kafka 420 bench/drivers/kafka_bench.sh --backend "$backend" --n "$(q 200 8000)" \
    --repeat "$(q 1 4)" \
    --codec-n "$(q 100 3000)" --threads "$(q 2 "1 4 16")"
  cp "$scratch/step.txt" "$out/kafka.txt"
  step kafka 60 "$PY" bench/reports/kafka_report.py csv --log "$out/kafka.txt" --backend "$backend" --csv "$out/kafka.csv"
}

# The tracer: $IB_TRACE_LIB, else beside gpu_bench, else the build's.
trace_lib() {
  local f
  for f in "${IB_TRACE_LIB:-}" "$(dirname "$(command -v gpu_bench)")/libibtrace.so" \
    "$root/build/bench/trace/libibtrace.so"; do
    [ -n "$f" ] && [ -f "$f" ] && { readlink -f "$f"; return 0; }
  done
  return 1
}

trace_fail() {
  nerr=$((nerr + 1)); say "trace: FAILED: $1"; status_row trace error "$1"
}

# trace_case NAME FAMILY MODE LIB [SIDE]: one gpu_bench process, one case (SIDE^2, 2048
# unless given), its timed stream marked (--profile-range), under the tracer; then its report.
trace_case() {
  local name=$1 fam=$2 mode=$3 lib=$4 side=${5:-2048} big images csv=$out/trace/$1.csv
  big=$(q 2 24)
  images=$([ "$side" -ge 4096 ] && echo "$big" || echo $((2 * big)))
  say "trace: $fam $mode ${side}^2 at max_jobs 64, max_in_flight 2 (--big $big) under CUPTI"
  rm -f "$csv" "$scratch/trace_bench.csv"
  step trace 150 env CUDA_INJECTION64_PATH="$lib" IB_TRACE_OUT="$csv" gpu_bench --sections 3 \
    --inflight 2 --api-jobs 64 --feeds zc --families "$fam" --sizes "$side" --modes "$mode" \
    --big "$big" --profile-range 1 --csv "$scratch/trace_bench.csv" || return
  grep '^ib_trace:' "$scratch/step.txt" | tee -a "$log"
  [ -s "$csv" ] || { trace_fail "$name: gpu_bench wrote no trace ($csv): was the tracer loaded?"; return; }
  # The floor of the run target's ratio: the measured both-directions floor per image.
  local floor
  floor=$("$PY" -c 'import csv, sys
m = {r["metric"]: float(r["value"]) for r in csv.DictReader(open(sys.argv[1]))
     if r["part"] == "api" and r["impl"] == "imgbatch-api-cuda" and r["workload"] == sys.argv[2]}
print(round(1e3 * m["ms_per_img"] / m["x_floor_bidir"], 3))' "$scratch/trace_bench.csv" "$fam") ||
    { trace_fail "$name: no api row in gpu_bench's CSV"; return; }
  rm -f "$scratch/trace_bench.csv"
  step trace 120 "$PY" bench/reports/trace_report.py "$csv" --images "$images" --floor-us "$floor" \
    --json "$out/trace/$name.json"
  sed 's/^/  /' "$scratch/step.txt" | head -n 60
}

part_trace() {
  if [ $gpu = 0 ]; then skip trace "no GPU (--backend cpu)"; return; fi
  local lib
  lib=$(trace_lib) || { trace_fail "no libibtrace.so (IB_TRACE_LIB, beside gpu_bench, build/bench/trace): build target ibtrace where the CUDA toolkit has CUPTI"; return; }
  if ldd "$lib" | grep -q 'not found'; then
    ldd "$lib" | tee -a "$log"
    trace_fail "$lib cannot load (ldd above): copy the libcupti.so.13 it was built against beside it"
    return
  fi
  say "trace: $lib with $(ldd "$lib" | awk '/libcupti/ {print $3}')"
  mkdir -p "$out/trace"
  trace_case chain5_L chain5 L "$lib"
  trace_case invert_L invert L "$lib"
  trace_case chain5_RGBA chain5 RGBA "$lib"
  # The worst default-caps case of the runs in bench/RESULTS.md.
  trace_case transpose_RGBA4096 transpose RGBA "$lib" 4096
  local js=("$out"/trace/*.json)
  [ -f "${js[0]}" ] || { trace_fail "no trace report written"; return; }
  step trace 60 "$PY" bench/reports/trace_report.py table --md "$out/trace.md" "${js[@]}"
  cat "$out/trace.md" | tee -a "$log"
}

part_thumbs() {
  local tb=(bench/drivers/thumbs_bench.py --backend "$backend" --scratch "$scratch/thumbs" --csv "$out/thumbs.csv"
    --budget "$(q 1 3)")
  [ $quick = 1 ] && tb+=(--quick)
  local r
  for r in kernel api thumb renditions png; do
    say "thumbs: $r"
    step thumbs "$(q 120 150)" "$PY" "${tb[@]}" "$r"
  done
  # The thumb and renditions rows are the Kafka worker's (path Jobs on the embedded
  # broker); the table's verdict for them takes these figures, the peers from above.
  for r in thumb renditions; do
    say "thumbs: $r through the Kafka worker"
    step thumbs "$(q 120 150)" "$PY" "${tb[@]}" "$r" --via kafka
  done
  rm -rf "$scratch/thumbs"
  step thumbs 30 "$PY" bench/drivers/thumbs_bench.py table --csv "$out/thumbs.csv" --md "$out/thumbs.md"
  cat "$out/thumbs.md" | tee -a "$log"
}

times=""
for p in "${parts[@]}"; do
  t0=$(date +%s)
  "part_$p"
  times+=" $p $(($(date +%s) - t0))s"
done

say "done in $(($(date +%s) - t_start)) s (parts:$times); summary:"
"$PY" bench/reports/summary.py "$out" | tee -a "$log"
rc_sum=${PIPESTATUS[0]}
[ $nerr = 0 ] || echo "run.sh: $nerr step(s) failed (see $log and status.csv)"
if [ $nbad -gt 0 ] || [ "$rc_sum" -ne 0 ]; then echo "run.sh: MISMATCH: a benchmarked output is wrong"; exit 1; fi
[ $nerr = 0 ] || exit 1
exit 0
