#!/usr/bin/env bash
# Run every benchmark program of the build and print ONE Markdown table: each cuwrap
# figure next to its raw C API baseline from the same run, and the ratio.
#
#   bash scripts/bench_report.sh            # on the GPU machine, after building with
#                                           # -DCUWRAP_BUILD_BENCHMARKS=ON
#
# Programs: $CUWRAP_BUILD/bench/bench_* (bench_wrappers, bench_header_compile,
# bench_memory, bench_launch, bench_compile, bench_graph, bench_generator when built).
# Each runs with --benchmark_format=json and writes its JSON to <results>/<program>.json
# (--benchmark_out: the console output also holds each program's own ratio lines, and
# goes to <results>/<program>.log). Results go to $BENCH_RESULTS, else
# $OUT/bench when $OUT is set, else $CUWRAP_BUILD/bench-results; the table is also
# written there as bench.md.
#
# Environment: BENCH_REPETITIONS (default 3; the median is reported), BENCH_FILTER
# (a --benchmark_filter regex), BENCH_PROGRAMS (space-separated program names).
#
# Pairing: within one program, a benchmark whose name says cuwrap (Cuwrap..., ..._cuwrap,
# ..._Buffer, ..._*MemoryResource*) is compared with the baselines (Raw..., ..._raw,
# CHeaders...) of the same arguments and topic, the first word of the name once the
# role words are taken out (AllocFree_CuwrapRawEntry ↔ AllocFree_Raw, HtoD_Buffer ↔
# HtoD_Raw), else with every baseline of the program of the same arguments
# (CuwrapLaunch ↔ both RawCuLaunchKernel variants, CuwrapProgram/0 ↔ RawNvrtc/0).
set -euo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_BUILD=${CUWRAP_BUILD:-$CUWRAP_ROOT/build}
BENCH_DIR="$CUWRAP_BUILD/bench"
if [ -n "${BENCH_RESULTS:-}" ]; then
  RESULTS=$BENCH_RESULTS
elif [ -n "${OUT:-}" ]; then
  RESULTS="$OUT/bench"
else
  RESULTS="$CUWRAP_BUILD/bench-results"
fi
REPETITIONS=${BENCH_REPETITIONS:-3}
mkdir -p "$RESULTS"

if [ ! -d "$BENCH_DIR" ]; then
  echo "bench_report: no $BENCH_DIR; configure with -DCUWRAP_BUILD_BENCHMARKS=ON and build" >&2
  exit 2
fi
if [ -n "${BENCH_PROGRAMS:-}" ]; then
  read -r -a programs <<<"$BENCH_PROGRAMS"
else
  programs=()
  for name in bench_wrappers bench_header_compile bench_memory bench_launch bench_compile \
              bench_graph bench_generator; do
    [ -x "$BENCH_DIR/$name" ] && programs+=("$name")
  done
  # Programs added later, in name order, after the known ones.
  for exe in "$BENCH_DIR"/bench_*; do
    name=$(basename "$exe")
    [ -x "$exe" ] && [ -f "$exe" ] || continue
    [[ " ${programs[*]} " == *" $name "* ]] || programs+=("$name")
  done
fi

status=0
for name in "${programs[@]}"; do
  args=(--benchmark_format=json --benchmark_out="$RESULTS/$name.json" --benchmark_out_format=json)
  if [ "$REPETITIONS" -gt 1 ]; then
    # Random interleaving runs the repetitions of all benchmarks of a program in a shuffled
    # order, so a baseline and its cuwrap variant see the same drift of clocks and pools.
    args+=(--benchmark_repetitions="$REPETITIONS" --benchmark_report_aggregates_only=true
      --benchmark_enable_random_interleaving=true)
  fi
  [ -n "${BENCH_FILTER:-}" ] && args+=(--benchmark_filter="$BENCH_FILTER")
  echo "bench_report: running $name" >&2
  if ! (cd "$BENCH_DIR" && "./$name" "${args[@]}") >"$RESULTS/$name.log" 2>&1; then
    echo "bench_report: $name failed; see $RESULTS/$name.log" >&2
    status=1
  fi
done

