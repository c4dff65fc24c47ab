#!/usr/bin/env python3
"""An independent tokenizer for the GGUF's vocabulary: the Hugging Face `tokenizers` package
(Rust BPE) configured from the GGUF metadata with SmolLM2's pre-tokenizer (Digits with
individual digits, then ByteLevel without a prefix space) and special tokens.

    python3 scripts/reference/smollm2_tokenizer.py golden GGUF OUT.json
        token ids of hand-written strings (the C++ test's golden file)
    python3 scripts/reference/smollm2_tokenizer.py compare GGUF LOCOMO_DIR INFERSCALE [N]
        ids of N LoCoMo texts (facts, turns, questions) from this tokenizer and from
        `inferscale eval tokenize`; prints the agreement
"""
import json
import os
import subprocess
import sys
import tempfile

import gguf
from tokenizers import Tokenizer


def field(reader, key):
    f = reader.fields[key]
    return f.contents()


def build(gguf_path):
    r = gguf.GGUFReader(gguf_path)
    tokens = field(r, "tokenizer.ggml.tokens")
    merges = field(r, "tokenizer.ggml.merges")
    types = field(r, "tokenizer.ggml.token_type")
    assert field(r, "tokenizer.ggml.model") == "gpt2"
    assert field(r, "tokenizer.ggml.pre") == "smollm"
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, (t, ty) in enumerate(zip(tokens, types)) if ty in (3, 4)]
    spec = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": list(merges)},
    }
    return Tokenizer.from_str(json.dumps(spec))


GOLDEN_TEXTS = [
    "Hello world",
    "Caroline adopted a dog named Max in 2023.",
    "I'm sure they'll say it's fine, don't you think? We've seen it.",
    "  leading and trailing spaces  ",
    "multiple   internal    spaces",
    "tabs\tand\nnewlines\r\nmixed\n\n\nend",
    "Numbers 12345 and 3.14159 and 1,000,000",
    "Punctuation!!! ??? ... --- (parens) [brackets] {braces}",
    "Café naïve résumé façade Ångström",
    "你好，世界！这是一个测试。",
    "Россия и Україна",
    "Emoji: 😀👍🏽 and ❤️",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n",
    "<|im_start|>assistant\n",
    "When did Melanie paint a sunrise?",
    "- Melanie painted a lake sunrise last year (D1:3).\n",
    "Jon: Hey Gina! Thanks for asking, I'm on the hunt for the ideal spot for my dance studio.",
    "It's 7:30 pm on 8 May, 2023",
    "e-mail: someone@example.com, URL https://example.org/path?q=1&r=2",
    "'s 't 're 've 'm 'll 'd 'S 'x",
    "x\u00a0y\u3000z",
    "MixedCASE camelCase snake_case kebab-case",
    "a",
    " ",
    "\n",
]


def golden(gguf_path, out):
    tok = build(gguf_path)
    cases = [{"text": t, "ids": tok.encode(t).ids} for t in GOLDEN_TEXTS]
    with open(out, "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {out}")


def locomo_texts(locomo_dir, n):
    texts = []
    for name in sorted(os.listdir(locomo_dir)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(locomo_dir, name)) as f:
            conv = json.load(f)
        for key in sorted(k for k in conv if k.startswith("session_") and k.endswith("_observation")):
            for facts in conv[key].values():
                texts += [f[0] for f in facts[:4]]
        for key in sorted(k for k in conv if k.startswith("session_") and k[8:].isdigit()):
            texts += [f"{t['speaker']}: {t['text']}\n" for t in conv[key][:3]]
        texts += [q["question"] for q in conv["qa"][:10]]
    step = max(1, len(texts) // n)
    return texts[::step][:n]


def compare(gguf_path, locomo_dir, inferscale, n):
    tok = build(gguf_path)
    texts = locomo_texts(locomo_dir, n)
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "texts.jsonl"), os.path.join(d, "ids.jsonl")
        with open(src, "w") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        subprocess.run([inferscale, "eval", "tokenize", "--model", gguf_path, "--in", src,
                        "--out", dst], check=True)
        with open(dst) as f:
            ours = [json.loads(line)["ids"] for line in f]
    theirs = [tok.encode(t).ids for t in texts]
    same = sum(a == b for a, b in zip(ours, theirs))
    tokens = sum(len(b) for b in theirs)
    print(f"{same}/{len(texts)} texts identical ({tokens} reference tokens)")
    for t, a, b in zip(texts, ours, theirs):
        if a != b:
            print("DIFF", repr(t), a, b)
    return same == len(texts)


if __name__ == "__main__":
    if sys.argv[1] == "golden":
        golden(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "compare":
        ok = compare(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 300)
        sys.exit(0 if ok else 1)
    else:
        sys.exit(__doc__)
