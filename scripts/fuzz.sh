#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: builds the libFuzzer targets (clang, AddressSanitizer and
# UndefinedBehaviorSanitizer) in build-fuzz/ and runs each for SECONDS (default 60):
#   fuzz_trace_reader  the trace reader, fast path against general parser (differential)
#   fuzz_experiment    the YAML experiment loader and its validation (with --set lines)
#   fuzz_protocol      the executor protocol's decoders (and re-encoding)
#   fuzz_binary_trace  the binary trace reader (records and zstd stream; write-read round trip)
# Seed corpora come from the samples (traces, converted traces, configs, encoded messages); what
# a run finds goes to build-fuzz/corpus/<target>/, a crash, leak or sanitizer report to
# build-fuzz/artifacts/ and fails the script. The last line per target gives its executions per
# second.
# Environment: FUZZ_BUILD_DIR (build-fuzz), FUZZ_TARGETS (all four).
SECONDS_EACH=${1:-60}
BUILD_DIR=${FUZZ_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-fuzz}
BUILD_TYPE=RelWithDebInfo
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_debs "${CORE_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}"
export CC=${CC:-clang} CXX=${CXX:-clang++}
TARGETS=(${FUZZ_TARGETS:-fuzz_trace_reader fuzz_experiment fuzz_protocol fuzz_binary_trace})
configure_and_build "${TARGETS[@]}" fuzz_protocol_seeds fuzz_binary_trace_seeds -- \
  -DINFERSCALE_BUILD_FUZZ=ON \
  -DINFERSCALE_SANITIZE=address,undefined -DINFERSCALE_WITH_TORCH=OFF -DINFERSCALE_WITH_CUDA=OFF \
  -DINFERSCALE_BUILD_TESTS=OFF -DINFERSCALE_BUILD_BENCH=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"

# Seeds: the sample traces; the experiment configs without lines that name paths (the target
# skips inputs with '/'); each protocol message encoded; the sample traces in the binary format.
seeds=$BUILD_DIR/seeds
rm -rf "$seeds"
mkdir -p "$seeds/fuzz_trace_reader" "$seeds/fuzz_experiment" "$seeds/fuzz_protocol" \
  "$seeds/fuzz_binary_trace"
for f in "$ROOT"/traces/samples/*.jsonl "$ROOT"/tests/policies/data/*.jsonl \
  "$ROOT"/tests/sim/data/*.jsonl; do
  cp "$f" "$seeds/fuzz_trace_reader/"
done
head -40 "$ROOT/tests/policies/golden/trace.jsonl" >"$seeds/fuzz_trace_reader/golden_head.jsonl"
for f in "$ROOT"/configs/*.yaml; do
  grep -v / "$f" >"$seeds/fuzz_experiment/$(basename "$f")" || true
done
printf 'experiment: e\ntrace: {generate: {users: 3, requests: 10}}\n#--set serving.k=4\n' \
  >"$seeds/fuzz_experiment/with_set.yaml"
"$BUILD_DIR/fuzz/fuzz_protocol_seeds" "$seeds/fuzz_protocol"
"$BUILD_DIR/fuzz/fuzz_binary_trace_seeds" "$seeds/fuzz_binary_trace" \
  "$seeds"/fuzz_trace_reader/*.jsonl

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$BUILD_DIR/artifacts"
status=0
summary=()
for t in "${TARGETS[@]}"; do
  corpus=$BUILD_DIR/corpus/$t
  mkdir -p "$corpus"
  log "fuzzing $t for $SECONDS_EACH s"
  if ! "$BUILD_DIR/fuzz/$t" "$corpus" "$seeds/$t" -max_total_time="$SECONDS_EACH" -timeout=10 \
      -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
      -artifact_prefix="$BUILD_DIR/artifacts/$t-" >"$BUILD_DIR/$t.log" 2>&1; then
    status=1
    log "$t FAILED (log: $BUILD_DIR/$t.log; input in $BUILD_DIR/artifacts/)"
    grep -m1 -B2 -A30 -E "ERROR: |runtime error|deadly signal" "$BUILD_DIR/$t.log" >&2 || tail -30 "$BUILD_DIR/$t.log" >&2
  fi
  runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$BUILD_DIR/$t.log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -m1 -o 'stat::average_exec_per_sec: *[0-9]*' "$BUILD_DIR/$t.log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$BUILD_DIR/$t.log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  summary+=("$(printf '%-18s %10s runs %8s exec/s  coverage %s' "$t" "$runs" "$rate" "$cov")")
done
for line in "${summary[@]}"; do log "$line"; done
exit $status
