#!/usr/bin/env bash
# The test command: installs what PRESET needs, builds it and runs the whole parity suite (ctest).
#   scripts/test.sh [cpu|cpu-portable|cpu-serial|debug|debug-kokkos3|cpu-kokkos4]   (default: cpu; the GPU presets need their GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-cpu}
scripts/bootstrap.sh "$preset"
cmake --workflow --preset "$preset"
