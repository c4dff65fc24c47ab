#!/usr/bin/env bash
# On an H200 GPU machine (PyTorch 2.x with CUDA, nvcc; no network): the measurements that need
# the GPU, as phases run in order within a time budget, everything packed into $OUT/h200.tar.gz
# (plus $OUT/summary.txt, printed last). Back here, `python3 scripts/device/import_hil.py
# h200.tar.gz TAG` files the archive under bench/results/ with a tag.
#
#   PHASES="build tests calibrate hil bench anchor" scripts/device/h200.sh   # default: all but fidelity
#   PHASES="build fidelity" scripts/device/h200.sh
#
# Phases (run in this order):
#   build      the CLI and the GPU test binaries with CUDA and libtorch (build-device/)
#   tests      kernel tests (also under compute-sanitizer memcheck; MEMCHECK="" skips it),
#              executor tests (bf16 on the GPU); GPU_TESTS="executor" (or kernel, attention)
#              runs only those named
#   calibrate  `inferscale calibrate --executor gpu --grid full` (CAL_GRID=full_mixed: with
#              headline-shaped mixed steps; COPY_LANES=1: also --copy-lanes, the copy lanes'
#              speed, stall, duplex and issue time measured: loads alone, beside decode steps
#              and beside offloads; CAL_WARMUP=n: n warm-up steps a point instead of 2),
#              written over the shipped profile
#              -> h200-llama-3.1-8b.yaml and the measured points (held-out error in the profile;
#              with COPY_LANES, the lanes' points in calibration_h200_copy_lanes.csv)
#   hil        configs/headline.yaml hardware-in-the-loop at USERS (default 50 100 150 200),
#              with HIL_SET (extra --set arguments) if given, HIL_REPEATS times (default 1;
#              more: results headline_hil_U_rN); HIL_RUNS="2 3" runs those numbers (_r2, _r3),
#              so that repeats may span several device calls
#   first_wave kv_inject alone at 50 users with executor.settle_ms 0 and 200 (forward passes
#              before the first prefill step), SM clocks sampled (clocks_*.csv)
#   bench      `inferscale bench executor` (Llama-3.1-8B shape, random weights) with split-KV
#              attention on and off (BENCH_SPLIT_KV="on" runs only on; issue: GPU executor targets),
#              BENCH_REPS repetitions per row (default 9; about two minutes a grid)
#   anchor     the plain-PyTorch anchor (anchor_graph.py, carried as .cache/anchors/, a copy of
#              ../shared/anchors/) and, after phase bench, bench/anchor_ratio.py: the executor's
#              kv_inject TTFT over the anchor's CUDA-graph time at the same batch, k and lengths
#   graphs     kv_inject bench at batch 1, 16 and 64, k=0 and 50, with CUDA graphs on and off
#              (--cuda-graphs; on is the bench's default) and cuBLASLt instead of cuBLAS
#   blas       kv_inject bench at batch 1, 16 and 64, k=0 and 50, with the products on cuBLAS, on
#              cuBLASLt when of at most 64 rows (cublaslt_few_rows), twice each interleaved, and
#              all on cuBLASLt (--blas)
#   splits     kv_inject bench at batch 1 and 16, k=50, with the shortest split-KV key split at
#              1, 2, 4 and 8 tiles (--split-kv-min-tiles; 1 is the default plan)
#   pdl        kv_inject bench at batch 1, 16 and 64, k=0 and 50, with programmatic dependent
#              launch of the layer's own kernels (--pdl) on and off, twice each
#   tunable    kv_inject bench at batch 1, 16 and 64, k=0 and 50, with PyTorch's TunableOp choosing
#              each matrix product's cuBLAS / cuBLASLt algorithm, against the default choice
#   profile    every kernel's duration (ncu) in a batch-1, k=50 kv_inject bench step
#   ceilings   scripts/device/ceilings.py: copy bandwidth and bf16 matrix products with PyTorch
#   fidelity   configs/eval/fidelity_h200.yaml over every answerable LoCoMo question
#              (QUESTIONS=n: the first n)
#
# Inputs that do not travel with the tree must be carried: LoCoMo as .cache/locomo10 (a copy of
# ../shared/data/locomo10); for fidelity, the model (.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf,
# or the halves of `scripts/fetch-model.sh --split`, which may arrive in two calls: a half is
# kept in /tmp/inferscale-model between calls on the same machine).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}
WORK=$(mktemp -d)
mkdir -p "$OUT"
PHASES=${PHASES:-build tests calibrate hil bench anchor}
BUDGET_S=${BUDGET_S:-540}
USERS=${USERS:-50 100 150 200}
BUILD=${BUILD:-build-device}
LOCOMO=${LOCOMO:-.cache/locomo10}
# The GPU preset the calibration and the hardware-in-the-loop runs name (memory, PCIe): the
# card's own (h100 on an H100), unless GPU_PRESET says otherwise. Archive names stay h200_*.
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
  *H100*) GPU_PRESET=${GPU_PRESET:-h100} ;;
  *) GPU_PRESET=${GPU_PRESET:-h200} ;;
