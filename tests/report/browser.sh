#!/usr/bin/env bash
# Loads report pages in headless Chromium: the page's script must run to the end (#page-status
# data-ready="yes") with no error (data-errors="0", no console message), the timeline must draw
# at most a few elements a pixel however many commands there are, and a screenshot is taken.
# A page with a deliberate error must be caught, so the check itself can fail.
# Usage: browser.sh CARDSIM SOURCE_DIR run|sweep|diff
set -euo pipefail
cardsim=$1 src=$2 kind=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
browser=$(command -v chromium || command -v chromium-browser)

# load PAGE NAME: dumps the DOM after the scripts ran to $tmp/NAME.dom, console to $tmp/NAME.log.
load() {
  timeout 60 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/profile" \
    --enable-logging=stderr --v=0 --dump-dom "file://$1" > "$tmp/$2.dom" 2> "$tmp/$2.log"
}
# status NAME ATTRIBUTE: the attribute of #page-status in the dump.
status() {
  grep -o '<pre id="page-status"[^>]*>' "$tmp/$1.dom" | grep -o "$2=\"[^\"]*\"" | cut -d'"' -f2 || true
}
# check PAGE NAME [SELECTOR]: the page ran clean; with SELECTOR, the mouse is first moved over
# the first element it matches (after the page's own script ran) and $tip is the tooltip's text,
# its lines joined by " / ".
check() {
  local page=$1
  if [ $# -ge 3 ]; then
    page="$tmp/$2-hover.html"
    cp "$1" "$page"
    # After </html> a parser still puts the script in the body, where it runs after the page's own.
    cat >> "$page" <<JS
<script>(function () {
  var e = document.querySelector("$3"), s = document.getElementById('page-status');
  if (!e) { s.dataset.tip = 'NO ELEMENT'; return; }
  var r = e.getBoundingClientRect();
  e.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.left + 1, clientY: r.top + 1}));
  s.dataset.tip = document.getElementById('tooltip').textContent.split(String.fromCharCode(10)).join(' / ');
})();</script>
JS
  fi
  load "$page" "$2"
  local ready errors
  ready=$(status "$2" data-ready) errors=$(status "$2" data-errors)
  if [ "$ready" != yes ] || [ "$errors" != 0 ] || grep -q 'CONSOLE' "$tmp/$2.log"; then
    echo "$1: ready=$ready errors=$errors"
    grep -o '<pre id="page-status"[^<]*' "$tmp/$2.dom" || true
    grep 'CONSOLE' "$tmp/$2.log" || true
    exit 1
  fi
  echo "$1: loaded without errors, ready after $(status "$2" data-ready-ms) ms"
  tip=$(status "$2" data-tip)
  if [ $# -ge 3 ]; then echo "tooltip of $3: $tip"; fi
}
# screenshot PAGE PNG
screenshot() {
  timeout 60 "$browser" --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/profile" --hide-scrollbars \
    --window-size=1400,1800 --screenshot="$2" "file://$1" > /dev/null 2>&1
  local size
  size=$(stat -c %s "$2")
  [ "$(head -c 8 "$2" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || { echo "$2 is not a PNG"; exit 1; }
  [ "$size" -gt 20000 ] || { echo "$2 is only $size bytes: a blank page?"; exit 1; }
  echo "screenshot $2: $size bytes"
}

# expect TEXT PART: TEXT holds PART.
expect() {
  case "$1" in *"$2"*) ;; *) echo "the tooltip \"$1\" lacks \"$2\""; exit 1 ;; esac
}

