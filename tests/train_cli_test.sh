#!/bin/bash
# ptk train end to end: a short run saves a checkpoint; --load --eval-only reproduces its val loss; PyTorch
# (scripts/gpt_val_loss.py, an independent implementation) reproduces it from the file alone; truncated,
# corrupted and foreign checkpoints and bad options are refused with one line and exit status 2. The same for a
# short --arch llama run (grouped-query, 2 kv heads), and the refusals of the architecture options. Crafted
# checkpoints (a hostile n_layer, checksums deleted) and inputs that are not regular files are refused at once.
# usage: train_cli_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"
val_loss() { sed -n 's/^val loss \([0-9.]*\)$/\1/p' "$1"; }


# The first 64 KiB of the training text: every validation below reads its last tenth (6,554 bytes) rather than the
# whole text's (38,023; this entry took 48 s under the sanitizers, mostly in those evaluations).
text=$dir/text.txt
head -c 65536 "$src/data/kjv_genesis_exodus.txt" >"$text"
eval_only=(--eval-only --data "$text")  # a checkpoint does not record its text
tiny=(--layers 1 --heads 2 --width 16 --block 16 --batch 4 --device host)
"$ptk" train "${tiny[@]}" --data "$text" --steps 20 --seed 3 --save "$dir/ck.safetensors" --sample 40 >"$dir/train" 2>&1 ||
  fail "ptk train: $(cat "$dir/train")"
cat "$dir/train"
trained=$(val_loss "$dir/train")
[ -n "$trained" ] || fail "no 'val loss' line"
[ -f "$dir/ck.state-20.safetensors" ] || fail "no training state beside the checkpoint: $(ls "$dir")"

"$ptk" train --load "$dir/ck.safetensors" "${eval_only[@]}" --device host >"$dir/eval" 2>&1 || fail "eval-only: $(cat "$dir/eval")"
[ "$(val_loss "$dir/eval")" = "$trained" ] || fail "--eval-only gives $(val_loss "$dir/eval"), training printed $trained"
echo "ok: --load --eval-only reproduces val loss $trained"

if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  torch_loss=$(/usr/bin/python3 "$src/scripts/gpt_val_loss.py" "$dir/ck.safetensors" "$text" | sed -n 's/^val loss //p')
  # Both print 4 decimals of fp32 results: they may differ by one unit in the last place, no more.
  awk -v a="$torch_loss" -v b="$trained" 'BEGIN { d = a - b; exit !(d <= 1.0001e-4 && d >= -1.0001e-4) }' ||
    fail "PyTorch reads the checkpoint as val loss $torch_loss, ptk printed $trained"
  echo "ok: PyTorch reproduces val loss $torch_loss from the checkpoint"
else
  echo "note: python3-torch not installed; the PyTorch cross-check did not run"
fi

size=$(stat -c %s "$dir/ck.safetensors")
head -c $((size - 64)) "$dir/ck.safetensors" >"$dir/truncated.safetensors"
expect_refusal "truncated checkpoint" truncated "$ptk" train --load "$dir/truncated.safetensors" "${eval_only[@]}"
cp "$dir/ck.safetensors" "$dir/corrupt.safetensors"
printf '\x7f' | dd of="$dir/corrupt.safetensors" bs=1 seek=$((size - 7)) conv=notrunc status=none
expect_refusal "corrupted checkpoint" corrupted "$ptk" train --load "$dir/corrupt.safetensors" "${eval_only[@]}"
expect_refusal "foreign file" foreign "$ptk" train --load "$text" "${eval_only[@]}"
expect_refusal "training state as model" foreign "$ptk" train --load "$dir/ck.state-20.safetensors" "${eval_only[@]}"
expect_refusal "unknown option" "--nope" "$ptk" train --nope
expect_refusal "width not divisible by heads" "divisible" "$ptk" train --heads 3 --width 16 --steps 1
expect_refusal "disagreeing --layers" "n_layer" "$ptk" train --load "$dir/ck.safetensors" --layers 2 "${eval_only[@]}"

# Llama: a short run, its val loss reproduced by --eval-only and by PyTorch; the checkpoint fixes the architecture.
"$ptk" train --layers 1 --heads 4 --width 16 --block 16 --batch 4 --device host --arch llama --kv-heads 2 --steps 20 --seed 3 --data "$text" --save "$dir/ll.safetensors" --sample 40 \
  >"$dir/llama" 2>&1 || fail "ptk train --arch llama: $(cat "$dir/llama")"
cat "$dir/llama"
grep -q "^model  llama, 1 layers, 4 heads (2 kv)" "$dir/llama" || fail "no llama model line"
llama_trained=$(val_loss "$dir/llama")
[ -n "$llama_trained" ] || fail "llama: no 'val loss' line"
"$ptk" train --load "$dir/ll.safetensors" "${eval_only[@]}" --device host >"$dir/lleval" 2>&1 || fail "llama eval-only: $(cat "$dir/lleval")"
[ "$(val_loss "$dir/lleval")" = "$llama_trained" ] ||
  fail "llama --eval-only gives $(val_loss "$dir/lleval"), training printed $llama_trained"
