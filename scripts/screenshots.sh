#!/usr/bin/env bash
# Regenerates the report screenshots of docs/reports.md (docs/report-run.png, report-sweep.png,
# report-diff.png) from pages the built binary writes, photographed by headless chromium. Nobody
# edits these images by hand: rerun this after a change to the pages or to what they show.
# Usage: bash scripts/screenshots.sh [build-dir]   (default: build; needs build/cardsim and chromium)
# Takes a few minutes: the sweep page runs configs/sweeps/channels_clock.toml (0.1B hybrid).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cardsim=$root/${1:-build}/cardsim
[ -x "$cardsim" ] || { echo "screenshots: $cardsim is missing: build it first (bash scripts/demo.sh)"; exit 2; }
browser=$(command -v chromium || command -v chromium-browser) ||
  { echo "screenshots: chromium is missing (apt-get install chromium, or bash scripts/setup.sh)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

# shot PAGE PNG: a 1400-pixel-wide photograph of the page after its script ran.
shot() {
  timeout 120 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/profile" --hide-scrollbars \
    --window-size=1400,1800 --screenshot="$tmp/shot.png" "file://$1" > /dev/null 2>&1
  [ "$(head -c 8 "$tmp/shot.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || { echo "screenshots: $1 gave no PNG"; exit 1; }
  mv "$tmp/shot.png" "$root/docs/$2"
  echo "screenshots: docs/$2 ($(stat -c %s "$root/docs/$2") bytes)"
}

echo "screenshots: a run page (0.1B hybrid, 8 tokens, layers 0 and 6 checked)"
"$cardsim" make-model --arch hybrid --size 0.1b --seed 1 -o "$tmp/m01" > /dev/null
"$cardsim" run "$tmp/m01" --tokens 8 --check-layers 0,6 --report "$tmp/run.html" > /dev/null
shot "$tmp/run.html" report-run.png

echo "screenshots: a diff page (a small hybrid on 4 and on 2 DDR channels)"
"$cardsim" make-model --arch hybrid --size small --seed 1 -o "$tmp/small" > /dev/null
"$cardsim" run "$tmp/small" --tokens 4 --trace "$tmp/a.trace" > /dev/null
"$cardsim" run "$tmp/small" --tokens 4 --set ddr.channels=2 --trace "$tmp/b.trace" > /dev/null
"$cardsim" report "$tmp/a.trace" "$tmp/b.trace" -o "$tmp/diff.html" --cycles-tol 5 > /dev/null
shot "$tmp/diff.html" report-diff.png

echo "screenshots: a sweep page (configs/sweeps/channels_clock.toml)"
"$cardsim" sweep configs/sweeps/channels_clock.toml -o "$tmp/sweep" -j "$(nproc)" --report > /dev/null
shot "$tmp/sweep/report.html" report-sweep.png
