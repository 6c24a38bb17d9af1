#!/usr/bin/env bash
# A Mistral-7B-shaped model on this machine, ptk against llama.cpp on the same weights in one session:
#   1. scripts/make_mistral7b.py writes the model (random BF16, Hugging Face layout, ~14.5 GB) unless DIR has it;
#   2. `ptk info --model DIR` (the estimate per dtype) and `ptk generate --dtype f32` (refused before allocating);
#   3. `ptk convert` writes DIR.bf16.gguf and DIR.q8_0.gguf (llama.cpp's files of the same weights);
#   4. for each dtype (bf16, q8_0) and context (128, 1024 prompt tokens): `ptk generate --model DIR --dtype T`
#      and llama.cpp (npm node-llama-cpp 3.21.1, its CPU build; scripts/llama_cpp_speed.mjs) on the GGUF file, the same
#      prompt ids, N new tokens, THREADS threads each, one after the other (never side by side);
#   5. a markdown table of prefill and decode tokens/s and ptk / llama.cpp, in OUT/mistral7b.md.
# usage: scripts/mistral7b_sweep.sh [DIR] [OUT] [N]   (defaults /tmp/ptk-mistral7b, mistral7b-sweep, 16; THREADS=2)
# Needs ~37 GB of disk (the model and two GGUF files) and ~16 GB of memory; the files stay for a rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-/tmp/ptk-mistral7b} out=${2:-mistral7b-sweep} n=${3:-16}
threads=${THREADS:-2}
ptk=${PTK:-build/cpu/ptk}
cache=${PTK_CACHE:-$HOME/.cache/ptk}/npm
version=3.21.1
log() { printf '[mistral7b_sweep] %s\n' "$*" >&2; }
[ -x "$ptk" ] || { echo "mistral7b_sweep: no $ptk (build the cpu preset first)" >&2; exit 2; }
mkdir -p "$out"
if [ ! -f "$model/config.json" ]; then
  log "writing the model to $model (~14.5 GB, a few minutes)"
  /usr/bin/python3 scripts/make_mistral7b.py "$model"
fi
if [ ! -f "$cache/node_modules/@node-llama-cpp/linux-x64/package.json" ]; then
  log "installing node-llama-cpp $version (CPU build only) into $cache"
  npm install --prefix "$cache" --no-audit --no-fund --no-save --omit=optional "node-llama-cpp@$version" \
    "@node-llama-cpp/linux-x64@$version" >"$out/npm.log" 2>&1
fi

"$ptk" info --model "$model" | sed -n '/^Model/,$p' | tee "$out/info.txt"
if OMP_NUM_THREADS=$threads "$ptk" generate --model "$model" --dtype f32 --prompt-ids "1 2 3" -n 4 2>"$out/f32.err"; then
  echo "mistral7b_sweep: --dtype f32 was not refused" >&2; exit 1
fi
log "f32: $(cat "$out/f32.err")"
for t in bf16 q8_0; do
  if [ ! -f "$model.$t.gguf" ]; then
    log "ptk convert $model $model.$t.gguf --dtype $t"
    "$ptk" convert "$model" "$model.$t.gguf" --dtype "$t" >&2
  fi
done

# Prompt ids: a fixed draw from the tokenizer's ids (every engine gets the same ones; BOS first).
prompt() { /usr/bin/python3 -c "import random; r = random.Random(1); print(' '.join(['1'] + [str(r.randrange(3, 8000)) for _ in range($1 - 1)]))"; }
field() { sed -n "s/.*$1: [0-9]* tokens in [0-9.]* ms (\([0-9.]*\) tokens\/s).*/\1/p" "$2" | head -1; }
{
  echo "| dtype | context | ptk prefill tok/s | llama.cpp prefill tok/s | ratio | ptk decode tok/s | llama.cpp decode tok/s | ratio | ptk peak memory |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$out/mistral7b.md"
for t in bf16 q8_0; do
  for ctx in 128 1024; do
    ids=$(prompt "$ctx")
    log "ptk generate --dtype $t, $ctx prompt tokens + $n"
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=spread OMP_PLACES=threads "$ptk" generate --model "$model" --dtype "$t" \
      --kv-dtype bf16 --prompt-ids "$ids" -n "$n" --temperature 0 --ids --device host >"$out/ptk.$t.$ctx.ids" \
      2>"$out/ptk.$t.$ctx.err"
    log "  $(tail -1 "$out/ptk.$t.$ctx.err")"
    log "llama.cpp $t, $ctx prompt tokens + $n"
    node scripts/llama_cpp_speed.mjs "$cache" "$model.$t.gguf" "$threads" "$n" "$ids" >"$out/llama.$t.$ctx.txt"
    log "  $(cat "$out/llama.$t.$ctx.txt")"
    pp=$(field prefill "$out/ptk.$t.$ctx.err") lp=$(field prefill "$out/llama.$t.$ctx.txt")
    pd=$(field decode "$out/ptk.$t.$ctx.err") ld=$(field decode "$out/llama.$t.$ctx.txt")
    mem=$(sed -n 's/.*peak resident memory \(.*\)$/\1/p' "$out/ptk.$t.$ctx.err")
    ratio() { /usr/bin/python3 -c "print('%.2f' % ($1 / $2))"; }
    echo "| $t | $ctx | $pp | $lp | $(ratio "$pp" "$lp") | $pd | $ld | $(ratio "$pd" "$ld") | $mem |" >>"$out/mistral7b.md"
  done
done
cat "$out/mistral7b.md"