echo "ok: llama --load --eval-only reproduces val loss $llama_trained"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  torch_loss=$(/usr/bin/python3 "$src/scripts/gpt_val_loss.py" "$dir/ll.safetensors" "$text" | sed -n 's/^val loss //p')
  awk -v a="$torch_loss" -v b="$llama_trained" 'BEGIN { d = a - b; exit !(d <= 1.0001e-4 && d >= -1.0001e-4) }' ||
    fail "PyTorch reads the llama checkpoint as val loss $torch_loss, ptk printed $llama_trained"
  echo "ok: PyTorch reproduces the llama val loss $torch_loss from the checkpoint"
fi
# --eval-only --dtype: the val loss with the linear weights stored as bf16 (the table per dtype of a larger model
# is in docs/benchmarks.md); within 1 % of f32's on this tiny model. Refused: --dtype q8_0 for training, --eval-only
# --dtype with --save, and q8_0 on a 16-wide model.
"$ptk" train --load "$dir/ll.safetensors" "${eval_only[@]}" --dtype bf16 --device host >"$dir/llbf16" 2>&1 ||
  fail "llama --eval-only --dtype bf16: $(cat "$dir/llbf16")"
grep -q "^dtype  the linear layers' weights stored as bf16" "$dir/llbf16" || fail "no dtype line: $(cat "$dir/llbf16")"
bf16_loss=$(val_loss "$dir/llbf16")
awk -v a="$bf16_loss" -v b="$llama_trained" 'BEGIN { d = (a - b) / b; exit !(d <= 0.01 && d >= -0.01) }' ||
  fail "--dtype bf16 val loss $bf16_loss is not within 1 % of f32's $llama_trained"
echo "ok: llama --eval-only --dtype bf16: val loss $bf16_loss (f32 $llama_trained)"
expect_refusal "--dtype q8_0 for training" "stores weights for inference" "$ptk" train --dtype q8_0 --steps 1
# Mixed precision: the same llama run in bf16 and in f16 (loss scaling), val loss within 1 % of f32's; the run keeps its
# dtype across a resume (its training state says it) and refuses another.
for t in bf16 f16; do
  "$ptk" train --layers 1 --heads 4 --width 16 --block 16 --batch 4 --device host --arch llama --kv-heads 2 --steps 20 \
    --data "$text" --seed 3 --dtype $t --save "$dir/mp$t.safetensors" --log "$dir/mp$t.jsonl" >"$dir/mp$t" 2>&1 ||
    fail "ptk train --dtype $t: $(cat "$dir/mp$t")"
  grep -q "^dtype  mixed precision: linear layers multiply in $t" "$dir/mp$t" || fail "no mixed-precision line: $(cat "$dir/mp$t")"
  mp_loss=$(val_loss "$dir/mp$t")
  awk -v a="$mp_loss" -v b="$llama_trained" 'BEGIN { d = (a - b) / b; exit !(d <= 0.01 && d >= -0.01) }' ||
    fail "--dtype $t training: val loss $mp_loss is not within 1 % of f32's $llama_trained"
  echo "ok: llama trained with --dtype $t: val loss $mp_loss (f32 $llama_trained)"
done
grep -q '"loss_scale":65536' "$dir/mpf16.jsonl" || fail "the f16 log has no loss scale: $(head -3 "$dir/mpf16.jsonl")"
grep -q '"dtype":"bf16"' "$dir/mpbf16.jsonl" || fail "the bf16 log's header has no dtype: $(head -1 "$dir/mpbf16.jsonl")"
"$ptk" train --load "$dir/mpf16.safetensors" --steps 24 --device host >"$dir/mpresume" 2>&1 || fail "f16 resume: $(cat "$dir/mpresume")"
grep -q "^dtype  mixed precision: linear layers multiply in f16 (fp32 accumulation), fp32 weights and moments, loss scale 65536" \
  "$dir/mpresume" || fail "the resumed run lost its dtype: $(cat "$dir/mpresume")"
echo "ok: a resumed f16 run continues in f16 at its loss scale"
expect_refusal "--dtype other than the run's" "a run keeps its dtype" \
  "$ptk" train --load "$dir/mpbf16.safetensors" --steps 30 --dtype f16 --device host
expect_refusal "--dtype with --save" "a checkpoint holds f32 weights" \
  "$ptk" train --load "$dir/ll.safetensors" "${eval_only[@]}" --dtype f16 --save "$dir/x.safetensors"
