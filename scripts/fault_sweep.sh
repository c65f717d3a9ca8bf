#!/usr/bin/env bash
# The fault sweep (GPU): every driver call of cuwrap's workloads (tests/faults/
# fault_workload.cpp) failed in turn through the interposer (docs/interposer.md).
#
#   bash scripts/fault_sweep.sh [build-dir] [--stride S] [--workload NAME] [--jobs J]
#   bash scripts/fault_sweep.sh [build-dir] --sanitizer
#
# For each workload: one run without a fault counts its driver calls and its live
# handles at exit (the baseline); then one run per N (1, 1+S, ...) fails the Nth call
# with CUDA_ERROR_OUT_OF_MEMORY. A run passes when it exits cleanly and
#   - ends with the DriverError naming the failed call ("named"), or finishes with right
#     results after the failure was reported to the release-failure handler or
#     otherwise absorbed ("recovered", a documented recovery), and
#   - leaves no more live handles of any kind than the baseline (abandoned handles, whose
#     release was the failed call, are not leaks).
# It fails on a crash (signal, abort, timeout), a wrong result, an exception naming
# another call ("misnamed") or a leak; the table lists them and the script exits 1.
# Exit 77: no GPU (the baseline cannot initialise the driver).
#
# --sanitizer runs each workload once under compute-sanitizer --leak-check full.
set -uo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$CUWRAP_ROOT/build
STRIDE=1
ONLY=""
JOBS=$(nproc)
SANITIZER=0
while (($#)); do
  case "$1" in
    --stride) STRIDE=$2; shift 2 ;;
    --workload) ONLY=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --sanitizer) SANITIZER=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) BUILD=$(cd "$1" && pwd); shift ;;
  esac
done

WORKLOAD=$BUILD/tests/faults/fault_workload
INTERPOSER=$BUILD/interposer/libcuwrap_interposer.so
for f in "$WORKLOAD" "$INTERPOSER"; do
  if [ ! -e "$f" ]; then
    echo "fault_sweep: $f is missing; build the targets fault_workload and cuwrap_interposer" >&2
    exit 2
  fi
done
workloads=$("$WORKLOAD" --list)
if [ -n "$ONLY" ]; then
  workloads=$ONLY
fi

# A GPU is there when the first workload runs cleanly without the interposer.
probe=$("$WORKLOAD" $(echo "$workloads" | head -1) 2>&1)
if [ "$(echo "$probe" | tail -1)" != ok ]; then
  echo "fault_sweep: skipped, no usable GPU: $probe"
  exit 77
fi

if [ "$SANITIZER" = 1 ]; then
  command -v compute-sanitizer >/dev/null || PATH=$PATH:${CUDA_HOME:-/usr/local/cuda}/bin
  # Memory errors and leaks only: statuses that are answers, not failures
  # (CUDA_ERROR_NOT_READY from cuStreamQuery/cuEventQuery, a capture's status), are API
  # "errors" to the sanitizer, and the sweep itself checks how each status is handled.
  logs=${CUWRAP_SANITIZER_LOGS:-/tmp}
  mkdir -p "$logs"
  status=0
  for w in $workloads; do
    log="$logs/cuwrap-sanitizer-$w.log"
    if compute-sanitizer --leak-check full --report-api-errors no --error-exitcode 1 \
         "$WORKLOAD" "$w" >"$log" 2>&1 && grep -q "ERROR SUMMARY: 0 errors" "$log"; then
      printf '%-20s clean\n' "$w"
    else
      printf '%-20s FAILED (see %s)\n' "$w" "$log"
      grep -m 12 -E "^========= (Invalid|Leaked|Program hit|Error|ERROR SUMMARY|    at)|^[^=]" "$log" |
        sed 's/^/    /'
      status=1
    fi
  done
  exit $status
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cuwrap-fault-sweep-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# run_one WORKLOAD N: one run failing call N (0: no fault) into $WORK/WORKLOAD.N.*
run_one() {
  local w=$1 n=$2 out=$WORK/$1.$2
  local fault=()
  [ "$n" -gt 0 ] && fault=(CUWRAP_FAULT_AT="$n")
  env CUWRAP_LIBCUDA="$INTERPOSER" CUWRAP_HANDLE_REPORT="$out.report" "${fault[@]}" \
    timeout 120 "$WORKLOAD" "$w" >"$out.out" 2>"$out.err"
  echo $? >"$out.rc"
}
export -f run_one
export WORK WORKLOAD INTERPOSER

