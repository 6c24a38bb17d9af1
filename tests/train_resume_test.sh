#!/bin/bash
# ptk train, interrupted and resumed, against the same run never interrupted (the reference):
#   1. SIGTERM mid-run: exit 143 after saving; --load continues; every step's loss (from --log) and the final
#      model and training-state files are bitwise the reference's (their data CRC-32s are equal).
#   2. SIGKILL after a periodic save (--save-every): --load continues from that save, same bits at the end.
#   3. SIGKILL at 24 random moments while training with a save after every step: each time, the checkpoint
#      left behind loads (or, before the first save, there is none), and the run continued from it after
#      every kill still ends bitwise on the reference: no kill ever left a mixed or partial pair.
#   4. Refusals, one line and exit 2: a missing or foreign training state, a flipped header field, hostile
#      sizes, bad option values, an unwritable --save path (before training), a --save that is a device, a fifo,
#      a symbolic link or empty (left as they were), a second run saving to the checkpoint a running one saves to,
#      a write beyond the file-size limit (a full disk); --eval-only --save leaves the model alone, no stale state
#      beside it.
# The text is the first 40 kB of the KJV (a validation split of 4 kB keeps the evaluations cheap in the
# sanitizer build).
# usage: train_resume_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"
head -c 40000 "$src/data/kjv_genesis_exodus.txt" >"$dir/text"
base=(--layers 2 --heads 2 --width 32 --block 32 --batch 4 --device host --seed 21 --eval-every 50 --data "$dir/text")
cfg=("${base[@]}" --steps 200)

# The data CRC-32 of a safetensors file (its __metadata__ "crc32").
crc() { head -c 65536 "$1" | grep -ao '"crc32":"[0-9a-f]*"' | head -1; }
# "step loss" for the last record of each step in a --log file, sorted by step.
losses() { grep -o '"loss":[^,]*,.*"step":[0-9]*' "$1" | sed 's/"loss":\([^,]*\),.*"step":\([0-9]*\)/\2 \1/' |
           awk '{last[$1] = $2} END {for (s in last) print s, last[s]}' | sort -n; }
same_run() {  # same_run NAME [REF STEPS]: NAME's final files and losses are the reference's
  local ref=${2:-ref} steps=${3:-200}
  [ "$(crc "$dir/$1.safetensors")" = "$(crc "$dir/$ref.safetensors")" ] || fail "$1: final model differs from the reference"
  [ "$(crc "$dir/$1.state-$steps.safetensors")" = "$(crc "$dir/$ref.state-$steps.safetensors")" ] ||
    fail "$1: final training state differs from the reference"
  diff <(losses "$dir/$1.jsonl") <(losses "$dir/$ref.jsonl") >/dev/null ||
    fail "$1: losses differ: $(diff <(losses "$dir/$1.jsonl") <(losses "$dir/$ref.jsonl") | head -4)"
}
# Waits until the --log file shows step $2 (or the process ended).
wait_for_step() {
  for _ in $(seq 1 60000); do
    [ -f "$1" ] && [ "$(grep -c '"step"' "$1")" -ge "$2" ] && return 0
    kill -0 "$3" 2>/dev/null || return 0
    sleep 0.01
  done
}

now_ms() { date +%s%3N; }
t0=$(now_ms)
"$ptk" train "${cfg[@]}" --save "$dir/ref.safetensors" --log "$dir/ref.jsonl" >"$dir/ref.out" 2>&1 || fail "reference: $(cat "$dir/ref.out")"
ref200_ms=$(($(now_ms) - t0))
[ "$(losses "$dir/ref.jsonl" | wc -l)" -eq 200 ] || fail "reference log: $(losses "$dir/ref.jsonl" | wc -l) steps"
echo "ok: reference run, 200 steps, $(crc "$dir/ref.safetensors")"

