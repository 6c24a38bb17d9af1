#!/usr/bin/env bash
# The prepared GPU check: one call on a machine with an NVIDIA GPU, over binaries built elsewhere.
#
#   here:  scripts/build.sh cuda && scripts/device_check.sh --pack      # copies what to carry into .device/
#   there: scripts/device_check.sh [OUT_DIR]                            # default: $OUT, else build/device
#
# There it runs, each step bounded and logged into OUT_DIR:
#   1. nvidia-smi and `ptk info` (what Kokkos sees);
#   2. the parity suite on the GPU (PTK_DEVICE=default ptk_tests: every kernel against the float64
#      oracle with the GPU tuning on the real device), gtest JSON in tests.json;
#   3. the quick sweep of ptk's kernels and the device copy (bench.json), decode with each KV-cache
#      dtype (bench_kv.json), then PyTorch's ops at the same shapes on the same GPU
#      (scripts/device_torch.py: torch.json; 16-bit GEMMs in PyTorch's 16-bit types), and a ratio
#      table (report.md) by scripts/device_report.py;
#   4. a short `ptk train` on the GPU (train.log), and fp32 against bf16 and f16 mixed precision over 300 steps
#      (scripts/mixed_precision_curves.py: mixed_precision.md).
# The carried build needs only libcudart.so.11.0 (carried) and the driver's libcuda.so.1.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--pack" ]; then
  build=${2:-build/cuda}
  rm -rf .device && mkdir -p .device
  cp "$build/ptk" "$build/ptk_tests" "$build/ptk_bench" .device/
  # Every shared library the binaries need that a bare GPU machine may lack, besides the driver's
  # (libcuda) and the C/C++ runtime, xz-compressed: OpenBLAS and oneDNN alone are 75 MB, over the
  # 64 MiB a call may carry.
  mkdir -p .device/lib
  for lib in $(ldd .device/ptk .device/ptk_tests .device/ptk_bench | awk '/=> \// {print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libcuda.so*) ;;
      *) cp -L "$lib" .device/lib/ ;;
    esac
  done
  tar -C .device -cJf .device/lib.tar.xz lib && rm -rf .device/lib
  grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
  du -sh .device
  ls .device
  exit 0
fi

out=${1:-${OUT:-build/device}}
mkdir -p "$out"
[ -d .device/lib ] || tar -C .device -xJf .device/lib.tar.xz
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step() { echo "=== device_check: $* ($SECONDS s)"; }

step "nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
step "ptk info"
timeout 60 .device/ptk info 2>&1 | tee "$out/info.txt"

step "parity suite on the GPU (PTK_DEVICE=default)"
PTK_DEVICE=default timeout "${PTK_DEVICE_TEST_S:-200}" .device/ptk_tests --gtest_brief=1 \
  --gtest_output=json:"$out/tests.json" > "$out/tests.log" 2>&1
echo "ptk_tests exit $?" | tee -a "$out/tests.log"
grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED  \]" "$out/tests.log" | tail -40

step "quick sweep: ptk and the device copy"
timeout "${PTK_DEVICE_BENCH_S:-180}" .device/ptk_bench --quick --benchmark_filter='/(ptk|memcpy|kokkos_blas)/' \
  --benchmark_out="$out/bench.json" --benchmark_out_format=json > "$out/bench.log" 2>&1
echo "ptk_bench exit $?" | tee -a "$out/bench.log"

step "decode with a 16-bit KV cache (full-sweep entries)"
timeout 60 .device/ptk_bench --benchmark_filter='decode/ptk/.*kv=' \
  --benchmark_out="$out/bench_kv.json" --benchmark_out_format=json > "$out/bench_kv.log" 2>&1
echo "ptk_bench (kv) exit $?" | tee -a "$out/bench_kv.log"

step "PyTorch at the same shapes"
PYTHONUNBUFFERED=1 timeout 120 python3 scripts/device_torch.py "$out/bench.json" --out "$out/torch.json" 2> "$out/torch.log"
echo "device_torch exit $?" | tee -a "$out/torch.log"
python3 scripts/device_report.py "$out/bench.json" "$out/bench_kv.json" "$out/torch.json" > "$out/report.md" 2>&1
cat "$out/report.md"

step "ptk train on the GPU (100 steps)"
timeout 90 .device/ptk train --steps 100 --data data/kjv_genesis_exodus.txt > "$out/train.log" 2>&1
echo "ptk train exit $?" | tee -a "$out/train.log"
tail -4 "$out/train.log"

step "mixed-precision training against fp32 on the GPU (300 steps each of f32, bf16, f16)"
timeout 150 python3 scripts/mixed_precision_curves.py .device/ptk --steps 300 -- --data data/kjv_genesis_exodus.txt \
  > "$out/mixed_precision.md" 2> "$out/mixed_precision.log"
echo "mixed_precision_curves exit $?" | tee -a "$out/mixed_precision.log"
cat "$out/mixed_precision.md"
step "done"
