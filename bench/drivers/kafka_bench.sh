#!/usr/bin/env bash
# bench/drivers/kafka_bench.sh - the Kafka worker against its floor, a plain librdkafka
# relay of the same messages on the same embedded broker.
# Needs bin/imgbatch and bin/kafka_bench on PATH (a build dir's, or .devpack/bin).
#   raw:   N raw RGB SxS jobs, copy graph, raw out: worker MB/s vs relay MB/s
#   codec: PNG SxS -> GaussianBlur(2) -> PNG at --decode-threads 1 2 4 8 16 (the
#          worker's default caps), then the most threads with --max-jobs M
#   (raw is run at --max-jobs M too, and at each --max-uncommitted U of --uncommitted:
#   the kill bound, U Results out uncommitted, caps throughput at U per delivery +
#   commit round trip; --codec-n 0 skips the codec cases)
# The driver keeps a window of Jobs outstanding over every partition (see
# kafka_bench.c): deep enough that the worker, not the driver, sets the pace.
# Usage: bench/drivers/kafka_bench.sh [--backend cpu|cuda] [--n N] [--side S] [--threads "1 2 4"]
#                             [--codec-n N] [--best-max-jobs M] [--uncommitted "U1 U2"]
#                             [--repeat R] [--rtt MS] [--variant 'NAME|WORKER ARGS']...
# --rtt MS: the embedded broker answers every request MS ms late (a broker
# far away: round-trip bounds show through a small machine's CPU noise).
# --variant 'l0|-X linger.ms=0': one more raw case, worker-raw-l0, with those worker args;
# a variant's args may start with '--bin PATH': that worker binary (an older build, say).
# Each case's logs are kept per round: $OUT/NAME.R.worker.log (bench/reports/kafka_report.py phases sums
# the worker's status lines: where a job's time went, whether max_jobs bound).
set -u
backend=cpu n=2000 side=128 threads="1 2 4 8 16" codec_n=2000 best_jobs=256 uncommitted="" repeat=1 rtt=0 variants=()
while [ $# -gt 0 ]; do
  case $1 in
    --backend) backend=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --side) side=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --codec-n) codec_n=$2; shift 2 ;;
    --best-max-jobs) best_jobs=$2; shift 2 ;;
    --uncommitted) uncommitted=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --rtt) rtt=$2; shift 2 ;;
    --variant) variants+=("$2"); shift 2 ;;
    *) echo "unknown $1" >&2; exit 2 ;;
  esac
done
out=${OUT:-/tmp/kafka_bench}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

start_broker() {
  coproc BROKER { exec imgbatch broker 2>"$out/broker.log"; }
  read -r line <&"${BROKER[0]}"
  boot=${line#bootstrap=}
  if [ "$rtt" != 0 ]; then
    echo "rtt all $rtt" >&"${BROKER[1]}"
    read -r line <&"${BROKER[0]}"
    [ "$line" = ok ] || { echo "kafka_bench.sh: rtt: $line" >&2; exit 1; }
  fi
}
stop_broker() { kill "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null; }

round=1
run_case() { # name kind jobs-count relay|worker-args...
  local name=$1 kind=$2 count=$3; shift 3
  start_broker
  if [ "$1" = relay ]; then
    kafka_bench relay --brokers "$boot" --n "$count" >"$out/$name.relay" 2>&1 &
  else
    local bin=imgbatch
    [ "$1" != --bin ] || { bin=$2; shift 2; }
    "$bin" worker --brokers "$boot" --backend "$backend" --grace-seconds 30 "$@" \
      -X session.timeout.ms=6000 -X fetch.wait.max.ms=10 2>"$out/$name.$round.worker.log" &
  fi
  local pid=$!
  # THREAD_CPU=1: per-thread CPU of the worker (or relay), its busiest second.
  local watcher=
  if [ -n "${THREAD_CPU:-}" ]; then
    rm -rf "$out/$name.snaps"
    python3 "$here/thread_cpu.py" watch "$pid" "$out/$name.snaps" 2>/dev/null &
    watcher=$!
  fi
  # PERF_CASE=NAME: perf samples of that case's worker for 2 s, after 2 s of start-up.
  local perfer=
  if [ "${PERF_CASE:-}" = "$name" ] && command -v perf >/dev/null; then
    (sleep 2; perf record -q -F 999 -p "$pid" -o "$out/$name.perf.data" -- sleep 2) \
      >/dev/null 2>&1 &
    perfer=$!
  fi
  kafka_bench drive --brokers "$boot" --n "$count" --kind "$kind" --side "$side" \
    >"$out/$name.drive" 2>&1
  if [ -n "$perfer" ]; then
    wait "$perfer"
    perf report -i "$out/$name.perf.data" --stdio --no-children --sort comm,dso,sym \
      --percent-limit 0.7 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 45 >"$out/$name.perf"
  fi
  # CPU seconds (user + system) of the worker or relay over the case, start-up included.
  local cpu
  cpu=$(awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$pid/stat" 2>/dev/null)
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  [ -n "$cpu" ] || cpu=$(sed -n 's/^cpu \([0-9.]*\) s$/\1/p' "$out/$name.relay" 2>/dev/null)
  if [ -n "$watcher" ]; then
    wait "$watcher" 2>/dev/null
    python3 "$here/thread_cpu.py" busiest "$out/$name.snaps" >"$out/$name.threads" 2>&1
  fi
  stop_broker
  printf '%-18s %s, cpu %s s\n' "$name" "$(tail -n 1 "$out/$name.drive")" "${cpu:-?}"
}

echo "kafka_bench: backend $backend, $n raw ${side}x${side} RGB jobs; codec $codec_n PNG jobs; rtt $rtt ms"
# --repeat R: the raw cases R times, interleaved (a noisy machine's drift hits each alike),
# the relay first in odd rounds and second in even ones; "round R" lines mark them, so
# kafka_report.py csv pairs each round's worker with that round's relay.
for r in $(seq "$repeat"); do
  round=$r
  echo "round $r"
  if [ $((r % 2)) = 1 ]; then
    run_case relay-raw raw "$n" relay
    run_case worker-raw raw "$n" --decode-threads 0
  else
    run_case worker-raw raw "$n" --decode-threads 0
    run_case relay-raw raw "$n" relay
  fi
  [ "$best_jobs" = 0 ] ||
    run_case "worker-raw-mj$best_jobs" raw "$n" --decode-threads 0 --max-jobs "$best_jobs"
  for u in $uncommitted; do
    run_case "worker-raw-mu$u" raw "$n" --decode-threads 0 --max-uncommitted "$u"
  done
  for v in ${variants[@]+"${variants[@]}"}; do
    # shellcheck disable=SC2086 # the variant's arguments split on spaces
    run_case "worker-raw-${v%%|*}" raw "$n" ${v#*|} --decode-threads 0
  done
done
[ "$codec_n" -gt 0 ] || exit 0
for t in $threads; do
  run_case "worker-png-t$t" png "$codec_n" --decode-threads "$t"
done
run_case "worker-png-t$t-mj$best_jobs" png "$codec_n" --decode-threads "$t" --max-jobs "$best_jobs"
