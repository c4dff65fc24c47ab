#!/usr/bin/env python3
"""The cost model's tensor-parallel and fp8-weight predictions against published throughputs.

NVIDIA's TensorRT-LLM performance overview (docs/source/performance/perf-overview.md of
NVIDIA/TensorRT-LLM, the release whose tables list Llama 3.3 70B and Llama 3.1 405B and 8B
side by side) reports the total output throughput (output tokens / total latency) of
`trtllm-bench throughput`: every request queued at once, fixed input and output lengths
(ISL/OSL), FP8 weights, the PyTorch backend. This script replays the same workloads on the
uncalibrated roofline cost model (`executor.kind: cost_model`, `weights: fp8`) and writes the
ratios to bench/results/tp_validation.md (and .csv).

    python3 bench/tp_validation.py [--bin build/inferscale] [--work results/tp_validation]

Each point is one `inferscale run` of a text-mode trace without facts (k = 0, no header or
footer), all requests at t = 0, `replicas: 1` at the published TP degree.
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import time

# (model preset, label, gpu, tp) -> published tokens/s per ISL/OSL, in the order of PAIRS.
PAIRS = [(128, 128), (128, 2048), (500, 2000), (1000, 1000), (2048, 128), (2048, 2048),
         (5000, 500)]
# Requests per pair, as the overview's reproduction table lists them.
REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (500, 2000): 3000, (1000, 1000): 3000,
            (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500}
PUBLISHED = [
    ("llama-3.1-8b", "Llama 3.1 8B", "h200", 1,
     [27911, 26221, 20770, 17744, 3538, 12194, 3902]),
    ("llama-3.1-8b", "Llama 3.1 8B", "h100", 1,
     [28312, 22714, 17660, 15220, 3450, 9305, 3459]),
    # Llama 3.3 70B has Llama 3.1 70B's shape (the same config.json but for the weights).
    ("llama-3.1-70b", "Llama 3.3 70B", "h200", 1,
     [3803, 4336, 3666, 2909, 442, 2003, 566]),
    ("llama-3.1-70b", "Llama 3.3 70B", "h100", 2,
     [6378, 6651, 5222, 4205, 762, 3082, 898]),
    ("llama-3.1-405b", "Llama 3.1 405B", "h200", 8,
     [3814, 5348, 4724, 3330, 456, 2948, 650]),
    ("llama-3.1-405b", "Llama 3.1 405B", "h100", 8,
     [3627, 4340, 3994, 2919, 453, 2296, 610]),
]
MAX_SEQS = 2048
MAX_BATCH_TOKENS = 8192


def write_trace(path, isl, osl, n):
    if os.path.exists(path):
        return
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps({"type": "header", "version": 1, "source": "tp_validation",
                            "k": 0, "description": f"ISL {isl}, OSL {osl}, {n} requests"}) + "\n")
        for i in range(n):
            f.write(json.dumps({"type": "request", "id": i, "user": i, "time": 0,
                                "query_tokens": isl, "output_tokens": osl, "facts": []}) + "\n")
    os.replace(path + ".tmp", path)


def run_point(binary, work, model, gpu, tp, isl, osl, kv):
    """Runs one point twice: at MAX_SEQS, then with as many running requests as the KV pool
    holds at their full length (TensorRT-LLM's default admission, GUARANTEED_NO_EVICT, admits a
    request only when its whole sequence fits). Returns the second run's tokens/s, the requests
    and the running requests it allowed."""
    n = REQUESTS[(isl, osl)]
    trace = os.path.join(work, f"isl{isl}_osl{osl}.jsonl")
    write_trace(trace, isl, osl, n)
    summary = run_once(binary, work, trace, model, gpu, tp, isl, osl, kv, MAX_SEQS)
    block = 16
    kv_tokens = summary["invariants"]["kv_blocks_total"] * block
    seqs = max(1, min(MAX_SEQS, kv_tokens // (-(-(isl + osl) // block) * block)))
    summary = run_once(binary, work, trace, model, gpu, tp, isl, osl, kv, seqs)
    return summary["throughput"]["tokens_per_s"], n, seqs, summary["work"]["preemptions"]


def run_once(binary, work, trace, model, gpu, tp, isl, osl, kv, max_seqs):
    name = f"{model}_{gpu}_tp{tp}_{isl}_{osl}_kv{kv}"
    config = os.path.join(work, name + ".yaml")
    with open(config, "w") as f:
        f.write(f"""experiment: {name}
trace: {trace}
model: {model}
gpu: {gpu}
tp: {tp}
weights: fp8
kv_cache: {kv}
replicas: 1
scheduler: {{max_batch_tokens: {MAX_BATCH_TOKENS}, max_seqs: {max_seqs}}}
serving: {{mode: text, k: 0, header_tokens: 0, footer_tokens: 0}}
output: {{dir: {work}/results, requests_csv: false}}
""")
    subprocess.run([binary, "run", config, "--no-progress"], check=True,
                   stdout=subprocess.DEVNULL)
    (summary,) = glob.glob(os.path.join(work, "results", name, "*", "summary.json"))
    with open(summary) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/inferscale")
    ap.add_argument("--work", default="results/tp_validation")
    ap.add_argument("--out", default="bench/results/tp_validation")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = []
    start = time.time()
    for model, label, gpu, tp, published in PUBLISHED:
        for (isl, osl), pub in zip(PAIRS, published):
            row = {"model": label, "preset": model, "gpu": gpu, "tp": tp, "isl": isl, "osl": osl,
                   "requests": REQUESTS[(isl, osl)], "published_tok_s": pub}
            for kv in ("bf16", "fp8"):
                sim, _, seqs, preempted = run_point(args.bin, args.work, model, gpu, tp, isl, osl,
                                                    kv)
                row.update({f"kv_{kv}_max_seqs": seqs, f"kv_{kv}_preemptions": preempted,
                            f"kv_{kv}_tok_s": round(sim, 1), f"kv_{kv}_ratio": round(sim / pub, 3)})
            rows.append(row)
            print(f"{label:15} {gpu} tp{tp} {isl:>5}/{osl:<5} published {pub:>6}  simulated"
                  f" {row['kv_bf16_tok_s']:9.0f} (x{row['kv_bf16_ratio']:.2f}) with a bf16 KV"
                  f" cache, {row['kv_fp8_tok_s']:9.0f} (x{row['kv_fp8_ratio']:.2f}) with fp8",
                  file=sys.stderr)
    with open(args.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} points in {time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
