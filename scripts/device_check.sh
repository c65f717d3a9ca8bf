#!/usr/bin/env bash
# Everything cuwrap checks on a GPU machine, in stages, with logs:
#
#   build     configure (no generator: no libclang there) and build everything, benchmarks too
#   ctest     the whole test suite
#   examples  every example program, each checking its own results
#   memcheck  every test executable under compute-sanitizer --tool memcheck (MEMCHECK_JOBS
#             at a time, default 4; MEMCHECK_TESTS, a grep -E regular expression on the
#             executable's name, picks some; MEMCHECK_GTEST_FILTER narrows the tests;
#             a folder's executable, runtime_tests say, runs as MEMCHECK_SHARDS GoogleTest
#             shards, default 8, each its own job)
#   bench     scripts/bench_report.sh (the benchmark table)
#
#   bash scripts/device_check.sh                 # all stages
#   bash scripts/device_check.sh memcheck bench  # some stages (the build must exist)
#
# Logs go to $OUT (when set, e.g. by the device runner) or $CUWRAP_BUILD/device-check:
# build.log, ctest.log (+ ctest-junit.xml), examples.log, memcheck/<test>.log,
# bench/ (JSON, logs, bench.md), and summary.md with one line per stage and executable.
# Exits 1 when a stage failed; every stage runs regardless.
set -uo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_BUILD=${CUWRAP_BUILD:-$CUWRAP_ROOT/build}
CUWRAP_JOBS=${CUWRAP_JOBS:-16}
MEMCHECK_JOBS=${MEMCHECK_JOBS:-4}
MEMCHECK_TESTS=${MEMCHECK_TESTS:-.}
MEMCHECK_SHARDS=${MEMCHECK_SHARDS:-8}
CTEST_JOBS=${CTEST_JOBS:-4}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
LOGS=${OUT:-$CUWRAP_BUILD/device-check}
mkdir -p "$LOGS"
SUMMARY="$LOGS/summary.md"
: >"$SUMMARY"
failed=0

# dlpack/dlpack.h: a GPU machine may lack libdlpack-dev; a copy under .deps/dlpack (the
# header of the CI machine's package) is used then, so the DLPack tests run there too.
dlpack=()
if [ ! -f /usr/include/dlpack/dlpack.h ] && [ -f "$CUWRAP_ROOT/.deps/dlpack/dlpack/dlpack.h" ]; then
  dlpack=(-DCUWRAP_DLPACK_INCLUDE_DIR="$CUWRAP_ROOT/.deps/dlpack")
fi

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build ctest examples memcheck bench)

note() { echo "$*" | tee -a "$SUMMARY"; }
has_stage() { [[ " ${stages[*]} " == *" $1 "* ]]; }

note "# cuwrap device check ($(date -u '+%Y-%m-%d %H:%M UTC'))"
note ""
if command -v nvidia-smi >/dev/null; then
  note "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
note "stages: ${stages[*]}"
note ""

if has_stage build; then
  {
    # Release, as benchmarks want it; warnings do not stop the build on a machine whose
    # compiler may differ from CI's (CI keeps -Werror).
    cmake -S "$CUWRAP_ROOT" -B "$CUWRAP_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCUWRAP_BUILD_GENERATOR=OFF -DCUWRAP_BUILD_BENCHMARKS=ON -DCUWRAP_WERROR=OFF \
      -DCUWRAP_CUDA_ROOT="$CUDA_HOME" "${dlpack[@]}" &&
      cmake --build "$CUWRAP_BUILD" -j "$CUWRAP_JOBS"
  } >"$LOGS/build.log" 2>&1
  rc=$?
  note "- build: $([ $rc -eq 0 ] && echo ok || echo "FAILED (rc $rc, build.log)")"
  if [ $rc -ne 0 ]; then
    tail -40 "$LOGS/build.log"
    exit 1
  fi
fi

if has_stage ctest; then
  (cd "$CUWRAP_BUILD" && ctest --output-on-failure -j "$CTEST_JOBS" --timeout 600 \
    --output-junit "$LOGS/ctest-junit.xml") >"$LOGS/ctest.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && failed=1
  note "- ctest: $(grep -E 'tests passed|tests failed' "$LOGS/ctest.log" | tail -1) (rc $rc, ctest.log)"
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$LOGS/ctest.log" \
    | sed 's/^/    /' | tee -a "$SUMMARY"
