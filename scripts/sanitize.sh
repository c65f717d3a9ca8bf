#!/usr/bin/env bash
# Build cuwrap, its tests, examples and benchmarks with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DCUWRAP_SANITIZE=ON) in build-asan/, then run the test
# suite under them. This is the full test run's main build (scripts/test.sh): one build
# for the suite, the sanitizers, clang-tidy's compile commands and the emulated drivers.
#
#   bash scripts/sanitize.sh [--build-only | --test-only] [extra ctest arguments]
#
# Environment:
#   CUWRAP_WERROR                  ON: warnings are errors (CI); default OFF
#   CUWRAP_SANITIZE_EXCLUDE        ctest -E regular expression of tests left out (default:
#                                  none)
#   CUWRAP_SANITIZE_EXCLUDE_LABEL  ctest -LE regular expression of labels left out
#                                  (default: none)
# Tests that need a GPU skip without one. Any sanitizer report fails its test
# (-fno-sanitize-recover=all, halt_on_error); scripts/sanitizer_env.sh says which
# reports of libraries that are not cuwrap's are suppressed, and why.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
CUWRAP_BUILD=${CUWRAP_ASAN_BUILD:-$CUWRAP_ROOT/build-asan}
EXCLUDE=${CUWRAP_SANITIZE_EXCLUDE-}
EXCLUDE_LABEL=${CUWRAP_SANITIZE_EXCLUDE_LABEL-}
step=all
case "${1:-}" in
  --build-only) step=build; shift ;;
  --test-only) step=test; shift ;;
esac

if [ "$step" != test ]; then
  # -O0 with line tables, stack traces with lines: the sanitizers' instrumentation makes
  # -O1 cost twice the compile time of -O0 (a test source: 13.8 s against 6.7 s of CPU),
  # more than the suite gains in run time.
  # GCC's flow analysis under -fsanitize reports false -Wmaybe-uninitialized in libstdc++
  # (<regex>, std::function): CMakeLists.txt turns that one warning off in sanitized
  # builds, so the others stay errors where CUWRAP_WERROR is on.
  # The tests as unity sources (CUWRAP_UNITY_TESTS, tests/CMakeLists.txt), and the library's
  # and generator's sources (CUWRAP_UNITY_LIBRARY, CMakeLists.txt): fewer, larger compiles,
  # and the groups scripts/tidy.sh checks; =OFF: one compile per file.
  # The linker of every build the scripts configure (lld where installed).
  # The compiler: clang++-14 where installed, with the libFuzzer targets, which then run
  # under the sanitizers here (cuwrap_sanitize_compiler_options, scripts/common.sh).
  mapfile -t linker < <(cuwrap_linker_options)
  mapfile -t compiler < <(cuwrap_sanitize_compiler_options fuzzers)
  cuwrap_find_cuda_12_6
  cmake -S "$CUWRAP_ROOT" -B "$CUWRAP_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug "${compiler[@]}" "${linker[@]}" \
    -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DCUWRAP_SANITIZE=ON -DCUWRAP_WERROR="${CUWRAP_WERROR:-OFF}" \
    -DCUWRAP_BUILD_BENCHMARKS=ON -DCUWRAP_BUILD_EXAMPLES=ON \
    -DCUWRAP_UNITY_TESTS="${CUWRAP_UNITY_TESTS:-ON}" -DCUWRAP_UNITY_LIBRARY="${CUWRAP_UNITY_LIBRARY:-ON}" \
    -DCUWRAP_CUDA_ROOT="$CUDA_HOME" \
    -DCUWRAP_CUDA_12_6_INCLUDE="${CUWRAP_CUDA_12_6_INCLUDE:-}"
  cmake --build "$CUWRAP_BUILD" -j "$CUWRAP_JOBS"
fi
[ "$step" != build ] || exit 0

source "$CUWRAP_ROOT/scripts/sanitizer_env.sh"
cuwrap_sanitizer_env "$CUWRAP_BUILD"
cd "$CUWRAP_BUILD"
ctest_args=(--output-on-failure -j "$CUWRAP_JOBS" --timeout 600)
if [ -n "$EXCLUDE" ]; then
  ctest_args+=(-E "$EXCLUDE")
fi
if [ -n "$EXCLUDE_LABEL" ]; then
  ctest_args+=(-LE "$EXCLUDE_LABEL")
fi
ctest "${ctest_args[@]}" "$@"
# The IPC fuzz test's iterations, seeds and results (tests/fuzz/README.md): ctest keeps a
# passing test's output in its log only.
grep -h "^IpcFuzz\." Testing/Temporary/LastTest.log 2>/dev/null || true
