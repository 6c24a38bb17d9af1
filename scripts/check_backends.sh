#!/usr/bin/env bash
# One install, several backends (docs/design.md, "Backends chosen at run time"): installs the cpu preset into a
# temporary prefix, adds the backend module of every GPU preset that is built (build/cuda, build/hip: `cmake
# --install --component backend`), then runs tests/backends/backends_test.sh on the installed bin/ptk: the GPU
# modules are skipped here with their runtime's reason, auto runs the CPU, the results are the one-backend cpu
# build's bit for bit, and the fallbacks hold.
#   scripts/check_backends.sh [GPU_PRESET...]     (default: cuda hip; each must be built with its ptk_backend)
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(cuda hip)
log() { printf '[check_backends] %s\n' "$*"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptk-backends.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmake --build build/cpu --target ptk_cli ptk_backend ptk_launcher ptk_fake_backend >/dev/null
cmake --install build/cpu --prefix "$tmp/prefix" >/dev/null
for preset in "${presets[@]}"; do
  if compgen -G "build/$preset/backends/libptk_backend_*.so" >/dev/null; then
    cmake --install "build/$preset" --prefix "$tmp/prefix" --component backend >/dev/null
    log "added $(basename build/"$preset"/backends/libptk_backend_*.so) from build/$preset"
  else
    log "build/$preset has no backend module (scripts/build.sh $preset ptk_backend): not added"
  fi
done
ls -l "$tmp/prefix/lib/ptk/backends"
tests/backends/backends_test.sh "$tmp/prefix/bin/ptk" build/cpu/ptk build/cpu/tests/libptk_fake_backend.so "$PWD"
log "ok"
