#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test with ctest.
# Tests that need a GPU skip with their reason on a machine without one.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cuwrap_install_missing
cuwrap_build
cd "$CUWRAP_BUILD"
ctest --output-on-failure -j "$CUWRAP_JOBS" --timeout 600