"$cardsim" make-model --arch hybrid --size tiny --seed 1 -o "$tmp/model" > /dev/null
case "$kind" in
  run)
    # 150 steps of about 90 commands: many more commands than the timeline has pixels.
    "$cardsim" run "$tmp/model" --tokens 150 --timing-only --report "$tmp/run.html" > /dev/null
    check "$tmp/run.html" run rect.band
    expect "$tip" "command"
    expect "$tip" " µs"
    expect "$tip" "busy"
    drawn=$(grep -o 'id="timeline-view"[^>]*' "$tmp/run.dom" | grep -o 'data-drawn="[0-9]*"' | cut -d'"' -f2)
    commands=$(grep -o 'id="timeline-view"[^>]*' "$tmp/run.dom" | grep -o 'data-commands="[0-9]*"' | cut -d'"' -f2)
    lanes=$(grep -o 'id="timeline-view"[^>]*' "$tmp/run.dom" | grep -o 'data-lanes="[0-9]*"' | cut -d'"' -f2)
    width=$(grep -o 'id="timeline-view"[^>]*' "$tmp/run.dom" | grep -o 'data-plot-width="[0-9]*"' | cut -d'"' -f2)
    echo "timeline: $commands commands on $lanes lanes drawn as $drawn elements over $width pixels"
    [ "$commands" -gt $((2 * width)) ] || { echo "the run has too few commands to test aggregation"; exit 1; }
    [ "$drawn" -gt 0 ] && [ "$drawn" -le $((lanes * width / 2)) ] ||
      { echo "the timeline drew $drawn elements: more than half a pixel each per lane"; exit 1; }
    screenshot "$tmp/run.html" "$tmp/run.png"
    # The check catches a page whose script fails.
    sed 's|</main>|</main><script>undefined_function_of_the_test();</script>|' "$tmp/run.html" > "$tmp/bad.html"
    load "$tmp/bad.html" bad
    [ "$(status bad data-errors)" = 1 ] || { echo "a failing script was not noticed"; exit 1; }
    echo "a page with a failing script is caught: data-errors=1"
    ;;
  sweep)
    printf 'tokens = 2\nfull = true\nmodel = { path = "%s" }\n[axes]\nddr.channels = [1, 2]\n' "$tmp/model" > "$tmp/spec.toml"
    "$cardsim" sweep "$tmp/spec.toml" -j 2 --traces --report -o "$tmp/sweep" > /dev/null 2>&1
    check "$tmp/sweep/report.html" sweep "svg.chart circle"
    expect "$tip" "point 0"
    check "$tmp/sweep/report_points/point-1.html" point
    grep -q 'class="chart"' "$tmp/sweep.dom" || { echo "the sweep page has no chart"; exit 1; }
    screenshot "$tmp/sweep/report.html" "$tmp/sweep.png"
    # A short run: each command is wide enough to draw on its own, with its fields and operands.
    "$cardsim" run "$tmp/model" --tokens 1 --report "$tmp/short.html" > /dev/null
    check "$tmp/short.html" short rect.cmd
    for part in " on " "cycles " "read: " "ddr0_read: " "digest: " "command: "; do expect "$tip" "$part"; done
    ;;
  diff)
    # Two runs of the model, one on two DDR channels: the diff's page, its charts' tooltips.
    "$cardsim" run "$tmp/model" --tokens 3 --trace "$tmp/a.trace" > /dev/null
    "$cardsim" run "$tmp/model" --tokens 3 --set ddr.channels=2 --trace "$tmp/b.trace" > /dev/null
    # exit 1: the traces differ (the page is written all the same)
    status=0
    "$cardsim" report "$tmp/a.trace" "$tmp/b.trace" --cycles-tol 5 -o "$tmp/diff.html" > /dev/null || status=$?
    [ "$status" = 1 ] || { echo "report of two differing traces exited $status, expected 1"; exit 1; }
    check "$tmp/diff.html" diff "svg.chart circle"
    expect "$tip" "A "
    grep -q 'id="unit-table"' "$tmp/diff.dom" || { echo "the diff page has no unit table"; exit 1; }
    screenshot "$tmp/diff.html" "$tmp/diff.png"
    ;;
  *) echo "unknown kind $kind" >&2; exit 2 ;;
esac
