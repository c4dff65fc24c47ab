#!/usr/bin/env bash
# Shared by quickstart.sh and test.sh: install what is missing, configure, build.
# Environment: BUILD_DIR (default build), BUILD_TYPE (Release), JOBS (nproc), CMAKE_ARGS (extra).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BUILD_TYPE=${BUILD_TYPE:-Release}
JOBS=${JOBS:-$(nproc)}

# Debian packages the build needs. libtorch-dev (CPU, 1.13) builds the executor's CPU path;
# libopenblas0-pthread replaces the reference BLAS libtorch would otherwise use (several times
# slower).
DEB_PACKAGES=(build-essential cmake ninja-build pkg-config catch2 libcli11-dev libyaml-cpp-dev
  nlohmann-json3-dev libeigen3-dev libboost-dev libfmt-dev libbenchmark-dev libtorch-dev
  libopenblas0-pthread
  python3 python3-pip)

# OpenBLAS (libtorch's CPU matrix products) picks its kernels from the CPU model and falls back
# to generic SSE3 code on CPUs it does not know (virtual machines often report a bare "Xeon"),
# several times slower on an AVX-512 machine. Choose from the instruction sets instead, unless set.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -r /proc/cpuinfo ]; then
  if grep -qw avx512f /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=Haswell
  fi
fi

log() { printf '\033[1m[inferscale]\033[0m %s\n' "$*" >&2; }

install_debs() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# Python packages for the notebooks (executed headless by the tests).
PIP_PACKAGES=(nbconvert nbformat ipykernel matplotlib pandas)

install_pip() {
  local missing=()
  for p in "$@"; do
    python3 -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$p') is None)" \
      2>/dev/null || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing Python packages: ${missing[*]}"
    python3 -m pip install -q "${missing[@]}" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "${missing[@]}"
  fi
}

configure_and_build() {
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    log "configuring ($BUILD_TYPE) in $BUILD_DIR"
    # shellcheck disable=SC2086
    cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" ${CMAKE_ARGS:-}
  fi
  log "building with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS"
}
