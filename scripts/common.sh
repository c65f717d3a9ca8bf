# Shared by scripts/setup.sh and scripts/test.sh: install what is missing (Debian 12),
# then configure and build cuwrap in ./build.
set -euo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_BUILD=${CUWRAP_BUILD:-$CUWRAP_ROOT/build}
CUWRAP_JOBS=${CUWRAP_JOBS:-$(nproc)}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

# Debian packages cuwrap needs: the generator's libclang, template engine, JSON and CLI
# libraries, and the test and benchmark frameworks.
CUWRAP_PACKAGES=(cmake ninja-build g++ libclang-19-dev libctemplate-dev nlohmann-json3-dev
                 libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev clang-tidy-14 libdlpack-dev)

cuwrap_install_missing() {
  local missing=()
  for pkg in "${CUWRAP_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    echo "cuwrap: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  fi
  if [ ! -f "$CUDA_HOME/include/cuda.h" ]; then
    echo "cuwrap: no CUDA toolkit headers at $CUDA_HOME/include/cuda.h; set CUDA_HOME to your toolkit root" >&2
    exit 2
  fi
}

cuwrap_build() {
  local shared="$CUWRAP_ROOT/../shared/cuda-headers/12.6"
  if [ -z "${CUWRAP_CUDA_12_6_INCLUDE:-}" ] && [ -f "$shared/cuda.h" ]; then
    export CUWRAP_CUDA_12_6_INCLUDE=$(cd "$shared" && pwd)
  fi
  cmake -S "$CUWRAP_ROOT" -B "$CUWRAP_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCUWRAP_CUDA_ROOT="$CUDA_HOME" -DCUWRAP_BUILD_BENCHMARKS=ON \
    -DCUWRAP_CUDA_12_6_INCLUDE="${CUWRAP_CUDA_12_6_INCLUDE:-}" "$@"
  cmake --build "$CUWRAP_BUILD" -j "$CUWRAP_JOBS"
}
