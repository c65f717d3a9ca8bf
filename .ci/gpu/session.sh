#!/usr/bin/env bash
# A session's GPU checks in two device calls of under 10 minutes each (the second finds
# the first's builds when it follows at once; otherwise it builds the 13.0 build again and
# leaves the 12.4 build's benchmarks out, saying so):
#
#   bash .ci/gpu/session.sh suite    # builds from the CUDA 13.0 and 12.4 headers;
#                                           # the 13.0 suite three times (ctest -j16), the
#                                           # 12.4 build's suite, emulated 12.4/12.6 drivers
#   bash .ci/gpu/session.sh extras   # the emulated 12.8 driver, the fault
#                                           # sweep (and its compute-sanitizer pass),
#                                           # memcheck of the memory and data suites, the
#                                           # benchmarks of both builds
#
# Needs .deps/ carried (the 12.4 headers and bindings, dlpack.h: see device_compat.sh).
# The 12.4 build runs with this machine's CUDA 13 NVRTC and the headers that go with it
# (the machine has no CUDA 12 libraries); without nvJitLink 12 its nvJitLink-only tests
# skip, saying so. Logs are packed into $OUT/session-<phase>.tgz (one file, as the device
# tool returns few); summaries are printed.
set -uo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
phase=${1:?usage: session.sh suite|extras}
OUT_ROOT=${OUT:-$CUWRAP_ROOT/device-session}
R="$OUT_ROOT/$phase"
mkdir -p "$R/check" "$R/compat"
cd "$CUWRAP_ROOT" || exit 2
export NCCL_NVLS_ENABLE=0
compat_env=(CUWRAP_LIBNVRTC=/usr/local/cuda/lib64/libnvrtc.so.13
            CUWRAP_NVRTC_INCLUDE_DIR=/usr/local/cuda/include)

ctest_again() {  # ctest_again LOG: the 13.0 suite once more, its summary line noted
  (cd build && timeout 170 ctest -j16 --timeout 300 --output-on-failure) >"$R/check/$1" 2>&1
  echo "- ctest again ($1): $(grep -E 'tests passed|tests failed' "$R/check/$1" | tail -1)" \
    >>"$R/check/summary.md"
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' \
    "$R/check/$1" >>"$R/check/summary.md"
}

case "$phase" in
  suite)
    (env OUT="$R/compat" CUWRAP_JOBS=8 CTEST_JOBS=8 "${compat_env[@]}" \
      timeout 420 bash scripts/device_compat.sh build124 >"$R/compat/out.log" 2>&1) &
    OUT="$R/check" CUWRAP_JOBS=8 CTEST_JOBS=16 timeout 300 \
      bash scripts/device_check.sh build ctest >"$R/check/out.log" 2>&1
    ctest_again ctest-run2.log
    ctest_again ctest-run3.log
    wait
    mkdir -p "$R/emulated"
    OUT="$R/emulated" CTEST_JOBS=16 CUWRAP_EMULATED_VERSIONS="12040 12060" timeout 170 \
      bash scripts/device_compat.sh emulated >"$R/emulated/out.log" 2>&1
    ;;
  extras)
    # The builds, when this machine did not keep them (incremental otherwise).
    OUT="$R/check" CUWRAP_JOBS=16 timeout 200 bash scripts/device_check.sh build \
      >"$R/check/out.log" 2>&1
    mkdir -p "$R/emulated" "$R/faults" "$R/bench" "$R/bench124"
    OUT="$R/emulated" CTEST_JOBS=16 CUWRAP_EMULATED_VERSIONS=12080 timeout 100 \
      bash scripts/device_compat.sh emulated >"$R/emulated/out.log" 2>&1
    (timeout 120 bash scripts/fault_sweep.sh build --jobs 8 >"$R/faults/sweep.log" 2>&1
     echo "fault sweep rc $?" >>"$R/faults/sweep.log"
     CUWRAP_SANITIZER_LOGS="$R/faults" timeout 80 bash scripts/fault_sweep.sh build --sanitizer >"$R/faults/sanitizer.log" 2>&1
     echo "fault sweep --sanitizer rc $?" >>"$R/faults/sanitizer.log") &
    OUT="$R/check" MEMCHECK_JOBS=6 \
      MEMCHECK_TESTS='ipc|vmm|managed|copy|tensor_map|array_texture|dlpack|memory|launch|graph' \
      timeout 190 bash scripts/device_check.sh memcheck >"$R/check/memcheck-out.log" 2>&1
    wait
    # Benchmarks last, on an otherwise idle machine.
    BENCH_RESULTS="$R/bench" BENCH_REPETITIONS=${BENCH_REPETITIONS:-5} \
      BENCH_PROGRAMS="bench_launch bench_wrappers bench_graph bench_copy bench_vmm bench_memory_ipc" \
      timeout 170 bash scripts/bench_report.sh >/dev/null 2>"$R/bench/stderr.log"
    # The 12.4-header build (device_compat.sh build124, in the suite phase) when this
    # machine kept it; a fresh machine has none, which the summary then says.
    if [ -x build-12.4/bench/bench_launch ]; then
      env "${compat_env[@]}" CUWRAP_BUILD="$CUWRAP_ROOT/build-12.4" BENCH_RESULTS="$R/bench124" \
        BENCH_REPETITIONS=${BENCH_REPETITIONS:-5} BENCH_PROGRAMS="bench_launch bench_graph" \
        timeout 90 bash scripts/bench_report.sh >/dev/null 2>"$R/bench124/stderr.log"
    else
      echo "no build-12.4 on this machine (run the suite phase first): its benchmarks not run" \
        >"$R/bench124/summary.md"
    fi
    ;;
  *)
    echo "usage: session.sh suite|extras" >&2
    exit 2
    ;;
esac

for f in "$R"/*/summary.md; do
  [ -f "$f" ] && { echo "== $f"; cat "$f"; }
done
for f in "$R"/faults/*.log; do
  [ -f "$f" ] && { echo "== $f"; tail -15 "$f"; }
done
for f in "$R"/bench*/bench.md; do
  [ -f "$f" ] && { echo "== $f"; grep -E "ratio|Ratio|alternating|^\| bench" "$f" | head -60; }
done
tar czf "$OUT_ROOT/session-$phase.tgz" -C "$OUT_ROOT" "$phase" && rm -rf "$R"