expect_refusal "--dtype q8_0 on a 16-wide model" "blocks of 32" \
  "$ptk" train --load "$dir/ll.safetensors" "${eval_only[@]}" --dtype q8_0 --device host
expect_refusal "kv heads not dividing heads" "n_head = 4 is not a multiple of kv_heads = 3" \
  "$ptk" train --arch llama --heads 4 --kv-heads 3 --steps 1
expect_refusal "--kv-heads for gpt2" "--kv-heads is for --arch llama" "$ptk" train --kv-heads 2 --steps 1
expect_refusal "unknown --arch" "--arch" "$ptk" train --arch mamba --steps 1
expect_refusal "odd llama head dim" "must be even" "$ptk" train --arch llama --heads 4 --width 12 --steps 1
expect_refusal "--arch disagreeing with the checkpoint" "disagrees with the checkpoint's arch llama" \
  "$ptk" train --load "$dir/ll.safetensors" --arch gpt2 "${eval_only[@]}"
expect_refusal "--kv-heads disagreeing with the checkpoint" "n_kv_head" \
  "$ptk" train --load "$dir/ll.safetensors" --kv-heads 4 "${eval_only[@]}"
"$ptk" train --load "$dir/ll.safetensors" --arch llama --kv-heads 2 "${eval_only[@]}" --device host >"$dir/same" 2>&1 ||
  fail "the checkpoint's own --arch and --kv-heads given again: $(cat "$dir/same")"
"$ptk" info --model 1,4,16,16,72 --arch llama --kv-heads 2 --device host >"$dir/info" 2>&1 || fail "info --arch llama: $(cat "$dir/info")"
grep -q "llama model L=1 H=4 kv_heads=2" "$dir/info" || fail "info: no llama line: $(cat "$dir/info")"

# Crafted checkpoints (edit_checkpoint in cli_checks.sh writes both CRC-32s again, so the edit alone is wrong).
# A config whose tensor count the file does not hold is refused at once: n_layer 10^7 or 2^30 builds no list of
# 10^8 names (it took 16 GB and 113 s), for train and generate alike.
for layers in 10000000 1073741824; do
  edit_checkpoint "$dir/ck.safetensors" "$dir/hostile.safetensors" "h['__metadata__']['n_layer'] = '$layers'"
  expect_refusal "n_layer $layers (train)" "holds 16 tensors, but a gpt2 model of n_layer $layers has" \
    timeout 60 "$ptk" train --load "$dir/hostile.safetensors" "${eval_only[@]}" --device host
  expect_refusal "n_layer $layers (generate)" "holds 16 tensors, but a gpt2 model of n_layer $layers has" \
    timeout 60 "$ptk" generate --load "$dir/hostile.safetensors" --device host
done
# A file with ptk's metadata whose checksums were deleted or renamed (so that io would check none) is refused.
edit_checkpoint "$dir/ck.safetensors" "$dir/edited.safetensors" "" "del m['header_crc32']"
expect_refusal "header_crc32 deleted" "no 'header_crc32' checksum" "$ptk" train --load "$dir/edited.safetensors" "${eval_only[@]}"
edit_checkpoint "$dir/ck.safetensors" "$dir/edited.safetensors" "" "m['header_crc3x'] = m.pop('header_crc32'); m['crcxx'] = m.pop('crc32')"
expect_refusal "both checksums renamed" "no 'crc32' checksum" "$ptk" generate --load "$dir/edited.safetensors"
edit_checkpoint "$dir/ck.safetensors" "$dir/edited.safetensors" ""  # the same edit with the checksums kept loads
"$ptk" train --load "$dir/edited.safetensors" "${eval_only[@]}" --device host >"$dir/eval" 2>&1 || fail "a rewritten checkpoint: $(cat "$dir/eval")"
[ "$(val_loss "$dir/eval")" = "$trained" ] || fail "the rewritten checkpoint gives val loss $(val_loss "$dir/eval")"
# Inputs that are not regular files, refused before they are opened.
mkdir "$dir/adir"
mkfifo "$dir/fifo"
for input in /dev/zero "$dir/adir" "$dir/fifo"; do
  expect_refusal "--load $input" "not a regular file" timeout 60 "$ptk" train --load "$input" "${eval_only[@]}" --device host
  expect_refusal "--data $input" "not a regular file" timeout 60 "$ptk" train --data "$input" --steps 1 --device host
done
expect_refusal "--load ''" "an empty file name" "$ptk" train --load "" "${eval_only[@]}"

"$ptk" train --help >/dev/null || fail "--help"
# The top-level usage lists train's architecture options.
"$ptk" --help | sed -n '/^  ptk train/,/^  ptk generate/p' >"$dir/usage"
grep -q -- "--arch gpt2|llama" "$dir/usage" && grep -q -- "--kv-heads N" "$dir/usage" || fail "ptk --help: train lacks --arch or --kv-heads"
echo "PASS"
