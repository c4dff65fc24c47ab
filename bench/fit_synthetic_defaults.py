#!/usr/bin/env python3
"""Measures the LoCoMo statistics behind the defaults of `inferscale trace generate`.

Usage: bench/fit_synthetic_defaults.py [LOCOMO_DIR] [INFERSCALE_BINARY]
(defaults: ../shared/data/locomo10 and build/inferscale). Prints Markdown.

Sizes come straight from the JSON (words = whitespace-separated runs, as the importer counts).
Popularity comes from importer traces: user skew from the speakers' question counts, fact skew by
matching how BM25 top-k spreads a user's retrievals over its facts with the generator's draw
(k distinct facts, each next one with probability proportional to rank^-s among those left).
"""
import glob
import json
import math
import os
import random
import re
import statistics as st
import subprocess
import sys
import tempfile


def spread(xs):
    return (f"min {min(xs)}, mean {st.mean(xs):.1f}, sd {st.pstdev(xs):.1f}, "
            f"max {max(xs)} (n = {len(xs)})")


def sizes(locomo_dir):
    fact_words, facts_per_speaker, sessions, turns_per_session, turn_words, q_words = \
        [], [], [], [], [], []
    for path in sorted(glob.glob(os.path.join(locomo_dir, "*.json"))):
        d = json.load(open(path))
        conv = d.get("conversation", d)
        obs = d.get("observation", d)
        per = {conv["speaker_a"]: 0, conv["speaker_b"]: 0}
        n_sessions = 0
        for key, value in conv.items():
            if re.fullmatch(r"session_\d+", key) and value:
                n_sessions += 1
                turns_per_session.append(len(value))
                turn_words += [len(t["text"].split()) for t in value]
        sessions.append(n_sessions)
        for key, value in obs.items():
            if re.fullmatch(r"session_\d+_observation", key):
                for speaker, facts in value.items():
                    per[speaker] += len(facts)
                    fact_words += [len(f[0].split()) for f in facts]
        facts_per_speaker += per.values()
        q_words += [len(q["question"].split()) for q in d["qa"]]
    return {
        "facts per speaker": spread(facts_per_speaker),
        "words per fact": spread(fact_words),
        "sessions per conversation": spread(sessions),
        "turns per session": spread(turns_per_session),
        "words per turn": spread(turn_words),
        "words per question": spread(q_words),
    }


def import_trace(binary, locomo_dir, k, out):
    subprocess.run([binary, "trace", "import-locomo", "--data", locomo_dir, "--out", out,
                    "--k", str(k), "--no-text"], check=True, stdout=subprocess.DEVNULL)
    facts, requests = {}, {}
    for line in open(out):
        r = json.loads(line)
        if r["type"] == "memory_write":
            facts.setdefault(r["user"], []).append(r["id"])
        elif r["type"] == "request":
            requests.setdefault(r["user"], []).append(r["facts"])
    return facts, requests


def share_curve(counts_per_user, fractions):
    """Mean over users of the share of retrievals that go to its top x% facts."""
    out = []
    for f in fractions:
        shares = []
        for counts in counts_per_user:
            c = sorted(counts, reverse=True)
            m = max(1, round(f * len(c)))
            shares.append(sum(c[:m]) / sum(c))
        out.append(st.mean(shares))
    return out


def simulated_counts(s, k, users, questions, seed):
    rnd = random.Random(seed)
    result = []
    for _ in range(users):
        n = rnd.randint(82, 172)
        w = [(i + 1) ** -s for i in range(n)]
        counts = [0] * n
        for _ in range(questions):
            # Exponential keys E_i / w_i in increasing order = successive weighted draws
            # without replacement.
            for i in sorted(range(n), key=lambda i: rnd.expovariate(1.0) / w[i])[:k]:
                counts[i] += 1
        result.append(counts)
    return result


def main():
    locomo_dir = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/locomo10"
    binary = sys.argv[2] if len(sys.argv) > 2 else "build/inferscale"
    print("## LoCoMo sizes\n")
    for name, text in sizes(locomo_dir).items():
        print(f"- {name}: {text}")

    fractions = [0.01, 0.05, 0.1, 0.2, 0.5]
    curves = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in (10, 50):
            facts, requests = import_trace(binary, locomo_dir, k, os.path.join(tmp, f"k{k}.jsonl"))
            counts = []
            for user, ids in facts.items():
                c = {i: 0 for i in ids}
                for r in requests.get(user, []):
                    for i in r:
                        c[i] += 1
                counts.append(list(c.values()))
            curves[k] = share_curve(counts, fractions)
        questions = sorted((len(v) for v in requests.values()), reverse=True)

    xs = [math.log(i + 1) for i in range(len(questions))]
    ys = [math.log(q) for q in questions]
    mx, my = st.mean(xs), st.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print("\n## Users\n")
    print(f"- questions per speaker, sorted: {questions}")
    print(f"- least-squares slope of log(count) on log(rank): {slope:.2f} -> user_zipf "
          f"{-slope:.2f}")

    print("\n## Facts: share of a user's retrievals going to its top x% facts\n")
    print("| source | k | " + " | ".join(f"top {f:.0%}" for f in fractions) + " | sq. error |")
    print("|---|---|" + "---|" * (len(fractions) + 1))
    for k in (10, 50):
        print(f"| LoCoMo BM25 | {k} | " + " | ".join(f"{v:.3f}" for v in curves[k]) + " | |")
    best = None
    for s in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.6):
        err = 0.0
        for k in (10, 50):
            sim = share_curve(simulated_counts(s, k, 20, 100, seed=7), fractions)
            e = sum((a - b) ** 2 for a, b in zip(sim, curves[k]))
            err += e
            print(f"| Zipf s={s} | {k} | " + " | ".join(f"{v:.3f}" for v in sim) + f" | {e:.4f} |")
        if best is None or err < best[1]:
            best = (s, err)
    print(f"\nBest s over k = 10 and 50 together: {best[0]} (summed squared error {best[1]:.4f})")


if __name__ == "__main__":
    main()
