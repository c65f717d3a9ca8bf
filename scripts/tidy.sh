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
# clang-tidy-14 (the version whose checks .clang-tidy selects; scripts/common.sh installs
# it), else the newest versioned one installed, else clang-tidy.
CLANG_TIDY=${CLANG_TIDY:-$(command -v "clang-tidy-${CUWRAP_LLVM_TOOLS_VERSION:-14}" || true)}
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
# Only files the build knows (a file being written may not be in the build yet). A test
# source that the build compiles in a unity source (CUWRAP_UNITY_TESTS) is checked through
# that unity source: one parse for its group (the headers, GoogleTest and the standard
# library once), the findings reported in the test source itself.
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
declare -A unity_checked=()
for f in "${files[@]}"; do
  abs=$(cd "$CUWRAP_ROOT" && realpath "$f")
  if [ -n "${unity_of[$abs]:-}" ]; then
    [ -n "${unity_checked[${unity_of[$abs]}]:-}" ] || checked+=("${unity_of[$abs]}")
    unity_checked[${unity_of[$abs]}]=1
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
echo "tidy: $("$CLANG_TIDY" --version | grep -m1 -o 'version [0-9.]*') on ${#checked[@]} files" \
  "(${#unity_checked[@]} of them unity sources of tests), $CUWRAP_JOBS jobs"
# A unity source lies in the build directory: it is checked with the tests' configuration
# (tests/.clang-tidy over ../.clang-tidy, as clang-tidy resolves it for a test source), its
# test sources' findings shown as a header's would be, and without
# bugprone-suspicious-include (a unity source includes .cpp files by design).
tests_config="$db/tests.clang-tidy"
"$CLANG_TIDY" --dump-config "$CUWRAP_ROOT/tests/support/pch_anchor.cpp" 2>/dev/null >"$tests_config"
grep -q -- "-bugprone-reserved-identifier" "$tests_config" || {
  echo "tidy: could not read the tests' configuration (tests/.clang-tidy)" >&2
  exit 2
}
tests_filter='/(runtime/include|runtime/src|generator/src|tests)/'
# One clang-tidy per file; GCC-only warning flags in the compile commands are not clang's
# business here.
tidy_one() {
  local extra=()
  case "$1" in
    */Unity/unity_*_cxx.cxx) extra=(--config-file="$tests_config" --header-filter="$tests_filter"
      --checks=-bugprone-suspicious-include) ;;
  esac
  "$CLANG_TIDY" -p "$db" --quiet --extra-arg=-Wno-unknown-warning-option "${extra[@]}" "$1" 2>/dev/null
}
export -f tidy_one
export CLANG_TIDY db tests_config tests_filter
printf '%s\n' "${checked[@]}" | xargs -P "$CUWRAP_JOBS" -I{} bash -c 'tidy_one "$1"' _ {} >"$log" || true

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
