#!/usr/bin/env bash
# A Mistral-7B-shaped model on this machine, ptk against llama.cpp on the same weights in one session:
#   1. scripts/make_llama.py --shape mistral7b writes the model (random BF16, Hugging Face layout, ~14.5 GB) unless
#      DIR has it;
#   2. `ptk info --model DIR` (the estimate per dtype) and `ptk generate --dtype f32` (refused before allocating);
#   3. scripts/llama_cpp_sweep.sh on it: `ptk convert` writes DIR.bf16.gguf and DIR.q8_0.gguf, then for each dtype
#      and prompt length (128, 1024 tokens) `ptk generate` and llama.cpp (its C API, the libraries of the npm package
#      node-llama-cpp 3.21.1) on the same file, the same prompt ids, N new tokens, THREADS threads each, one round;
#      the table of prefill and decode tokens/s, ptk / llama.cpp and peak memory in OUT/llama_cpp.md.
# usage: scripts/mistral7b_sweep.sh [DIR] [OUT] [N]   (defaults /tmp/ptk-mistral7b, mistral7b-sweep, 16; THREADS=2)
# Needs ~37 GB of disk (the model and two GGUF files) and ~16 GB of memory; the files stay for a rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-/tmp/ptk-mistral7b} out=${2:-mistral7b-sweep} n=${3:-16}
threads=${THREADS:-2}
ptk=${PTK:-build/cpu/ptk}
log() { printf '[mistral7b_sweep] %s\n' "$*" >&2; }
[ -x "$ptk" ] || { echo "mistral7b_sweep: no $ptk (build the cpu preset first)" >&2; exit 2; }
mkdir -p "$out"
if [ ! -f "$model/config.json" ]; then
  log "writing the model to $model (~14.5 GB, a few minutes)"
  /usr/bin/python3 scripts/make_llama.py "$model" --shape mistral7b
fi
"$ptk" info --model "$model" | sed -n '/^Model/,$p' | tee "$out/info.txt"
if OMP_NUM_THREADS=$threads "$ptk" generate --model "$model" --dtype f32 --prompt-ids "1 2 3" -n 4 2>"$out/f32.err"; then
  echo "mistral7b_sweep: --dtype f32 was not refused" >&2; exit 1
fi
log "f32: $(cat "$out/f32.err")"
PTK=$ptk scripts/llama_cpp_sweep.sh --model "$model" --out "$out" --dtypes "bf16 q8_0" --prompts "128 1024" \
  -n "$n" --rounds 1
