#!/usr/bin/env bash
# Run clang-tidy on cuwrap's handwritten code and its tests: runtime/src and generator/src
# with their headers (the checked-in .clang-tidy), and every test source the build compiles
# (tests/, with tests/support's headers: tests/.clang-tidy, a lighter set of checks).
# generated/ (the generator's output), the documentation snippets and the header checks
# that the build generates are not checked.
#
#   bash scripts/tidy.sh [file...]        # default: all of the above
#
# Uses $CUWRAP_BUILD/compile_commands.json (default: build/), configuring it when it is
# missing: one clang-tidy per translation unit of that build, $CUWRAP_JOBS at a time
# (default: every core), longest first. Exits 1 when clang-tidy reports anything.
set -euo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_BUILD=${CUWRAP_BUILD:-$CUWRAP_ROOT/build}
CUWRAP_JOBS=${CUWRAP_JOBS:-$(nproc)}
# The newest versioned clang-tidy installed (14 or later; scripts/common.sh installs the
# newest the system offers), else clang-tidy. .clang-tidy names LLVM 14's checks one by one,
# so each version runs the same set; LLVM 22 and later check in about a third of 14's time,
# as they no longer walk the system headers' declarations.
CLANG_TIDY=${CLANG_TIDY:-$(compgen -c clang-tidy- | grep -E '^clang-tidy-[0-9]+$' | sort -t- -k3 -n |
  tail -1 || true)}
CLANG_TIDY=${CLANG_TIDY:-$(command -v clang-tidy || true)}
if [ -z "$CLANG_TIDY" ]; then
  echo "tidy: clang-tidy not found (Debian/Ubuntu: apt-get install clang-tidy-N); set CLANG_TIDY" >&2
  exit 2
fi

if [ ! -f "$CUWRAP_BUILD/compile_commands.json" ]; then
  echo "tidy: configuring $CUWRAP_BUILD for compile_commands.json"
  cmake -S "$CUWRAP_ROOT" -B "$CUWRAP_BUILD" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi

