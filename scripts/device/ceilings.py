#!/usr/bin/env python3
"""The GPU's ceilings with PyTorch, for comparison with the executor's figures: device-to-device
copy bandwidth, a large bf16 matrix product, and a few-row (decode-shaped) bf16 GEMM."""
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
print(f"few-row bf16 GEMM 24x4096x28672: {w.numel() * 2 / t / 1e12:.2f} TB/s of weights")
