#!/usr/bin/env bash
# On the GPU machine: build (no generator: generated/ is checked in), run every test,
# then every benchmark. Logs go to $OUT when set (the device tool), else ./device-logs.
set -u
OUT=${OUT:-$PWD/device-logs}; mkdir -p "$OUT"
B=${CUWRAP_DEVICE_BUILD:-/tmp/cuwrap-build}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUWRAP_BUILD_GENERATOR=OFF \
  -DCUWRAP_BUILD_BENCHMARKS=ON -DCUWRAP_WERROR=OFF > "$OUT/build.log" 2>&1 &&
  cmake --build "$B" -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== build ok"
(cd "$B" && ctest -j8 --timeout 300 --output-on-failure > "$OUT/ctest.log" 2>&1)
grep -E "tests passed|FAILED|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Not Run" "$OUT/ctest.log" | head -40
if [ "${1:-}" = "bench" ]; then
  for b in "$B"/bench/bench_*; do
    echo "== $(basename "$b")" >> "$OUT/bench.log"
    "$b" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_min_time=0.3 >> "$OUT/bench.log" 2>&1
  done
  grep -E "==|median|ratio|Ratio" "$OUT/bench.log" | head -80
fi
