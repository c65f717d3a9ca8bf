#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test with ctest, then
# check the handwritten code with clang-tidy and run the suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer. Tests that need a GPU skip with their
# reason on a machine without one. The library, tests, examples and docs snippets are
# also built against the CUDA 12.4 headers (the generator on, with g++-11) and the 12.6
# headers (with clang++-14), and their suites run: the compiler matrix.
# CUWRAP_QUICK=1 stops after those ctest runs. CUWRAP_WERROR=ON (what .ci/run sets) makes
# warnings errors in the project's code; a user's build only warns.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cuwrap_install_missing
cuwrap_install_test_tools
CUWRAP_DEFAULT_BUILD_TYPE=Debug cuwrap_build
(cd "$CUWRAP_BUILD" && ctest --output-on-failure -j "$CUWRAP_JOBS" --timeout 600)
CUWRAP_BUILD="$CUWRAP_BUILD" bash "$CUWRAP_ROOT/scripts/emulated_drivers.sh" 12.4 12.8  # older drivers
# The other toolkits (CUDA 12.4, 12.6 headers by default; CUWRAP_EXTRA_TOOLKITS="<root>..."
# names others, "" none): library, tests, examples and docs snippets, then the CPU suite.
cuwrap_build_other_toolkits
if [ "${CUWRAP_QUICK:-0}" != 1 ]; then
  echo "== clang-tidy"
  CUWRAP_BUILD="$CUWRAP_BUILD" bash "$CUWRAP_ROOT/scripts/tidy.sh"
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
  bash "$CUWRAP_ROOT/scripts/sanitize.sh"
  echo "== ThreadSanitizer (CPU-side concurrency)" && bash "$CUWRAP_ROOT/scripts/tsan.sh"
fi
