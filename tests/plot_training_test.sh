#!/bin/bash
# scripts/plot_training.py: a synthetic ptk train --log file (header, 30 steps, a resumed tail repeating
# steps 21..30) plots to a PNG with the expected summary line; a malformed line and an empty log are
# refused with exit status 2 and one line on stderr.
# usage: plot_training_test.sh SOURCE_DIR
set -u
src=$1
script=$src/scripts/plot_training.py
. "$(dirname "$0")/cli_checks.sh"
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "note: matplotlib not installed; skipped"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

log=$dir/train.jsonl
{
  echo '{"run": {"id": "test", "data": "data/kjv.txt", "layers": 4, "width": 128, "block": 64, "batch": 16}}'
  # Steps 1..30 with decreasing loss, val_loss at 10, 20, 30; then a resumed run repeats 21..30.
  for s in $(seq 1 30); do
    val=""; [ $((s % 10)) -eq 0 ] && val=", \"val_loss\": $(awk -v s=$s 'BEGIN { printf "%.4f", 4.1 - s / 15 }')"
    awk -v s=$s -v v="$val" 'BEGIN { printf "{\"step\": %d, \"loss\": %.4f, \"lr\": %g, \"grad_norm\": 0.8, \"ms\": 40.0, \"tokens_per_s\": 25000, \"elapsed_s\": %.2f%s}\n", s, 4 - s / 15, 0.002 * (s < 5 ? s / 5 : 1), s * 0.04, v }'
  done
  echo
  echo '{"run": {"id": "test", "data": "data/kjv.txt", "layers": 4, "width": 128, "block": 64, "batch": 16, "start_step": 20}}'
  for s in $(seq 21 30); do
    val=""; [ $s -eq 30 ] && val=', "val_loss": 2.0500'
    awk -v s=$s -v v="$val" 'BEGIN { printf "{\"step\": %d, \"loss\": %.4f, \"lr\": 0.002, \"elapsed_s\": %.2f%s}\n", s, 3.95 - s / 15, s * 0.04, v }'
  done
} >"$log"

"$script" "$log" >"$dir/out" 2>"$dir/err"; rc=$?
[ $rc -eq 0 ] || fail "exit status $rc: $(cat "$dir/err")"
cat "$dir/out"
png=$dir/train.png
[ -s "$png" ] || fail "no $png"
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$png does not start with the PNG signature"
grep -q "30 steps" "$dir/out" || fail "'30 steps' not in: $(cat "$dir/out")"
grep -q "3 validation points" "$dir/out" || fail "'3 validation points' not in: $(cat "$dir/out")"
grep -q "last val loss 2.0500" "$dir/out" || fail "resumed run's val loss not kept: $(cat "$dir/out")"
grep -q "resumed at step 20" "$dir/out" || fail "the resume is not marked: $(cat "$dir/out")"
echo "ok: plot and summary line"

"$script" "$log" -o "$dir/smooth.png" --smooth 1 >"$dir/out" 2>"$dir/err" || fail "--smooth 1: $(cat "$dir/err")"
[ -s "$dir/smooth.png" ] || fail "-o $dir/smooth.png not written"
echo "ok: -o and --smooth 1"


{ head -n 5 "$log"; echo '{"step": 5, "loss": 2.'; } >"$dir/bad.jsonl"
expect_refusal "malformed line" "bad.jsonl:6:" "$script" "$dir/bad.jsonl"
: >"$dir/empty.jsonl"
expect_refusal "empty log" "empty.jsonl" "$script" "$dir/empty.jsonl"
expect_refusal "missing file" "missing.jsonl" "$script" "$dir/missing.jsonl"
echo PASS
