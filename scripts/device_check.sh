#!/usr/bin/env bash
# The prepared device check: one call on a machine with an NVIDIA GPU, over binaries built elsewhere, or the same
# steps on this machine's CPU backend (--backend cpu) to show that it runs end to end where no GPU is lent.
#
#   here:  scripts/build.sh cuda && scripts/device_check.sh --pack      # copies what to carry into .device/
#   there: scripts/device_check.sh [OUT_DIR]                            # default: $OUT, else build/device
#   CPU:   scripts/build.sh cpu && scripts/device_check.sh --backend cpu [OUT_DIR]   # build/cpu's binaries
#
# It runs, each step bounded (timeouts; under 8 minutes in all on an H100) and logged into OUT_DIR:
#   1. nvidia-smi (or the CPU) and `ptk info` (what Kokkos sees);
#   2. the parity suite on the device (PTK_DEVICE=default ptk_tests: every kernel against the float64
#      oracle with the device's own tuning; the bf16/f16 GEMM through cuBLAS and through ptk's kernel), gtest JSON
#      in tests.json;
#   3. the quick sweep of ptk's kernels and the device copy (bench.json; the 16-bit GEMM as routed, ptk, and ptk's
#      own kernel, ptk_portable), decode with each KV-cache
#      dtype (bench_kv.json); on the GPU, PyTorch's ops at the same shapes on the same GPU
#      (scripts/device_torch.py: torch.json; 16-bit GEMMs in PyTorch's 16-bit types) and a ratio
#      table (report.md) by scripts/device_report.py;
#   4. decode against PyTorch on the same device: ptk_bench's decode family (--quick) and scripts/decode_torch.py
#      at the same models, contexts and batch (decode.md);
#   5. a 200-step `ptk train` (train.log), and fp32 against bf16 and f16 mixed precision over 300 steps
#      (scripts/mixed_precision_curves.py: mixed_precision.md; GPU only); 20 steps of a GPT-2-small-shaped model
#      in each dtype (train_<dtype>.log; GPU only).
# Everything printed goes to OUT_DIR/device_check.log; OUT_DIR/device_check.json has each step's status and
# seconds, the parity counts and the device. The carried build (.device/pack.tar.xz) needs only libcudart.so.11.0
# (carried) and the driver's libcuda.so.1; the bf16/f16 GEMM takes the machine's own cuBLAS where there is one.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--pack" ]; then
  build=${2:-build/cuda}
  rm -rf .device && mkdir -p .device
  cp "$build/ptk" "$build/ptk_tests" "$build/ptk_bench" "$build/ptk-launcher" .device/
  mkdir -p .device/backends && cp "$build"/backends/libptk_backend_*.so .device/backends/  # the launcher's module
  # Every shared library the binaries need that a bare GPU machine may lack, besides the driver's
  # (libcuda) and the C/C++ runtime, xz-compressed: OpenBLAS and oneDNN alone are 75 MB, over the
  # 64 MiB a call may carry.
  mkdir -p .device/lib
  for lib in $(ldd .device/ptk .device/ptk_tests .device/ptk_bench .device/backends/*.so | awk '/=> \// {print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libcuda.so*) ;;
      *) cp -L "$lib" .device/lib/ ;;
    esac
  done
  # Binaries and libraries in one xz archive: uncompressed they are over 80 MB with the launcher's module.
  tar -C .device -cf - ptk ptk_tests ptk_bench ptk-launcher backends lib | xz -T2 -6 > .device/pack.tar.xz
  (cd .device && rm -rf ptk ptk_tests ptk_bench ptk-launcher backends lib)
  grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
  du -sh .device
  ls .device
  exit 0
fi

backend=cuda
if [ "${1:-}" = "--backend" ]; then
  backend=${2:-}
  shift 2
fi
# PTK_PYTHON: the Python with PyTorch (the GPU machine's own on its PATH; here Debian's python3-torch).
case "$backend" in
  cuda) bin=.device ptk=(.device/ptk) py=${PTK_PYTHON:-python3} ;;
  # The launcher with the cpu module, as an install runs it; the tests and sweeps of the cpu preset.
  cpu) bin=build/cpu ptk=(env PTK_BACKEND=cpu build/cpu/ptk-launcher) py=${PTK_PYTHON:-/usr/bin/python3} ;;
  *) echo "device_check: --backend must be cuda or cpu, got '$backend'" >&2; exit 2 ;;
esac
out=${1:-${OUT:-build/device}}
mkdir -p "$out"
exec > >(tee "$out/device_check.log") 2>&1
if [ "$backend" = cuda ]; then
  [ -x .device/ptk_tests ] || tar -C .device -xJf .device/pack.tar.xz
  export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ "$backend" = cuda ] && [ -z "${PTK_CUBLAS:-}" ]; then
  # The vendor GEMM's cuBLAS (src/ptk/core/vendor_blas.hpp), the machine's own (whichever major its driver pairs
  # with): on the loader's path, else the CUDA toolkit's or PyTorch's copy. Found, the parity suite requires that
  # the bf16/f16 GEMM takes it (PTK_EXPECT_VENDOR_GEMM).
  PTK_CUBLAS=$(ldconfig -p | awk '/libcublas\.so\.1[1-9] / {print $NF; exit}')
  [ -n "$PTK_CUBLAS" ] || PTK_CUBLAS=$(find /usr/local/cuda*/lib* /opt /usr/lib -name 'libcublas.so.1[1-9]' 2>/dev/null | sort -r | head -1)
  [ -n "$PTK_CUBLAS" ] && export PTK_CUBLAS PTK_EXPECT_VENDOR_GEMM=cuBLAS
  echo "device_check: cuBLAS for the 16-bit GEMM: ${PTK_CUBLAS:-none found}"
