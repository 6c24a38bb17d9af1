#!/bin/bash
# ptk against llama.cpp (the npm package node-llama-cpp 3.21.1, its prebuilt CPU build), on a Llama trained here on a
# SentencePiece BPE tokenizer (spm_train, as Llama's own is a BPE model) and written by `ptk convert` to GGUF:
#   - llama.cpp loads the file; its tokenization of each prompt equals SentencePiece's (ptk tokenize);
#   - ptk generate --model on the GGUF file, with the tokenizer the file holds, gives the checkpoint's tokens exactly
#     (ptk's GGUF reader); that tokenizer (ptk tokenize --tokenizer FILE.gguf) gives llama.cpp's ids on a corpus;
#   - F32: for 3 prompts x 32 tokens, llama.cpp's greedy tokens equal `ptk generate --temperature 0 --ids`;
#   - Q8_0: the same file quantized by `ptk convert --dtype q8_0` against `ptk generate --dtype q8_0`: agreement
#     reported (tokens equal before the first difference), not required (the two quantize activations differently).
# node-llama-cpp is installed once into ${PTK_CACHE:-$HOME/.cache/ptk}/npm/node-llama-cpp-VERSION (a prefix of its own:
# `npm install --no-save` into a shared one removes what else is there) without its optional GPU builds (the CPU
# binary package alone, ~30 MB); where npm cannot install it the test says so loudly and exits 77 (ctest: skipped).
# usage: llama_cpp_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"
version=3.21.1
cache=${PTK_CACHE:-$HOME/.cache/ptk}/npm/node-llama-cpp-$version
if [ ! -f "$cache/node_modules/@node-llama-cpp/linux-x64/package.json" ] ||
   ! grep -q "\"version\": \"$version\"" "$cache/node_modules/node-llama-cpp/package.json" 2>/dev/null; then
  mkdir -p "$cache"
  if ! command -v npm >/dev/null || ! timeout 600 npm install --prefix "$cache" --no-audit --no-fund --no-save \
       --omit=optional "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" >"$dir/npm.log" 2>&1; then
    echo "SKIPPED: llama.cpp (npm package node-llama-cpp $version) cannot be installed here:"
    tail -3 "$dir/npm.log" 2>/dev/null
    exit 77
  fi
fi

text=$src/data/kjv_genesis_exodus.txt
spm_train --input="$text" --model_prefix="$dir/spm" --vocab_size=500 --model_type=bpe --byte_fallback=true \
  --minloglevel=2 >/dev/null 2>&1 || fail "spm_train"
tok=$dir/spm.model
"$ptk" train --arch llama --layers 2 --width 64 --heads 4 --kv-heads 2 --block 96 --batch 8 --steps 200 \
  --tokenizer "$tok" --save "$dir/m.safetensors" --device host >"$dir/train" 2>&1 || fail "train: $(tail -3 "$dir/train")"
echo "ok: trained a llama on 500 SentencePiece BPE ids: $(grep '^val loss' "$dir/train")"
for t in f32 q8_0; do
  "$ptk" convert "$dir/m.safetensors" "$dir/m.$t.gguf" --dtype $t --tokenizer "$tok" >"$dir/convert" 2>&1 ||
    fail "convert --dtype $t: $(cat "$dir/convert")"
  echo "ok: $(cat "$dir/convert")"
done

