# Shared by scripts/setup.sh and scripts/test.sh: install what is missing (Debian 12),
# then configure and build cuwrap in ./build.
set -euo pipefail

CUWRAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUWRAP_BUILD=${CUWRAP_BUILD:-$CUWRAP_ROOT/build}
CUWRAP_JOBS=${CUWRAP_JOBS:-$(nproc)}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

# The versions N >= 14 of `<prefix>N<suffix>` packages, newest last: those installed
# ("installed"), those the system offers (apt-cache: "offered"), or both.
cuwrap_package_versions() {
  local prefix=$1 suffix=$2 where
  for where in "${@:3}"; do
    case "$where" in
      installed) dpkg-query -W -f='${Package} ${Status}\n' "${prefix}*${suffix}" 2>/dev/null |
        grep "install ok installed" ;;
      offered) apt-cache search --names-only "^${prefix}[0-9]+${suffix}\$" 2>/dev/null ;;
    esac
  done | sed -nE "s/^${prefix}([0-9]+)${suffix} .*/\1/p" | awk '$1 >= 14' | sort -n || true
}

# The newest `<prefix>N<suffix>` package (N >= 14) already installed, else the newest the
# system offers (apt-cache), so Debian 12 and Ubuntu 22.04/24.04 each get what they have.
cuwrap_pick_versioned() {
  local prefix=$1 suffix=$2 best
  best=$(cuwrap_package_versions "$prefix" "$suffix" installed | tail -1)
  [ -n "$best" ] || best=$(cuwrap_package_versions "$prefix" "$suffix" offered | tail -1)
  [ -n "$best" ] && echo "${prefix}${best}${suffix}"
}

# `<prefix><version>` when it is installed or the system offers it, else the newest
# (cuwrap_pick_versioned).
cuwrap_pick_preferred() {
  local prefix=$1 version=$2
  if dpkg-query -W -f='${Status}\n' "${prefix}${version}" 2>/dev/null | grep -q "install ok installed" ||
    apt-cache show "${prefix}${version}" >/dev/null 2>&1; then
    echo "${prefix}${version}"
  else
    cuwrap_pick_versioned "$prefix" ""
  fi
}

# The newest `<prefix>N` (N >= 14) that the system offers or has installed, whichever is
# newer.
cuwrap_pick_newest() {
  local best
  best=$(cuwrap_package_versions "$1" "" installed offered | tail -1)
  [ -n "$best" ] && echo "$1$best"
}

# clang-format is LLVM 14's wherever the system offers it (Debian 12, Ubuntu 22.04 and 24.04
# do): .clang-format's output is that version's. clang-tidy is the newest the system offers
# (14 or later): .clang-tidy names its checks one by one (LLVM 14's set), so every version
# runs the same checks, and from LLVM 22 on clang-tidy no longer walks the system headers'
# declarations, which took most of its time (scripts/tidy.sh, docs/testing.md).
CUWRAP_LLVM_TOOLS_VERSION=${CUWRAP_LLVM_TOOLS_VERSION:-14}

# Debian/Ubuntu packages cuwrap needs: the generator's libclang, template engine, JSON and
# CLI libraries, the test and benchmark frameworks, and clang-tidy.
CUWRAP_LIBCLANG_PKG=${CUWRAP_LIBCLANG_PKG:-$(cuwrap_pick_versioned libclang- -dev || true)}
CUWRAP_CLANG_TIDY_PKG=${CUWRAP_CLANG_TIDY_PKG:-$(cuwrap_pick_newest clang-tidy- || true)}
CUWRAP_CLANG_FORMAT_PKG=${CUWRAP_CLANG_FORMAT_PKG:-$(cuwrap_pick_preferred clang-format- "$CUWRAP_LLVM_TOOLS_VERSION" || true)}
CUWRAP_PACKAGES=(cmake ninja-build g++ libctemplate-dev nlohmann-json3-dev
                 libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
                 ${CUWRAP_LIBCLANG_PKG} ${CUWRAP_CLANG_TIDY_PKG})
# Optional: DLPack interop is compiled out, saying so, where the system offers no dlpack.h.
# The GL and EGL headers (libgl-dev, libegl-dev) let cuwrap-gen wrap cudaGL.h and cudaEGL.h
# and the header checks compile <cuwrap/graphics.hpp> beside them; libegl1, libopengl0 and
# Mesa's EGL (libegl-mesa0) let the GL-only graphics test run without a GPU.
CUWRAP_OPTIONAL_PACKAGES=(libdlpack-dev libgl-dev libegl-dev libegl1 libopengl0 libegl-mesa0)