fi
[ -x "$bin/ptk_tests" ] || { echo "device_check: no $bin/ptk_tests (build it first; see the top of this script)" >&2; exit 2; }
steps=()
step() { echo "=== device_check: $* ($SECONDS s)"; }
record() {  # record NAME STATUS SECONDS
  steps+=("{\"step\": \"$1\", \"status\": $2, \"seconds\": $3}")
  echo "--- $1: exit $2 in $3 s"
}
run() {  # run NAME FUNCTION: one step (the function bounds its commands with timeout), recorded
  local name=$1 t0=$SECONDS
  step "$name"
  "$2"
  record "$name" $? $((SECONDS - t0))
}

device() {
  if [ "$backend" = cuda ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
  else
    echo "$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs" | tee "$out/gpu.txt"
  fi
}
info() { timeout 60 "${ptk[@]}" info > "$out/info.txt" 2>&1; local status=$?; cat "$out/info.txt"; return $status; }
launcher() {  # the install's launcher: which backend auto takes here, and why
  local path=$([ "$backend" = cuda ] && echo "$PWD/.device/backends" || echo "$PWD/build/cpu/backends")
  PTK_BACKEND_PATH=$path timeout 90 "$bin/ptk-launcher" info --json > "$out/backends.json"
  local status=$?
  cat "$out/backends.json"
  return $status
}
parity() {
  PTK_DEVICE=default timeout "${PTK_DEVICE_TEST_S:-200}" "$bin/ptk_tests" --gtest_brief=1 \
    --gtest_output=json:"$out/tests.json" > "$out/tests.log" 2>&1
  local status=$?
  grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED  \]" "$out/tests.log" | tail -40
  return $status
}
sweep() {
  timeout "${PTK_DEVICE_BENCH_S:-180}" "$bin/ptk_bench" --quick --benchmark_filter='/(ptk|ptk_portable|memcpy|kokkos_blas)/' \
    --benchmark_out="$out/bench.json" --benchmark_out_format=json > "$out/bench.log" 2>&1
}
sweep_kv() {
  timeout 60 "$bin/ptk_bench" --benchmark_filter='decode/ptk/.*kv=' \
    --benchmark_out="$out/bench_kv.json" --benchmark_out_format=json > "$out/bench_kv.log" 2>&1
}
torch_ops() {  # PyTorch's ops at the sweep's shapes on the GPU, and the ratio table
  PYTHONUNBUFFERED=1 timeout 120 "$py" scripts/device_torch.py "$out/bench.json" --out "$out/torch.json" 2> "$out/torch.log"
  local status=$?
  "$py" scripts/device_report.py "$out/bench.json" "$out/bench_kv.json" "$out/torch.json" > "$out/report.md" 2>&1
  cat "$out/report.md"
  return $status
}
decode() {  # one KV-cache step of the decode sweep's models, ptk and PyTorch on the same device
  timeout 120 "$bin/ptk_bench" --quick --benchmark_filter='^decode/ptk/model=[^,]*,ctx=[0-9]*,B=1/' \
    --benchmark_out="$out/decode.json" --benchmark_out_format=json > "$out/decode.log" 2>&1 || return $?
  PYTHONUNBUFFERED=1 timeout 150 "$py" scripts/decode_torch.py --quick --device "$backend" --min-time 0.2 \
    --out "$out/torch_decode.json" --ptk "$out/decode.json" > "$out/decode.md" 2>> "$out/decode.log"
  local status=$?
  cat "$out/decode.md"
  return $status
}
train() {
  timeout 150 "${ptk[@]}" train --steps 200 --data data/kjv_genesis_exodus.txt > "$out/train.log" 2>&1
  local status=$?
  tail -4 "$out/train.log"
  return $status
}
train_dtypes() {  # a GPT-2-small-shaped step (12 layers, 768 wide, B 8 x T 256) in f32, bf16 and f16: the GEMMs' share
  local dtype status=0
  echo "| --dtype | median ms/step (steps 6-20) | tokens/s |"
  echo "|---|---|---|"
  for dtype in f32 bf16 f16; do
    timeout 100 "${ptk[@]}" train --steps 20 --layers 12 --width 768 --heads 12 --block 256 --batch 8 --dtype $dtype \
      --data data/kjv_genesis_exodus.txt > "$out/train_$dtype.log" 2>&1 || status=$?
    local ms=$(grep -o '^step [0-9]*/20 .* ms/step' "$out/train_$dtype.log" |
      awk -F'|' '{ split($1, a, " "); split(a[2], b, "/"); if (b[1] > 5) { split($5, w, " "); print w[1] } }' |
      sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }')
    awk -v d=$dtype -v m="$ms" 'BEGIN { printf "| %s | %.1f | %.0f |\n", d, m, (m > 0 ? 8 * 256 * 1000 / m : 0) }'
  done
  return $status
}
mixed_precision() {
  timeout 150 "$py" scripts/mixed_precision_curves.py "$bin/ptk" --steps 300 -- --data data/kjv_genesis_exodus.txt \
    > "$out/mixed_precision.md" 2> "$out/mixed_precision.log"
  local status=$?
  cat "$out/mixed_precision.md"
  return $status
}

