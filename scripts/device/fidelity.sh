#!/usr/bin/env bash
# On a GPU machine (H200, PyTorch 2.x with CUDA, nvcc; no network): build the CLI with the CUDA
# executor and run the full fidelity table (configs/eval/fidelity_h200.yaml: every answerable
# LoCoMo question, k in {5, 10, 20, 50}, w in {0, 5, 20, 50}, bf16) plus the recompute
# trade-off. Nothing is fetched: the model and LoCoMo must be in the tree (carried):
#   MODEL   default .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf; when absent, the halves
#           written by `scripts/fetch-model.sh --split` under .cache/models/split/ are joined
#   LOCOMO  default .cache/locomo10 (a copy of ../shared/data/locomo10), else ../shared/...
# Outputs (fidelity.csv, fidelity_questions.csv, summary.md/json, logs) go to $OUT (default
# ./device-out); the table is printed last.
#
#   scripts/device/fidelity.sh                    # the full table
#   QUESTIONS=300 scripts/device/fidelity.sh      # a subset (the first 300 questions)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BUILD=${BUILD:-build-device}
MODEL=${MODEL:-.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}
LOCOMO=${LOCOMO:-.cache/locomo10}
[ -d "$LOCOMO" ] || LOCOMO=../shared/data/locomo10
START=$(date +%s)

if [ ! -f "$MODEL" ] && [ -f .cache/models/split/part-1 ] && [ -f .cache/models/split/part-2 ]; then
  cat .cache/models/split/part-1 .cache/models/split/part-2 >"$MODEL.tmp" && mv "$MODEL.tmp" "$MODEL"
  (cd .cache/models && sha256sum -c split/SHA256SUMS) >>"$OUT/env.log" 2>&1 ||
    { echo "joined model fails its checksum"; exit 1; }
fi
[ -f "$MODEL" ] || { echo "no model at $MODEL (carry .cache/models)"; exit 1; }
[ -d "$LOCOMO" ] || { echo "no LoCoMo at $LOCOMO (carry .cache/locomo10)"; exit 1; }

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} >>"$OUT/env.log" 2>&1

TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DTORCH_CUDA_ARCH_LIST=9.0 -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" -DCMAKE_CUDA_COMPILER="$NVCC" \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined -DINFERSCALE_BUILD_BENCH=OFF \
  -DINFERSCALE_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1
cmake --build "$BUILD" -j "$(nproc)" --target inferscale >>"$OUT/build.log" 2>&1 ||
  { grep -E "error" "$OUT/build.log" | head -20; exit 1; }
BUILT=$(date +%s)

sed -e "s|^model: .*|model: $MODEL|" -e "s|^data: .*|data: $LOCOMO|" \
  -e "s|^questions: .*|questions: ${QUESTIONS:-0}|" configs/eval/fidelity_h200.yaml >/tmp/fidelity.yaml
# $OUT keeps at most 7 files: env.log, build.log, eval.log and the four outputs.
timeout "${EVAL_TIMEOUT_S:-480}" "$BUILD/inferscale" eval fidelity /tmp/fidelity.yaml \
  --out "$OUT" >/tmp/fidelity_table.md 2>"$OUT/eval.log"
RC=$?
tail -c 200000 "$OUT/build.log" >/tmp/build.log && mv /tmp/build.log "$OUT/build.log"
echo "== build $((BUILT - START)) s, eval rc=$RC in $(($(date +%s) - BUILT)) s"
tail -3 "$OUT/eval.log"
cat /tmp/fidelity_table.md
