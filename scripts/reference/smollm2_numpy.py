#!/usr/bin/env python3
"""An independent reference of SmolLM2-135M-Instruct in NumPy (fp32), straight from the GGUF:
weights dequantized by the `gguf` package, llama.cpp's layout kept as stored (query and key rows
permuted, so rotary pairs are interleaved (2i, 2i+1)), tokens from the `tokenizers` package
(smollm2_tokenizer.py). The C++ path reads the same file with its own dequantization, undoes
the permutation and rotates halves (NeoX): agreement checks both.

    python3 scripts/reference/smollm2_numpy.py compare GGUF INFERSCALE [--golden OUT.json]
        logits of fixed prompts from NumPy and from `inferscale eval logits`; prints the largest
        differences; --golden also writes the test file of reference values
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smollm2_tokenizer import build  # noqa: E402

PROMPTS = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
    "<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful assistant with a memory of the user. Answer the "
    "user's question in a few words, using these memories:\n- Caroline adopted a dog named Max "
    "in 2023.\n- Melanie painted a lake sunrise last year.\n<|im_end|>\n<|im_start|>user\n"
    "What is the name of Caroline's dog?<|im_end|>\n<|im_start|>assistant\n",
    "The quick brown fox jumps over the lazy dog. 1234567890",
    "Once upon a time",
]


class Model:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        f = lambda k: r.fields[k].contents()
        self.layers = f("llama.block_count")
        self.heads = f("llama.attention.head_count")
        self.kv_heads = f("llama.attention.head_count_kv")
        self.hidden = f("llama.embedding_length")
        self.head_dim = self.hidden // self.heads
        self.theta = f("llama.rope.freq_base")
        self.eps = f("llama.attention.layer_norm_rms_epsilon")
        self.w = {}
        for t in r.tensors:
            a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            self.w[t.name] = a.reshape([int(x) for x in reversed(t.shape)])  # [out, in]

    def rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x, pos):
        # llama.cpp "normal" rotary on the permuted rows: pairs (2i, 2i+1), angle p * theta^(-2i/d)
        d = self.head_dim
        inv = self.theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        ang = np.outer(pos, inv)  # [T, d/2]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out.astype(np.float32)

    def logits(self, ids):
        T, H, KV, D = len(ids), self.heads, self.kv_heads, self.head_dim
        h = self.w["token_embd.weight"][ids]
        pos = np.arange(T)
        mask = np.triu(np.full((T, T), -np.inf, dtype=np.float32), 1)
        for l in range(self.layers):
            p = f"blk.{l}."
            x = self.rms(h, self.w[p + "attn_norm.weight"])
            q = self.rope((x @ self.w[p + "attn_q.weight"].T).reshape(T, H, D), pos)
            k = self.rope((x @ self.w[p + "attn_k.weight"].T).reshape(T, KV, D), pos)
            v = (x @ self.w[p + "attn_v.weight"].T).reshape(T, KV, D)
            k = np.repeat(k, H // KV, axis=1)
            v = np.repeat(v, H // KV, axis=1)
            s = np.einsum("thd,shd->hts", q, k) / np.sqrt(D) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            o = np.einsum("hts,shd->thd", s, v).reshape(T, H * D)
            h = h + o @ self.w[p + "attn_output.weight"].T
            x = self.rms(h, self.w[p + "ffn_norm.weight"])
            g = x @ self.w[p + "ffn_gate.weight"].T
            u = x @ self.w[p + "ffn_up.weight"].T
            h = h + (g / (1 + np.exp(-g)) * u) @ self.w[p + "ffn_down.weight"].T
        last = self.rms(h[-1:], self.w["output_norm.weight"])
        head = self.w.get("output.weight", self.w["token_embd.weight"])
        return (last @ head.T)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["compare"])
    ap.add_argument("gguf")
    ap.add_argument("inferscale", help="the inferscale binary, or - to skip the comparison")
    ap.add_argument("--golden")
    a = ap.parse_args()
    tok = build(a.gguf)
    model = Model(a.gguf)
    ref = np.stack([model.logits(tok.encode(p).ids) for p in PROMPTS])
    if a.golden:
        rng = np.random.default_rng(0)
        cases = []
        for i, p in enumerate(PROMPTS):
            ids = sorted(set(np.argsort(-ref[i])[:20].tolist()) |
                         set(rng.choice(ref.shape[1], 100, replace=False).tolist()))
            cases.append({"text": p, "token_ids": tok.encode(p).ids,
                          "logits": {str(j): float(ref[i][j]) for j in ids},
                          "max_abs_logit": float(np.abs(ref[i]).max())})
        with open(a.golden, "w") as f:
            json.dump(cases, f, indent=1)
            f.write("\n")
        print("wrote", a.golden)
    if a.inferscale == "-":
        return
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "p.jsonl"), os.path.join(d, "logits.f32")
        with open(src, "w") as f:
            for p in PROMPTS:
                f.write(json.dumps({"text": p}) + "\n")
        subprocess.run([a.inferscale, "eval", "logits", "--model", a.gguf, "--in", src, "--out",
                        dst], check=True)
        ours = np.fromfile(dst, dtype=np.float32).reshape(len(PROMPTS), -1)
    ok = True
    for i, p in enumerate(PROMPTS):
        diff = np.abs(ours[i] - ref[i])
        scale = np.abs(ref[i]).max()
        top_ref, top_ours = np.argsort(-ref[i])[:10], np.argsort(-ours[i])[:10]
        rel = diff.max() / scale
        print(f"prompt {i}: {len(tok.encode(p).ids)} tokens, max |diff| {diff.max():.3e} "
              f"(largest logit {scale:.2f}, relative {rel:.2e}), mean |diff| {diff.mean():.2e}, "
              f"top-1 {top_ref[0]} vs {top_ours[0]}, top-10 equal {list(top_ref) == list(top_ours)}")
        ok = ok and rel <= 1e-3 and top_ref[0] == top_ours[0]
    print("PASS" if ok else "FAIL", "(tolerance: max |diff| <= 1e-3 x largest |logit|, same top-1)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
