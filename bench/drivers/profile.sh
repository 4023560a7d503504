#!/usr/bin/env bash
# bench/drivers/profile.sh - the profile behind bench/RESULTS.md's missed targets, in one
# device call of about 3-5 minutes (each step under `timeout`; a failed step
# is reported and the others still run):
#
#   ncu    Nsight Compute (--clock-control none; sections SpeedOfLight,
#          ComputeWorkloadAnalysis, MemoryWorkloadAnalysis, Occupancy,
#          LaunchStats, WarpStateStats, SchedulerStats, InstructionStats) on
#          one launch of each kernel of gpu_bench section 1 (4096^2 RGBA, the
#          launches its event timings come from), one process per kernel:
#          fused chain that folds (reference), point>brightness>point
#          unfolded, color>point, tone, median 3x3, the 5-op mix, and
#          GaussianBlur(8) (the row kernel and its 3 column passes); plus the
#          device copy reference (a 16-byte-per-thread CuPy copy kernel) and
#          NPP's median 3x3 (bench/drivers/npp_bench.py).
#   api    where the time goes through the executor API: nsys when it exists
#          and makes a report, else (and always) gpu_bench with
#          IB_CUDA_PROFILE=1 (the backend's per-job host profile: plan,
#          staging, launch, blocked on device, result copies) for 256^2 RGB
#          invert (max_jobs 64 and 512, + the device-only pipeline) and
#          point / gauss8 RGBA 4096^2 and chain5 L 2048^2, one process each.
#   bidir  pinned H2D alone, D2H alone and both at once (torch, two streams):
#          the PCIe floor that overlapping can actually reach.
#
#   bench/drivers/profile.sh [--out DIR] [--dry-run] [STEP...]     (default: all)
#
# IB_PROFILE_BUDGET (seconds, default 480): steps that would start later are
# skipped (each step's own timeout bounds the one running).
#
# DIR: --out, else $OUT, else /tmp/ib_profile. It gets few files (the device
# tool returns at most 8): profile_table.txt (bench/reports/profile_table.py, also
# printed last), profile_log.txt and profile_raw.tar.gz (every raw ncu CSV
# and .ncu-rep, gpu_bench outputs, nsys exports, the manifest).
# --dry-run: print the commands, run nothing (no GPU needed).
# Binaries: gpu_bench from PATH, else .devpack (sourced when present), else
# build/tests. Exit 2: no GPU / no gpu_bench; 1: a step failed; 0: all ran.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
all_steps="ncu api bidir"
out=${OUT:-/tmp/ib_profile} dry=0 steps=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:-}; shift ;;
    --dry-run) dry=1 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    -*) echo "profile.sh: unknown option $1" >&2; exit 2 ;;
    *) [[ " $all_steps " == *" $1 "* ]] || { echo "profile.sh: unknown step $1 ($all_steps)" >&2; exit 2; }
       steps+=("$1") ;;
  esac
  shift