# What the test command (scripts/test.sh) needs beyond the build: Doxygen for the API
# reference's zero-warning check, pkg-config for the packaged consumer, clang-format for
# the formatting check, and the other
# compilers of the matrix (the extra toolkit builds take g++-11 and clang-14; each is
# optional: one that the system does not offer is reported and its build skipped).
CUWRAP_TEST_PACKAGES=(doxygen pkg-config ${CUWRAP_CLANG_FORMAT_PKG})
CUWRAP_TEST_OPTIONAL_PACKAGES=(g++-11 clang-14)

# Install the packages named in "$@" that are missing (apt-get; sudo when not root).
cuwrap_apt_install() {
  local missing=() pkg sudo=""
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  echo "cuwrap: installing ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

# Install each package of "$@" that the system offers; name those it does not.
cuwrap_apt_install_optional() {
  local pkg
  for pkg in "$@"; do
    cuwrap_apt_install "$pkg" >/dev/null 2>&1 || echo "cuwrap: $pkg is not offered by this system; going on without it"
  done
}

# Install what scripts/test.sh needs besides the build's packages.
cuwrap_install_test_tools() {
  cuwrap_apt_install "${CUWRAP_TEST_PACKAGES[@]}"
  cuwrap_apt_install_optional "${CUWRAP_TEST_OPTIONAL_PACKAGES[@]}"
}

cuwrap_install_missing() {
  cuwrap_apt_install "${CUWRAP_PACKAGES[@]}"
  cuwrap_apt_install_optional "${CUWRAP_OPTIONAL_PACKAGES[@]}"
  if [ ! -f "$CUDA_HOME/include/cuda.h" ]; then
    echo "cuwrap: no CUDA toolkit headers at $CUDA_HOME/include/cuda.h; set CUDA_HOME to your toolkit root" >&2
    exit 2
  fi
}

# The linker flags of every build the scripts configure: lld where it is installed (it links
# a test executable with debug information several times faster than GNU ld; Debian: lld),
# else the compiler's default. CUWRAP_LINKER=<name> picks another (-fuse-ld=<name>), "" the
# default. Prints -D options for cmake, one a line.
cuwrap_linker_options() {
  local linker=${CUWRAP_LINKER-lld}
  if [ -n "$linker" ] && command -v "ld.$linker" >/dev/null; then
    local kind
    for kind in EXE SHARED MODULE; do
      echo "-DCMAKE_${kind}_LINKER_FLAGS=-fuse-ld=$linker${1:+ $1}"
    done
  elif [ -n "${1:-}" ]; then
    local kind
    for kind in EXE SHARED MODULE; do echo "-DCMAKE_${kind}_LINKER_FLAGS=$1"; done
  fi
}

# The compiler of the sanitized builds (scripts/sanitize.sh, scripts/tsan.sh): clang++-14
# where it is installed (CUWRAP_SANITIZE_CXX names another, "" the default one). Clang
# compiles them in under half GCC's time (a test unity source under ASan+UBSan at -O0 -g1:
# 14.5 s against GCC 12's 32 s); GCC compiles the tests in the CUDA 12.4 build
# (cuwrap_build_other_toolkits). With the argument "fuzzers", a clang build also gets the
# libFuzzer targets. Prints -D options for cmake, one a line.
cuwrap_sanitize_compiler_options() {
  local cxx=${CUWRAP_SANITIZE_CXX-clang++-14}
  [ -n "$cxx" ] || return 0
  if ! command -v "$cxx" >/dev/null; then
    echo "cuwrap: $cxx is not installed: the sanitized build uses the default compiler" \
      "(install it, or name another in CUWRAP_SANITIZE_CXX)" >&2
    return 0
  fi
  echo "-DCMAKE_CXX_COMPILER=$cxx"
  if [ "${1:-}" = fuzzers ]; then
    case "$cxx" in *clang++*) echo "-DCUWRAP_BUILD_FUZZERS=ON" ;; esac
  fi
  return 0
}

