#!/usr/bin/env bash
# The suite as older drivers see it: ctest of an existing build (no new build) with
# libcuda replaced by the interposer (CUWRAP_LIBCUDA) answering as each driver version
# (CUWRAP_EMULATE_DRIVER_VERSION; docs/interposer.md), once per version.
#
#   scripts/emulated_drivers.sh [VERSION...]      default: 12.4 12.8 13.0
#
# Under the interposer sits the real driver where one loads (the GPU machine: the whole
# suite, GPU tests included), else the stand-in libcuda of tests/compat answering as a
# CUDA 13.0 driver on a machine without a GPU (CUWRAP_FAKE_DEVICES=0): GPU tests skip and
# the tests whose expectations follow the driver's version (which linker links, LTO
# refused: tests/support/link_backend.hpp) run as under that driver.
#
# Environment:
#   CUWRAP_BUILD              the build directory (default: build)
#   CUWRAP_EMULATED_DRIVER    real | fake: what the interposer forwards to (default: real
#                             when libcuda.so.1 is installed, else fake)
#   CUWRAP_EMULATED_TESTS     ctest -R regex (default: every test on the real driver; with
#                             the stand-in, the tests whose expectations follow the driver's
#                             version without a GPU: the Linker's and the PTX Program's,
#                             kLinkBackendTests below; ".*": every test of the labels)
#   CUWRAP_EMULATED_LABELS    ctest -L regex (default: every label but faults, the
#                             interposer's own tests, on the real driver; with the
#                             stand-in, the labels whose tests load the driver:
#                             runtime|conformance|generated)
#   CUWRAP_JOBS               ctest -j (default: nproc)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CUWRAP_BUILD:-$root/build}
jobs=${CUWRAP_JOBS:-$(nproc)}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(12.4 12.8 13.0)

interposer="$build/interposer/libcuwrap_interposer.so"
fake="$build/tests/libcuwrap_fake_libcuda.so"
[ -f "$interposer" ] || { echo "emulated_drivers.sh: $interposer not built" >&2; exit 2; }

driver=${CUWRAP_EMULATED_DRIVER:-}
if [ -z "$driver" ]; then
  if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then driver=real; else driver=fake; fi
fi
# The tests that branch on which linker links (tests/support/link_backend.hpp) and run
# without a GPU; the rest of the CPU suite does not look at the driver's version.
kLinkBackendTests='^(Linker\.|LinkerOptions\.|Program\.(PtxCompiles|BadPtx)|CudaCoreProgram\.Ptx|CudaCoreLinkerOptions\.|test_linker|TestLinkerDispatch\.|test_program_cpu\.test_ptx)'
labels=${CUWRAP_EMULATED_LABELS:-}
tests=${CUWRAP_EMULATED_TESTS:-}
env_real=()
case "$driver" in
  real) ;;
  fake)
    [ -f "$fake" ] || { echo "emulated_drivers.sh: $fake not built" >&2; exit 2; }
    env_real=(CUWRAP_INTERPOSER_LIBCUDA="$fake" CUWRAP_FAKE_DRIVER_VERSION=13000 CUWRAP_FAKE_DEVICES=0)
    labels=${labels:-'^(runtime|conformance|generated)$'}
    tests=${tests:-$kLinkBackendTests}
    ;;
  *) echo "emulated_drivers.sh: CUWRAP_EMULATED_DRIVER must be real or fake, not $driver" >&2; exit 2 ;;
esac

status=0
for version in "${versions[@]}"; do
  echo "== the suite under an emulated CUDA $version driver (interposer over the $driver driver)"
  # The interposer's own tests (label faults) check what it does when nothing is emulated
  # and load it themselves: they are not tests of cuwrap under an older driver.
  args=(--test-dir "$build" --output-on-failure -j "$jobs" --timeout 600 -LE '^faults$')
  [ -z "$labels" ] || args+=(-L "$labels")
  [ -z "$tests" ] || args+=(-R "$tests")
  env CUWRAP_LIBCUDA="$interposer" CUWRAP_EMULATE_DRIVER_VERSION="$version" \
    CUWRAP_HANDLE_REPORT=/dev/null "${env_real[@]}" ctest "${args[@]}" || status=1
done
exit $status