# 1. SIGTERM mid-run.
"$ptk" train "${cfg[@]}" --save "$dir/a.safetensors" --log "$dir/a.jsonl" >"$dir/a.out" 2>"$dir/a.err" &
pid=$!
wait_for_step "$dir/a.jsonl" 60 $pid
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: exit status $rc, expected 143: $(tail -3 "$dir/a.out")"
grep -q "stopped by SIGTERM after step [0-9]* of 200: saved" "$dir/a.out" || fail "SIGTERM: no 'stopped by' line: $(tail -3 "$dir/a.out")"
# The status lines are the run's report: on stdout, as README says; stderr holds errors only.
[ ! -s "$dir/a.err" ] || fail "SIGTERM: stderr is not empty: $(head -3 "$dir/a.err")"
at=$(sed -n 's/.*stopped by SIGTERM after step \([0-9]*\).*/\1/p' "$dir/a.out")
"$ptk" train --load "$dir/a.safetensors" --save "$dir/a.safetensors" --device host --log "$dir/a.jsonl" >"$dir/a2.out" 2>&1 || fail "resume: $(cat "$dir/a2.out")"
grep -q "continuing run .* at step $at of 200" "$dir/a2.out" || fail "resume: $(head -4 "$dir/a2.out")"
same_run a
echo "ok: SIGTERM after step $at (exit 143), resumed: every loss and the final files bitwise the reference's"

# 2. SIGKILL after a periodic save.
"$ptk" train "${cfg[@]}" --save "$dir/b.safetensors" --save-every 70 --log "$dir/b.jsonl" >"$dir/b.out" 2>&1 &
pid=$!
wait_for_step "$dir/b.jsonl" 100 $pid
kill -KILL $pid; wait $pid 2>/dev/null
"$ptk" train --load "$dir/b.safetensors" --save "$dir/b.safetensors" --device host --log "$dir/b.jsonl" >"$dir/b2.out" 2>&1 || fail "resume after SIGKILL: $(cat "$dir/b2.out")"
grep -q "continuing run .* at step 70 of 200" "$dir/b2.out" || fail "resume after SIGKILL: $(head -4 "$dir/b2.out")"
same_run b
echo "ok: SIGKILL at step >= 100, resumed from the step-70 save: the same bits"

# 3. SIGKILL at random moments, saving every step, against a longer reference (a kill lands while training or
#    saving, not only while starting up).
#    The run's length and the kill times scale with this build's speed (the sanitizer build is 10-50x
#    slower): 1200 steps and 24 kills, or 300 steps and 8 kills where 200 steps took more than 5 s; kill
#    times uniform in 1-6 % of the time the reference took.
n_steps=1200 n_kills=24
[ "$ref200_ms" -gt 5000 ] && n_steps=300 n_kills=8
long=("${base[@]}" --steps $n_steps)
t0=$(now_ms)
"$ptk" train "${long[@]}" --save "$dir/ref3.safetensors" --log "$dir/ref3.jsonl" >"$dir/ref3.out" 2>&1 ||
  fail "reference 3: $(cat "$dir/ref3.out")"
ref_ms=$(($(now_ms) - t0))
RANDOM=7
kills=0 loads=0
while [ $kills -lt $n_kills ]; do
  if [ -f "$dir/c.safetensors" ]; then
    "$ptk" train --load "$dir/c.safetensors" --device host --save "$dir/c.safetensors" --save-every 1 --log "$dir/c.jsonl" >"$dir/c.out" 2>&1 &
  else
    "$ptk" train "${long[@]}" --save "$dir/c.safetensors" --save-every 1 --log "$dir/c.jsonl" >"$dir/c.out" 2>&1 &
  fi
  pid=$!
  sleep "$(awk -v ms="$ref_ms" -v r=$RANDOM 'BEGIN { printf "%.3f", ms * (0.01 + 0.05 * r / 32767) / 1000 }')"
  kill -KILL $pid 2>/dev/null || break  # the run ended first
  wait $pid 2>/dev/null
  kills=$((kills + 1))
  if [ -f "$dir/c.safetensors" ]; then
    "$ptk" train --load "$dir/c.safetensors" --device host --steps 0 >"$dir/check.out" 2>&1 ||
      fail "kill $kills: the checkpoint left behind does not load: $(cat "$dir/check.out")"
    loads=$((loads + 1))
  fi
done
if [ -f "$dir/c.safetensors" ]; then from=(--load "$dir/c.safetensors" --device host); else from=("${long[@]}"); fi
"$ptk" train "${from[@]}" --save "$dir/c.safetensors" --log "$dir/c.jsonl" >"$dir/c.out" 2>&1 ||
  fail "final resume: $(cat "$dir/c.out")"