# The CUDA 12.6 headers of ../shared/cuda-headers (which some tests compile against) in
# CUWRAP_CUDA_12_6_INCLUDE, unless it is set already.
cuwrap_find_cuda_12_6() {
  local shared="$CUWRAP_ROOT/../shared/cuda-headers/12.6"
  if [ -z "${CUWRAP_CUDA_12_6_INCLUDE:-}" ] && [ -f "$shared/cuda.h" ]; then
    export CUWRAP_CUDA_12_6_INCLUDE=$(cd "$shared" && pwd)
  fi
}

cuwrap_build() {
  cuwrap_find_cuda_12_6
  # The build type: CUWRAP_BUILD_TYPE, else the caller's default (setup.sh: Release for
  # the demo and benchmarks; test.sh: Debug, which compiles in about half the time and is
  # what a test run needs). An existing build keeps its type unless CUWRAP_BUILD_TYPE says
  # otherwise, so the tests after setup.sh reuse its build.
  local type=()
  if [ -n "${CUWRAP_BUILD_TYPE:-}" ] || [ ! -f "$CUWRAP_BUILD/CMakeCache.txt" ]; then
    type=(-DCMAKE_BUILD_TYPE="${CUWRAP_BUILD_TYPE:-${CUWRAP_DEFAULT_BUILD_TYPE:-Release}}")
  fi
  local linker=()
  mapfile -t linker < <(cuwrap_linker_options)
  cmake -S "$CUWRAP_ROOT" -B "$CUWRAP_BUILD" -G Ninja "${type[@]}" "${linker[@]}" \
    -DCUWRAP_CUDA_ROOT="$CUDA_HOME" -DCUWRAP_BUILD_BENCHMARKS=ON \
    -DCUWRAP_WERROR="${CUWRAP_WERROR:-OFF}" \
    -DCUWRAP_CUDA_12_6_INCLUDE="${CUWRAP_CUDA_12_6_INCLUDE:-}" "$@"
  cmake --build "$CUWRAP_BUILD" -j "$CUWRAP_JOBS"
}