run "device" device
run "ptk info" info
run "backends (the launcher's ptk info --json)" launcher
run "parity suite on the device (PTK_DEVICE=default)" parity
run "quick sweep: ptk and the device copy" sweep
run "decode with a 16-bit KV cache" sweep_kv
[ "$backend" = cuda ] && run "PyTorch's ops at the same shapes" torch_ops
run "decode against PyTorch (decode_torch.py --device $backend)" decode
run "ptk train, 200 steps" train
[ "$backend" = cuda ] && run "mixed precision against fp32 (300 steps each)" mixed_precision
[ "$backend" = cuda ] && run "a GPT-2-small-shaped training step per dtype" train_dtypes

read -r ran failed < <("$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["tests"], d["failures"])' \
  "$out/tests.json" 2>/dev/null || echo "0 0")
{
  echo "{\"date\": \"$(date -u +%FT%TZ)\", \"backend\": \"$backend\", \"device\": \"$(tail -1 "$out/gpu.txt" | sed 's/"/ /g')\","
  echo " \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\", \"tests_run\": ${ran:-0}, \"tests_failed\": ${failed:-0},"
  echo " \"steps\": [$(IFS=,; echo "${steps[*]}")]}"
} > "$out/device_check.json"
step "done: $out/device_check.json"
cat "$out/device_check.json"