same_run c ref3 $n_steps
left=$(cd "$dir" && ls -A | grep '^c\.\|^\.c\.' | tr '\n' ' ')
[ "$left" = "c.jsonl c.out c.safetensors c.state-$n_steps.safetensors " ] || fail "files left beside the checkpoint: $left"
echo "ok: $kills SIGKILLs at random moments of a $n_steps-step run (${ref_ms} ms uninterrupted) ($loads checkpoints checked), resumed after each: the same bits, no stray files"

# 4. Refusals.
mkdir "$dir/d"
cp "$dir/ref.safetensors" "$dir/d/"  # the model file alone: the training state it names is not beside it
expect_refusal "missing training state" "is missing" "$ptk" train --load "$dir/d/ref.safetensors" --device host
"$ptk" train --load "$dir/d/ref.safetensors" --weights-only --data "$dir/text" --device host --steps 2 >"$dir/out" 2>&1 || fail "--weights-only: $(cat "$dir/out")"
grep -q "weights only, a new run" "$dir/out" || fail "--weights-only: $(head -4 "$dir/out")"
cp "$dir/a.state-200.safetensors" "$dir/d/ref.state-200.safetensors"  # another run's, same step
expect_refusal "another run's training state" "unpaired" "$ptk" train --load "$dir/d/ref.safetensors" --device host
cp "$dir/ref.safetensors" "$dir/e.safetensors"
sed -i '0,/"step":"200"/s//"step":"201"/' "$dir/e.safetensors"
expect_refusal "a flipped step in the header" "header checksum mismatch" "$ptk" train --load "$dir/e.safetensors" --device host
expect_refusal "--width 100000 --layers 100" "needs about" "$ptk" train --width 100000 --layers 100 --heads 4 --device host
expect_refusal "--width 8192" "needs about" "$ptk" train --width 8192 --device host
expect_refusal "--block 2147483647" "not a whole number in \[1, 1048576\]" "$ptk" train --block 2147483647 --device host
expect_refusal "--block 1048576" "fewer than one window" "$ptk" train --block 1048576 --device host
expect_refusal "--data /dev/zero" "/dev/zero: is a character device, not a regular file" "$ptk" train --data /dev/zero --device host
expect_refusal "--lr nan" "not a finite number > 0" "$ptk" train --lr nan --device host
expect_refusal "--lr inf" "not a finite number > 0" "$ptk" train --lr inf --device host
expect_refusal "--lr -1" "lr" "$ptk" train --lr -1 --device host
expect_refusal "--lr 1e39" "not a finite number > 0" "$ptk" train --lr 1e39 --device host
expect_refusal "--seed -1" "not a whole number in \[0, 2^64 - 1\]" "$ptk" train --seed -1 --device host
expect_refusal "--batch 0" "not a whole number in \[1," "$ptk" train --batch 0 --device host
expect_refusal "--steps 1.5" "not a whole number" "$ptk" train --steps 1.5 --device host
expect_refusal "--save into a missing directory" "is not there" "$ptk" train --steps 5 --save /nonexistent/dir/x.safetensors --device host
expect_refusal "--save a directory" "is a directory" "$ptk" train --steps 5 --save "$dir" --device host
# Outputs that are not regular files are refused before training, and left as they were: a device (as root the
# rename would have turned /dev/null into a regular file), a fifo, a symbolic link (the rename would replace the
# link, not write its target), an empty name (it trained and saved nothing).
expect_refusal "--save /dev/null" "/dev/null: is a character device, not a regular file" "$ptk" train --steps 5 --save /dev/null --device host
[ -c /dev/null ] || fail "--save /dev/null: /dev/null is no longer a character device"
! ls /dev/null.* >/dev/null 2>&1 || fail "--save /dev/null left $(ls /dev/null.*)"
mkfifo "$dir/fifo"
expect_refusal "--save a fifo" "is a fifo (named pipe), not a regular file" timeout 60 "$ptk" train --steps 5 --save "$dir/fifo" --device host
[ -p "$dir/fifo" ] || fail "--save a fifo: it was replaced"
ln -s ref.safetensors "$dir/link.safetensors"
expect_refusal "--save a symbolic link" "is a symbolic link" "$ptk" train --steps 5 --save "$dir/link.safetensors" --device host
[ -L "$dir/link.safetensors" ] && [ "$(crc "$dir/ref.safetensors")" = "$(crc "$dir/link.safetensors")" ] || fail "--save a link: changed"
expect_refusal "--save ''" "an empty file name" "$ptk" train --steps 5 --save "" --device host
expect_refusal "--log a fifo" "--log $dir/fifo: is a fifo" timeout 60 "$ptk" train --steps 5 --log "$dir/fifo" --device host
expect_refusal "--weights-only alone" "needs --load" "$ptk" train --weights-only --device host
expect_refusal "--save-every alone" "needs --save" "$ptk" train --save-every 5 --device host
# A full disk: writes beyond 16 KiB fail (EFBIG); the save fails with one line, nothing partial is left.
mkdir "$dir/full"
(ulimit -f 16; "$ptk" train --layers 1 --heads 2 --width 32 --block 16 --steps 3 --device host --save "$dir/full/f.safetensors" \
   >"$dir/out" 2>"$dir/err"); rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$dir/err")" -eq 1 ] && grep -q "cannot write" "$dir/err" ||
  fail "full disk: exit $rc: $(cat "$dir/err")"
