#!/usr/bin/env python3
"""Markdown table of bench/policy_throughput's JSON output (--benchmark_out=FILE
--benchmark_out_format=json): lookups/s per policy and fact count, median and best over the
repetitions, against the 20 M lookups/s target of LRU, FIFO, CLOCK, SIEVE and S3-FIFO."""
import collections
import json
import statistics
import sys

TARGETED = {"lru", "fifo", "clock", "sieve", "s3fifo"}

runs = json.load(open(sys.argv[1]))["benchmarks"]
rates = collections.defaultdict(list)
miss = {}
for b in runs:
    if b.get("run_type") != "iteration":
        continue
    _, policy, objects = b["run_name"].split("/")[:3]
    n = int(objects.split(":")[1])
    rates[(policy, n)].append(b["lookups_per_s"] / 1e6)
    miss[(policy, n)] = b["miss_ratio"]

sizes = sorted({n for _, n in rates}, reverse=True)
header = "| policy | " + " | ".join(
    f"{n // 1000}k facts: median (best) M lookups/s | miss ratio" for n in sizes) + " | 20 M target |"
print(header)
print("|---" * (1 + 2 * len(sizes) + 1) + "|")
for policy in sorted({p for p, _ in rates}):
    cells = []
    for n in sizes:
        r = rates[(policy, n)]
        cells.append(f"{statistics.median(r):.1f} ({max(r):.1f}) | {miss[(policy, n)]:.3f}")
    target = ""
    if policy in TARGETED:
        median_large = statistics.median(rates[(policy, sizes[0])])
        target = ("met" if median_large >= 20
                  else f"{median_large / 20:.0%} of it at {sizes[0] // 1000}k (median)")
    print(f"| `{policy}` | " + " | ".join(cells) + f" | {target} |")
