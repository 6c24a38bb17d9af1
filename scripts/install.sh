#!/usr/bin/env bash
# One install with every backend this machine can build (docs/design.md, "Backends chosen at run time"): the cpu
# preset in full (bin/ptk, the launcher; headers, libptk.a, lib/cmake/ptk; the cpu module), then the backend
# module of each GPU preset whose toolchain is installed (CUDA 11.8's /usr/bin/nvcc: cuda; hipcc: hip), or the
# ones named. The installed ptk chooses among them when it runs (--backend, PTK_BACKEND; auto: cuda, hip, cpu).
#   scripts/install.sh PREFIX [GPU_PRESET...]      e.g. scripts/install.sh ~/opt/ptk   or   ... ~/opt/ptk cuda
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/install.sh PREFIX [cuda|cuda-kokkos3|hip ...]" >&2; exit 2; }
prefix=$1
shift
gpus=("$@")
if [ ${#gpus[@]} -eq 0 ]; then
  [ -x /usr/bin/nvcc ] && gpus+=(cuda)
  command -v hipcc >/dev/null && gpus+=(hip)
fi
log() { printf '[install] %s\n' "$*"; }
scripts/build.sh cpu ptk_lib ptk_text ptk_cli ptk_backend ptk_launcher
cmake --install build/cpu --prefix "$prefix" >/dev/null
log "cpu: bin/ptk, the cpu module, headers and libraries in $prefix"
for preset in "${gpus[@]}"; do
  scripts/build.sh "$preset" ptk_backend
  cmake --install "build/$preset" --prefix "$prefix" --component backend >/dev/null
  log "$preset: added its module to $prefix/lib/ptk/backends"
done
[ ${#gpus[@]} -gt 0 ] || log "no GPU toolchain here (/usr/bin/nvcc, hipcc): the install has the cpu backend only"
"$prefix/bin/ptk" info | sed -n '/^Backends/,/chooses/p'
