#!/usr/bin/env bash
# The fault sweep (GPU): every driver call of cuwrap's workloads (tests/faults/
# fault_workload.cpp) failed in turn through the interposer (docs/interposer.md).
#
#   bash scripts/fault_sweep.sh [build-dir] [--stride S] [--workload NAME] [--jobs J]
#   bash scripts/fault_sweep.sh [build-dir] --sanitizer
#
# For each workload: one run without a fault counts its driver calls and its live
# handles at exit (the baseline); then one run per N (1, 1+S, ...) fails the Nth call
# with CUDA_ERROR_OUT_OF_MEMORY. Each run is classified (classify_run below):
#   named      it ends with the DriverError naming the failed call;
#   reported   it finishes with right results ("ok") and the failed call went to the
#              release-failure handler (the workload prints "release-failure <function>");
#   recovered  it finishes with right results and the failed call is one whose failure
#              cuwrap absorbs by a documented recovery (RECOVERIES below, each with the
#              doc that says so), or the fault never fired (the run made fewer calls);
#   silent     it finishes "ok", the interposer failed a call, and that failure was
#              neither thrown nor reported nor a documented recovery: swallowed;
#   misnamed   it ends with an exception naming another call (or none);
#   wrong      exit 3, a wrong result;  crash: a signal, abort, timeout, other status.
# A run also fails when it leaves more live handles of some kind than the baseline
# (abandoned handles, whose release was the failed call, are not leaks): "leaked".
# The sweep fails (exit 1) when any run is silent, misnamed, wrong, a crash or leaked.
# Exit 77: no GPU (the baseline cannot initialise the driver).
#
# --sanitizer runs each workload once under compute-sanitizer --leak-check full.
# --classify PREFIX prints the class of one recorded run (PREFIX.rc, PREFIX.out,
# PREFIX.report) and exits; --leaks PREFIX BASELINE prints what the run leaked against
# the unfaulted run BASELINE (both prefixes of .report files), exiting 1 when nothing;
# tests/faults/test_fault_sweep_classify.sh uses both on canned logs, without a GPU.
set -uo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$CUWRAP_ROOT/build
STRIDE=1
ONLY=""
JOBS=$(nproc)
SANITIZER=0
CLASSIFY=""
LEAKS=""
LEAKS_BASELINE=""
while (($#)); do
  case "$1" in
    --stride) STRIDE=$2; shift 2 ;;
    --workload) ONLY=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --sanitizer) SANITIZER=1; shift ;;
    --classify) CLASSIFY=$2; shift 2 ;;
    --leaks) LEAKS=$2; LEAKS_BASELINE=$3; shift 3 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) BUILD=$(cd "$1" && pwd); shift ;;
  esac
done

# Driver calls whose failure cuwrap absorbs by a documented recovery, so that a run
# finishing "ok" after one of them failed is not silent. Add a call only with the doc
# that promises the recovery.
RECOVERIES=(
  cuGetProcAddress   # entry points it does not publish fall back to dlsym (docs/architecture.md)
  cuGetErrorString   # a status's description falls back to cuda.h's (docs/errors.md)
)

# What an abandoned handle keeps, by the release that failed: the live handles of these
# kinds that a run has beyond the baseline after that failure are the abandoned handle's,
# not leaks. Add an entry only with the doc that says so.
#   cuGraphExecDestroy: an executable graph's launches keep its graph and the kernels'
#   libraries until the driver reports them finished, which it never does for an
#   executable graph it did not destroy (docs/high-level.md, "Graphs").
declare -A KEPT_BY_ABANDONED=(
  [cuGraphExecDestroy]="graph library"
)

# classify_run PREFIX: the class of the run recorded in PREFIX.{rc,out,report} (see the
# top of this script), then, for a failing class, ": " and why.
classify_run() {
  local base=$1 rc fn last
  rc=$(cat "$base.rc")
  if [ "$rc" = 3 ]; then
    echo "wrong: $(tail -1 "$base.out")"; return
  elif [ "$rc" != 0 ]; then
    echo "crash: exit $rc: $(tail -3 "$base.err" 2>/dev/null | tr '\n' ' ')"; return
  fi
  fn=$(awk '$1 == "fault" { print $3 }' "$base.report")
  last=$(tail -1 "$base.out")
  if [ -z "$fn" ]; then
    echo recovered  # the fault never fired
  elif [ "$last" = ok ]; then
    if grep -qxF "release-failure $fn" "$base.out"; then
      echo reported
    elif printf '%s\n' "${RECOVERIES[@]}" | grep -qxF "$fn"; then
      echo recovered
    else
      echo "silent: $fn failed, the run finished ok and nothing reported it"
    fi
  elif [[ "$last" == "DriverError $fn "* ]]; then
    echo named
  else
    echo "misnamed: $fn failed, the run ended with: $last"
  fi
}

