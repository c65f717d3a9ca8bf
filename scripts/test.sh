#!/usr/bin/env bash
# The whole test suite: install what is missing, check the formatting (clang-format),
# build once with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan) and run every
# test there with ctest, then again under emulated older drivers, check the handwritten
# code and the tests with clang-tidy, and run the CPU-side concurrency tests under
# ThreadSanitizer. Tests that need a GPU skip with their reason on a machine without one.
# The library, tests, examples and docs snippets are also built against the CUDA 12.4
# headers (the generator on, with g++-11) and the 12.6 headers (with clang++-14), and
# their suites run: the compiler matrix.
#
#   bash scripts/test.sh            # everything (what CI runs, .ci/run)
#   bash scripts/test.sh --quick    # the inner loop: build ./build, run its suite, stop
#
# --quick (or CUWRAP_QUICK=1) builds only ./build and runs its ctest suite, leaving out the
# tests that build cuwrap again as a user would (label consumer) and the generator's
# whole-toolkit regeneration (Toolkit.*): the full run has them. Extra arguments after
# --quick go to that ctest (-R Stream, -L runtime, ...). CUWRAP_WERROR=ON (what .ci/run
# sets) makes warnings errors in the project's code; a user's build only warns.
# Each phase's time is printed ("== <phase>: N s") and summed at the end.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
quick=${CUWRAP_QUICK:-0}
if [ "${1:-}" = --quick ]; then
  quick=1
  shift
fi
phases=()
phase_start=$SECONDS
# End the running phase: record its name and time.
phase_done() {
  phases+=("$1: $((SECONDS - phase_start)) s")
  echo "== $1: $((SECONDS - phase_start)) s"
  phase_start=$SECONDS
}
report_phases() {
  echo "== phases"
  printf '  %s\n' "${phases[@]}"
  echo "  total: $SECONDS s"
}
trap report_phases EXIT

cuwrap_install_missing
cuwrap_install_test_tools
phase_done "install"
if [ "$quick" = 1 ]; then
  CUWRAP_DEFAULT_BUILD_TYPE=Debug cuwrap_build
  phase_done "build"
  (cd "$CUWRAP_BUILD" && ctest --output-on-failure -j "$CUWRAP_JOBS" --timeout 600 \
    -LE '^consumer$' -E '^Toolkit[./]' "$@")
  phase_done "ctest"
  exit 0
fi
echo "== clang-format"
bash "$CUWRAP_ROOT/scripts/format.sh" --check
phase_done "clang-format"
# One build serves the whole run: build-asan (Debug at -O0, AddressSanitizer +
# UndefinedBehaviorSanitizer, examples and benchmarks; scripts/sanitize.sh). Every test
# runs there, under the sanitizers, except Toolkit.* (the whole toolkit's regeneration,
# slow under ASan), which the 12.4 build (generator on) and the quick loop's ./build run.
# clang-tidy reads its compile commands and the emulated drivers run its tests.
export CUWRAP_ASAN_BUILD=${CUWRAP_ASAN_BUILD:-$CUWRAP_ROOT/build-asan}
bash "$CUWRAP_ROOT/scripts/sanitize.sh" --build-only
phase_done "build (asan+ubsan)"
echo "== ctest under AddressSanitizer + UndefinedBehaviorSanitizer"
CUWRAP_SANITIZE_EXCLUDE='^Toolkit[./]' bash "$CUWRAP_ROOT/scripts/sanitize.sh" --test-only
phase_done "ctest"
source "$CUWRAP_ROOT/scripts/sanitizer_env.sh"
cuwrap_sanitizer_env "$CUWRAP_ASAN_BUILD"
# The CPU suite as older drivers see it (the interposer answering as 12.4 and 12.8).
CUWRAP_BUILD="$CUWRAP_ASAN_BUILD" bash "$CUWRAP_ROOT/scripts/emulated_drivers.sh" 12.4 12.8
phase_done "emulated drivers"
echo "== clang-tidy"
CUWRAP_BUILD="$CUWRAP_ASAN_BUILD" bash "$CUWRAP_ROOT/scripts/tidy.sh"
phase_done "clang-tidy"
# The other toolkits (CUDA 12.4, 12.6 headers by default; CUWRAP_EXTRA_TOOLKITS="<root>..."
# names others, "" none): library, tests, examples and docs snippets, then the CPU suite.
CUWRAP_GEN_BUILD="$CUWRAP_ASAN_BUILD" cuwrap_build_other_toolkits
phase_done "other toolkits"
echo "== ThreadSanitizer (CPU-side concurrency)"
bash "$CUWRAP_ROOT/scripts/tsan.sh"
phase_done "tsan"
