#!/usr/bin/env bash
# Installs what PRESET needs (scripts/bootstrap.sh), then configures and builds it into build/PRESET:
# everything, or only the TARGETs given (CI's GPU compile checks: `scripts/build.sh cuda ptk_cli`, the
# kernel instances in the library and the tool).
#   scripts/build.sh [cpu|cpu-portable|cpu-native|cpu-serial|debug|debug-kokkos3|cpu-kokkos4|cuda|cuda-kokkos3|hip] [TARGET...]   (default: cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-cpu}
shift || true
targets=("$@")
scripts/bootstrap.sh "$preset"
echo "[build $preset] configuring and building build/$preset${targets:+ (${targets[*]})}"
cmake --preset "$preset" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build --preset "$preset" --target "${targets[@]}"
else
  cmake --build --preset "$preset"
fi
