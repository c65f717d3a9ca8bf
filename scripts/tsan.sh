#!/usr/bin/env bash
# ThreadSanitizer on cuwrap's CPU-side concurrency tests (no GPU needed): build only the
# library, the interposer, the fake driver and tests/faults/test_concurrency.cpp with
# -fsanitize=thread in build-tsan/, then run them. Covers the loader's first use from
# many threads (opening the driver, resolving entry points), driver initialisation,
# primary-context retains, streams made and released concurrently, the interposer's
# own state, and the release-failure handler replaced while other threads report.
#
#   bash scripts/tsan.sh
#
# Any data race fails the run (halt_on_error).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
CUWRAP_BUILD=${CUWRAP_TSAN_BUILD:-$CUWRAP_ROOT/build-tsan}

# The sanitized builds' compiler (clang++-14 where installed) and linker (lld where
# installed), as scripts/common.sh picks them; the library as unity sources
# (CUWRAP_UNITY_LIBRARY, as the full run's other builds).
mapfile -t compiler < <(cuwrap_sanitize_compiler_options)
mapfile -t linker < <(cuwrap_linker_options -fsanitize=thread)
# -O1 with line tables (what ThreadSanitizer's reports need): three quarters of the compile
# time of RelWithDebInfo's -O2 -g (52 s of CPU against 70 s), and fewer memory accesses
# optimised away before TSan's instrumentation sees them.
cmake -S "$CUWRAP_ROOT" -B "$CUWRAP_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  "${compiler[@]}" "${linker[@]}" \
  -DCUWRAP_BUILD_GENERATOR=OFF -DCUWRAP_BUILD_EXAMPLES=OFF -DCUWRAP_BUILD_BENCHMARKS=OFF \
  -DCUWRAP_WERROR=OFF -DCUWRAP_CUDA_ROOT="$CUDA_HOME" \
  -DCUWRAP_UNITY_LIBRARY="${CUWRAP_UNITY_LIBRARY:-ON}" \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" >/dev/null
cmake --build "$CUWRAP_BUILD" -j "$CUWRAP_JOBS" --target faults_test_concurrency

export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
# Kernels with many random address bits break TSan's memory layout; run without ASLR
# where setarch allows it.
run=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
  run=(setarch "$(uname -m)" -R)
fi
"${run[@]}" "$CUWRAP_BUILD/tests/faults/faults_test_concurrency"
