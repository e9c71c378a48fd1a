#!/usr/bin/env bash
# Rewrites every regression trace in traces/golden/ from a fresh run, printing what changed.
# Run it only when a change of cycles or bits is intended; commit the traces with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
for name in dense-sub32 dense-perblock hybrid-sub32 hybrid-perblock encoder-sub32 encoder-perblock; do
  echo "== $name"
  bash tests/regression/golden.sh ./build/cardsim "$PWD" "$name" --bless
done
