#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan) in build-fuzz/ (the sanitized test
# suite too: `cd build-fuzz && ctest` runs it with clang's sanitizers) and runs each for a set
# time, one after another, from its seed corpus in fuzz/corpus/TARGET (new inputs go to
# build-fuzz/corpus/TARGET; a crashing input to build-fuzz/crashes/TARGET/).
#   scripts/fuzz.sh [SECONDS_EACH] [TARGET...]     default 60 s each, every target
# Exit 0 when no target found anything; 1 when one did (its input is named; keep it as a
# regression test). Targets: safetensors config_json card_config sweep_spec expression program
# program_set image trace ddr_trace.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors config_json card_config sweep_spec expression program program_set image trace ddr_trace)
command -v clang++ >/dev/null || { echo "fuzz: clang++ is needed (apt-get install clang)"; exit 2; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCARDSIM_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
export ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}
found=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  echo "== fuzz_$t for ${seconds} s"
  if ! build-fuzz/fuzz/fuzz_$t -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="build-fuzz/crashes/$t/" -print_final_stats=1 \
      "build-fuzz/corpus/$t" "fuzz/corpus/$t" 2>"build-fuzz/$t.log"; then
    found=1
    echo "fuzz_$t found an input that fails: $(ls build-fuzz/crashes/$t/ | head -1) (log build-fuzz/$t.log)"
  fi
  grep -E "^stat::number_of_executed_units|^stat::new_units_added" "build-fuzz/$t.log" | tr '\n' ' '; echo
done
exit $found
