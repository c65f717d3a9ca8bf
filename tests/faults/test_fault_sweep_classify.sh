#!/usr/bin/env bash
# CPU test of scripts/fault_sweep.sh's classification of one run (--classify) on canned
# logs: a failure neither thrown, nor reported, nor a documented recovery is "silent".
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

# The sweep's verdict: a silent run fails it (the summary is built from these classes).
grep -q 'if ((silent + misnamed + crashes + wrong + leaked)); then' "$SWEEP" ||
  { echo "FAIL: the sweep does not fail on silent runs"; failures=$((failures + 1)); }
exit $((failures > 0))
