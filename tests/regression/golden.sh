#!/usr/bin/env bash
# A regression trace: regenerate its model, rerun it, and compare with traces/golden/NAME.trace
# exactly (data digests and cycles). `--bless` replaces the golden trace instead (printing the diff).
# `--twice` also checks determinism: a second run gives a byte-identical trace.
# Usage: golden.sh CARDSIM SOURCE_DIR NAME [--bless|--twice]
set -euo pipefail
cardsim=$1 src=$2 name=$3 mode=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
case "$name" in
  dense-default)      arch=dense;   run=(--tokens 4) ;;
  dense-perblock)     arch=dense;   run=(--tokens 4 --knob scaling=per_block --knob cache=int8) ;;
  hybrid-default)     arch=hybrid;  run=(--tokens 4) ;;
  hybrid-perblock)    arch=hybrid;  run=(--tokens 4 --knob scaling=per_block --knob cache=int8_hadamard --knob state=f16) ;;
  encoder-default)    arch=encoder; run=(--config "$src/configs/encoder.toml" --prompt 1,2,3,4,5,6,7,8,9,10,11,12) ;;
  encoder-perblock)   arch=encoder; run=(--config "$src/configs/encoder.toml" --prompt 1,2,3,4,5,6,7,8,9,10,11,12 --knob scaling=per_block --knob activations=two) ;;
  *) echo "unknown regression trace $name" >&2; exit 2 ;;
esac
"$cardsim" make-model --arch "$arch" --size tiny --seed 1 -o "$tmp/model" > /dev/null
"$cardsim" run "$tmp/model" "${run[@]}" --no-reference --trace "$tmp/run.trace" > "$tmp/run.txt"
golden="$src/traces/golden/$name.trace"
case "$mode" in
  --bless) "$cardsim" trace bless "$tmp/run.trace" "$golden" ;;
  --twice)
    "$cardsim" run "$tmp/model" "${run[@]}" --no-reference --trace "$tmp/again.trace" > /dev/null
    cmp "$tmp/run.trace" "$tmp/again.trace"; echo "deterministic: two runs gave byte-identical traces" ;;
  *) "$cardsim" trace diff "$golden" "$tmp/run.trace" ;;
esac