esac
START=$(date +%s)
SUMMARY=$WORK/summary.txt

remaining() { echo $((BUDGET_S - ($(date +%s) - START))); }
note() { echo "$*" | tee -a "$SUMMARY"; }
# step NAME CAP_S LOG CMD...: CMD with a timeout of min(CAP_S, what is left - 20 s).
step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local left=$(($(remaining) - 20))
  local t=$((cap < left ? cap : left))
  if ((t <= 5)); then
    note "  $name: skipped (no time left)"
    return 1
  fi
  echo "== $name (timeout ${t}s): $*" >>"$log"
  local t0=$(date +%s)
  timeout "$t" "$@" >>"$log" 2>&1
  local rc=$?
  note "  $name: rc=$rc in $(($(date +%s) - t0))s"
  return $rc
}
want() { [[ " $PHASES " == *" $1 "* ]]; }
# symbolize LOG: names the frames of the last crash report in LOG (the CLI prints
# module+offset for the faulting instruction and for return addresses on the stack) with
# addr2line, into the summary.
symbolize() {
  grep -q "fatal signal" "$1" || return 0
  sed -n '/fatal signal/,$p' "$1" | head -80 >>"$SUMMARY"
  sed -n '/fatal signal/,$p' "$1" | grep -o 'inferscale+0x[0-9a-f]*' | cut -d+ -f2 | head -48 |
    xargs -r addr2line -Cfpe "$BUILD/inferscale" | sed 's/^/    at /' >>"$SUMMARY"
  sed -i 's/fatal signal/fatal-signal (symbolized)/' "$1"
}

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "cpus $(nproc): $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  # Which GPU and host this was (a hash of the GPU's UUID: runs on the same GPU share it), and
  # where the GPU sits: its NUMA node and the CPUs near it against those the run may use (host
  # copies and the host's issue speed depend on it).
  echo "gpu id: $(nvidia-smi --query-gpu=uuid --format=csv,noheader | sha256sum | cut -c1-12)"
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | tr 'A-F' 'a-f')
  dev=/sys/bus/pci/devices/${bus: -12}
  echo "gpu pci ${bus: -12}: numa_node $(cat "$dev/numa_node" 2>/dev/null || echo ?)," \
    "local cpus $(cat "$dev/local_cpulist" 2>/dev/null || echo ?)," \
    "link $(cat "$dev/current_link_speed" 2>/dev/null || echo ?)" \
    "x$(cat "$dev/current_link_width" 2>/dev/null || echo ?)"
  echo "allowed cpus $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)," \
    "memory $(sed -n 's/^MemTotal:[[:space:]]*//p' /proc/meminfo)"
  lscpu 2>/dev/null | grep -E '^(NUMA|Socket|Core|Thread|CPU max MHz|Hypervisor)' |
    tr -s ' ' | paste -sd ';' -
  nvidia-smi topo -m 2>/dev/null | head -4
} >"$WORK/env.log" 2>&1
note "phases: $PHASES (budget ${BUDGET_S}s, gpu preset $GPU_PRESET)"