fi

if has_stage examples; then
  : >"$LOGS/examples.log"
  note "- examples:"
  for exe in "$CUWRAP_BUILD"/examples/*; do
    [ -x "$exe" ] && [ -f "$exe" ] || continue
    name=$(basename "$exe")
    echo "== $name" >>"$LOGS/examples.log"
    (cd "$CUWRAP_BUILD/examples" && timeout 300 "$exe") >>"$LOGS/examples.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && failed=1
    note "    - $name: $([ $rc -eq 0 ] && echo ok || echo "FAILED (rc $rc)")"
  done
fi

if has_stage memcheck; then
  sanitizer=$(command -v compute-sanitizer || echo "$CUDA_HOME/bin/compute-sanitizer")
  if [ ! -x "$sanitizer" ]; then
    note "- memcheck: FAILED: no compute-sanitizer in PATH or $CUDA_HOME/bin"
    failed=1
  fi
fi
if has_stage memcheck && [ -x "$sanitizer" ]; then
  mkdir -p "$LOGS/memcheck"
  note "- memcheck ($sanitizer --tool memcheck, $MEMCHECK_JOBS at a time):"
  # The test executables (not CTest's discovery files beside them) and the docs'
  # snippets. Death tests (*Loading*) re-run the binary to test which library is
  # loaded, not device memory, and are slow under the sanitizer. Driver calls that return
  # an error are reported and checked against scripts/memcheck_expected.txt below.
  export sanitizer LOGS
  # Tests of timing behaviour (*Overlaps*: kernels overlapping under programmatic
  # dependent launch) cannot hold under the sanitizer, which serialises kernels.
  export MEMCHECK_FILTER=${MEMCHECK_GTEST_FILTER:--*Loading*:*Overlaps*}
  # memcheck_one <executable> [<shard> <shards>]: one executable, or one GoogleTest shard
  # of it (GTEST_SHARD_INDEX of GTEST_TOTAL_SHARDS).
  memcheck_one() {
    local exe=$1 shard=${2:-} shards=${3:-} name log rc errors verdict args=() env=()
    name=$(basename "$exe")
    log="$LOGS/memcheck/$name${shard:+.$shard}.log"
    [[ "$name" == *_test_* || "$name" == *_tests ]] && args=(--gtest_filter="$MEMCHECK_FILTER")
    [ -n "$shard" ] && env=(GTEST_SHARD_INDEX="$shard" GTEST_TOTAL_SHARDS="$shards")
    (cd "$(dirname "$exe")" && env "${env[@]}" timeout 900 "$sanitizer" --tool memcheck --leak-check full \
      --report-api-errors explicit --error-exitcode 99 --print-limit 100000 "$exe" "${args[@]}") >"$log" 2>&1
    rc=$?
    errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -1 | grep -oE '[0-9]+' || true)
    # Driver calls that returned an error: "<executable> <test> <call> <status>", one
    # line per hit, the test being the GoogleTest case running at the time ("-" outside
    # one). Each is either an expected answer (scripts/memcheck_expected.txt says why) or
    # a finding; neither is a memory error.
    local api
    api=$(awk -v exe="$name" '
      /\[ RUN      \] / { test = $NF }
      /\[       (OK|FAILED) \] / { test = "-" }
      match($0, /Program hit [A-Z_0-9]+ \(error [0-9]+\)/) {
        split(substr($0, RSTART, RLENGTH), hit, " ")
        if (match($0, /on CUDA API call to [A-Za-z_0-9]+/)) {
          n = split(substr($0, RSTART, RLENGTH), call, " ")
          print exe, (test == "" ? "-" : test), call[n], hit[3]
        }
      }' "$log")
    [ -n "$api" ] && echo "$api" >>"$LOGS/memcheck/api-errors.raw"
    local api_count
    api_count=$(printf '%s' "$api" | grep -c . || true)
    errors=$(( ${errors:-0} - api_count ))
    verdict=ok
    [ $rc -eq 99 ] && [ "$errors" -eq 0 ] && rc=0
    if grep -q "terminated before first instrumented API call" "$log" &&
      ! grep -q "FAILED" "$log"; then
      # Compile-time and no-GPU suites make no CUDA call: nothing for memcheck to watch.
      verdict="n/a (no CUDA call; tests $(grep -oE 'PASSED  \] [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+') passed)"
      errors=0
    elif [ $rc -eq 99 ]; then
      verdict="MEMCHECK ERRORS"
    elif [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
      verdict="FAILED (rc $rc)"
    fi
    echo "    - $name${shard:+ (shard $shard of $shards)}: $verdict, ${errors:-?} errors (memcheck/$(basename "$log"))"
  }
  export -f memcheck_one
  # A folder's executable (<folder>_tests) is split into shards, so that its tests run
  # MEMCHECK_JOBS at a time as the one-file executables do.
  find "$CUWRAP_BUILD/tests" -maxdepth 2 -type f -executable \
    \( -regex '.*/\(generated\|runtime\)_tests?\(_[a-z_0-9]*\)?' -o -name docs_snippets \) | grep -E "$MEMCHECK_TESTS" | sort |
    while read -r exe; do
      if [[ "$exe" == *_tests ]]; then
        for ((i = 0; i < MEMCHECK_SHARDS; i++)); do echo "$exe $i $MEMCHECK_SHARDS"; done
      else
        echo "$exe"
      fi
    done |
    xargs -P "$MEMCHECK_JOBS" -I{} bash -c 'memcheck_one {}' | sort >"$LOGS/memcheck/summary.txt"
  cat "$LOGS/memcheck/summary.txt" | tee -a "$SUMMARY"
  grep -qE 'MEMCHECK ERRORS|FAILED' "$LOGS/memcheck/summary.txt" && failed=1
  # Driver errors: each distinct (executable, call, status) with its count, marked
  # "expected" with the reason from scripts/memcheck_expected.txt, else "UNEXPECTED".
  touch "$LOGS/memcheck/api-errors.raw"
  sort "$LOGS/memcheck/api-errors.raw" | uniq -c | sort -k2 |
    awk -v expected="$CUWRAP_ROOT/scripts/memcheck_expected.txt" '
      BEGIN {
        while ((getline line < expected) > 0) {
          if (line ~ /^[[:space:]]*(#|$)/) continue
          split(line, f, /[[:space:]]+/); why = line; sub(/^[^#]*#[[:space:]]*/, "", why)
          n++; exe[n] = f[1]; test[n] = f[2]; call[n] = f[3]; status[n] = f[4]; reason[n] = why
        }
      }
      {
        verdict = "UNEXPECTED"
        for (i = 1; i <= n; i++)
          if ($2 ~ ("^" exe[i] "$") && $3 ~ ("^" test[i] "$") && $4 == call[i] && $5 == status[i]) {
            verdict = "expected: " reason[i]; break
          }
        printf "    - %s %s: %s %s x%d: %s\n", $2, $3, $4, $5, $1, verdict
      }' >"$LOGS/memcheck/api-errors.txt"
  note "- driver errors under memcheck: $(grep -c . "$LOGS/memcheck/api-errors.txt") distinct, $(grep -c UNEXPECTED "$LOGS/memcheck/api-errors.txt") unexpected (memcheck/api-errors.txt)"
  cat "$LOGS/memcheck/api-errors.txt" | tee -a "$SUMMARY"
  grep -q UNEXPECTED "$LOGS/memcheck/api-errors.txt" && failed=1
fi

if has_stage bench; then
  BENCH_RESULTS="$LOGS/bench" CUWRAP_BUILD="$CUWRAP_BUILD" \
    bash "$CUWRAP_ROOT/scripts/bench_report.sh" >"$LOGS/bench-table.md" 2>"$LOGS/bench-stderr.log"
  rc=$?
  [ $rc -ne 0 ] && failed=1
  note "- bench: $([ $rc -eq 0 ] && echo ok || echo "FAILED (rc $rc)") (bench/bench.md)"
  note ""
  cat "$LOGS/bench-table.md" >>"$SUMMARY"
fi

echo "device_check: summary in $SUMMARY; $([ $failed -eq 0 ] && echo "all stages passed" || echo "a stage FAILED")"
exit $failed
