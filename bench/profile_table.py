#!/usr/bin/env python3
"""Where a batch-1 kv_inject step's time goes, from ncu's per-kernel durations.

Input: the CSV that `scripts/device/h200.sh` (phase `profile`) writes with
`ncu --metrics gpu__time_duration.sum --csv --page raw` over
`inferscale bench executor --batch 1 --k 50 --modes kv_inject --output 2 --reps 1 --warmup 1`,
and that bench's JSON (the step times it measured with CUDA events, without ncu).

The measured TTFT step is the kernels from the last fused inject launch to the first argmax
after it; the decode step follows, up to the next argmax. Prints a Markdown table per step:
kernels by kind, their count and summed duration, against the step time the bench measured.

Usage: bench/profile_table.py NCU_CSV BENCH_JSON (a bench JSON measured without the profiler)

--kernels OUT.csv also writes the profile's kernels (name, duration in ms) in order, the part of
ncu's CSV this script reads, small enough to keep beside the table.

--launches SUBSTRING prints, instead of the step tables, every launch configuration of the
kernels whose name contains SUBSTRING: name, grid, launches and mean duration over the whole
profile (warm-up and measured steps alike).
"""
import csv
import json
import sys

KINDS = [  # (kind, substrings of the kernel name, case-insensitive), first match wins
    ("matrix products: split-K reduction", ["splitKreduce"]),
    ("fused inject", ["inject"]),
    ("kv_append (RoPE + cache write)", ["kv_append"]),
    ("split-KV attention: partials", ["split_kv_attention_kernel"]),
    ("split-KV attention: combine", ["split_kv_combine"]),
    ("flash attention", ["flash"]),
    ("RMSNorm", ["rms_norm"]),
    ("SiLU x mul", ["silu_mul"]),
    ("staged copies", ["staged_copy"]),
    ("argmax / sampling", ["ArgMax"]),  # not "reduce_kernel": cuBLAS's split-K reduction matches
    ("matrix products", ["gemm", "nvjet", "cutlass", "sm90", "xmma"]),
]


def kind_of(name):
    low = name.lower()
    for kind, keys in KINDS:
        if any(k.lower() in low for k in keys):
            return kind
    return "other (copies, elementwise)"


def read_kernels(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own messages are not quoted
    rows = list(csv.reader(lines))
    header = rows[0]
    name_col = header.index("Kernel Name")
    time_col = header.index("gpu__time_duration.sum")
    grid_col = header.index("Grid Size") if "Grid Size" in header else None
    unit = rows[1][time_col] if len(rows) > 1 else "nsecond"
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0}.get(unit, None)
    out = []
    for r in rows[1:]:
        try:
            v = float(r[time_col].replace(",", ""))
        except ValueError:
            continue  # the units row
        grid = r[grid_col] if grid_col is not None else ""
        out.append((r[name_col], v * (scale if scale is not None else 1e-6), grid))
    return out


def is_argmax(name):
    return kind_of(name) == "argmax / sampling"


def table(title, kernels, measured_ms):
    total = sum(t for _, t, _ in kernels)
    by = {}
    for n, t, _ in kernels:
        k = kind_of(n)
        c, s = by.get(k, (0, 0.0))
        by[k] = (c + 1, s + t)
    print(f"### {title}\n")
    print("| kernels | count | ms | share of kernel time |")
    print("|---|---:|---:|---:|")
    for k, (c, s) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"| {k} | {c} | {s:.3f} | {100 * s / total:.1f} % |")
    print(f"| **all kernels** | {len(kernels)} | {total:.3f} | |")
    if measured_ms:
        gap = measured_ms - total
        print(f"\nStep time measured without the profiler (CUDA events): {measured_ms:.3f} ms; "
              f"kernels sum to {total:.3f} ms, so {gap:.3f} ms ({100 * gap / measured_ms:.1f} %) "
              f"is between kernels (launch gaps, host-side waits).\n")


def launches(kernels, substring):
    by = {}
    for n, t, grid in kernels:
        if substring in n:
            by.setdefault((n, grid), []).append(t)
    print("| kernel | grid | launches | mean us |")
    print("|---|---|---:|---:|")
    for (n, grid), ts in sorted(by.items()):
        print(f"| `{n}` | {grid} | {len(ts)} | {1000 * sum(ts) / len(ts):.2f} |")


def main():
    args = sys.argv[1:]
    keep = None
    if "--launches" in args:  # bench/profile_table.py --launches SUBSTRING NCU_CSV
        i = args.index("--launches")
        substring = args[i + 1]
        del args[i:i + 2]
        if len(args) != 1:
            sys.exit(__doc__)
        launches(read_kernels(args[0]), substring)
        return
    if "--kernels" in args:
        i = args.index("--kernels")
        keep = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    kernels = read_kernels(args[0])
    if keep:
        with open(keep, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kernel", "ms"])
            for n, t, _ in kernels:
                w.writerow([n, f"{t:.6f}"])
    bench = json.load(open(args[1]))
    rows = bench["rows"] if isinstance(bench, dict) and "rows" in bench else bench
    row = next(r for r in rows if r["mode"] == "kv_inject" and r["batch"] == 1 and r["k"] == 50)
    inj = [i for i, (n, _, _) in enumerate(kernels) if kind_of(n) == "fused inject"]
    if not inj:
        sys.exit("no inject kernel in the profile")
    start = inj[-1]
    end = next(i for i in range(start, len(kernels)) if is_argmax(kernels[i][0]))
    ttft = kernels[start:end + 1]
    dend = next((i for i in range(end + 1, len(kernels)) if is_argmax(kernels[i][0])), None)
    print(f"{len(kernels)} kernels profiled; batch 1, k = {row['k']}\n")
    table("TTFT step (query-only prefill with 50 injected facts)", ttft, row.get("ttft_ms"))
    if dend is not None:
        table("Decode step (one token)", kernels[end + 1:dend + 1], row.get("tpot_ms"))


if __name__ == "__main__":
    main()
