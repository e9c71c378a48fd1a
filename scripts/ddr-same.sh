#!/usr/bin/env bash
# Checks that two cardsim binaries time DDR traffic identically: `cardsim ddr replay` of the four
# standard patterns under a spread of controller settings (each with stagger_row_switches false and
# true) must print the same figures (the host line aside) and write the same arrival trace, byte for
# byte. For a change meant to make the replay faster without moving a cycle (issue 30).
#
#   scripts/ddr-same.sh OLD_CARDSIM NEW_CARDSIM [REQUESTS]
#
# Exit status 0 when every run agrees; otherwise the first difference is shown and the status is 1.
set -euo pipefail
old=${1:?usage: ddr-same.sh OLD_CARDSIM NEW_CARDSIM [REQUESTS]}
new=${2:?usage: ddr-same.sh OLD_CARDSIM NEW_CARDSIM [REQUESTS]}
count=${3:-200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

c=ddr.controller
settings=(
  ""
  "--channels 1"
  "--set ddr.geometry.ranks=2"
  "--set ddr.geometry.ranks=2 --channels 1 --set $c.bank_queue_depth=64 --outstanding 256"
  "--set $c.bank_queue_depth=2 --set $c.starvation_limit=2"
  "--set $c.page_policy=closed"
  "--outstanding 256 --set $c.bank_queue_depth=64 --set $c.write_queue=128 --set $c.write_high_watermark=128 --set $c.write_low_watermark=16"
  "--blocking"
  "--set $c.write_queue=0"
  "--set $c.write_high_watermark=24 --set $c.write_low_watermark=8"
  "--set $c.scheduler=fcfs"
  "--set $c.address_map=row:column:bank:bankgroup"
  "--set $c.address_map=row:bank:bankgroup:column"
  "--set $c.address_map=row:bank[1]:column:bank:bankgroup"
  "--outstanding 0"
  "--set $c.starvation_limit=1 --channels 2"
  "--pace timed"
  "--pace timed --channels 1"
  "--user-port"
  "--user-port --set $c.scheduler=fcfs --blocking"
)

for pattern in sequential random streams mix; do
  # A gap between timestamps, so that timed pacing leaves the channels idle at times.
  "$new" ddr gen "$pattern" -o "$work/$pattern.trace" --count "$count" --gap 3 >/dev/null
done

runs=0
for pattern in sequential random streams mix; do
  for s in "${settings[@]}"; do
    staggers=(false true)
    [[ $s == *fcfs* ]] && staggers=(true) # FCFS reads no stagger (the config refuses it set)
    for stagger in "${staggers[@]}"; do
      args=("$work/$pattern.trace")
      [[ $stagger == false ]] && args+=(--set "$c.stagger_row_switches=false")
      # shellcheck disable=SC2206 # each setting is a list of words
      args+=($s)
      for which in old new; do
        bin=$old
        [[ $which == new ]] && bin=$new
        "$bin" ddr replay "${args[@]}" --ddr-trace "$work/$which.arrivals" --ddr-trace-channel all \
          | grep -v -e "^host" -e "^ddr trace:" >"$work/$which.out"
      done
      if ! cmp -s "$work/old.out" "$work/new.out" || ! cmp -s "$work/old.arrivals" "$work/new.arrivals"; then
        echo "differ: $pattern, stagger $stagger, setting '$s'"
        diff "$work/old.out" "$work/new.out" | head -20 || true
        cmp "$work/old.arrivals" "$work/new.arrivals" || true
        exit 1
      fi
      runs=$((runs + 1))
    done
  done
done
echo "same: $runs replays (4 patterns x ${#settings[@]} settings, FR-FCFS ones with stagger_row_switches false and true; $count requests each)"
