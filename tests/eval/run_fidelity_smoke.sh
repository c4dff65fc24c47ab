#!/usr/bin/env bash
# The 10-question CPU smoke run of `inferscale eval fidelity` (configs/eval/fidelity_smoke.yaml);
# skipped (CTest reads "SKIPPED:") where the model or LoCoMo is absent.
# Usage: run_fidelity_smoke.sh INFERSCALE SOURCE_DIR WORKDIR
set -euo pipefail
bin=$1 src=$2 work=$3
model=${INFERSCALE_MODEL_GGUF:-$src/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}
data=${INFERSCALE_LOCOMO:-$src/../shared/data/locomo10}
[ -f "$model" ] || { echo "SKIPPED: model not fetched: run scripts/fetch-model.sh"; exit 0; }
[ -d "$data" ] || { echo "SKIPPED: LoCoMo not found at $data"; exit 0; }
rm -rf "$work" && mkdir -p "$work"
{ sed -e "s|^model: .*|model: $model|" "$src/configs/eval/fidelity_smoke.yaml"
  echo "data: $data"; } >"$work/smoke.yaml"
"$bin" eval fidelity "$work/smoke.yaml" --out "$work/out" | tee "$work/table.md"
python3 - "$work/out" <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/fidelity.csv")))
s = json.load(open(f"{d}/summary.json"))
ex = s["exactness"]
assert s["questions"] == 10, s["questions"]
settings = {(r["k"], r["w"], r["setting"]) for r in rows}
for k in ("1", "3"):
    assert (k, "-1", "text") in settings
    for w in ("0", "2"):
        for st in ("none", "first_tokens=2", "ratio=0.2"):
            assert (k, w, st) in settings, (k, w, st)
assert all(r["questions"] == "10" for r in rows)
assert ex["questions"] == 10 and ex["agreement"] >= 0.99, ex
assert ex["max_rel_logit_diff"] < 1e-4, ex
assert s["piece_tokenization_mismatches"] == 0
print("smoke checks passed:", len(rows), "summary rows; exactness", ex["top1_equal"], "/", ex["questions"])
PY
