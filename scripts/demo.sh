#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the embedded default job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
./build/cardsim demo
