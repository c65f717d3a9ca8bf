#!/usr/bin/env bash
# A round's GPU checks on a machine of two (or more) GPUs, in two device calls of under
# 10 minutes each (the second finds the first's build when it follows at once):
#
#   bash .ci/gpu/round.sh suite    # build (Release, benchmarks too); the suite with
#                                         # ctest -j16 once on every GPU
#   bash .ci/gpu/round.sh again    # build (kept from `suite` on a warm machine), the
#                                         # suite a second time on every GPU, then once on
#                                         # GPU 0 alone (CUDA_VISIBLE_DEVICES=0)
#   bash .ci/gpu/round.sh extras   # the examples (the plasma PNG's size and CRC),
#                                         # compute-sanitizer memcheck of the IPC, VMM,
#                                         # graphics and graph executables, benchmarks
#   bash .ci/gpu/round.sh whole    # one call: build every target (Release), the whole
#                                         # suite with ctest -j16, the graph, compile and
#                                         # launch benchmarks (paired with the raw C API)
#   bash .ci/gpu/round.sh older    # the suite of that build under emulated 12.4, 12.8 and
#                                         # 13.0 drivers (scripts/emulated_drivers.sh), the
#                                         # examples, the suite once more
#   bash .ci/gpu/round.sh single   # one call on one GPU: every target but the benchmarks
#                                         # (Release), the whole suite with ctest -j16,
#                                         # gpu_status beside nvidia-smi, and the toolkit's
#                                         # optional headers (nvml.h, nvFatbin.h, cufile.h,
#                                         # nvPTXCompiler.h) copied to $OUT/headers
#   bash .ci/gpu/round.sh focus    # one short call on one GPU: conformance and
#                                         # generated-layer suites, the runtime tests of IPC,
#                                         # graphs, graphics, pools and the program cache,
#                                         # header-cost and wrapper benchmarks
#
# OpenGL/EGL: Debian's libegl1/libopengl0/libglvnd0/libgl1/libglx0 packages unpacked into /
# beforehand (docs/graphics.md) and NVIDIA's EGL vendor file named, so the interop tests run.
# Logs go to $OUT/<phase>/ (packed into $OUT/<phase>.tgz); summaries are printed.
set -uo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
phase=${1:?usage: round.sh suite|again|extras|focus|whole|older|single}
OUT_ROOT=${OUT:-$CUWRAP_ROOT/device-round}
R="$OUT_ROOT/$phase"
mkdir -p "$R"
cd "$CUWRAP_ROOT" || exit 2
export NCCL_NVLS_ENABLE=0
export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json}

# GL/EGL libraries for the interop tests (Debian's packages, docs/graphics.md), then the
# GPUs, listed first in the summary.
machine_setup() {
  for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
  ldconfig 2>/dev/null
  nvidia-smi -L | tee "$R/summary.md"
}

build_all() {  # every target, Release, benchmarks too; compile errors printed
  OUT="$R/check" CUWRAP_JOBS=32 timeout 300 bash scripts/device_check.sh build >"$R/build.out" 2>&1
  cat "$R/check/summary.md" >>"$R/summary.md"
  grep -E 'error:' "$R/check/build.log" | head -20
}

# configure_release ON|OFF: ./build in Release without the generator, benchmarks on or
# off, DLPack where carried (.deps/dlpack); the log in $R/configure.log.
configure_release() {
  local dl=()
  [ -f .deps/dlpack/dlpack/dlpack.h ] && dl=(-DCUWRAP_DLPACK_INCLUDE_DIR="$CUWRAP_ROOT/.deps/dlpack")
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUWRAP_BUILD_GENERATOR=OFF \
    -DCUWRAP_BUILD_BENCHMARKS="$1" -DCUWRAP_WERROR=OFF "${dl[@]}" >"$R/configure.log" 2>&1
}

