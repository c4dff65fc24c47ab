#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the embedded default config:
# text vs kv_inject at k=50 for 200 LoCoMo-shaped users on one H200 (cost model).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_debs "${DEB_PACKAGES[@]}"
configure_and_build
cd "$ROOT"
"$BUILD_DIR/inferscale" run configs/quickstart.yaml "$@"
