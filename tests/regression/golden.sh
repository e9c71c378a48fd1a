#!/usr/bin/env bash
# A regression trace: regenerate its model, rerun it, and compare with traces/golden/NAME.trace
# exactly (data digests, durations, starts and ends). `--bless` replaces the golden trace instead
# (printing the diff).
# `--twice` also checks determinism: a second run gives a byte-identical trace.
# `--timing-only` checks that a timing-only run gives every command the golden start and end cycles.
# Usage: golden.sh CARDSIM SOURCE_DIR NAME [--bless|--twice|--timing-only]
set -euo pipefail
cardsim=$1 src=$2 name=$3 mode=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
# The traces are pinned to the card they were blessed on, configs/golden.toml (the default card
# before issue 33's design sweep): its keys become --set options, so they hold beside the
# encoder's --config and keep their cycles when the default card moves.
pin=()
while read -r key; do pin+=(--set "$key"); done < <(awk '
  /^[[:space:]]*(#|$)/ { next }
  /^\[/ { section = $0; gsub(/[][[:space:]]/, "", section); next }
  section != "" { line = $0; sub(/[[:space:]]*#.*/, "", line); gsub(/[[:space:]]/, "", line); print section "." line }
' "$src/configs/golden.toml")
case "$name" in
  dense-sub32)        arch=dense;   run=("${pin[@]}" --tokens 4 --knob scaling=sub32) ;;
  dense-perblock)     arch=dense;   run=("${pin[@]}" --tokens 4 --knob scaling=per_block --knob cache=int8) ;;
  hybrid-sub32)       arch=hybrid;  run=("${pin[@]}" --tokens 4 --knob scaling=sub32) ;;
  hybrid-perblock)    arch=hybrid;  run=("${pin[@]}" --tokens 4 --knob scaling=per_block --knob cache=int8_hadamard --knob state=f16) ;;
  encoder-sub32)      arch=encoder; run=("${pin[@]}" --config "$src/configs/encoder.toml" --prompt 1,2,3,4,5,6,7,8,9,10,11,12 --knob scaling=sub32) ;;
  encoder-perblock)   arch=encoder; run=("${pin[@]}" --config "$src/configs/encoder.toml" --prompt 1,2,3,4,5,6,7,8,9,10,11,12 --knob scaling=per_block --knob activations=two) ;;
  *) echo "unknown regression trace $name" >&2; exit 2 ;;
esac
"$cardsim" make-model --arch "$arch" --size tiny --seed 1 -o "$tmp/model" > /dev/null
golden="$src/traces/golden/$name.trace"
if [ "$mode" = --timing-only ]; then
  "$cardsim" run "$tmp/model" "${run[@]}" --timing-only --trace "$tmp/timing.trace" > /dev/null
  cycles() { awk '$1 == "cmd" { print $2, $3, $4, $5, $6 }' "$1"; }
  diff <(cycles "$golden") <(cycles "$tmp/timing.trace") > "$tmp/cycles.diff" ||
    { echo "timing-only cycles differ from $golden:"; head -20 "$tmp/cycles.diff"; exit 1; }
  echo "timing-only: every command's cycles equal the golden full run's ($(cycles "$golden" | wc -l) commands)"
  exit 0
fi
"$cardsim" run "$tmp/model" "${run[@]}" --no-reference --trace "$tmp/run.trace" > "$tmp/run.txt"
case "$mode" in
  --bless) "$cardsim" trace bless "$tmp/run.trace" "$golden" ;;
  --twice)
    "$cardsim" run "$tmp/model" "${run[@]}" --no-reference --trace "$tmp/again.trace" > /dev/null
    cmp "$tmp/run.trace" "$tmp/again.trace"; echo "deterministic: two runs gave byte-identical traces" ;;
  *) "$cardsim" trace diff "$golden" "$tmp/run.trace" --start-tol 0 ;;
esac
