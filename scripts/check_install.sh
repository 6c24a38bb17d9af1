#!/usr/bin/env bash
# Checks the installed package: installs build/PRESET into a temporary prefix, then configures,
# builds and runs examples/consumer against it with find_package(ptk) alone.
#   scripts/check_install.sh [PRESET]      (default: cpu; the preset must be configured and built)
# A GPU preset's consumer is compiled with the same compiler as ptk (Kokkos' nvcc_wrapper / hipcc)
# and only built, not run, on a machine without its GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-cpu}
build=build/$preset
[ -f "$build/CMakeCache.txt" ] || { echo "check_install: $build is not configured (scripts/build.sh $preset)" >&2; exit 2; }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptk-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '[check_install %s] %s\n' "$preset" "$*"; }

log "building and installing $build into $tmp/prefix"
targets=(ptk_lib ptk_text)
[ "$(cache_value PTK_BUILD_TOOLS)" = OFF ] || targets+=(ptk_cli)  # what gets installed; tests and sweeps are not
cmake --build "$build" --target "${targets[@]}" >/dev/null
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"

# Only the install prefix is given: Kokkos and Kokkos Kernels are found through the hints in
# ptkConfig.cmake. The environment is the preset's (the cuda presets restrict PATH to CUDA 11.8).
env_vars=()
case "$(cache_value PTK_KOKKOS_FLAVOR)" in
  cuda) env_vars=(PATH=/usr/sbin:/usr/bin:/sbin:/bin CUDA_ROOT=/usr CUDAToolkit_ROOT=/usr NVCC_WRAPPER_DEFAULT_COMPILER=g++-11) ;;
  hip) env_vars=(HIP_PLATFORM=amd) ;;
esac
log "configuring examples/consumer with -Dptk_ROOT=$tmp/prefix"
env "${env_vars[@]}" cmake -S examples/consumer -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$(cache_value CMAKE_CXX_COMPILER)" -DCMAKE_CXX_FLAGS="$(cache_value CMAKE_CXX_FLAGS)" \
  -Dptk_ROOT="$tmp/prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
log "building the consumer"
env "${env_vars[@]}" cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
if "$tmp/consumer/ptk_consumer"; then
  log "ok"
else
  status=$?
  if [ $status -eq 2 ] && [ -n "${env_vars[*]}" ]; then
    log "built; not run (exit 2: this machine has no GPU for the $preset build)"
  else
    log "the consumer failed (exit $status)"; exit 1
  fi
fi
