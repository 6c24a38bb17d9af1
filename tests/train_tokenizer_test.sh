#!/bin/bash
# ptk train and generate on a tokenizer's ids (--tokenizer): a SentencePiece model trained here by spm_train on the
# KJV text; the run prints its tokenizer and the validation loss in bits per byte; --load --eval-only with the same
# tokenizer reproduces the val loss; greedy generation repeats and streams text; the checkpoint refuses to go on
# without its tokenizer, with another one, and a byte model refuses a tokenizer. A byte model's bits per byte are
# its loss / ln 2.
# usage: train_tokenizer_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"
text=$src/data/kjv_genesis_exodus.txt
for kind in unigram bpe; do
  spm_train --input="$text" --model_prefix="$dir/$kind" --vocab_size=500 --model_type=$kind --minloglevel=2 \
    >/dev/null 2>&1 || fail "spm_train $kind"
done
tiny=(--layers 1 --width 32 --heads 2 --block 32 --batch 4 --device host)
"$ptk" train "${tiny[@]}" --arch llama --tokenizer "$dir/unigram.model" --steps 8 --save "$dir/sub.safetensors" \
  --sample 12 >"$dir/train" 2>&1 || fail "train --tokenizer: $(tail -3 "$dir/train")"
grep -q "^data .*vocabulary 500 of SentencePiece crc32:[0-9a-f]\{8\} " "$dir/train" || fail "no tokenizer in: $(grep ^data "$dir/train")"
loss=$(sed -n 's/^val loss \([0-9.]*\)$/\1/p' "$dir/train")
bpb=$(sed -n 's/^val bits per byte \([0-9.]*\)$/\1/p' "$dir/train")
[ -n "$loss" ] && [ -n "$bpb" ] || fail "no val loss or bits per byte: $(tail -5 "$dir/train")"
grep -q "^sample (12 tokens" "$dir/train" || fail "no sample"
echo "ok: trained on 500 SentencePiece ids: val loss $loss, $bpb bits per byte"

"$ptk" train --load "$dir/sub.safetensors" --tokenizer "$dir/unigram.model" --eval-only --device host >"$dir/eval" 2>&1 ||
  fail "eval-only: $(tail -3 "$dir/eval")"
[ "$(sed -n 's/^val loss //p' "$dir/eval")" = "$loss" ] || fail "--eval-only gives $(sed -n 's/^val loss //p' "$dir/eval"), the run $loss"
echo "ok: --load --eval-only --tokenizer reproduces val loss $loss"

"$ptk" generate --load "$dir/sub.safetensors" --tokenizer "$dir/unigram.model" --prompt "And God said" -n 10 \
  --temperature 0 --device host >"$dir/g1" 2>"$dir/e1" || fail "generate: $(cat "$dir/e1")"
"$ptk" generate --load "$dir/sub.safetensors" --tokenizer "$dir/unigram.model" --prompt "And God said" -n 10 \
  --temperature 0 --device host >"$dir/g2" 2>/dev/null
cmp -s "$dir/g1" "$dir/g2" || fail "greedy generation differs between two runs"
[ "$(head -c 12 "$dir/g1")" = "And God said" ] || fail "the output does not start with the prompt: $(cat "$dir/g1")"
grep -q "^prefill: 3 tokens in .*decode: 9 tokens in" "$dir/e1" || fail "speeds not in tokens: $(cat "$dir/e1")"
echo "ok: generate --tokenizer: greedy repeats: $(cat "$dir/g1")"

expect_refusal "train without the tokenizer" "was trained on the ids of a tokenizer (SentencePiece crc32:" \
  "$ptk" train --load "$dir/sub.safetensors" --eval-only --device host
expect_refusal "train with another tokenizer" "bpe.model is SentencePiece crc32:" \
  "$ptk" train --load "$dir/sub.safetensors" --tokenizer "$dir/bpe.model" --eval-only --device host
expect_refusal "generate without the tokenizer" "give it with --tokenizer" \
  "$ptk" generate --load "$dir/sub.safetensors" --prompt x --device host