if want build; then
  TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  step configure 120 "$WORK/build.log" cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
    -DINFERSCALE_BUILD_BENCH=OFF
  step build 300 "$WORK/build.log" cmake --build "$BUILD" -j "$(nproc)" --target inferscale \
    kernels_gpu_tests kernels_attention_gpu_tests executor_gpu_tests -- -k 0
  grep -E "error" "$WORK/build.log" | head -20 >>"$SUMMARY"
fi
BIN=$BUILD/inferscale

if want tests; then
  for t in ${GPU_TESTS:-kernel attention executor}; do
    case $t in
      kernel) step kernel_tests 90 "$WORK/tests.log" "$BUILD/tests/kernels/kernels_gpu_tests" \
        --durations yes ;;
      attention) step attention_tests 90 "$WORK/tests.log" \
        "$BUILD/tests/kernels/kernels_attention_gpu_tests" --durations yes ;;
      executor) step executor_tests 120 "$WORK/tests.log" \
        "$BUILD/tests/executor/executor_gpu_tests" --durations yes ;;
      *) note "  GPU_TESTS: unknown '$t' (kernel, attention, executor)" ;;
    esac
  done
  for t in ${MEMCHECK-kernels_gpu_tests kernels_attention_gpu_tests}; do
    step "memcheck_$t" 150 "$WORK/tests.log" compute-sanitizer --tool memcheck \
      --error-exitcode 99 --print-limit 20 "$BUILD/tests/kernels/$t"
  done
  grep -hE "test cases|assertions|All tests passed|ERROR SUMMARY|bf16 end-to-end|FAILED" \
    "$WORK/tests.log" | sed 's/^/    /' >>"$SUMMARY"
fi

if want calibrate; then
  # Written over the shipped profile: the async_copies fields --copy-lanes does not measure
  # (duplex, batch_facts) are kept from it.
  cp configs/profiles/h200-llama-3.1-8b.yaml "$WORK/h200-llama-3.1-8b.yaml"
  # About 150 s with --copy-lanes at 19 lane points (8bd4abe); the 25-point lanes grid adds a
  # wave-sized point and prefills beside copies.
  step calibrate 260 "$WORK/calibrate.log" "$BIN" calibrate --executor gpu --model llama-3.1-8b \
    --gpu "$GPU_PRESET" --grid "${CAL_GRID:-full}" --out "$WORK/h200-llama-3.1-8b.yaml" \
    --points "$WORK/calibration_h200.csv" ${COPY_LANES:+--copy-lanes} \
    ${CAL_WARMUP:+--warmup "$CAL_WARMUP"}
  tail -34 "$WORK/calibrate.log" | sed 's/^/    /' >>"$SUMMARY"
fi