[ -z "$(ls -A "$dir/full")" ] || fail "full disk: left $(ls -A "$dir/full")"
echo "ok: a full disk -> $(cat "$dir/err"), nothing left behind"
# Two runs saving to one checkpoint: the second refuses at start (the name spelled another way too) and the first
# goes on and saves; its lock file goes with it, and the next run takes the name.
"$ptk" train "${base[@]}" --steps 100000 --save "$dir/l.safetensors" --log "$dir/l.jsonl" >"$dir/l.out" 2>&1 &
pid=$!
wait_for_step "$dir/l.jsonl" 1 $pid
expect_refusal "a second run saving to the same checkpoint" "l.safetensors: in use by another ptk process (pid $pid)" \
  "$ptk" train "${base[@]}" --steps 5 --save "$dir/./l.safetensors"
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] && grep -q "stopped by SIGTERM after step [0-9]* of 100000: saved" "$dir/l.out" ||
  fail "the first run, exit $rc: $(tail -2 "$dir/l.out")"
[ ! -e "$dir/.l.safetensors.lock" ] || fail "the lock file was left behind"
"$ptk" train --load "$dir/l.safetensors" --eval-only --save "$dir/l.safetensors" --data "$dir/text" --device host >"$dir/out" 2>&1 ||
  fail "a run after the first one ended cannot save there: $(cat "$dir/out")"
echo "ok: two runs saving to one checkpoint: the second refused, the first saved, the name free again after it"
# On resume, another text gets a warning, and a run setting given with another value is a printed change.
head -c 39000 "$dir/text" >"$dir/text2"
"$ptk" train --load "$dir/ref.safetensors" --data "$dir/text2" --batch 8 --device host >"$dir/out" 2>&1 || fail "resume with changes: $(cat "$dir/out")"
grep -q "^warning: .*text2 is not the text this run trained on (40000 bytes, CRC [0-9a-f]*, now 39000 bytes" "$dir/out" ||
  fail "no warning for another text: $(head -6 "$dir/out")"
grep -q "^changed batch 4 -> 8" "$dir/out" || fail "no 'changed' line: $(head -6 "$dir/out")"
echo "ok: resuming with another text warns, and --batch 8 is reported as a change"
# --eval-only --save over a checkpoint: the model alone, the old training state removed with it.
cp "$dir/ref.safetensors" "$dir/g.safetensors"; cp "$dir/ref.state-200.safetensors" "$dir/g.state-200.safetensors"
"$ptk" train --load "$dir/g.safetensors" --eval-only --save "$dir/g.safetensors" --data "$dir/text" --device host >"$dir/out" 2>&1 || fail "eval-only save: $(cat "$dir/out")"
[ ! -e "$dir/g.state-200.safetensors" ] || fail "--eval-only --save left the old training state beside the model"
"$ptk" train --load "$dir/g.safetensors" --data "$dir/text" --device host --steps 1 >"$dir/out" 2>&1 && grep -q "weights only, a new run" "$dir/out" ||
  fail "a model alone does not start a new run: $(head -4 "$dir/out")"
echo "ok: --eval-only --save writes the model alone and removes the training state it replaces"
echo "PASS"
