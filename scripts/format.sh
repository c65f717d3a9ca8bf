#!/usr/bin/env bash
# clang-format (the checked-in .clang-format) on cuwrap's C++ files: every tracked .cpp,
# .hpp, .h, .cu and .cuh but the generated code (generated/: the generator writes it) and
# the test fixtures (tests/fixtures/, tests/hygiene/fixtures/: their text and lines are
# what the tests parse).
#
#   bash scripts/format.sh --check   # clang-format --dry-run -Werror (CI): exit 1 on a diff
#   bash scripts/format.sh --fix     # format them in place
#   bash scripts/format.sh --fix-all # also the files of scripts/format_pending.txt, and
#                                    # empty that list (a commit of its own)
#
# scripts/format_pending.txt lists the files written before the check existed and not yet
# formatted: --check and --fix leave them alone, so that formatting them is one commit
# made when nobody has changes to them outstanding. A new file is checked from the start.
set -euo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_JOBS=${CUWRAP_JOBS:-$(nproc)}
# clang-format-14 (the version .clang-format's output is checked with; scripts/common.sh
# installs it), else the newest versioned one installed, else clang-format.
CLANG_FORMAT=${CLANG_FORMAT:-$(command -v "clang-format-${CUWRAP_LLVM_TOOLS_VERSION:-14}" || true)}
CLANG_FORMAT=${CLANG_FORMAT:-$(compgen -c clang-format- | grep -E '^clang-format-[0-9]+$' |
  sort -t- -k3 -n | tail -1 || true)}
CLANG_FORMAT=${CLANG_FORMAT:-$(command -v clang-format || true)}
if [ -z "$CLANG_FORMAT" ]; then
  echo "format: clang-format not found (Debian/Ubuntu: apt-get install clang-format); set CLANG_FORMAT" >&2
  exit 2
fi
pending="$CUWRAP_ROOT/scripts/format_pending.txt"
mode=${1:---check}
cd "$CUWRAP_ROOT"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh' |
  grep -vE '^(generated/|tests/fixtures/|tests/hygiene/fixtures/)' |
  if [ "$mode" = --fix-all ]; then cat; else grep -vxF -f <(grep -v '^#' "$pending" || true); fi)
case "$mode" in
  --check)
    echo "format: $("$CLANG_FORMAT" --version | grep -o 'version [0-9.]*') on ${#files[@]} files" \
      "($(grep -vc '^#' "$pending" || true) pending in scripts/format_pending.txt)"
    if ! printf '%s\n' "${files[@]}" | xargs -P "$CUWRAP_JOBS" -n 16 "$CLANG_FORMAT" --dry-run -Werror; then
      echo "format: the files above are not formatted: bash scripts/format.sh --fix" >&2
      exit 1
    fi
    echo "format: clean"
    ;;
  --fix | --fix-all)
    printf '%s\n' "${files[@]}" | xargs -P "$CUWRAP_JOBS" -n 16 "$CLANG_FORMAT" -i
    if [ "$mode" = --fix-all ]; then
      grep '^#' "$pending" >"$pending.new" || true
      mv "$pending.new" "$pending"
    fi
    ;;
  *)
    echo "usage: bash scripts/format.sh [--check|--fix|--fix-all]" >&2
    exit 2
    ;;
esac