done
[ ${#steps[@]} -gt 0 ] || read -r -a steps <<<"$all_steps"

# ---- tools
if ! command -v gpu_bench >/dev/null && [ -f .devpack/env.sh ]; then source .devpack/env.sh; fi
command -v gpu_bench >/dev/null || export PATH=$root/build/tests:$root/build:$PATH
export PATH=$PATH:/usr/local/cuda/bin
PY=${IB_PYTHON:-python3}
if [ $dry = 0 ]; then
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "profile.sh: no GPU here (nvidia-smi -L failed): this script profiles the H200; run it" \
      "on the device machine (or --dry-run to see the commands)" >&2
    exit 2
  fi
  command -v gpu_bench >/dev/null || { echo "profile.sh: no gpu_bench binary (build it or pack .devpack)" >&2; exit 2; }
fi
ncu=$(command -v ncu || true)
for c in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
  [ -n "$ncu" ] || { [ -x "$c" ] && ncu=$c; }
done
[ -n "$ncu" ] || [ $dry = 0 ] || ncu=ncu # --dry-run shows the ncu commands anyway
nsys=$(command -v nsys || true)
for c in /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys; do
  [ -n "$nsys" ] || { [ -x "$c" ] && nsys=$c; }
done

mkdir -p "$out" || exit 2
raw=$out/profile_raw
rm -rf "$raw" "$out/profile_raw.tar.gz" "$out/profile_table.txt" "$out/profile_log.txt"
mkdir -p "$raw" || exit 2
log=$out/profile_log.txt
man=$raw/manifest.tsv # label <TAB> kind <TAB> file <TAB> note: what profile_table.py reads
: >"$man"
scratch=$(mktemp -d /dev/shm/ib_profile.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# One warm kernel cache for every process: gpu_bench compiles section 1's
# modules once (first ncu step), the later processes load them from disk.
export IB_CACHE_DIR=$scratch/kernel_cache
t_start=$(date +%s)
nerr=0

say() { printf '[%4ds] %s\n' $(($(date +%s) - t_start)) "$*" | tee -a "$log"; }
# Past the budget (IB_PROFILE_BUDGET seconds, default 480) the remaining
# steps are skipped, so a hanging tool cannot eat the device call.
budget=${IB_PROFILE_BUDGET:-480}
over_budget() {
  [ $dry = 0 ] && [ $(($(date +%s) - t_start)) -gt "$budget" ] || return 1
  say "$1: skipped: past the ${budget}s budget"
  nerr=$((nerr + 1))
}
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$man"; }
# run_to SECONDS OUTFILE CMD...: CMD under timeout, stdout+stderr to OUTFILE
# (and the log); a failure is counted and said, never fatal.
run_to() {
  local to=$1 f=$2 rc
  shift 2
  if [ $dry = 1 ]; then
    echo "would run (timeout $to): $*" | tee -a "$log"
    return 0
  fi
  { echo "+ $*"; } >>"$log"
  timeout -k 5 "$to" "$@" >"$f" 2>&1
  rc=$?
  cat "$f" >>"$log"
  if [ $rc -ne 0 ]; then
    nerr=$((nerr + 1))
    if [ $rc = 124 ] || [ $rc = 137 ]; then say "  FAILED: timed out after ${to}s: $(basename "$1")"
    else say "  FAILED (rc $rc): $(basename "$1"): $(grep -v '^==PROF==' "$f" | tail -n 2 | tr '\n' ' ' | cut -c1-200)"; fi
  fi
  return $rc
}

{
  echo "bench/drivers/profile.sh $(date -u +%FT%TZ) steps=${steps[*]}"
  [ -f .devpack/COMMIT ] && echo "commit: $(cat .devpack/COMMIT) (packed)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader 2>&1
  echo "ncu: ${ncu:-none} $([ -n "$ncu" ] && "$ncu" --version 2>/dev/null | tail -n 1)"
  echo "nsys: ${nsys:-none}"
} >"$raw/versions.txt" 2>&1
cat "$raw/versions.txt" | tee -a "$log"

# ---- ncu
# gpu_bench --sections 1 (section 2, PCIe, always runs too) launches, in
# order, the 8 chains of section 1 (one warm-up + 30 timed launches each,
# all named ib_chain), then GaussianBlur(8): per repetition one ib_chain (the
# rows, in shared memory) and 3 ib_post (column passes); nothing launches
# before (the executor sections come later). With --kernel-name matching
# both names, launch k of chain c is index 31*c + k; blur repetition 1
# starts at 8*31 + 4 = 252. Chains: 0 fold, 1 unfold3, 2 color>point,
# 3 tone, 4 median3, 5 kernel3, 6 mix5, 7 mix4_notone (gpu_bench.c: chains[],
# chain_ids).
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats
  --section InstructionStats)
# ncu_one LABEL TIMEOUT FILTER SKIP COUNT CMD...: one profiled process ->
# LABEL.ncu-rep, LABEL.raw.csv (--page raw), LABEL.out (ncu + app output).
ncu_one() {
  local label=$1 to=$2 filter=$3 skip=$4 count=$5
  shift 5
  over_budget "ncu $label" && return
  say "ncu: $label (launch $skip..$((skip + count - 1)) of $filter)"
  run_to "$to" "$raw/$label.out" "$ncu" --clock-control none "${sections[@]}" \
    --kernel-name "$filter" --launch-skip "$skip" --launch-count "$count" \
    --export "$raw/$label" --force-overwrite "$@"
  local rc=$?
  if [ $dry = 0 ] && [ -f "$raw/$label.ncu-rep" ]; then
    timeout 60 "$ncu" --import "$raw/$label.ncu-rep" --csv --page raw >"$raw/$label.raw.csv" 2>>"$log" ||
      { nerr=$((nerr + 1)); say "  FAILED: ncu --import $label.ncu-rep --page raw"; }
    timeout 60 "$ncu" --import "$raw/$label.ncu-rep" --print-details all >"$raw/$label.details.txt" 2>>"$log" ||
      true # the human-readable sections and their rule comments
  elif [ $dry = 0 ]; then
    say "  no report for $label (rc $rc); see $label.out"
  fi
  record "$label" ncu "$label.raw.csv" "$label.out"
}

step_ncu() {
  if [ -z "$ncu" ]; then
    say "ncu: skipped: no ncu on this machine"
    record ncu skipped "" "no ncu"
    return
  fi
  local f='regex:^ib_(chain|post)$' gb=(gpu_bench --sections 1 --images 2 --batch 2)
  # The first process compiles section 1's modules (kernel cache cold).
  ncu_one k_chain_fold 150 "$f" 1 1 "${gb[@]}"
  ncu_one k_chain_unfold3 90 "$f" 32 1 "${gb[@]}"
  ncu_one k_color_point 90 "$f" 63 1 "${gb[@]}"
  ncu_one k_tone 90 "$f" 94 1 "${gb[@]}"
  ncu_one k_median3 90 "$f" 125 1 "${gb[@]}"
  ncu_one k_mix5 90 "$f" 187 1 "${gb[@]}"
  ncu_one k_mix4_notone 90 "$f" 218 1 "${gb[@]}"
  ncu_one k_gauss8 120 "$f" 252 4 "${gb[@]}"
  # The device copy reference: 16 bytes per thread, grid stride, 4096^2 RGBA.
  cat >"$scratch/copyref.py" <<'EOF'
import cupy as cp
n = 4096 * 4096 * 4
src = cp.full(n, 0x5A, dtype=cp.uint8)
dst = cp.empty_like(src)
k = cp.RawKernel(r'''
extern "C" __global__ void __launch_bounds__(256) ref_copy16(const uint4 *a, uint4 *b, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += (unsigned long long)gridDim.x * 256)
    b[i] = a[i];
}''', "ref_copy16")
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
for grid in (sms * 8, n // 16 // 256):  # the chains' capped grid, then one thread per 16 bytes
    for _ in range(3):
        k((grid,), (256,), (src, dst, cp.uint64(n // 16)))
cp.cuda.Device().synchronize()
assert int(dst[-1]) == 0x5A
print("copyref: ok, grids", sms * 8, n // 16 // 256)
EOF
  # Launches 2 (the capped grid) and 3 (one thread per 16 bytes).
  ncu_one ref_copy 90 regex:ref_copy16 2 2 "$PY" "$scratch/copyref.py"
  # NPP's median 3x3 (2 warm-ups, then --reps x --batch launches).
  ncu_one npp_median3 120 'regex:[Mm]edian' 2 1 "$PY" bench/drivers/npp_bench.py --side 4096 --reps 1 --batch 1 \
    --csv "$scratch/npp.csv"
}

# ---- api
# nsys_one LABEL CMD...: a CUDA trace and its GPU trace as CSV, when nsys
# works here (KINDS.md saw one write only a .qdstrm: then it says so).
nsys_one() {
  local label=$1
  shift
  run_to 120 "$raw/$label.nsys.out" "$nsys" profile -t cuda -s none --cpuctxsw=none -f true \
    -o "$raw/$label" "$@" || return 1
  [ $dry = 1 ] && return 0
  if [ ! -f "$raw/$label.nsys-rep" ]; then
    say "  nsys wrote no .nsys-rep for $label (see $label.nsys.out); skipped"
    return 1
  fi
  run_to 120 "$raw/$label.nsys-stats.out" "$nsys" stats -r cuda_gpu_trace,cuda_api_sum -f csv \
    -o "$raw/$label" --force-overwrite true "$raw/$label.nsys-rep" || return 1
  local tr
  tr=$(ls "$raw/$label"*cuda_gpu_trace*.csv 2>/dev/null | head -n 1)
  [ -n "$tr" ] && record "$label" nsys "$(basename "$tr")" ""
  rm -f "$raw/$label.sqlite"
}

# api_one LABEL NOTE ARGS...: gpu_bench with the backend's host profile.
api_one() {
  local label=$1 note=$2
  shift 2
  over_budget "api $label" && return
  say "api: $label ($note)"
  run_to 150 "$raw/$label.out" env IB_CUDA_PROFILE=1 gpu_bench "$@"
  record "$label" api "$label.out" "$note"
}

step_api() {
  local small=(--sections 4,5 --images 20480 --batch 64 --producers 4)
  local big=(--feeds zc --inflight 2 --big 12 --producers 4)
  if [ -n "$nsys" ]; then
    say "api: nsys $nsys (CUDA trace of 256^2 invert and point RGBA 4096^2)"
    nsys_one nsys_invert256 gpu_bench --sections 4 --images 4096 --batch 64 &&
      nsys_one nsys_point4096 gpu_bench --sections 3 --families point --sizes 4096 --modes RGBA "${big[@]}"
  else
    say "api: no nsys on this machine (KINDS.md: not on the PATH); the host profile instead"
    record nsys skipped "" "no nsys"
  fi
  api_one api_invert256_b64 "256^2 RGB invert, max_jobs 64 (default caps), + device-only pipeline" \
    "${small[@]}"
  api_one api_invert256_b512 "256^2 RGB invert, max_jobs 512" --sections 4 --images 20480 --batch 512 \
    --producers 4
  api_one api_point4096 "point RGBA 4096^2, max_in_flight 2" --sections 3 --families point --sizes 4096 \
    --modes RGBA "${big[@]}"
  api_one api_gauss8_4096 "GaussianBlur(8) RGBA 4096^2, max_in_flight 2" --sections 3 --families gauss8 \
    --sizes 4096 --modes RGBA "${big[@]}"
  api_one api_chain5_L2048 "5-op chain L 2048^2 (worst: 2.06x), max_in_flight 2" --sections 3 \
    --families chain5 --sizes 2048 --modes L "${big[@]}"
}

# ---- bidir
step_bidir() {
  over_budget bidir && return
  say "bidir: pinned H2D, D2H and both at once (torch, 64 MiB and 256^2 RGB copies)"
  cat >"$scratch/bidir.py" <<'EOF'
import statistics, torch
def med(fn, reps=9):
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(); a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)
n = 4096 * 4096 * 4
hin = torch.empty(n, dtype=torch.uint8, pin_memory=True).fill_(1)
hout = torch.empty(n, dtype=torch.uint8, pin_memory=True)
din, dout = torch.empty(n, dtype=torch.uint8, device="cuda"), torch.ones(n, dtype=torch.uint8, device="cuda")
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
def h2d():
    din.copy_(hin, non_blocking=True)
def d2h():
    hout.copy_(dout, non_blocking=True)
def both(k=4):
    cur = torch.cuda.current_stream()
    s1.wait_stream(cur); s2.wait_stream(cur)
    for _ in range(k):
        with torch.cuda.stream(s1): h2d()
        with torch.cuda.stream(s2): d2h()
    cur.wait_stream(s1); cur.wait_stream(s2)
t_h, t_d, t_b = med(h2d), med(d2h), med(both) / 4
print(f"bidir: 64MiB h2d_ms {t_h:.4f} d2h_ms {t_d:.4f} both_ms_per_pair {t_b:.4f} "
      f"h2d_gbps {n / t_h / 1e6:.1f} d2h_gbps {n / t_d / 1e6:.1f} both_gbps_each {n / t_b / 1e6:.1f} "
      f"both_vs_overlap_floor {t_b / max(t_h, t_d):.3f}")
m = 256 * 256 * 3
B = 256
def small_h2d():
    for i in range(B):
        din[i * m:(i + 1) * m].copy_(hin[i * m:(i + 1) * m], non_blocking=True)
def small_batch():
    din[:B * m].copy_(hin[:B * m], non_blocking=True)
t_s, t_sb = med(small_h2d), med(small_batch)
print(f"bidir: 256x256x3 h2d one_copy_per_image_us {t_s * 1e3 / B:.3f} one_batched_copy_us_per_image "
      f"{t_sb * 1e3 / B:.3f} copies_per_s {B / t_s * 1e3:.0f}")
EOF
  run_to 90 "$raw/bidir.out" "$PY" "$scratch/bidir.py"
  record bidir bidir bidir.out ""
}

for s in "${steps[@]}"; do
  t0=$(date +%s)
  "step_$s"
  say "$s: done in $(($(date +%s) - t0)) s"
done

[ $dry = 1 ] && { echo "dry run: manifest $man"; cat "$man"; exit 0; }
say "table (bench/reports/profile_table.py):"
"$PY" bench/reports/profile_table.py --raw "$raw" | tee "$out/profile_table.txt"
[ "${PIPESTATUS[0]}" = 0 ] || { nerr=$((nerr + 1)); echo "profile.sh: profile_table.py failed" | tee -a "$log"; }
cp "$out/profile_table.txt" "$raw/" 2>/dev/null
tar -C "$out" -czf "$out/profile_raw.tar.gz" profile_raw && rm -rf "$raw"
say "done in $(($(date +%s) - t_start)) s; $nerr step(s) failed; raw files in $out/profile_raw.tar.gz"
[ $nerr = 0 ] || exit 1
exit 0
