#!/usr/bin/env bash
# On a GPU machine (H200, PyTorch 2.x with CUDA, nvcc): build the CUDA executor, run the GPU
# tests (kernels vs references, also under compute-sanitizer memcheck; the bf16 executor
# checks), run `inferscale bench executor` on a random Llama-3.1-8B-shaped model, and measure the
# two ceilings (device copy bandwidth, bf16 matrix product). Logs and the JSON go to $OUT
# (default: ./device-out); a short summary table is printed last.
#
#   scripts/device/gpu_executor.sh            # everything, within BUDGET_S seconds (default 500)
#   SKIP_BENCH=1 scripts/device/gpu_executor.sh   # build and tests only
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-500}
START=$(date +%s)
BUILD=${BUILD:-build-device}
declare -A STATUS

remaining() { echo $((BUDGET_S - ($(date +%s) - START))); }
# step NAME CAP_S LOG CMD...: runs CMD with a timeout of min(CAP_S, remaining - 5), logging.
step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local left=$(($(remaining) - 5))
  local t=$((cap < left ? cap : left))
  if ((t <= 5)); then
    STATUS[$name]="skipped (no time left)"
    return 1
  fi
  echo "== $name (timeout ${t}s)" | tee -a "$log"
  local t0=$(date +%s)
  timeout "$t" "$@" >>"$log" 2>&1
  local rc=$?
  STATUS[$name]="rc=$rc in $(($(date +%s) - t0))s"
  return $rc
}

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -2
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  nproc
} >"$OUT/env.log" 2>&1

TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
step configure 120 "$OUT/build.log" cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
  -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
  -DINFERSCALE_BUILD_BENCH=OFF
# One build of everything the run needs; -k 0 keeps going past a failing target, so the bench
# can fall back to inferscale-bench (the same command group) if the full CLI does not build.
step build 330 "$OUT/build.log" cmake --build "$BUILD" -j "$(nproc)" --target kernels_gpu_tests \
  executor_gpu_tests inferscale_bench inferscale -- -k 0
BENCH_BIN="$BUILD/inferscale"
[ -x "$BENCH_BIN" ] || BENCH_BIN="$BUILD/inferscale-bench"

step executor_tests 90 "$OUT/executor_tests.log" "$BUILD/tests/executor/executor_gpu_tests" \
  --durations yes
step kernel_tests 60 "$OUT/kernel_tests.log" "$BUILD/tests/kernels/kernels_gpu_tests" \
  --durations yes

[ -n "${SKIP_BENCH:-}" ] && STATUS[bench]="skipped (SKIP_BENCH)" ||
  step bench 200 "$OUT/bench.log" "$BENCH_BIN" bench executor --model llama-3.1-8b --device cuda \
  --header 64 --fact 24 --query 24 --output 50 --batch 1,16,64 --k 0,10,25,50 \
  --out "$OUT/executor_h200.json"

step sanitizer 150 "$OUT/sanitizer.log" compute-sanitizer --tool memcheck --error-exitcode 99 \
  --print-limit 20 "$BUILD/tests/kernels/kernels_gpu_tests"

step ceilings 40 "$OUT/ceilings.log" python3 - <<'PY'
import torch
torch.manual_seed(0)
def timed(fn, reps=10):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / reps / 1e3
src = torch.randn(2 * 1024**3 // 2, dtype=torch.bfloat16, device="cuda")  # 2 GiB
dst = torch.empty_like(src)
t = timed(lambda: dst.copy_(src))
print(f"device copy: {2 * src.numel() * 2 / t / 1e12:.2f} TB/s (read + write of 2 GiB)")
a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
t = timed(lambda: a @ b)
print(f"bf16 matmul 8192^3: {2 * 8192**3 / t / 1e12:.0f} TFLOP/s")
x = torch.randn(24, 4096, dtype=torch.bfloat16, device="cuda")
w = torch.randn(28672, 4096, dtype=torch.bfloat16, device="cuda")
t = timed(lambda: x @ w.t(), reps=50)
print(f"skinny bf16 GEMM 24x4096x28672: {w.numel() * 2 / t / 1e12:.2f} TB/s of weights")
PY

echo
echo "== summary (budget ${BUDGET_S}s, used $(($(date +%s) - START))s)"
for s in configure build executor_tests kernel_tests bench sanitizer ceilings; do
  printf '  %-15s %s\n' "$s" "${STATUS[$s]:-not run}"
done
grep -h "bf16 end-to-end" "$OUT/executor_tests.log" 2>/dev/null | sed 's/^/  /'
grep -hE "test cases|assertions|All tests passed" "$OUT/executor_tests.log" "$OUT/kernel_tests.log" \
  2>/dev/null | sed 's/^/  /'
grep -hE "ERROR SUMMARY" "$OUT/sanitizer.log" 2>/dev/null | sed 's/^/  sanitizer: /'
grep -h "TB/s\|TFLOP" "$OUT/ceilings.log" 2>/dev/null | sed 's/^/  /'
[[ "${STATUS[build]:-}" == rc=0* ]] || grep -E "error|Error" "$OUT/build.log" | head -20
[ -f "$OUT/executor_h200.json" ] && sed -n '/^mode/,$p' "$OUT/bench.log"
exit 0
