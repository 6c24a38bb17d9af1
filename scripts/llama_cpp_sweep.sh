#!/usr/bin/env bash
# ptk against llama.cpp on the same GGUF files, prefill and decode, batch 1, in one session:
#   1. the model: --model DIR (a Hugging Face Llama/Mistral directory) or, by default, the 75 M-parameter Llama of
#      scripts/make_llama.py --shape llama75m (random BF16 weights, 150 MB), written into the cache once;
#   2. `ptk convert DIR DIR.<dtype>.gguf --dtype <dtype>` for each dtype: both programs read the same file;
#   3. llama.cpp: the npm packages node-llama-cpp 3.21.1 and @node-llama-cpp/linux-x64 (its prebuilt CPU libraries,
#      no GPU builds) installed into the cache; benchmarks/llama_cpp_speed.cpp compiled there against those
#      libraries and the headers of the same release (the package's source bundle): its C API, nothing between tokens;
#   4. ROUNDS rounds; in each, for every dtype and prompt length, `ptk generate` and llama_cpp_speed one after the
#      other (the order swapped every round), the same prompt ids (a fixed draw, BOS first), N greedy tokens,
#      THREADS threads each, KV caches of the same type (--kv-dtype, default f16: llama.cpp's default);
#   5. OUT/llama_cpp.md: the medians of prefill and decode tokens/s, ptk / llama.cpp, each side's peak memory, and
#      how many greedy tokens agree (tokens before the first difference, in the first round). F32 must agree in
#      full (the same weights and types): if not, the table says so and the script exits 1.
# usage: scripts/llama_cpp_sweep.sh [--model DIR] [--out OUT] [--dtypes "f32 bf16 q8_0"] [--prompts "16 128 512 2048"]
#                                   [-n N] [--rounds R] [--kv-dtype f32|bf16|f16]
# (defaults: the 75 M Llama, llama-cpp-sweep, the lists shown, 64, 3, f16; THREADS=2, PTK=build/cpu/ptk)
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${PTK_CACHE:-$HOME/.cache/ptk}
model="" out=llama-cpp-sweep dtypes="f32 bf16 q8_0" prompts="16 128 512 2048" n=64 rounds=3 kv=f16
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2 ;; --out) out=$2 ;; --dtypes) dtypes=$2 ;; --prompts) prompts=$2 ;; -n) n=$2 ;;
    --rounds) rounds=$2 ;; --kv-dtype) kv=$2 ;;
    *) echo "llama_cpp_sweep: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
  shift 2
done
threads=${THREADS:-2}
ptk=${PTK:-build/cpu/ptk}
version=3.21.1
npm_dir=$cache/npm/node-llama-cpp-$version  # as tests/llama_cpp_test.sh: a prefix of its own
bins=$npm_dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
log() { printf '[llama_cpp_sweep] %s\n' "$*" >&2; }
[ -x "$ptk" ] || { echo "llama_cpp_sweep: no $ptk (build the cpu preset first)" >&2; exit 2; }
mkdir -p "$out"
if [ -z "$model" ]; then
  model=$cache/llama75m
  if [ ! -f "$model/config.json" ]; then
    log "writing the 75 M Llama to $model"
    /usr/bin/python3 scripts/make_llama.py "$model" --shape llama75m
  fi
fi
if [ ! -f "$bins/libllama.v0.4.0.so" ] ||
   ! grep -q "\"version\": \"$version\"" "$npm_dir/node_modules/node-llama-cpp/package.json" 2>/dev/null; then
  log "installing node-llama-cpp $version (CPU build only) into $npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --omit=optional "node-llama-cpp@$version" \
    "@node-llama-cpp/linux-x64@$version" >"$out/npm.log" 2>&1 || { tail -5 "$out/npm.log" >&2; exit 2; }
fi
speed=$npm_dir/llama_cpp_speed
if [ ! -x "$speed" ] || [ benchmarks/llama_cpp_speed.cpp -nt "$speed" ]; then
  headers=$npm_dir/llama.cpp-headers
  if [ ! -f "$headers/include/llama.h" ]; then
    log "extracting llama.cpp's headers from the package's source bundle into $headers"
    rm -rf "$headers.git" && mkdir -p "$headers"
    git clone -q --bare "$npm_dir/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$headers.git"
    git --git-dir="$headers.git" archive HEAD include ggml/include | tar -x -C "$headers"
    rm -rf "$headers.git"
  fi
  log "compiling benchmarks/llama_cpp_speed.cpp against $bins"
  g++ -O2 -std=c++17 benchmarks/llama_cpp_speed.cpp -I"$headers/include" -I"$headers/ggml/include" \
    "$bins/libllama.v0.4.0.so" "$bins/libggml.v0.4.0.so" "$bins/libggml-base.so" -Wl,-rpath,"$bins" -o "$speed"
fi
for t in $dtypes; do
  if [ ! -f "$model.$t.gguf" ]; then
    log "ptk convert $model $model.$t.gguf --dtype $t"
    "$ptk" convert "$model" "$model.$t.gguf" --dtype "$t" >&2
  fi
done

# Prompt ids: a fixed draw from the tokenizer's first 8000 ids (both programs get the same ones; BOS first).
prompt() { /usr/bin/python3 -c "import random; r = random.Random(1); print(' '.join(['1'] + [str(r.randrange(3, 8000)) for _ in range($1 - 1)]))"; }
run_ptk() {  # dtype length round
  local ids; ids=$(prompt "$2")
  OMP_NUM_THREADS=$threads OMP_PROC_BIND=spread OMP_PLACES=threads "$ptk" generate --model "$model.$1.gguf" \
    --tokenizer "$model" --dtype "$1" --kv-dtype "$kv" --prompt-ids "$ids" -n "$n" --ignore-eos \
    --temperature 0 --ids --device host >"$out/ptk.$1.$2.$3.ids" 2>"$out/ptk.$1.$2.$3.err"
  tail -1 "$out/ptk.$1.$2.$3.err" >"$out/ptk.$1.$2.$3.txt"
}
run_llama() {
  "$speed" "$bins" "$model.$1.gguf" "$threads" "$n" "$(prompt "$2")" >"$out/llama.$1.$2.$3.out"
  head -1 "$out/llama.$1.$2.$3.out" >"$out/llama.$1.$2.$3.txt"
  sed -n 2p "$out/llama.$1.$2.$3.out" >"$out/llama.$1.$2.$3.ids"
}
for r in $(seq 1 "$rounds"); do
  for t in $dtypes; do
    for p in $prompts; do
      log "round $r/$rounds: $t, $p prompt tokens + $n"
      if [ $((r % 2)) -eq 1 ]; then run_ptk "$t" "$p" "$r"; run_llama "$t" "$p" "$r"
      else run_llama "$t" "$p" "$r"; run_ptk "$t" "$p" "$r"; fi
      log "  ptk:       $(cat "$out/ptk.$t.$p.$r.txt")"
      log "  llama.cpp: $(cat "$out/llama.$t.$p.$r.txt")"
    done
  done
done
/usr/bin/python3 scripts/llama_cpp_table.py "$out" "$rounds" "$dtypes" "$prompts" | tee "$out/llama_cpp.md"
