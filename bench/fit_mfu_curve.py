#!/usr/bin/env python3
"""The GPU presets' `mfu_curve` from a calibration's measured prefill steps.

For each prefill-only point of a `inferscale calibrate --points` CSV (no injected facts, no
earlier context, no encodes or loads beside it), the matrix-product rate that makes the
roofline's compute term match the measured step is

    rate(T) = gemm_flops / (measured - step_overhead - attention_flops / attention_rate)

with the GPU preset's step overhead and attention rate (mfu x 0.7 of the bf16 peak). The curve
is the median rate at each token count T over the median at the largest counts (the plateau),
from 128 tokens up: below that the step is bound by reading the weights, which the roofline's
memory term prices, and the fitted "rate" would only repeat the memory time.

    python3 bench/fit_mfu_curve.py bench/results/calibration_h200.csv --gpu configs/gpus/h200.yaml
"""
import argparse
import csv
import statistics

import yaml


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("points", help="calibration points CSV (inferscale calibrate --points)")
    ap.add_argument("--gpu", required=True, help="the GPU preset the points were measured on")
    ap.add_argument("--from-tokens", type=int, default=128)
    ap.add_argument("--plateau-tokens", type=int, default=2048,
                    help="steps of at least this many tokens form the plateau")
    args = ap.parse_args()
    gpu = yaml.safe_load(open(args.gpu))
    peak = gpu["bf16_tflops"] * 1e12
    attention_rate = peak * gpu["mfu"] * 0.7
    overhead_ns = gpu.get("step_overhead_us", 500) * 1e3
    by_tokens = {}
    for r in csv.DictReader(open(args.points)):
        label = r["label"]
        if not label.startswith("prefill") or " k" in label or "after" in label or "+" in label:
            continue
        t = int(float(r["tokens"]))
        compute_ns = (float(r["measured_ns"]) - overhead_ns -
                      float(r["attention_flops"]) / attention_rate * 1e9)
        by_tokens.setdefault(t, []).append(float(r["gemm_flops"]) / compute_ns * 1e9)
    plateau = statistics.median(
        x for t, xs in by_tokens.items() if t >= args.plateau_tokens for x in xs)
    print(f"# plateau: {plateau / 1e12:.0f} TFLOP/s = {plateau / peak:.3f} of the bf16 peak")
    points = []
    for t in sorted(by_tokens):
        if t < args.from_tokens:
            continue
        factor = min(1.0, statistics.median(by_tokens[t]) / plateau)
        print(f"# {t:5d} tokens: {len(by_tokens[t])} points, median "
              f"{statistics.median(by_tokens[t]) / 1e12:.0f} TFLOP/s, factor {factor:.2f}")
        points.append((t, factor))
        if t >= args.plateau_tokens:
            break
    print("mfu_curve: [" + ", ".join(f"[{t}, {f:.2f}]" for t, f in points) + "]")


if __name__ == "__main__":
    main()
