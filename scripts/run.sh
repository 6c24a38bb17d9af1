#!/usr/bin/env bash
# The main job: installs what PRESET needs, builds it, runs the benchmark sweeps and writes the
# report (a table on the terminal, build/PRESET/bench/report.md and one PNG plot per op family).
#   scripts/run.sh [PRESET] [--full]      (default: cpu, quick sweep)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=cpu
mode=--quick
for arg in "$@"; do
  case "$arg" in
    --full) mode= ;;
    *) preset=$arg ;;
  esac
done
scripts/build.sh "$preset"
build/"$preset"/ptk bench $mode --out build/"$preset"/bench
