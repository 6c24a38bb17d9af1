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
module=$([ "$(cache_value PTK_BUILD_TOOLS)" != OFF ] && [ "$(cache_value PTK_BUILD_BACKEND_MODULE)" = ON ] && echo yes || true)
[ -z "$module" ] || targets+=(ptk_backend ptk_launcher)
cmake --build "$build" --target "${targets[@]}" >/dev/null
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"

# The installed ptk is the launcher: it finds this preset's backend module in lib/ptk/backends. A CPU preset's is
# chosen by auto; a GPU preset's alone has nothing to run here (exit 2, each backend's reason on the line).
if [ -n "$module" ]; then
  if "$tmp/prefix/bin/ptk" info >"$tmp/info" 2>&1; then
    grep -q "^  auto chooses: cpu$" "$tmp/info" || { cat "$tmp/info"; log "installed ptk info: auto did not choose cpu"; exit 1; }
    log "installed bin/ptk: $(grep -c "^  ✓" "$tmp/info") backend(s) usable; auto chooses cpu"
  else
    grep -q "no backend can run here" "$tmp/info" || { cat "$tmp/info"; exit 1; }
    log "installed bin/ptk: $(tail -1 "$tmp/info")"
  fi
fi

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
# The same op through ptk::runtime, the backend chosen when it runs (auto: the cpu module of a CPU preset; a GPU
# preset's install alone has no backend that runs here: exit 2 and its reasons).
if [ -n "$module" ]; then
  if "$tmp/consumer/ptk_consumer_rt"; then
    log "ok (ptk::runtime)"
  else
    status=$?
    [ $status -eq 2 ] && [ -n "${env_vars[*]}" ] || { log "ptk_consumer_rt failed (exit $status)"; exit 1; }
    log "ptk_consumer_rt: exit 2, no backend of this install runs here (a $preset install alone)"
  fi
fi
