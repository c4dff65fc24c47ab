#!/usr/bin/env bash
# Installs what is missing, builds the `inferscale` program alone (the simulator and the cost
# model: no GPU, no libtorch needed) and runs the main job on the embedded default config:
# text vs kv_inject at k=50 for 200 LoCoMo-shaped users on one H200 (cost model).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_debs "${CORE_PACKAGES[@]}"
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  configure_and_build inferscale
else
  # A fresh tree: the tests and benchmarks (and their packages) are scripts/test.sh's.
  configure_and_build inferscale -- -DINFERSCALE_BUILD_TESTS=OFF -DINFERSCALE_BUILD_BENCH=OFF
fi
cd "$ROOT"
log "running configs/quickstart.yaml"
"$BUILD_DIR/inferscale" run configs/quickstart.yaml "$@"
