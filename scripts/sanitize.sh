#!/usr/bin/env bash
# Build cuwrap and its tests with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DCUWRAP_SANITIZE=ON) in build-asan/, then run the test suite under them.
#
#   bash scripts/sanitize.sh [extra ctest arguments]
#
# The toolkit tests (Toolkit.*: they regenerate from the whole CUDA headers and compile
# the result, slow under ASan) are left out unless CUWRAP_SANITIZE_EXCLUDE says
# otherwise (a ctest -E regular expression; empty runs everything), and so are the
# consumer tests (label consumer: they build cuwrap again from its sources or package
# it, which the regular build's suite does) unless CUWRAP_SANITIZE_EXCLUDE_LABEL says
# otherwise (a ctest -LE regular expression; empty: none). The generator's
# other tests (rules, render, parse of the fixture headers, the command line) run. Tests that need a GPU skip without one.
# Any sanitizer report fails its test (-fno-sanitize-recover=all, halt_on_error).
set -euo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_BUILD=${CUWRAP_ASAN_BUILD:-$CUWRAP_ROOT/build-asan}
CUWRAP_JOBS=${CUWRAP_JOBS:-$(nproc)}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
EXCLUDE=${CUWRAP_SANITIZE_EXCLUDE-^Toolkit[./]}
EXCLUDE_LABEL=${CUWRAP_SANITIZE_EXCLUDE_LABEL-^consumer\$}

# Warnings are not errors here: GCC's flow analysis under -fsanitize reports false
# -Wmaybe-uninitialized in libstdc++ (<regex>, std::function); the regular build keeps
# -Werror.
# -O1 with line tables: fast enough to run, quick to compile, stack traces with lines.
# The examples run only on a GPU (their tests skip without one): not built here.
# lld links where installed (as scripts/common.sh's builds do).
linker=()
command -v ld.lld >/dev/null && linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld
  -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
cmake -S "$CUWRAP_ROOT" -B "$CUWRAP_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug "${linker[@]}" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCUWRAP_SANITIZE=ON -DCUWRAP_WERROR=OFF -DCUWRAP_BUILD_BENCHMARKS=OFF \
  -DCUWRAP_BUILD_EXAMPLES=OFF \
  -DCUWRAP_CUDA_ROOT="$CUDA_HOME" \
  -DCUWRAP_CUDA_12_6_INCLUDE="${CUWRAP_CUDA_12_6_INCLUDE:-}"
cmake --build "$CUWRAP_BUILD" -j "$CUWRAP_JOBS"

# The CUDA libraries are not instrumented and keep allocations for the process's life:
# their leaks are not cuwrap's; nor is what OpenSSL's libcrypto keeps for the process's
# life once loaded (the program cache's SHA-256; ProgramCacheDigest.*); nor are those of
# Mesa's EGL and GL drivers, which the
# headless GL tests keep loaded (tests/support/headless_gl.hpp) so that they can be named.
# protect_shadow_gap=0 lets the CUDA driver map the
# address ranges it needs. check_printf=0: libnvJitLink formats its error log with
# vsnprintf from frames ASan cannot see, which the printf interceptor misreads as a
# stack-buffer-overflow (Linker.UndefinedSymbolThrowsWithTheLog).
suppressions="$CUWRAP_BUILD/lsan.supp"
printf '%s\n' "leak:libcuda.so" "leak:libnvrtc" "leak:libnvJitLink" "leak:libnvidia-" \
  "leak:libclang" "leak:libLLVM" "leak:libcrypto" "leak:libEGL_mesa" "leak:_dri.so" "leak:libgallium" \
  "leak:libglapi" "leak:libGLX_mesa" >"$suppressions"
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0:check_printf=0:detect_leaks=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$suppressions:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

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
