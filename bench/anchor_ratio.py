#!/usr/bin/env python3
"""The GPU executor's query-only prefill time over the plain-PyTorch anchor's CUDA-graph time:

    python3 bench/anchor_ratio.py EXECUTOR.json ANCHOR.jsonl

EXECUTOR.json is `inferscale bench executor --out` (kv_inject rows: time to first token of a
query prefilled over an injected context, the inject copy included); ANCHOR.jsonl is the anchor's
output, one JSON line per (batch, k): a query prefilled over a context already in place (no
copy), eager and with CUDA graphs. Prints a Markdown table of the (batch, k) both have.
"""
import json
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            bench = json.load(f)
        with open(argv[2]) as f:
            anchor = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    q = bench.get("settings", {}).get("query")
    rows = {(r["batch"], r["k"]): r for r in bench["rows"] if r["mode"] == "kv_inject"}
    print("| batch | k | context tokens | executor TTFT ms | anchor graph ms | anchor eager ms"
          " | executor / anchor graph |")
    print("|---|---|---|---|---|---|---|")
    for a in anchor:
        r = rows.get((a["batch"], a["k"]))
        if r is None:
            continue
        if q is not None and q != a["query"]:
            print(f"error: query lengths differ ({q} vs {a['query']})", file=sys.stderr)
            return 2
        print(f"| {a['batch']} | {a['k']} | {a['ctx']} | {r['ttft_ms']:.3f} | {a['graph_ms']:.3f}"
              f" | {a['eager_ms']:.3f} | {r['ttft_ms'] / a['graph_ms']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
