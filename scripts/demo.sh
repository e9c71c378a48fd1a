#!/usr/bin/env bash
# The README's first command: install what the cardsim binary needs (only what is missing, Debian
# 12), build that binary alone, run the embedded default job. Each stage says that it started.
# scripts/test.sh builds and installs the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo build
echo "demo: running build/cardsim demo"
echo
./build/cardsim demo