suite_run() {  # suite_run LOG [env...]: the whole suite once, its summary line printed
  local log=$1
  shift
  (cd build && env "$@" timeout 240 ctest -j16 --timeout 200 --output-on-failure) >"$R/$log" 2>&1
  echo "- $log ($*): $(grep -E 'tests passed|tests failed' "$R/$log" | tail -1)" | tee -a "$R/summary.md"
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$R/$log" |
    tee -a "$R/summary.md"
}

case "$phase" in
  suite)
    machine_setup
    build_all
    suite_run ctest-all-gpus-1.log
    ;;
  again)
    machine_setup
    build_all  # a fresh machine (the one of `suite` released) has no build; a warm one keeps it
    suite_run ctest-all-gpus-2.log
    suite_run ctest-gpu0.log CUDA_VISIBLE_DEVICES=0
    ;;
  extras)
    OUT="$R/check" MEMCHECK_JOBS=8 MEMCHECK_TESTS='ipc|vmm|graphics|graph|context_ref|synchronous' \
      timeout 330 bash scripts/device_check.sh examples memcheck >"$R/check.out" 2>&1
    grep -E 'examples|memcheck|driver errors|: (ok|FAILED|MEMCHECK)' "$R/check/summary.md" | head -60 |
      tee "$R/summary.md"
    grep -aE 'PNG|png|crc|CRC' "$R/check/examples.log" | head -5 | tee -a "$R/summary.md"
    mkdir -p "$R/bench"
    for b in bench_graph bench_access_policy bench_launch bench_header_compile; do
      [ -x "build/bench/$b" ] || continue
      timeout 90 "build/bench/$b" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        >"$R/bench/$b.txt" 2>&1
      grep -E 'median|ratio|kept' "$R/bench/$b.txt" | head -20 | tee -a "$R/summary.md"
    done
    ;;
  focus)
    # One short call on one GPU: the whole conformance suite and the generated layer's
    # tests under ctest -j16, the runtime tests (one executable, tests/runtime/*) run
    # directly, then the header-cost and wrapper-overhead benchmarks.
    machine_setup
    configure_release ON
    targets=$(ninja -C build -t targets all | sed -nE 's/^((tests\/conformance\/([a-z]+\/)?)?conformance_[a-z_]+|tests\/(runtime_tests|generated_tests?(_[a-z_]+)?)|bench\/bench_(wrappers|header_compile)):.*/\1/p' | grep / | sort -u)
    timeout 170 ninja -C build -j16 $targets >"$R/build.log" 2>&1
    echo "- build: rc $? ($(echo $targets | wc -w) targets)" | tee -a "$R/summary.md"
    grep -E 'error:' "$R/build.log" | head -10 | tee -a "$R/summary.md"
    (cd build && timeout 100 ctest -j16 --timeout 90 -L 'conformance|generated' --output-on-failure) \
      >"$R/ctest.log" 2>&1
    echo "- ctest -L 'conformance|generated': $(grep -E 'tests passed|tests failed' "$R/ctest.log" | tail -1)" |
      tee -a "$R/summary.md"
    grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)' "$R/ctest.log" |
      head -30 | tee -a "$R/summary.md"
    # In eight GoogleTest shards, eight at a time.
    [ -x build/tests/runtime_tests ] && seq 0 7 |
      timeout 60 xargs -P 8 -I{} sh -c 'GTEST_SHARD_INDEX={} GTEST_TOTAL_SHARDS=8 build/tests/runtime_tests --gtest_brief=1 >"build/tests/runtime_tests.{}.log" 2>&1; echo "runtime_tests shard {}: rc $? $(grep -cE "^\[  FAILED  \] [A-Za-z]" "build/tests/runtime_tests.{}.log") failed, $(grep -E "^\[  PASSED  \]" "build/tests/runtime_tests.{}.log")"' |
      tee -a "$R/summary.md"
    cp build/tests/runtime_tests.*.log "$R/" 2>/dev/null
    timeout 45 build/bench/bench_wrappers --benchmark_min_time=0.05 >"$R/bench_wrappers.txt" 2>&1
    grep -iE 'ratio|typed|raw' "$R/bench_wrappers.txt" | head -30 | tee -a "$R/summary.md"
    timeout 60 build/bench/bench_header_compile \
      --benchmark_filter='^(CHeaders|Header/(core|cuwrap|driver|driver_raw|memory_resource|buffer|copy|device|stream|graph|nvrtc)\.hpp)' \
      >"$R/bench_header_compile.txt" 2>&1
    sed -n '/Each public/,$p' "$R/bench_header_compile.txt" | grep -v 'not checked' | tee -a "$R/summary.md"
    ;;
  whole)
    machine_setup
    # Every target, Release, benchmarks too; -k 0: a target that fails to build is named and
    # the others are built and run regardless.
    configure_release ON
    timeout 330 ninja -C build -j 32 -k 0 >"$R/build.log" 2>&1
    echo "- build: rc $? ($(grep -c '^FAILED' "$R/build.log") failed targets)" | tee -a "$R/summary.md"
    grep -E '^FAILED|error:' "$R/build.log" | head -20 | tee -a "$R/summary.md"
    suite_run ctest-whole.log
    mkdir -p "$R/bench"
    bench() {  # bench PROGRAM FILTER: median of 5, the program's own ratio lines printed
      [ -x "build/bench/$1" ] || { echo "- $1: not built" | tee -a "$R/summary.md"; return; }
      timeout 70 "build/bench/$1" --benchmark_filter="$2" --benchmark_repetitions=5 \
        --benchmark_report_aggregates_only=true >"$R/bench/$1.txt" 2>&1
      grep -E 'median|[0-9.]+ ?x|ratio|speed-up|lookup alone' "$R/bench/$1.txt" | head -24 |
        tee -a "$R/summary.md"
    }
    bench bench_graph 'SetKernelNode|UpdateFromDefinition|ExecUpdate'
    bench bench_compile 'RawNvrtc/1|WarmMemoryCache|WarmFileCache|CacheHit'
    bench bench_launch '.'
    ;;
  single)
    machine_setup
    configure_release OFF
    grep -E 'cuwrap:' "$R/configure.log" | head -20 | tee -a "$R/summary.md"
    timeout 330 ninja -C build -j 32 -k 0 >"$R/build.log" 2>&1
    echo "- build: rc $? ($(grep -c '^FAILED' "$R/build.log") failed targets)" | tee -a "$R/summary.md"
    grep -E '^FAILED|error:' "$R/build.log" | head -20 | tee -a "$R/summary.md"
    suite_run ctest-single.log
    [ -x build/examples/gpu_status ] && timeout 30 build/examples/gpu_status >"$R/gpu_status.txt" 2>&1
    nvidia-smi >"$R/nvidia-smi.txt" 2>&1
    mkdir -p "$OUT_ROOT/headers"
    for h in nvml.h nvFatbin.h cufile.h nvPTXCompiler.h; do
      f=$(find /usr/local/cuda/ /usr/include -name "$h" 2>/dev/null | head -1)
      echo "- $h: ${f:-absent}" | tee -a "$R/summary.md"
      [ -n "$f" ] && cp "$f" "$OUT_ROOT/headers/"
    done
    ls /usr/local/cuda/lib64/ | grep -E 'nvptxcompiler|cufile|nvfatbin|nvidia-ml' | tee -a "$R/summary.md"
    ;;
  older)
    machine_setup
    build_all  # kept from `whole` on a warm machine
    (CUWRAP_BUILD=build CUWRAP_JOBS=16 timeout 420 bash scripts/emulated_drivers.sh 12.4 12.8 13.0) \
      >"$R/emulated.log" 2>&1
    grep -E '^== |tests passed|tests failed|\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' \
      "$R/emulated.log" | head -60 | tee -a "$R/summary.md"
    suite_run ctest-again.log
    ;;
  *)
    echo "round.sh: unknown phase $phase" >&2
    exit 2
    ;;
esac
(cd "$OUT_ROOT" && tar czf "$phase.tgz" "$phase")