expect_refusal "generate with another tokenizer" "but $dir/sub.safetensors was trained on SentencePiece" \
  "$ptk" generate --load "$dir/sub.safetensors" --tokenizer "$dir/bpe.model" --prompt x --device host
expect_refusal "a tokenizer that is not one" "not a SentencePiece model" \
  "$ptk" train "${tiny[@]}" --tokenizer "$text" --steps 1

# ptk convert to GGUF: the file llama.cpp reads (tests/llama_cpp_test.sh); what it refuses.
"$ptk" convert "$dir/sub.safetensors" "$dir/sub.gguf" --tokenizer "$dir/unigram.model" --dtype q4_0 >"$dir/conv" 2>&1 ||
  fail "convert: $(cat "$dir/conv")"
grep -q "^wrote $dir/sub.gguf: GGUF v3, llama, 12 tensors (q4_0, norms f32)" "$dir/conv" || fail "convert: $(cat "$dir/conv")"
expect_refusal "convert without the tokenizer" "give it with --tokenizer" "$ptk" convert "$dir/sub.safetensors" "$dir/x.gguf"
expect_refusal "convert with another tokenizer" "bpe.model is SentencePiece" \
  "$ptk" convert "$dir/sub.safetensors" "$dir/x.gguf" --tokenizer "$dir/bpe.model"
expect_refusal "convert onto an existing directory" "exists (ptk writes a new directory)" \
  "$ptk" convert "$dir/sub.safetensors" "$dir" --tokenizer "$dir/unigram.model"
mkfifo "$dir/fifo.gguf"
expect_refusal "convert onto a fifo" "not a regular file" \
  "$ptk" convert "$dir/sub.safetensors" "$dir/fifo.gguf" --tokenizer "$dir/unigram.model"
[ ! -e "$dir/x.gguf" ] || fail "a refused convert left a file"
echo "ok: convert writes GGUF (q4_0) and refuses what it cannot write"

"$ptk" train "${tiny[@]}" --steps 5 --save "$dir/bytes.safetensors" >"$dir/btrain" 2>&1 || fail "byte run"
expect_refusal "convert a byte model" "byte-vocabulary model, which GGUF cannot describe" \
  "$ptk" convert "$dir/bytes.safetensors" "$dir/x.gguf"
expect_refusal "a byte model as a directory" "which a Hugging Face directory cannot describe" \
  "$ptk" convert "$dir/bytes.safetensors" "$dir/hf"
[ ! -e "$dir/hf" ] || fail "a refused convert left a directory"
# A byte model as a checkpoint (a copy in f32) runs as the original does.
"$ptk" convert "$dir/bytes.safetensors" "$dir/copy.safetensors" >"$dir/conv" 2>&1 || fail "convert to a checkpoint: $(cat "$dir/conv")"
for m in bytes copy; do
  "$ptk" generate --load "$dir/$m.safetensors" --prompt "And" -n 8 --temperature 0 --ids --device host >"$dir/$m.ids" 2>/dev/null ||
    fail "generate --load $m"
done
cmp -s "$dir/bytes.ids" "$dir/copy.ids" || fail "the converted byte checkpoint generates $(cat "$dir/copy.ids"), the original $(cat "$dir/bytes.ids")"
echo "ok: $(cat "$dir/conv"); it generates as the original"
expect_refusal "a byte model with a tokenizer" "but $dir/bytes.safetensors was trained on bytes" \
  "$ptk" train --load "$dir/bytes.safetensors" --tokenizer "$dir/unigram.model" --eval-only --device host
bl=$(sed -n 's/^val loss //p' "$dir/btrain") bb=$(sed -n 's/^val bits per byte //p' "$dir/btrain")
/usr/bin/python3 -c "import math, sys; sys.exit(abs($bl / math.log(2) - $bb) > 1e-4)" ||
  fail "a byte model's bits per byte $bb is not its loss $bl / ln 2"
echo "ok: a byte model: $bb bits per byte = val loss $bl / ln 2"
