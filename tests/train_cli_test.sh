#!/bin/bash
# ptk train end to end: a short run saves a checkpoint; --load --eval-only reproduces its val loss; PyTorch
# (scripts/gpt_val_loss.py, an independent implementation) reproduces it from the file alone; truncated,
# corrupted and foreign checkpoints and bad options are refused with one line and exit status 2.
# usage: train_cli_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"
val_loss() { sed -n 's/^val loss \([0-9.]*\)$/\1/p' "$1"; }


text=$src/data/kjv_genesis_exodus.txt
tiny=(--layers 1 --heads 2 --width 16 --block 16 --batch 4 --device host)
"$ptk" train "${tiny[@]}" --steps 20 --seed 3 --save "$dir/ck.safetensors" --sample 40 >"$dir/train" 2>&1 ||
  fail "ptk train: $(cat "$dir/train")"
cat "$dir/train"
trained=$(val_loss "$dir/train")
[ -n "$trained" ] || fail "no 'val loss' line"
[ -f "$dir/ck.state-20.safetensors" ] || fail "no training state beside the checkpoint: $(ls "$dir")"

"$ptk" train --load "$dir/ck.safetensors" --eval-only --device host >"$dir/eval" 2>&1 || fail "eval-only: $(cat "$dir/eval")"
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
expect_refusal "truncated checkpoint" truncated "$ptk" train --load "$dir/truncated.safetensors" --eval-only
cp "$dir/ck.safetensors" "$dir/corrupt.safetensors"
printf '\x7f' | dd of="$dir/corrupt.safetensors" bs=1 seek=$((size - 7)) conv=notrunc status=none
expect_refusal "corrupted checkpoint" corrupted "$ptk" train --load "$dir/corrupt.safetensors" --eval-only
expect_refusal "foreign file" foreign "$ptk" train --load "$text" --eval-only
expect_refusal "training state as model" foreign "$ptk" train --load "$dir/ck.state-20.safetensors" --eval-only
expect_refusal "unknown option" "--nope" "$ptk" train --nope
expect_refusal "width not divisible by heads" "divisible" "$ptk" train --heads 3 --width 16 --steps 1
expect_refusal "disagreeing --layers" "n_layer" "$ptk" train --load "$dir/ck.safetensors" --layers 2 --eval-only
"$ptk" train --help >/dev/null || fail "--help"
echo "PASS"
