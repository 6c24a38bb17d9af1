#!/usr/bin/env bash
# Installs what PRESET needs (scripts/bootstrap.sh), then configures and builds it into build/PRESET.
#   scripts/build.sh [cpu|cpu-portable|cpu-serial|debug|cpu-kokkos4|cuda|cuda-kokkos3|hip]   (default: cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-cpu}
scripts/bootstrap.sh "$preset"
echo "[build $preset] configuring and building build/$preset"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
