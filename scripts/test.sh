#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (Catch2 through CTest, then the notebook).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_debs "${DEB_PACKAGES[@]}"
install_pip "${PIP_PACKAGES[@]}"
configure_and_build -- -DINFERSCALE_BUILD_TESTS=ON -DINFERSCALE_BUILD_BENCH=ON \
  -DINFERSCALE_WITH_TORCH=ON
# The real test model (SmolLM2-135M-Instruct, ~93 MB, cached in .cache/models): the loader,
# tokenizer and reference-logit tests and the fidelity smoke run use it.
log "fetching the test model"
"$ROOT/scripts/fetch-model.sh" >/dev/null
log "checking the library graph (scripts/check_layout.py)"
cmake --graphviz="$BUILD_DIR/targets.dot" "$BUILD_DIR" >/dev/null
python3 "$ROOT/scripts/check_layout.py" "$BUILD_DIR/targets.dot" >/dev/null
log "running the tests"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" "$@"
