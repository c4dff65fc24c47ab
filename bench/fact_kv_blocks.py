#!/usr/bin/env python3
"""Fact KV of a trace at exact token counts and in the whole 16-token blocks that the store and the
GPU fact pool hold (`inferscale trace stats --model` reports the first).

    python3 bench/fact_kv_blocks.py TRACE.jsonl [KV_BYTES_PER_TOKEN]   # default 131072 (Llama-3.1-8B, bf16)
"""
import json
import sys

BLOCK = 16
path = sys.argv[1]
per_token = int(sys.argv[2]) if len(sys.argv) > 2 else 131072
exact = blocks = facts = 0
with open(path) as f:
    for line in f:
        r = json.loads(line)
        if r.get("type") in ("fact", "memory_write"):
            facts += 1
            exact += r["tokens"] * per_token
            blocks += -(-r["tokens"] // BLOCK) * BLOCK * per_token
gib = 2**30
print(f"{facts} facts: {exact / gib:.1f} GiB at exact token counts, "
      f"{blocks / gib:.1f} GiB in {BLOCK}-token blocks ({blocks / exact:.2f}x)")
