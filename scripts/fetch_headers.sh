#!/usr/bin/env bash
# Fetch the headers of the libraries bound on request that a toolkit install may lack
# (nvml.h, nvFatbin.h, cufile.h, nvPTXCompiler.h) into the directory cmake/libraries.cmake
# looks in: ../ext-headers/cuda-<major.minor>/include beside the checkout, for
# cuwrap-regenerate (docs/regenerating.md#libraries-bound-on-request).
#
#   bash scripts/fetch_headers.sh [--cuda MAJOR.MINOR] [--dest DIR] [--wheels DIR]
#                                 [--no-toolkit] [--no-pip] [header...]
#
# A header already in the destination is kept; any other is taken from the first of:
#   1. the installed toolkit ($CUDA_HOME/include, $CUDA_HOME/targets/*/include), unless
#      --no-toolkit;
#   2. a wheel already in --wheels DIR (default: .whl/ in the checkout, git-ignored);
#   3. NVIDIA's wheel downloaded there with `pip download --no-deps` (unless --no-pip):
#      nvidia-nvml-dev, nvidia-nvfatbin and nvidia-cuda-nvcc of the same CUDA major.minor,
#      and nvidia-cufile (cuFile versions on its own).
# A wheel is a zip archive from outside: only a member named */include/<header> is read,
# only a regular member under 16 MiB whose path does not climb (no "..", not absolute),
# and it is written as DIR/<header>. Headers and wheels are never committed. Exits 1 naming the headers
# that no source had.
set -euo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
version=""
dest=""
wheels="$CUWRAP_ROOT/.whl"
use_toolkit=1
use_pip=1
headers=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) version=$2; shift 2 ;;
    --dest) dest=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --no-toolkit) use_toolkit=0; shift ;;
    --no-pip) use_pip=0; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "fetch_headers: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) headers+=("$1"); shift ;;
  esac
done
if [ -z "$version" ]; then
  # The CUDA version generated/ was generated for.
  v=$(sed -nE 's/.*kGeneratedCudaVersion = ([0-9]+);.*/\1/p' \
    "$CUWRAP_ROOT/generated/include/cuwrap/detail/symbols.hpp")
  version="$((v / 1000)).$((v % 1000 / 10))"
fi
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+$ ]]; then
  echo "fetch_headers: --cuda wants MAJOR.MINOR (12.6, 13.0), not '$version'" >&2
  exit 2
fi
dest=${dest:-$(dirname "$CUWRAP_ROOT")/ext-headers/cuda-$version/include}
((${#headers[@]})) || headers=(nvml.h nvFatbin.h cufile.h nvPTXCompiler.h)

# The wheel of each header, and its version requirement.
wheel_of() {
  case "$1" in
    nvml.h) echo "nvidia-nvml-dev==$version.*" ;;
    nvFatbin.h) echo "nvidia-nvfatbin==$version.*" ;;
    cufile.h) echo "nvidia-cufile" ;;
    nvPTXCompiler.h) echo "nvidia-cuda-nvcc==$version.*" ;;
    *) echo "" ;;
  esac
}

# extract WHEEL HEADER DEST: write the wheel's */include/HEADER to DEST/HEADER.
extract() {
  python3 - "$1" "$2" "$3" <<'EOF'
import os, sys, zipfile
wheel, header, dest = sys.argv[1:4]
limit = 16 << 20
try:
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            parts = info.filename.split("/")
            if info.filename.startswith("/") or ".." in parts:
                continue  # a member that climbs out of the archive is refused
            if (len(parts) >= 2 and parts[-1] == header and parts[-2] == "include"
                    and not info.is_dir() and info.file_size <= limit):
                data = archive.read(info)
                if len(data) > limit:
                    continue
                os.makedirs(dest, exist_ok=True)
                with open(os.path.join(dest, header), "wb") as out:
                    out.write(data)
                print(f"fetch_headers: {header} from {os.path.basename(wheel)} ({info.filename})")
                sys.exit(0)
except (zipfile.BadZipFile, OSError) as error:
    print(f"fetch_headers: {wheel} is not a readable wheel: {error}", file=sys.stderr)
sys.exit(1)
EOF
}

missing=()
for header in "${headers[@]}"; do
  requirement=$(wheel_of "$header")
  if [ -z "$requirement" ]; then
    echo "fetch_headers: $header is not one of nvml.h, nvFatbin.h, cufile.h, nvPTXCompiler.h" >&2
    exit 2
  fi
  if [ -s "$dest/$header" ]; then
    echo "fetch_headers: $header already in $dest"
    continue
  fi
  if [ "$use_toolkit" = 1 ]; then
    found=$(ls "$CUDA_HOME/include/$header" "$CUDA_HOME"/targets/*/include/"$header" 2>/dev/null |
      head -1 || true)
    if [ -n "$found" ]; then
      mkdir -p "$dest"
      cp "$found" "$dest/$header"
      echo "fetch_headers: $header from $found"
      continue
    fi
  fi
  package=${requirement%%=*}
  pattern="${package//-/_}-*.whl"
  done_here=0
  for pass in local pip; do
    if [ "$pass" = pip ]; then
      [ "$use_pip" = 1 ] || break
      command -v pip3 >/dev/null || command -v pip >/dev/null || break
      mkdir -p "$wheels"
      "$(command -v pip3 || command -v pip)" download --no-deps --quiet --dest "$wheels" \
        --only-binary=:all: "$requirement" >&2 || break
    fi
    for wheel in "$wheels"/$pattern; do
      [ -f "$wheel" ] || continue
      if extract "$wheel" "$header" "$dest"; then
        done_here=1
        break 2
      fi
    done
  done
  [ "$done_here" = 1 ] || missing+=("$header ($requirement)")
done
if ((${#missing[@]})); then
  echo "fetch_headers: not found in the toolkit ($CUDA_HOME), in $wheels or through pip:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "fetch_headers: headers in $dest"
