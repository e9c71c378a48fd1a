#!/usr/bin/env bash
# The README's second command: install what is missing, build, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
cd build && ctest --output-on-failure -j "$(nproc)"