if [ $# -gt 0 ]; then
  files=("$@")
else
  # Every tests/ source of the build (a test file is found as it is added); the largest
  # first, so that the last to start are the quick ones.
  mapfile -t files < <(cd "$CUWRAP_ROOT" && { ls runtime/src/*/*.cpp generator/src/*.cpp 2>/dev/null
    git ls-files 'tests/*.cpp' 2>/dev/null || find tests -name '*.cpp'; } |
    grep -vE '^tests/(fixtures|hygiene/fixtures)/' | xargs ls -S 2>/dev/null)
fi
# Only files the build knows (a file being written may not be in the build yet). A source
# that the build compiles in a unity source (CUWRAP_UNITY_TESTS, CUWRAP_UNITY_LIBRARY) is
# checked through that unity source: one parse for its group (the headers, GoogleTest and
# the standard library once), the findings reported in the source itself. The static
# analyzer, which looks only at the functions of the file it is given, still checks each
# library source alone (below), which also shows that each compiles by itself.
db_file="$CUWRAP_BUILD/compile_commands.json"
declare -A unity_of=()
while IFS=$'\t' read -r unity member; do
  unity_of[$member]=$unity
done < <(grep -oE '"file": "[^"]*/Unity/unity_[0-9]+_cxx\.cxx"' "$db_file" | cut -d'"' -f4 |
  sort -u | while read -r unity; do
    sed -nE 's/^#include "(.*)"$/\1/p' "$unity" | while read -r member; do
      printf '%s\t%s\n' "$unity" "$member"
    done
  done)
checked=()
analyzed=()
declare -A unity_checked=()
tests_unity=0
for f in "${files[@]}"; do
  abs=$(cd "$CUWRAP_ROOT" && realpath "$f")
  if [ -n "${unity_of[$abs]:-}" ]; then
    if [ -z "${unity_checked[${unity_of[$abs]}]:-}" ]; then
      checked+=("${unity_of[$abs]}")
      [[ "$abs" != "$CUWRAP_ROOT"/tests/* ]] || tests_unity=$((tests_unity + 1))
    fi
    unity_checked[${unity_of[$abs]}]=1
    [[ "$abs" == "$CUWRAP_ROOT"/tests/* ]] || analyzed+=("$abs")
  elif grep -qF "\"file\": \"$abs\"" "$db_file"; then
    checked+=("$abs")
  elif [ $# -gt 0 ] || [[ "$f" != tests/* ]]; then
    # (a test source the build does not compile, such as a fuzzer outside a clang build,
    # is left out silently)
    echo "tidy: skipping $f (not in $db_file)"
  fi
done
if [ ${#checked[@]} -eq 0 ]; then
  echo "tidy: nothing to check" >&2
  exit 2
fi

log=$(mktemp)
# The compile commands without the tests' precompiled header (CUWRAP_TEST_PCH): clang-tidy
# reads the header itself, as a GCC precompiled header is not one clang can load.
db=$(mktemp -d)
trap 'rm -rf "$log" "$db"' EXIT
sed -E -e 's# -Winvalid-pch##g' \
  -e 's# -include [^ ]*/cmake_pch\.hxx##g' \
  -e 's# -Xclang -include-pch -Xclang [^ ]*/cmake_pch\.hxx\.pch##g' \
  -e 's# -Xclang -include -Xclang [^ ]*/cmake_pch\.hxx##g' \
  "$CUWRAP_BUILD/compile_commands.json" >"$db/compile_commands.json"
# The library's sources that its build compiles in unity sources get their own entries,
# made from their unity source's command: that source in its place, and the definitions the
# unity source makes before its includes (#define NAME VALUE) as -D options.
if ((${#analyzed[@]})); then
  awk '
    function emit(dir, cmd, unity,   line, member, defs, c, parts) {
      defs = ""
      while ((getline line < unity) > 0) {
        if (line ~ /^#define [A-Za-z_][A-Za-z0-9_]* /) {
          split(line, parts, " ")
          defs = defs " -D" parts[2] "=" parts[3]
        } else if (line ~ /^#include "/) {
          member = line
          sub(/^#include "/, "", member)
          sub(/"$/, "", member)
          c = cmd
          sub(/ -c [^ ]*\/Unity\/unity_[0-9]+_cxx\.cxx/, defs " -c " member, c)
          printf "{\n  \"directory\": \"%s\",\n  \"command\": \"%s\",\n  \"file\": \"%s\"\n},\n", dir, c, member
        }
      }
      close(unity)
    }
    /^\[$/ { print; next }
    /"directory": / { dir = $0; sub(/^ *"directory": "/, "", dir); sub(/",$/, "", dir) }
    /"command": / { cmd = $0; sub(/^ *"command": "/, "", cmd); sub(/",$/, "", cmd) }
    /"file": "[^"]*\/(runtime|generator)\/CMakeFiles\/[^"]*\/Unity\/unity_[0-9]+_cxx\.cxx"/ {
      unity = $0; sub(/^ *"file": "/, "", unity); sub(/"$/, "", unity)
      extra = extra "\n" dir "\t" cmd "\t" unity
    }
    { lines[++n] = $0 }
    END {
      count = split(substr(extra, 2), items, "\n")
      for (i = 1; i <= count; i++) {
        split(items[i], f, "\t")
        emit(f[1], f[2], f[3])
      }
      for (i = 1; i <= n; i++) print lines[i]
    }' "$db/compile_commands.json" >"$db/with_members.json"
  mv "$db/with_members.json" "$db/compile_commands.json"
fi
echo "tidy: $("$CLANG_TIDY" --version | grep -m1 -o 'version [0-9.]*') on ${#checked[@]} files" \
  "(${#unity_checked[@]} of them unity sources, $tests_unity of tests), and the static analyzer" \
  "on ${#analyzed[@]} library sources of unity sources alone, $CUWRAP_JOBS jobs"
# A unity source lies in the build directory. A tests' one is checked with the tests'
# configuration (tests/.clang-tidy over ../.clang-tidy, as clang-tidy resolves it for a test
# source), its test sources' findings shown as a header's would be; a library's one with
# ../.clang-tidy without the static analyzer (its sources get it alone). Both without
# bugprone-suspicious-include (a unity source includes .cpp files by design).
tests_config="$db/tests.clang-tidy"
"$CLANG_TIDY" --dump-config "$CUWRAP_ROOT/tests/support/pch_anchor.cpp" 2>/dev/null >"$tests_config"
grep -q -- "-bugprone-reserved-identifier" "$tests_config" || {
  echo "tidy: could not read the tests' configuration (tests/.clang-tidy)" >&2
  exit 2
}
tests_filter='/(runtime/include|runtime/src|generator/src|tests)/'
library_config="$CUWRAP_ROOT/.clang-tidy"
# The static analyzer's checks that .clang-tidy enables: a library source of a unity source
# is checked alone with these only.
analyzer_checks=$("$CLANG_TIDY" --list-checks --config-file="$library_config" 2>/dev/null |
  sed -nE 's/^ +(clang-analyzer-[^ ]+)$/\1/p' | paste -sd, -)
# The static analyzer stops exploring a function's paths at 75,000 nodes of its graph
# instead of the default 225,000 (-analyzer-config max-nodes): a function that stays below
# that is analyzed exactly as before; the few that reach it (mostly functions that inline
# the standard containers' loops) stop following paths sooner, which is the coverage given
# up for a third of the analyzer's time (docs/testing.md, "clang-tidy").
analyzer_max_nodes=75000
# One clang-tidy per file; GCC-only warning flags in the compile commands are not clang's
# business here, and the compiler's warnings stay warnings (-Wno-error: the build makes them
# errors): a warning of a newer clang inside the standard library's headers (libstdc++ 12's
# std::stable_partition calls the deprecated std::get_temporary_buffer) is then left out as
# a system header's, while one in cuwrap's code is still a finding. "analyze:<source>" is
# the static analyzer alone on <source>.
tidy_one() {
  local extra=() file=$1 analyzer_budget=(--extra-arg=-Xclang --extra-arg=-analyzer-config
    --extra-arg=-Xclang --extra-arg=max-nodes="$analyzer_max_nodes")
  case "$1" in
    analyze:*) file=${1#analyze:}
      extra=(--config-file="$library_config" --checks="-*,$analyzer_checks") ;;
    "$CUWRAP_BUILD_ABS"/tests/*/Unity/unity_*_cxx.cxx)
      extra=(--config-file="$tests_config" --header-filter="$tests_filter"
        --checks=-bugprone-suspicious-include) ;;
    */Unity/unity_*_cxx.cxx) extra=(--config-file="$library_config"
      --checks=-clang-analyzer-*,-bugprone-suspicious-include) ;;
  esac
  "$CLANG_TIDY" -p "$db" --quiet --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-error \
    "${analyzer_budget[@]}" "${extra[@]}" "$file" 2>/dev/null
}
CUWRAP_BUILD_ABS=$(cd "$CUWRAP_BUILD" && pwd -P)
export -f tidy_one
export CLANG_TIDY analyzer_max_nodes db tests_config tests_filter library_config analyzer_checks CUWRAP_BUILD_ABS
{ printf '%s\n' "${checked[@]}"
  ((${#analyzed[@]} == 0)) || [ -z "$analyzer_checks" ] || printf 'analyze:%s\n' "${analyzed[@]}"; } |
  xargs -P "$CUWRAP_JOBS" -I{} bash -c 'tidy_one "$1"' _ {} >"$log" || true

# A header's finding is reported once per file that includes it: count distinct ones.
findings=$({ grep -E '^/.*: (warning|error): ' "$log" || true; } | sort -u | wc -l)
cat "$log"
if [ "$findings" -ne 0 ]; then
  echo "tidy: $findings findings"
  grep -E '^/.*: (warning|error): ' "$log" | sort -u | grep -oE '\[[a-z0-9.,-]+\]$' |
    sort | uniq -c | sort -rn
  exit 1
fi
echo "tidy: clean"
