#!/usr/bin/env bash
# Installs the Debian 12 packages cardsim needs (only those missing), then configures and builds.
# Usage: bash scripts/setup.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  build-essential cmake pkg-config
  libsystemc-dev                        # SystemC 2.3.4 + TLM-2.0
  libboost1.81-dev                      # headers: Multiprecision, Process, ...
  libboost-json1.81-dev                 # Boost.JSON (safetensors headers, Perfetto export)
  libboost-iostreams1.81-dev            # Boost.Iostreams (mapped files)
  libboost-program-options1.81-dev      # subcommand options
  catch2                                # Catch2 v2 unit tests
  libbenchmark-dev                      # Google Benchmark
  libtomlplusplus-dev                   # toml++ card configs
  libxxhash-dev                         # xxh64 digests
  libfmt-dev                            # formatting
  gnuplot-nox                           # cardsim plot: sweep charts (PNG, SVG)
  parallel                              # GNU parallel: sweep shards (cardsim sweep --emit parallel)
  verilator                             # the RTL matvec (rtl/*.sv) lint and co-simulation (--rtl matvec)
  chromium                              # headless browser: the report pages' tests (large: ~360 MB)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
build=${1:-build}
shift || true # the rest: extra CMake options (scripts/test.sh --sanitize passes -DCARDSIM_SANITIZE=ON)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
