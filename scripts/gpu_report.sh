#!/usr/bin/env bash
# What each hot kernel of the cuda build asks of an H100 (registers, stack/spills, shared memory,
# theoretical occupancy at its launch configuration, the GEMM main loop's FFMA per load), read from
# the binary with cuobjdump: no GPU needed. Run after `scripts/build.sh cuda`; CI runs it.
#   scripts/gpu_report.sh [CUDA_BUILD_DIR] [HOST_BUILD_DIR]   (default: build/cuda build/cpu)
# Writes CUDA_BUILD_DIR/gpu_report.md (the table docs/design.md quotes) and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda_dir=${1:-build/cuda}
host_dir=${2:-build/cpu}
# Debian's CUDA 11.8 tools (/usr/bin), as the cuda preset builds with; not the CUDA 13 ones in /usr/local.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
for tool in cuobjdump cu++filt python3; do
  command -v "$tool" >/dev/null || { echo "gpu_report: $tool not found (scripts/bootstrap.sh cuda installs it)" >&2; exit 2; }
done
[ -f "$cuda_dir/src/libptk.a" ] || { echo "gpu_report: no $cuda_dir/src/libptk.a: run scripts/build.sh cuda first" >&2; exit 2; }
# The launch configurations come from the GPU tuning through a host build's ptk_gpu_launches.
if [ ! -x "$host_dir/ptk_gpu_launches" ]; then
  echo "[gpu_report] building $host_dir/ptk_gpu_launches"
  cmake --build "$host_dir" --target ptk_gpu_launches >/dev/null
fi
"$host_dir/ptk_gpu_launches" > "$cuda_dir/gpu_launches.csv"
echo "[gpu_report] $cuda_dir/src/libptk.a, launch configurations from $host_dir/ptk_gpu_launches"
python3 scripts/gpu_report.py "$cuda_dir/src/libptk.a" "$cuda_dir/gpu_launches.csv" --out "$cuda_dir/gpu_report.md"