if want hil; then
  for r in ${HIL_RUNS:-$(seq 1 "${HIL_REPEATS:-1}")}; do
    suffix=$([ -n "${HIL_RUNS:-}" ] || [ "${HIL_REPEATS:-1}" -gt 1 ] && echo "_r$r")
    for u in $USERS; do
      step "hil_users_$u$suffix" 240 "$WORK/hil.log" "$BIN" run configs/headline.yaml \
        --no-progress --set executor.kind=gpu --set gpu="$GPU_PRESET" \
        --set trace.locomo.data="$LOCOMO" --set trace.locomo.users="$u" \
        --set experiment="headline_hil_$u$suffix" \
        --out "$WORK/results" ${HIL_SET:-}
      tail -6 "$WORK/hil.log" | sed 's/^/    /' >>"$SUMMARY"
      symbolize "$WORK/hil.log"
    done
  done
  rm -rf "$WORK"/results/*/.traces
fi

if want first_wave; then
  # kv_inject alone at 50 users (no host-tier traffic), without and with 200 ms of forward passes
  # before the first prefill step (executor.settle_ms; INFERSCALE_PRESTEP_BUSY_MS at 2f31a52),
  # the SM clock sampled every 20 ms: the run's first prefill wave measured 45 ms against 40 for
  # the second without them.
  for b in 0 200; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate --format=csv \
      -lms 20 >"$WORK/clocks_busy$b.csv" 2>&1 &
    smi=$!
    INFERSCALE_HOST_TRACE=1 step "first_wave_busy$b" 180 "$WORK/first_wave_busy$b.log" "$BIN" run \
      configs/headline.yaml --no-progress --runs kv_inject --set executor.kind=gpu \
      --set executor.settle_ms="$b" --set trace.locomo.data="$LOCOMO" \
      --set trace.locomo.users=50 --set experiment="first_wave_busy$b" \
      --set output.timeline=true --out "$WORK/results"
    kill "$smi" 2>/dev/null
    python3 - "$WORK/results/first_wave_busy$b/kv_inject/timeline.json" "$b" >>"$SUMMARY" <<'PY'
import json, sys
steps = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["name"] == "step"]
waves = [e for e in steps if e["args"]["prefills"] >= 30 and e["args"]["decodes"] == 0]
print(f"    busy {sys.argv[2]} ms: prefill waves (prefills, tokens, ms) " +
      ", ".join(f"({e['args']['prefills']}, {e['args']['tokens']}, {e['dur'] / 1000:.2f})"
                for e in waves))
PY
  done
fi

if want bench; then
  for sk in ${BENCH_SPLIT_KV:-on off}; do
    step "bench_split_kv_$sk" 300 "$WORK/bench_$sk.log" "$BIN" bench executor \
      --model llama-3.1-8b --device cuda --header 64 --fact 24 --query 24 --output 50 \
      --batch 1,16,64 --k 0,10,25,50 --reps "${BENCH_REPS:-9}" --split-kv "$sk" \
      --out "$WORK/executor_h200_split_kv_$sk.json"
    sed -n '/^mode/,$p' "$WORK/bench_$sk.log" | sed "s/^/    [$sk] /" >>"$SUMMARY"
  done
fi

if want anchor; then
  ANCHOR=${ANCHOR:-.cache/anchors/anchor_graph.py}
  if [ -f "$ANCHOR" ]; then
    step anchor 150 "$WORK/anchor.log" bash -c "python3 '$ANCHOR' >'$WORK/anchor_graph.jsonl'"
    sed 's/^/    /' "$WORK/anchor_graph.jsonl" >>"$SUMMARY"
    [ -f "$WORK/executor_h200_split_kv_on.json" ] && python3 bench/anchor_ratio.py \
      "$WORK/executor_h200_split_kv_on.json" "$WORK/anchor_graph.jsonl" | sed 's/^/    /' >>"$SUMMARY"
  else
    note "  anchor: not run ($ANCHOR missing: carry a copy of ../shared/anchors as .cache/anchors)"
  fi
fi

# ab_bench NAME LABEL FLAGS...: the kv_inject bench of the A/B phases (batch 1, 16 and 64, k=0
# and 50, 5 repetitions) with the bench's FLAGS (e.g. --pdl off), into executor_h200_NAME.json;
# its table goes to the summary under LABEL. Variables set before the call (PyTorch's) reach it.
ab_bench() {
  local name=$1 label=$2
  shift 2
  step "$name" 240 "$WORK/$name.log" "$BIN" bench executor --model llama-3.1-8b --device cuda \
    --header 64 --fact 24 --query 24 --output 50 --batch 1,16,64 --k 0,50 --modes kv_inject \
    --reps 5 --out "$WORK/executor_h200_$name.json" "$@"
  sed -n '/^mode/,$p' "$WORK/$name.log" | tail -7 | sed "s/^/    [$label] /" >>"$SUMMARY"
}

if want graphs; then
  for g in on off; do ab_bench "graphs_$g" "graphs $g" --cuda-graphs "$g"; done
  ab_bench graphs_on_cublaslt "graphs on, cublaslt" --blas cublaslt
fi

if want blas; then
  for i in 1 2; do
    for b in cublas cublaslt_few_rows; do ab_bench "blas_${b}_$i" "$b" --blas "$b"; done
  done
  ab_bench blas_cublaslt cublaslt --blas cublaslt
fi

if want splits; then
  for t in 1 2 4 8; do
    step "splits_min_tiles_$t" 90 "$WORK/splits.log" "$BIN" bench executor \
      --model llama-3.1-8b --device cuda --header 64 --fact 24 --query 24 --output 50 \
      --batch 1,16 --k 50 --modes kv_inject --split-kv-min-tiles "$t" \
      --out "$WORK/executor_h200_min_tiles_$t.json"
    sed -n '/^mode/,$p' "$WORK/splits.log" | tail -3 | sed "s/^/    [min tiles $t] /" >>"$SUMMARY"
  done
fi

if want pdl; then
  for i in 1 2; do
    for g in on off; do ab_bench "pdl_${g}_$i" "pdl $g" --pdl "$g"; done
  done
fi

if want tunable; then
  # PyTorch's TunableOp times every cuBLAS / cuBLASLt algorithm for each matrix-product shape the
  # bench meets (tuning outside CUDA graphs), writes the winners to a file, and a second run
  # with tuning off uses them inside the graphs; the third is the reference without TunableOp.
  TUNED=$WORK/tunableop_results.csv
  PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=1 PYTORCH_TUNABLEOP_FILENAME="$TUNED" \
    ab_bench tunable_tune "tunableop tuning, graphs off" --cuda-graphs off
  PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=0 PYTORCH_TUNABLEOP_FILENAME="$TUNED" \
    ab_bench tunable_on "tunableop tuned"
  ab_bench tunable_ref "no tunableop" --cuda-graphs on
  ls "$WORK"/tunableop_results* 2>/dev/null | sed 's/^/    tuned: /' >>"$SUMMARY"
fi

if want profile; then
  # Every kernel's duration (ncu, clocks left alone) over a batch-1, k=50 kv_inject bench: one
  # warm-up and one measured TTFT step plus one decode; bench/profile_table.py sums them.
  step ncu_batch1 240 "$WORK/profile.log" ncu --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum --csv --page raw --log-file "$WORK/ncu_batch1.csv" \
    "$BIN" bench executor --model llama-3.1-8b --device cuda --header 64 --fact 24 --query 24 \
    --output 2 --batch 1 --k 50 --modes kv_inject --reps 1 --warmup 1 \
    --out "$WORK/ncu_batch1_bench.json"
  tail -5 "$WORK/profile.log" | sed 's/^/    /' >>"$SUMMARY"
fi

if want ceilings; then
  step ceilings 60 "$WORK/ceilings.log" python3 scripts/device/ceilings.py
  sed 's/^/    /' "$WORK/ceilings.log" >>"$SUMMARY"
fi

if want fidelity; then
  MODEL=.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf
  KEEP=/tmp/inferscale-model
  mkdir -p "$KEEP"
  for p in part-1 part-2; do
    [ -f ".cache/models/split/$p" ] && cp ".cache/models/split/$p" "$KEEP/$p"
  done
  if [ ! -f "$MODEL" ] && [ -f "$KEEP/part-1" ] && [ -f "$KEEP/part-2" ]; then
    mkdir -p .cache/models && cat "$KEEP/part-1" "$KEEP/part-2" >"$MODEL"
  fi
  if [ -f "$MODEL" ] && [ -d "$LOCOMO" ]; then
    { sed -e "s|^model: .*|model: $MODEL|" -e "s|^questions: .*|questions: ${QUESTIONS:-0}|" \
        configs/eval/fidelity_h200.yaml
      echo "data: $LOCOMO"; } >"$WORK/fidelity.yaml"
    step fidelity 480 "$WORK/fidelity.log" "$BIN" eval fidelity "$WORK/fidelity.yaml" \
      --out "$WORK/fidelity"
    tail -40 "$WORK/fidelity.log" | sed 's/^/    /' >>"$SUMMARY"
  else
    note "  fidelity: not run (model halves present: $(ls "$KEEP" | tr '\n' ' '); LoCoMo at $LOCOMO)"
  fi
fi

note "used $(($(date +%s) - START))s"
tail -c 200000 "$WORK/build.log" >"$WORK/build.tail.log" 2>/dev/null && rm -f "$WORK/build.log"
cp "$SUMMARY" "$OUT/summary.txt"
tar -C "$WORK" -czf "$OUT/h200.tar.gz" . && rm -rf "$WORK"
cat "$OUT/summary.txt"