python3 - "$RESULTS" "${programs[@]}" <<'PY' | tee "$RESULTS/bench.md"
import json, os, re, sys

results_dir, programs = sys.argv[1], sys.argv[2:]
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
CUWRAP = re.compile(r"(^|_)(Cuwrap|cuwrap)|_(Buffer|[A-Za-z]*MemoryResource[A-Za-z]*)$")
BASELINE = re.compile(r"(^|_)(Raw|raw)|^CHeaders")
ROLE_WORDS = re.compile(r"Cuwrap|cuwrap|Raw|raw|Buffer|[A-Za-z]*MemoryResource[A-Za-z]*")


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def load(program):
    """Return {name: (ns or None, note)} for one program's JSON, medians preferred."""
    path = os.path.join(results_dir, program + ".json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            data = json.load(f)
    except ValueError:
        return None
    runs = {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        if b.get("error_occurred"):
            message = b.get("error_message", "error").strip().splitlines()[0]
            runs[name] = (None, "skipped: " + message.replace("|", "\\|"))
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        ns = b["real_time"] * UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
        # Prefer the median aggregate over single iterations of the same name.
        if name not in runs or b.get("aggregate_name") == "median":
            runs[name] = (ns, "")
    return runs


def split(name):
    """'BM_HtoD_Buffer/64' → ('HtoD_Buffer', 'HtoD', '/64'): the name, its topic (the
    first word left when the role words are taken out), the arguments."""
    base, _, args = name.partition("/")
    base = re.sub(r"^BM_", "", base)
    topic = re.sub(r"_+", "_", ROLE_WORDS.sub("", base)).strip("_").split("_")[0]
    return base, topic, ("/" + args) if args else ""


rows, others, missing = [], [], []
for program in programs:
    runs = load(program)
    if runs is None:
        missing.append(program)
        continue
    ours = [n for n in runs if CUWRAP.search(split(n)[0])]
    baselines = [n for n in runs if n not in ours and BASELINE.search(split(n)[0])]
    for n in runs:
        if n not in ours and n not in baselines:
            others.append((program, n, runs[n]))
    for n in ours:
        _, topic, args = split(n)
        same_args = [b for b in baselines if split(b)[2] == args] or baselines
        matched = [b for b in same_args if split(b)[1] == topic] or same_args
        if not matched:
            rows.append((program, n, runs[n], None, (None, "no baseline"), None))
        for b in matched:
            ratio = None
            if runs[n][0] and runs[b][0]:
                ratio = runs[n][0] / runs[b][0]
            rows.append((program, n, runs[n], b, runs[b], ratio))

print("| program | cuwrap | time | baseline (same run) | time | ratio cuwrap/baseline |")
print("|---|---|---:|---|---:|---:|")
for program, n, (ns, note), b, (bns, bnote), ratio in rows:
    print(f"| {program} | `{n}` | {fmt_time(ns) if ns else note} | "
          f"{'`' + b + '`' if b else '—'} | {fmt_time(bns) if bns else bnote} | "
          f"{f'{ratio:.3f}' if ratio is not None else '—'} |")
if others:
    print()
    print("Other figures (no cuwrap/baseline role in the name):")
    print()
    print("| program | benchmark | time |")
    print("|---|---|---:|")
    for program, n, (ns, note) in others:
        print(f"| {program} | `{n}` | {fmt_time(ns) if ns else note} |")
if missing:
    print()
    print("No results from: " + ", ".join(missing) + " (see their .log files).")
print()
print("Times are wall-clock (real_time) per iteration; with repetitions, the median. "
      "Ratios below 1 mean cuwrap is faster.")
PY
# The ratios each program prints itself after its run (pooled over repetitions, and the
# alternating-block measurements, which have no pair of benchmark names).
{
  echo
  echo "Ratios the programs print after their runs:"
  echo
  for name in "${programs[@]}"; do
    grep -hiE "ratio|alternating|entry point" "$RESULTS/$name.log" 2>/dev/null | grep -v '^[{}]' |
      grep -v '"' | sed "s/^/- $name: /"
  done
} | tee -a "$RESULTS/bench.md"
exit $status
