#!/usr/bin/env bash
# Installs the Debian 12 packages cardsim needs (only those missing), then configures and builds,
# saying which stage is running: `setup: installing ...`, `setup: configuring`, `setup: build: 43 %`.
# Usage: bash scripts/setup.sh [--demo] [build-dir] [cmake options...]   (default build dir: build)
#   --demo   the packages and the build of the cardsim binary alone (scripts/demo.sh): no tests,
#            benchmarks, fuzz replays or RTL, so no Catch2, Google Benchmark, Verilator, gnuplot,
#            GNU parallel or chromium. A build dir already configured for everything is kept so.
# The build's full output goes to BUILD/build.log; on a failure its last lines are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=0
if [ "${1:-}" = "--demo" ]; then demo=1; shift; fi
# What the cardsim binary needs to build and run `cardsim demo`.
binary_packages=(
  build-essential cmake pkg-config
  ninja-build                           # the build tool (faster than make; [n/N] progress)
  libsystemc-dev                        # SystemC 2.3.4 + TLM-2.0
  libboost1.81-dev                      # headers: Multiprecision, Process, ...
  libboost-json1.81-dev                 # Boost.JSON (safetensors headers, Perfetto export)
  libboost-iostreams1.81-dev            # Boost.Iostreams (mapped files)
  libboost-program-options1.81-dev      # subcommand options
  libtomlplusplus-dev                   # toml++ card configs
  libxxhash-dev                         # xxh64 digests
  libfmt-dev                            # formatting
)
# What the test suite, the benchmarks and the rest of the commands add.
suite_packages=(
  catch2                                # Catch2 v2 unit tests
  libbenchmark-dev                      # Google Benchmark
  gnuplot-nox                           # cardsim plot: sweep charts (PNG, SVG)
  parallel                              # GNU parallel: sweep shards (cardsim sweep --emit parallel)
  verilator                             # the RTL matvec (rtl/*.sv) lint and co-simulation (--rtl matvec)
  chromium                              # headless browser: the report pages' tests, scripts/screenshots.sh (~360 MB)
)
packages=("${binary_packages[@]}")
[ $demo = 1 ] || packages+=("${suite_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${#missing[@]} packages with apt-get: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: installed"
else
  echo "setup: the ${#packages[@]} packages needed are installed"
fi
build=${1:-build}
shift || true # the rest: extra CMake options (scripts/test.sh --sanitize passes -DCARDSIM_SANITIZE=ON)
mkdir -p "$build"
target=()
if [ $demo = 1 ]; then
  target=(--target cardsim)
  # A build dir configured for everything (scripts/test.sh ran) stays so: its cardsim has the RTL.
  if grep -q '^CARDSIM_DEMO_ONLY:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null; then
    set -- -DCARDSIM_DEMO_ONLY=OFF "$@"
  else
    set -- -DCARDSIM_DEMO_ONLY=ON "$@"
  fi
else
  set -- -DCARDSIM_DEMO_ONLY=OFF "$@"
fi
# A fresh build dir uses Ninja; one configured before keeps its generator (CMake cannot switch).
generator=()
[ -f "$build/CMakeCache.txt" ] || generator=(-G Ninja)
echo "setup: configuring (cmake, in $build/)"
if ! cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCARDSIM_UNITY=ON "$@" >"$build/configure.log" 2>&1; then
  tail -n 30 "$build/configure.log"
  echo "setup: the configure failed (the whole output: $build/configure.log)"
  exit 1
fi
jobs=$(nproc)
what="everything"; [ $demo = 1 ] && what="the cardsim binary"
echo "setup: building $what with $jobs jobs (the whole output: $build/build.log)"
# The build's progress: make prints `[ 43%]`, ninja `[12/200]`; one line each time it moves. (A
# bash loop, not awk: mawk reads a pipe in blocks, so its lines would come late.)
# Ninja runs twice on a fresh build dir (Verilator's generated files re-run CMake first): a new
# total starts a new stage, named so, instead of a percentage that drops back to 0.
progress() {
  local line last="" p total=""
  while IFS= read -r line; do
    p=""
    if [[ $line =~ ^\[\ *([0-9]+)%\] ]]; then
      p=${BASH_REMATCH[1]}
    elif [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
      p=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
      if [ "${BASH_REMATCH[2]}" != "$total" ]; then
        [ -n "$total" ] && echo "setup: build: sources generated; now ${BASH_REMATCH[2]} steps"
        total=${BASH_REMATCH[2]}
        last=""
      fi
    fi
    if [ -n "$p" ] && [ "$p" != "$last" ]; then
      echo "setup: build: $p %"
      last=$p
    fi
  done
}
# pipefail: the pipeline fails when the build does.
if ! cmake --build "$build" -j "$jobs" "${target[@]}" 2>&1 | tee "$build/build.log" | progress; then
  grep -E -B2 -A12 'error|FAILED:|\*\*\*' "$build/build.log" | tail -n 40 || tail -n 40 "$build/build.log"
  echo "setup: the build failed (the whole output: $build/build.log)"
  exit 1
fi
echo "setup: built"
