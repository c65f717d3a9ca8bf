#!/usr/bin/env bash
# CPU test of scripts/fault_sweep.sh's classification of one run (--classify) on canned
# logs: a failure neither thrown, nor reported, nor a documented recovery is "silent";
# and of its leak check (--leaks): live handles beyond the unfaulted run's are leaks,
# except what a handle abandoned by the faulted release keeps (KEPT_BY_ABANDONED).
set -u
SWEEP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/fault_sweep.sh
DIR=$(mktemp -d "${TMPDIR:-/tmp}/cuwrap-classify-XXXXXX")
trap 'rm -rf "$DIR"' EXIT
failures=0

# run NAME RC FAULT_FUNCTION(or "") OUTPUT_LINES...: write a canned run's files.
run() {
  local name=$1 rc=$2 fn=$3
  shift 3
  echo "$rc" >"$DIR/$name.rc"
  printf '%s\n' "$@" >"$DIR/$name.out"
  : >"$DIR/$name.err"
  { echo "cuwrap-interposer report"; echo "calls 10"; echo "counted 10"
    [ -n "$fn" ] && echo "fault 4 $fn CUDA_ERROR_OUT_OF_MEMORY"; } >"$DIR/$name.report"
}

# expect NAME CLASS: the class (the word before any ":") must be CLASS.
expect() {
  local got
  got=$(bash "$SWEEP" --classify "$DIR/$1")
  if [ "${got%%:*}" != "$2" ]; then
    echo "FAIL: $1: expected $2, got: $got"
    failures=$((failures + 1))
  else
    echo "ok: $1: $got"
  fi
}

run named 0 cuMemAlloc_v2 "DriverError cuMemAlloc_v2 CUDA_ERROR_OUT_OF_MEMORY"
expect named named
run reported 0 cuStreamDestroy_v2 "release-failure cuStreamDestroy_v2" ok
expect reported reported
run silent 0 cuStreamDestroy_v2 ok
expect silent silent
run reported_other 0 cuStreamDestroy_v2 "release-failure cuEventDestroy_v2" ok
expect reported_other silent  # a report of another call does not cover this one
run documented 0 cuGetProcAddress ok
expect documented recovered
run not_fired 0 "" ok
expect not_fired recovered
run misnamed 0 cuMemAlloc_v2 "DriverError cuMemFree_v2 CUDA_ERROR_OUT_OF_MEMORY"
expect misnamed misnamed
run other_exception 0 cuMemAlloc_v2 "St11logic_error closed"
expect other_exception misnamed
run wrong 3 cuMemcpyDtoH_v2 "wrong result: copy"
expect wrong wrong
run crash 134 cuMemAlloc_v2 ""
expect crash crash

# report NAME FAULT_FUNCTION(or "") LIVE_LINES...: a canned exit report with live handles.
report() {
  local name=$1 fn=$2
  shift 2
  { echo "cuwrap-interposer report"; echo "calls 10"; echo "counted 10"
    [ -n "$fn" ] && echo "fault 4 $fn CUDA_ERROR_OUT_OF_MEMORY"
    for line in "$@"; do echo "live $line"; done; } >"$DIR/$name.report"
}

# expect_leaks NAME WHAT: the leak check of NAME against "baseline" prints WHAT ("" and
# exit 1: no leak).
expect_leaks() {
  local got rc
  got=$(bash "$SWEEP" --leaks "$DIR/$1" "$DIR/baseline")
  rc=$?
  if [ "$got" != "$2" ] || { [ -n "$2" ] && [ $rc != 0 ]; } || { [ -z "$2" ] && [ $rc != 1 ]; }; then
    echo "FAIL: leaks of $1: expected '$2', got '$got' (exit $rc)"
    failures=$((failures + 1))
  else
    echo "ok: leaks of $1: '${got}'"
  fi
}

report baseline "" "primary context 0x0 cuDevicePrimaryCtxRetain #1" "graph 0x10 cuGraphCreate #2"
report same cuStreamDestroy_v2 "primary context 0x0 cuDevicePrimaryCtxRetain #1" \
  "graph 0x11 cuGraphCreate #2"
expect_leaks same ""
report stream_left cuStreamDestroy_v2 "primary context 0x0 cuDevicePrimaryCtxRetain #1" \
  "graph 0x10 cuGraphCreate #2" "stream 0x20 cuStreamCreate #3"
expect_leaks stream_left "stream +1 "
# A failed cuGraphExecDestroy abandons the executable graph with its graph and libraries...
report exec_abandoned cuGraphExecDestroy "primary context 0x0 cuDevicePrimaryCtxRetain #1" \
  "graph 0x10 cuGraphCreate #2" "graph 0x12 cuStreamEndCapture #5" "library 0x30 cuLibraryLoadData #3"
expect_leaks exec_abandoned ""
# ... but nothing else: a stream left over is still a leak.
report exec_abandoned_stream cuGraphExecDestroy "primary context 0x0 cuDevicePrimaryCtxRetain #1" \
  "graph 0x12 cuStreamEndCapture #5" "graph 0x10 cuGraphCreate #2" "stream 0x20 cuStreamCreate #3"
expect_leaks exec_abandoned_stream "stream +1 "
# The same graph left over after another failed call is a leak.
report graph_left cuMemFree_v2 "primary context 0x0 cuDevicePrimaryCtxRetain #1" \
  "graph 0x10 cuGraphCreate #2" "graph 0x12 cuStreamEndCapture #5"
expect_leaks graph_left "graph +1 "

# The sweep's verdict: a silent run fails it (the summary is built from these classes).
grep -q 'if ((silent + misnamed + crashes + wrong + leaked)); then' "$SWEEP" ||
  { echo "FAIL: the sweep does not fail on silent runs"; failures=$((failures + 1)); }
exit $((failures > 0))
