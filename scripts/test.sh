#!/usr/bin/env bash
# The README's second command: install what is missing, build everything, run the whole test suite.
#   scripts/test.sh             Release build in build/, the whole ctest suite
#   scripts/test.sh --sanitize  the same with AddressSanitizer + UndefinedBehaviorSanitizer, in
#                               build-sanitize/ (any report makes the test that triggered it fail)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  bash scripts/setup.sh build-sanitize -DCARDSIM_SANITIZE=ON
  # SystemC switches coroutine stacks: ASan's stack-use-after-return detection cannot follow it.
  export ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=0:abort_on_error=1:${ASAN_OPTIONS:-}
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}
  echo "test: running the suite (ctest, in build-sanitize/)"
  cd build-sanitize && ctest --output-on-failure -j "$(nproc)"
  exit
fi
bash scripts/setup.sh build
echo "test: running the suite (ctest, in build/)"
cd build && ctest --output-on-failure -j "$(nproc)"
