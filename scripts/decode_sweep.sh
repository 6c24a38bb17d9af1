#!/usr/bin/env bash
# The decode sweep, ptk against PyTorch and llama.cpp on this machine in one session: ptk_bench's `decode` family
# (one KV-cache generation step at a fixed context; benchmarks/decode_bench.cpp) and scripts/decode_torch.py (the
# same steps in PyTorch, its own thread pool), then a markdown table of tokens/s and their ratio; then
# scripts/llama_cpp_sweep.sh (prefill and decode of a 75 M Llama against llama.cpp on the same GGUF files, prompts
# of 16, 128, 512 and 2048 tokens, 3 rounds; --quick: 16 and 128, one round) -> OUT/llama_cpp.md.
#   scripts/decode_sweep.sh [BUILD_DIR] [OUT_DIR] [--quick]      (defaults: build/cpu, decode-sweep)
# Installs python3-torch when /usr/bin/python3 lacks torch. Both sides use OMP_NUM_THREADS (default 2) threads.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu} out=${2:-decode-sweep} quick=()
[ "${3:-}" = "--quick" ] && quick=(--quick)
threads=${OMP_NUM_THREADS:-2}
[ -x "$build/ptk_bench" ] || { echo "decode_sweep: no $build/ptk_bench (build the preset first: scripts/build.sh)" >&2; exit 2; }
# PyTorch 1.13 for CPU from Debian (python3-torch), installed here when missing, as bootstrap.sh installs the rest.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
    echo "decode_sweep: /usr/bin/python3 has no torch and there is no root or sudo to install python3-torch" >&2; exit 2
  fi
  echo "[decode_sweep] installing python3-torch (PyTorch 1.13 for CPU, Debian)"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-torch >/dev/null
fi
mkdir -p "$out"
echo "[decode_sweep] ptk: $build/ptk_bench --benchmark_filter='^decode/' (OMP_NUM_THREADS=$threads)"
OMP_NUM_THREADS=$threads "$build/ptk_bench" "${quick[@]}" --benchmark_filter='^decode/' \
  --benchmark_out="$out/ptk_decode.json" --benchmark_out_format=json
echo "[decode_sweep] PyTorch: scripts/decode_torch.py --threads $threads"
/usr/bin/python3 scripts/decode_torch.py "${quick[@]}" --threads "$threads" --out "$out/torch_decode.json" \
  --ptk "$out/ptk_decode.json" | tee "$out/decode.log"
sed -n '/^| model/,$p' "$out/decode.log" >"$out/decode.md"
echo "[decode_sweep] table: $out/decode.md"
llama_args=()
[ ${#quick[@]} -gt 0 ] && llama_args=(--prompts "16 128" --rounds 1)
PTK=$build/ptk OMP_NUM_THREADS=$threads THREADS=$threads scripts/llama_cpp_sweep.sh --out "$out" "${llama_args[@]}"