# The GGUF file's own tokenizer (tokenizer.ggml.*: SentencePiece rebuilt without the model file) against llama.cpp's
# tokenization of the same file, on the tokenizer corpus (Unicode, emoji, whitespace runs: no normalization) and
# the first 20 KB of the training text.
head -c 20000 "$text" >"$dir/kjv.txt"
for corpus in "$src/tests/data/tokenizer_corpus.txt" "$dir/kjv.txt"; do
  "$ptk" tokenize --tokenizer "$dir/m.f32.gguf" --file "$corpus" --no-bos >"$dir/gguf_ids" 2>"$dir/err" ||
    fail "tokenize --tokenizer m.f32.gguf: $(cat "$dir/err")"
  timeout 300 node "$src/tests/llama_cpp_reference.mjs" "$cache" "$dir/m.f32.gguf" 0 "" "@$corpus" >"$dir/llama" \
    2>"$dir/err" || fail "llama.cpp tokenize: $(tail -5 "$dir/err")"
  sed -n 2p "$dir/llama" >"$dir/llama_ids"
  cmp -s "$dir/llama_ids" "$dir/gguf_ids" || fail "$(basename "$corpus"): the GGUF file's tokenizer and llama.cpp's differ: $(
    /usr/bin/python3 -c "import sys; a, b = (open(p).read().split() for p in sys.argv[1:3]); i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b))); print(f'at id {i} of {len(a)}/{len(b)}: llama.cpp {a[max(0,i-3):i+5]}, ptk {b[max(0,i-3):i+5]}')" "$dir/llama_ids" "$dir/gguf_ids")"
  echo "ok: $(basename "$corpus"): the GGUF file's own tokenizer gives llama.cpp's $(wc -w <"$dir/gguf_ids") ids"
done

prompts=("And God said" "In the beginning God created the heaven" "And Moses went up unto the LORD, émigré 🎉")
for prompt in "${prompts[@]}"; do
  ids=$("$ptk" tokenize --tokenizer "$tok" --text "$prompt" --no-bos) || fail "tokenize '$prompt'"
  for t in f32 q8_0; do
    "$ptk" generate --load "$dir/m.safetensors" --tokenizer "$tok" --prompt "$prompt" -n 32 --ignore-eos --temperature 0 --ids \
      --dtype $t --device host >"$dir/ptk" 2>"$dir/err" || fail "generate --dtype $t: $(cat "$dir/err")"
    # ptk's GGUF reader: the file it wrote runs as the checkpoint does, token for token (q8_0: the same blocks), with
    # the tokenizer the file holds (tokenizer.ggml.*; no --tokenizer).
    "$ptk" generate --model "$dir/m.$t.gguf" --prompt "$prompt" -n 32 --ignore-eos --temperature 0 --ids \
      --dtype $t --device host >"$dir/ptk_gguf" 2>"$dir/err" || fail "generate --model m.$t.gguf: $(cat "$dir/err")"
    cmp -s "$dir/ptk" "$dir/ptk_gguf" || fail "$t '$prompt': ptk on its GGUF file $(cat "$dir/ptk_gguf"), on the checkpoint $(cat "$dir/ptk")"
    timeout 300 node "$src/tests/llama_cpp_reference.mjs" "$cache" "$dir/m.$t.gguf" 32 "$ids" "$prompt" >"$dir/llama" \
      2>"$dir/err" || fail "llama.cpp on $t: $(tail -5 "$dir/err")"
    [ "$(sed -n 2p "$dir/llama")" = "$ids" ] || fail "llama.cpp tokenizes '$prompt' as $(sed -n 2p "$dir/llama"), SentencePiece as $ids"
    same=$(/usr/bin/python3 -c "import sys; a, b = (open(p).readline().split() for p in sys.argv[1:3]); print(next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b))))" "$dir/ptk" "$dir/llama")
    if [ $t = f32 ]; then
      [ "$same" -eq 32 ] || fail "F32 '$prompt': llama.cpp and ptk differ at token $same: llama.cpp $(head -1 "$dir/llama"), ptk $(cat "$dir/ptk")"
      echo "ok: F32 '$prompt': llama.cpp's 32 greedy tokens equal ptk's; llama.cpp tokenizes the prompt as SentencePiece"
      echo "    $prompt|$("$ptk" tokenize --tokenizer "$tok" --decode --file "$dir/ptk")"
    else
      echo "report: Q8_0 '$prompt': $same of 32 greedy tokens equal before the first difference"
    fi
  done
done