# Live handles per kind in a report: "memory 2", "stream 1", ...
live_by_kind() {
  awk '$1 == "live" { kind = $2; for (i = 3; i < NF && $i !~ /^0x/; ++i) kind = kind "_" $i; n[kind]++ }
       END { for (k in n) print k, n[k] }' "$1" 2>/dev/null | sort
}

start=$(date +%s)
for w in $workloads; do
  run_one "$w" 0
  if [ "$(tail -1 "$WORK/$w.0.out")" != ok ] || [ "$(cat "$WORK/$w.0.rc")" != 0 ]; then
    echo "fault_sweep: $w fails without a fault:" >&2
    cat "$WORK/$w.0.out" "$WORK/$w.0.err" >&2
    exit 1
  fi
done
for w in $workloads; do
  calls=$(awk '$1 == "counted" { print $2 }' "$WORK/$w.0.report")
  seq 1 "$STRIDE" "$calls" | sed "s/^/$w /"
done | xargs -P "$JOBS" -n 2 bash -c 'run_one "$0" "$1"'

printf '\n%-18s %6s %5s %6s %9s %8s %7s %5s %7s\n' workload calls runs named recovered misnamed crashes wrong leaked
failed=0
details=""
for w in $workloads; do
  calls=$(awk '$1 == "counted" { print $2 }' "$WORK/$w.0.report")
  baseline=$(live_by_kind "$WORK/$w.0.report")
  runs=0 named=0 recovered=0 misnamed=0 crashes=0 wrong=0 leaked=0
  for n in $(seq 1 "$STRIDE" "$calls"); do
    base=$WORK/$w.$n
    runs=$((runs + 1))
    rc=$(cat "$base.rc")
    if [ "$rc" = 3 ]; then
      wrong=$((wrong + 1)); details+="$w call $n: $(tail -1 "$base.out")"$'\n'; continue
    elif [ "$rc" != 0 ]; then
      crashes=$((crashes + 1)); details+="$w call $n: exit $rc: $(tail -3 "$base.err" | tr '\n' ' ')"$'\n'; continue
    fi
    fn=$(awk '$1 == "fault" { print $3 }' "$base.report")
    last=$(tail -1 "$base.out")
    if [ -z "$fn" ] || [ "$last" = ok ]; then
      recovered=$((recovered + 1))
    elif [[ "$last" == "DriverError $fn "* ]]; then
      named=$((named + 1))
    else
      misnamed=$((misnamed + 1)); details+="$w call $n: $fn failed, the run ended with: $last"$'\n'
    fi
    # More live handles of a kind than the baseline: a leak.
    excess=$(join -a 1 -e 0 -o 0,1.2,2.2 <(live_by_kind "$base.report") <(echo "$baseline") |
             awk '$2 > $3 { printf "%s +%d ", $1, $2 - $3; s += $2 - $3 } END { exit s == 0 }')
    if [ $? = 0 ]; then
      leaked=$((leaked + 1)); details+="$w call $n ($fn): leaked $excess"$'\n'
    fi
  done
  printf '%-18s %6s %5s %6s %9s %8s %7s %5s %7s\n' "$w" "$calls" "$runs" "$named" "$recovered" \
    "$misnamed" "$crashes" "$wrong" "$leaked"
  if ((misnamed + crashes + wrong + leaked)); then
    failed=1
  fi
done
echo "($(($(date +%s) - start)) s; recovered: the failure was absorbed or reported to the release-failure handler, results right)"
if [ -n "$details" ]; then
  printf '\n%s' "$details"
fi
exit $failed