# live_by_kind REPORT: "kind count" lines of the handles REPORT lists as live.
live_by_kind() {
  awk '$1 == "live" { kind = $2; for (i = 3; i < NF && $i !~ /^0x/; ++i) kind = kind "_" $i; n[kind]++ }
       END { for (k in n) print k, n[k] }' "$1" 2>/dev/null | sort
}

# leaked_by PREFIX BASELINE: the live handles of PREFIX.report beyond BASELINE.report's,
# by kind ("graph +1 library +1"), less what the handle whose release was the faulted
# call keeps (KEPT_BY_ABANDONED); exit 0 when something leaked, 1 when nothing did.
leaked_by() {
  local fn
  fn=$(awk '$1 == "fault" { print $3 }' "$1.report")
  join -a 1 -e 0 -o 0,1.2,2.2 <(live_by_kind "$1.report") <(live_by_kind "$2.report") |
    awk -v kept=" ${KEPT_BY_ABANDONED[${fn:-none}]:-} " \
      '$2 > $3 && index(kept, " " $1 " ") == 0 { printf "%s +%d ", $1, $2 - $3; s += $2 - $3 }
       END { exit s == 0 }'
}

if [ -n "$CLASSIFY" ]; then
  classify_run "$CLASSIFY"
  exit 0
fi
if [ -n "$LEAKS" ]; then
  leaked_by "$LEAKS" "$LEAKS_BASELINE"
  exit $?
fi

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

printf '\n%-18s %6s %5s %6s %8s %9s %6s %8s %7s %5s %7s\n' workload calls runs named reported \
  recovered silent misnamed crashes wrong leaked
failed=0
details=""
for w in $workloads; do
  calls=$(awk '$1 == "counted" { print $2 }' "$WORK/$w.0.report")
  runs=0 named=0 reported=0 recovered=0 silent=0 misnamed=0 crashes=0 wrong=0 leaked=0
  for n in $(seq 1 "$STRIDE" "$calls"); do
    base=$WORK/$w.$n
    runs=$((runs + 1))
    verdict=$(classify_run "$base")
    case "$verdict" in
      named) named=$((named + 1)) ;;
      reported) reported=$((reported + 1)) ;;
      recovered) recovered=$((recovered + 1)) ;;
      silent:*) silent=$((silent + 1)); details+="$w call $n: $verdict"$'\n' ;;
      misnamed:*) misnamed=$((misnamed + 1)); details+="$w call $n: $verdict"$'\n' ;;
      wrong:*) wrong=$((wrong + 1)); details+="$w call $n: $verdict"$'\n'; continue ;;
      *) crashes=$((crashes + 1)); details+="$w call $n: $verdict"$'\n'; continue ;;
    esac
    fn=$(awk '$1 == "fault" { print $3 }' "$base.report")
    # More live handles of a kind than the baseline: a leak.
    if excess=$(leaked_by "$base" "$WORK/$w.0"); then
      leaked=$((leaked + 1)); details+="$w call $n ($fn): leaked $excess"$'\n'
    fi
  done
  printf '%-18s %6s %5s %6s %8s %9s %6s %8s %7s %5s %7s\n' "$w" "$calls" "$runs" "$named" \
    "$reported" "$recovered" "$silent" "$misnamed" "$crashes" "$wrong" "$leaked"
  if ((silent + misnamed + crashes + wrong + leaked)); then
    failed=1
  fi
done
echo "($(($(date +%s) - start)) s; reported: to the release-failure handler; recovered: a documented recovery, or no fault fired; silent: swallowed)"
if [ -n "$details" ]; then
  printf '\n%s' "$details"
fi
exit $failed
