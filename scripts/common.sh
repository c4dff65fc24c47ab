#!/usr/bin/env bash
# Shared by quickstart.sh and test.sh: install what is missing, configure, build.
# Environment: BUILD_DIR (default build), BUILD_TYPE (Release), JOBS (nproc), CMAKE_ARGS (extra).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BUILD_TYPE=${BUILD_TYPE:-Release}
JOBS=${JOBS:-$(nproc)}

# Debian packages. The simulator and the cost model need the first list; the tests add Catch2,
# Google Benchmark and libtorch-dev (CPU, 1.13: the executor's CPU path), with
# libopenblas0-pthread in place of the reference BLAS libtorch would otherwise use (several
# times slower), and Open MPI (plans and fleet runs over MPI ranks, tested on 2 ranks).
CORE_PACKAGES=(build-essential cmake ninja-build pkg-config libcli11-dev libyaml-cpp-dev
  nlohmann-json3-dev libeigen3-dev libboost-dev libfmt-dev libzstd-dev python3)
DEB_PACKAGES=("${CORE_PACKAGES[@]}" catch2 libbenchmark-dev libtorch-dev libopenblas0-pthread
  python3-pip libopenmpi-dev openmpi-bin)
# scripts/fuzz.sh: clang and its libFuzzer and sanitizer runtimes (only recommended by clang:
# installs here skip recommendations).
FUZZ_PACKAGES=(clang libclang-rt-dev)

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

# Open MPI's mpirun refuses to run as root (CI containers) unless both are set; the MPI tests
# start 2 ranks with it.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

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

# configure_and_build [TARGET...] [-- CMAKE_OPTION...]: configure $BUILD_DIR (again when options
# are given, which is cheap on a configured tree) and build the targets (default: all). The
# compiler's output is kept in $BUILD_DIR/build.log; the terminal shows one progress line.
configure_and_build() {
  local targets=() options=()
  while (($#)) && [ "$1" != -- ]; do targets+=("$1"); shift; done
  (($#)) && shift && options=("$@")
  local generator=()
  command -v ninja >/dev/null && [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && generator=(-G Ninja)
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] || ((${#options[@]})); then
    log "configuring ($BUILD_TYPE) in $BUILD_DIR"
    mkdir -p "$BUILD_DIR"
    # shellcheck disable=SC2086
    if ! cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
        "${options[@]}" ${CMAKE_ARGS:-} >"$BUILD_DIR/configure.log" 2>&1; then
      cat "$BUILD_DIR/configure.log" >&2
      exit 1
    fi
    grep 'InferScale:' "$BUILD_DIR/configure.log" >&2 || true
  fi
  local what=(--target all)
  ((${#targets[@]})) && what=(--target "${targets[@]}")
  log "building ${targets[*]:-everything} with $JOBS jobs (log: $BUILD_DIR/build.log)"
  local start=$SECONDS
  if ! cmake --build "$BUILD_DIR" -j "$JOBS" "${what[@]}" 2>&1 | tee "$BUILD_DIR/build.log" |
      progress_line; then
    printf '\n' >&2
    grep -B2 -A12 -m3 -E 'error|FAILED' "$BUILD_DIR/build.log" >&2 || tail -40 "$BUILD_DIR/build.log" >&2
    log "build failed; the whole log is $BUILD_DIR/build.log"
    exit 1
  fi
  printf '\n' >&2
  log "built in $((SECONDS - start)) s"
}

# Ninja's "[12/259] Building ..." lines, shown as one line rewritten in place (a terminal), or
# every 25th (a log, e.g. CI). Returns the build's status through pipefail.
progress_line() {
  local n=0 line
  while IFS= read -r line; do
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    n=$((n + 1))
    if [ -t 2 ]; then
      printf '\r\033[K  [%s/%s]' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" >&2
    elif ((n % 25 == 0)); then
      printf '  [%s/%s]\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" >&2
    fi
  done
}
