#!/usr/bin/env bash
# The CPU test suites (traces, policies, simulator with its CLI tests, cost model, remote
# executor) built with AddressSanitizer and UndefinedBehaviorSanitizer in build-asan/ (no
# libtorch, no CUDA). A sanitizer report, a leak or a failed test fails the script. CI runs it
# after scripts/test.sh. Environment: SANITIZE (address,undefined), SANITIZE_BUILD_DIR
# (build-asan; BUILD_DIR is left to scripts/test.sh).
BUILD_DIR=${SANITIZE_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-asan}
BUILD_TYPE=RelWithDebInfo
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_debs "${CORE_PACKAGES[@]}" catch2
SUITES=(traces/traces_tests policies/policies_tests sim/sim_tests executor/executor_cost_model_tests
  executor/executor_remote_tests)
configure_and_build "${SUITES[@]##*/}" inferscale -- -DINFERSCALE_SANITIZE="${SANITIZE:-address,undefined}" \
  -DINFERSCALE_ASSERTS=ON -DINFERSCALE_WITH_TORCH=OFF -DINFERSCALE_WITH_CUDA=OFF \
  -DINFERSCALE_BUILD_TESTS=ON -DINFERSCALE_BUILD_BENCH=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
# Reports end the program with a failure (the CLI tests' child processes inherit these).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for suite in "${SUITES[@]}"; do
  log "sanitized: $suite"
  (cd "$BUILD_DIR" && "$BUILD_DIR/tests/$suite") >"$BUILD_DIR/${suite##*/}.log" 2>&1 ||
    failed+=("$suite")
  tail -3 "$BUILD_DIR/${suite##*/}.log" >&2
done
log "sanitized: golden policy miss counts"
"$ROOT/tests/policies/golden/regenerate.sh" "$BUILD_DIR/inferscale" --check "$BUILD_DIR/golden" ||
  failed+=(policy_golden_misses)
if ((${#failed[@]})); then
  for suite in "${failed[@]}"; do
    log "FAILED under sanitizers: $suite (log: $BUILD_DIR/${suite##*/}.log)"
    grep -m1 -A30 -E "ERROR: AddressSanitizer|runtime error|LeakSanitizer|FAILED" \
      "$BUILD_DIR/${suite##*/}.log" >&2 || true
  done
  exit 1
fi
log "sanitized suites passed"