# Build against each toolkit of CUWRAP_EXTRA_TOOLKITS (default: the CUDA 12.4 and 12.6
# headers in ../shared/cuda-headers) in $CUWRAP_BUILD-<version>, and run its suite there.
# No benchmarks or sanitizers: the main build covers those; nor debug information (-g0: a
# Debug build, assertions on, that compiles and links faster); the public headers are
# compiled together, under the same strict warnings, rather than each alone
# (CUWRAP_HEADER_CHECK_ALONE=OFF: the main build checks each header's own includes); nor
# the consumer tests
# (ctest label consumer: they build the library again as a user would, which the main
# build's suite does). Each build uses another
# compiler than the main one, so the oldest supported GCC and Clang compile everything:
#   - the first toolkit is built the README's way for another toolkit: the generator on
#     (the build makes its own cuwrap-gen and generates the bindings into its tree), with
#     $CUWRAP_EXTRA_GEN_CXX (default g++-11);
#   - the others take the bindings from the main build's cuwrap-gen, generated beforehand
#     and passed as CUWRAP_BINDINGS_DIR, with $CUWRAP_EXTRA_CXX (default clang++-14), and
#     without DLPack (CUWRAP_WITH_DLPACK=OFF: the refusing configuration is tested); and
#     the build-time generation with that cuwrap-gen (CUWRAP_GEN_EXECUTABLE) must write
#     the same bindings.
# A compiler that is not installed is said so and the build uses the default one; an
# empty variable means the default compiler. Tests needing NVRTC or nvJitLink of the
# toolkit skip by themselves, naming the library, where it is not installed.
cuwrap_build_other_toolkits() {
  local shared="$CUWRAP_ROOT/../shared/cuda-headers" roots=() root i=0 gen version build
  if [ -n "${CUWRAP_EXTRA_TOOLKITS+set}" ]; then
    read -r -a roots <<<"$CUWRAP_EXTRA_TOOLKITS"
  else
    for version in 12.4 12.6; do
      [ -f "$shared/$version/cuda.h" ] && roots+=("$(cd "$shared/$version" && pwd)")
    done
  fi
  if ((${#roots[@]} == 0)); then
    [ -n "${CUWRAP_EXTRA_TOOLKITS+set}" ] ||
      echo "cuwrap: no CUDA 12.4/12.6 headers in $shared: only the installed toolkit is" \
        "tested (CUWRAP_EXTRA_TOOLKITS=\"<root>...\" names others)"
    return 0
  fi
  # The cuwrap-gen that makes the bindings of the builds after the first: the main
  # build's (CUWRAP_GEN_BUILD names another build directory).
  gen="${CUWRAP_GEN_BUILD:-$CUWRAP_BUILD}/generator/cuwrap-gen"
  for root in "${roots[@]}"; do
    local include="$root" compiler cxx=() how=() what seconds=$SECONDS
    [ -f "$root/include/cuda.h" ] && include="$root/include"
    version=$(sed -nE 's/^#define CUDA_VERSION ([0-9]+).*/\1/p' "$include/cuda.h")
    version="$((version / 1000)).$((version % 1000 / 10))"
    build="$CUWRAP_BUILD-$version"
    if [ $i -eq 0 ]; then
      compiler=${CUWRAP_EXTRA_GEN_CXX-g++-11}
      how=(-DCUWRAP_BUILD_GENERATOR=ON -DCUWRAP_GENERATOR_MODEL_TESTS=OFF)
      what="generator on (its toolkit tests; the model tests run in the main build)"
    else
      if [ ! -x "$gen" ]; then
        echo "cuwrap: $gen not built; cannot make bindings for $root" >&2
        return 1
      fi
      compiler=${CUWRAP_EXTRA_CXX-clang++-14}
      "$gen" --cuda-include "$include" --output "$build/given-bindings" >/dev/null
      # This build also leaves DLPack out (CUWRAP_WITH_DLPACK=OFF), so its suite tests
      # that cuwrap's DLPack functions refuse, naming dlpack.h, where it was not found.
      how=(-DCUWRAP_BUILD_GENERATOR=OFF -DCUWRAP_BINDINGS_DIR="$build/given-bindings"
           -DCUWRAP_WITH_DLPACK=OFF)
      what="bindings from $gen, without DLPack"
    fi
    i=$((i + 1))
    if [ -n "$compiler" ] && ! command -v "$compiler" >/dev/null; then
      echo "cuwrap: $compiler is not installed: CUDA $version is built with the default" \
        "compiler instead (install it, or name another in CUWRAP_EXTRA_GEN_CXX/CUWRAP_EXTRA_CXX)"
      compiler=""
    fi
    [ -n "$compiler" ] && cxx=(-DCMAKE_CXX_COMPILER="$compiler")
    echo "== CUDA $version headers ($root) in $build: $what, compiler ${compiler:-default}"
    local linker=()
    mapfile -t linker < <(cuwrap_linker_options)
    cmake -S "$CUWRAP_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug "${cxx[@]}" "${linker[@]}" \
      -DCMAKE_CXX_FLAGS_DEBUG=-g0 \
      -DCUWRAP_CUDA_ROOT="$root" -DCUWRAP_BUILD_BENCHMARKS=OFF -DCUWRAP_WERROR="${CUWRAP_WERROR:-OFF}" \
      -DCUWRAP_UNITY_TESTS="${CUWRAP_UNITY_TESTS:-ON}" -DCUWRAP_UNITY_LIBRARY="${CUWRAP_UNITY_LIBRARY:-ON}" \
      -DCUWRAP_HEADER_CHECK_ALONE=OFF "${how[@]}" >/dev/null
    cmake --build "$build" -j "$CUWRAP_JOBS"
    if [ $i -gt 1 ]; then
      # The same bindings generated at build time by that cuwrap-gen (only the bindings
      # target is built: the library build above covers compiling them).
      cmake -S "$CUWRAP_ROOT" -B "$build/gen-executable" -G Ninja "${cxx[@]}" \
        -DCUWRAP_CUDA_ROOT="$root" -DCUWRAP_BUILD_GENERATOR=OFF -DCUWRAP_BUILD_TESTS=OFF \
        -DCUWRAP_BUILD_EXAMPLES=OFF -DCUWRAP_GEN_EXECUTABLE="$gen" >/dev/null
      cmake --build "$build/gen-executable" --target cuwrap_bindings >/dev/null
      diff -r "$build/given-bindings" "$build/gen-executable/bindings" \
        --exclude=coverage.json --exclude=compare.md --exclude=compare.json --exclude=bindings.stamp
    fi
    (cd "$build" && ctest --output-on-failure -j "$CUWRAP_JOBS" --timeout 600 -LE '^consumer$')
    echo "== CUDA $version: built and tested in $((SECONDS - seconds)) s"
  done
}
