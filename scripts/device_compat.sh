#!/usr/bin/env bash
# Older toolkits and drivers on a GPU machine (issue 10):
#
#   build124   build against the CUDA 12.4 headers (benchmarks too), with bindings generated elsewhere
#              (the device has neither a 12.4 toolkit nor libclang), and run the GPU suite
#              on the real driver: old ABI variants on a new driver
#   emulated   run the suite of the CUDA 13.0 build ($CUWRAP_BUILD, e.g. from
#              scripts/device_check.sh) under emulated drivers 12.4, 12.6 and 12.8, through
#              the fault interposer (CUWRAP_LIBCUDA=libcuwrap_interposer.so,
#              CUWRAP_EMULATE_DRIVER_VERSION; CUWRAP_EMULATED_VERSIONS picks some); skipped,
#              with a note, when it is not built
#
#   bash scripts/device_compat.sh                 # both stages
#   bash scripts/device_compat.sh emulated        # one
#
# Inputs (defaults under the ignored .deps/):
#   CUWRAP_COMPAT_HEADERS   CUDA 12.4 headers (cuda.h, nvrtc.h, nvJitLink.h, cudaTypedefs.h)
#                           [.deps/cuda-headers/12.4]
#   CUWRAP_BINDINGS_DIR     cuwrap-gen --cuda-include <those headers> --output <dir>
#                           [.deps/bindings/12.4]
#   CUWRAP_COMPAT_LIBDIR    libnvrtc.so.12 / libnvJitLink.so.12 (+ nvrtc-builtins) when the
#                           machine has no CUDA 12 toolkit libraries [.deps/lib/12.4]
#   CUWRAP_BUILD            the CUDA 13.0 build [build]
# Logs and summary.md go to $OUT (when set) or $CUWRAP_BUILD/device-compat. Exits 1 when
# a stage failed.
set -uo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_BUILD=${CUWRAP_BUILD:-$CUWRAP_ROOT/build}
CUWRAP_JOBS=${CUWRAP_JOBS:-16}
CTEST_JOBS=${CTEST_JOBS:-4}
HEADERS=${CUWRAP_COMPAT_HEADERS:-$CUWRAP_ROOT/.deps/cuda-headers/12.4}
BINDINGS=${CUWRAP_BINDINGS_DIR:-$CUWRAP_ROOT/.deps/bindings/12.4}
LIBDIR=${CUWRAP_COMPAT_LIBDIR:-$CUWRAP_ROOT/.deps/lib/12.4}
BUILD124=${CUWRAP_BUILD_124:-$CUWRAP_ROOT/build-12.4}
LOGS=${OUT:-$CUWRAP_BUILD/device-compat}
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
[ ${#stages[@]} -eq 0 ] && stages=(build124 emulated)
note() { echo "$*" | tee -a "$SUMMARY"; }
has_stage() { [[ " ${stages[*]} " == *" $1 "* ]]; }

# Run ctest in build $1 with the log $2 (further arguments: environment assignments)
# and note its summary line and failures.
run_suite() {
  local build=$1 log=$2 rc
  shift 2
  (cd "$build" && env "$@" ctest --output-on-failure -j "$CTEST_JOBS" --timeout 600 \
    ${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"}) \
    >"$LOGS/$log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && failed=1
  note "    $(grep -E 'tests passed|tests failed' "$LOGS/$log" | tail -1) (rc $rc, $log)"
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' \
    "$LOGS/$log" | sed 's/^/      /' | tee -a "$SUMMARY"
  # What skipped because the (emulated) driver or toolkit lacks a feature.
  local unsupported
  unsupported=$(grep -c "unsupported as expected" "$LOGS/$log" || true)
  note "    tests expecting UnsupportedError: $unsupported"
}

note "# cuwrap device compat ($(date -u '+%Y-%m-%d %H:%M UTC'))"
if command -v nvidia-smi >/dev/null; then
  note "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
note ""

if has_stage build124; then
  note "- build against CUDA 12.4 headers ($HEADERS), bindings $BINDINGS:"
  if [ ! -f "$HEADERS/cuda.h" ] || [ ! -f "$BINDINGS/include/cuwrap/detail/symbols.hpp" ]; then
    note "    FAILED: missing headers or bindings (see the inputs at the top of this script)"
    failed=1
  else
    cmake -S "$CUWRAP_ROOT" -B "$BUILD124" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCUWRAP_CUDA_ROOT="$HEADERS" -DCUWRAP_BINDINGS_DIR="$BINDINGS" \
      -DCUWRAP_BUILD_GENERATOR=OFF -DCUWRAP_BUILD_BENCHMARKS=ON -DCUWRAP_WERROR=OFF \
      "${dlpack[@]}" >"$LOGS/build-12.4.log" 2>&1 &&
      cmake --build "$BUILD124" -j "$CUWRAP_JOBS" >>"$LOGS/build-12.4.log" 2>&1
    rc=$?
    note "    build: $([ $rc -eq 0 ] && echo ok || echo "FAILED (rc $rc, build-12.4.log)")"
    if [ $rc -eq 0 ]; then
      # The bindings load libnvrtc.so.12 and libnvJitLink.so.12.
      env_vars=()
      if [ -d "$LIBDIR" ]; then
        env_vars=(LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
      else
        note "    note: no $LIBDIR; NVRTC/nvJitLink 12 must be found by the dynamic loader"
      fi
      run_suite "$BUILD124" ctest-12.4.log "${env_vars[@]}"
    else
      failed=1
      tail -30 "$LOGS/build-12.4.log"
    fi
  fi
fi

if has_stage emulated; then
  interposer=$(find "$CUWRAP_BUILD" -name 'libcuwrap_interposer.so' -type f 2>/dev/null | head -1)
  if [ -z "$interposer" ]; then
    note "- emulated drivers: skipped: no libcuwrap_interposer.so in $CUWRAP_BUILD (target cuwrap_interposer not built)"
  else
    for version in ${CUWRAP_EMULATED_VERSIONS:-12040 12060 12080}; do
      note "- CUDA 13.0 build under an emulated $((version / 1000)).$((version % 1000 / 10)) driver ($interposer):"
      # The interposer's own tests (and the sweep) load it themselves, with their own
      # settings: under an outer interposer they would test that one instead.
      CTEST_EXCLUDE='Interposer|Concurrency|fault_sweep' \
      run_suite "$CUWRAP_BUILD" "ctest-emulated-$version.log" \
        CUWRAP_LIBCUDA="$interposer" CUWRAP_EMULATE_DRIVER_VERSION="$version"
    done
  fi
fi

echo "device_compat: summary in $SUMMARY; $([ $failed -eq 0 ] && echo "all stages passed" || echo "a stage FAILED")"
exit $failed
