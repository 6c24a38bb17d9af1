#!/bin/bash
# ptk op and its registry (src/tools/op_registry.cpp): --help lists each op with its summary and keys, a run goes
# through the registry's run function, and bad arguments are refused with one line naming what was wrong: inputs
# that are not regular files, outputs that are devices, fifos, directories, symbolic links or named twice, and a bad
# `ptk bench --out`. The command lines of op, info and bench (CLI11): unknown or malformed options are one line and
# the usage status (2), --help is 0; an unknown command and a bare `ptk` are 2. (Whether docs/design.md's op table
# names the registry's ops is ctest op_table:docs, against src/ptk/op_table.def.)
# usage: op_cli_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"

"$ptk" op --list >"$dir/list" || fail "ptk op --list"
[ "$(wc -l <"$dir/list")" -gt 0 ] || fail "ptk op --list printed nothing"

# --- --help: every op with its summary line --------------------------------------------------------
"$ptk" op --help >"$dir/help" || fail "ptk op --help"
while read -r name; do
  grep -A1 "^  $name: " "$dir/help" | tail -1 | grep -q "^      [^ ]" || fail "--help has no entry and summary for $name"
done <"$dir/list"
grep -q "^  matmul: A, B -> C; impl=portable, trans_a=0, trans_b=0$" "$dir/help" || fail "--help's matmul line"
grep -q "^  attention: Q, K, V -> O, \[lse\]; causal=0, scale=1/sqrt(D)$" "$dir/help" || fail "--help's attention line"
grep -q "^  embedding: ids (int), table -> out$" "$dir/help" || fail "--help's embedding line"
echo "ok: --help lists every op"

# --- a run: A = ones [2,3], B = ones [4,3], C = A·Bᵀ = 3 everywhere (the decode path: 2 rows) ------
# npy_ones FILE D0 D1: a float32 C-order .npy of ones (version 1.0 header padded to 64 bytes).
npy_ones() {
  local header="{'descr': '<f4', 'fortran_order': False, 'shape': ($2, $3), }"
  while [ $(( (10 + ${#header} + 1) % 64 )) -ne 0 ]; do header+=" "; done
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $(( (${#header} + 1) % 256 )))\\x$(printf %02x $(( (${#header} + 1) / 256 )))"
    printf '%s\n' "$header"; for ((i = 0; i < $2 * $3; ++i)); do printf '\x00\x00\x80\x3f'; done; } >"$1"
}
npy_ones "$dir/a.npy" 2 3
npy_ones "$dir/b.npy" 4 3
"$ptk" op matmul --in "$dir/a.npy" --in "$dir/b.npy" --set trans_b=1 --out "$dir/c.npy" --device host 2>"$dir/err" ||
  fail "matmul run: $(cat "$dir/err")"
[ "$(head -c 128 "$dir/c.npy" | tr -d '\0' | grep -ao "'shape': ([0-9, ]*)")" = "'shape': (2, 4)" ] ||
  fail "C's header: $(head -c 128 "$dir/c.npy" | tr -d '\0')"
[ "$(tail -c 32 "$dir/c.npy" | od -v -An -tx1 | tr -d ' \n')" = "$(for i in 1 2 3 4 5 6 7 8; do printf 00004040; done)" ] ||
  fail "C is not 3 everywhere: $(tail -c 32 "$dir/c.npy" | od -v -An -tf4)"
echo "ok: matmul A[2,3] · B[4,3]ᵀ = 3 everywhere"

# --- refusals, from the registry's entries ---------------------------------------------------------
expect_refusal "unknown op" "unknown op 'nope' (known: matmul, matmul_backward, softmax," "$ptk" op nope
expect_refusal "--in count" "op matmul: expects 2 --in (A, B), got 1" "$ptk" op matmul --in "$dir/a.npy" --out "$dir/c.npy"
expect_refusal "unknown key" "op matmul: unknown key 'x' (known: impl, trans_a, trans_b)" \
  "$ptk" op matmul --in "$dir/a.npy" --in "$dir/b.npy" --set x=1 --out "$dir/c.npy"
expect_refusal "keyless op" "op gelu: unknown key 'a' (this op takes none)" "$ptk" op gelu --in "$dir/a.npy" --set a=1 --out "$dir/c.npy"
expect_refusal "key twice" "op matmul: key 'trans_b' is set twice" \
  "$ptk" op matmul --in "$dir/a.npy" --in "$dir/b.npy" --set trans_b=1 --set trans_b=1 --out "$dir/c.npy"
expect_refusal "optional output" "op attention: expects 1 to 2 --out (O, lse; the last optional), got 3" \
  "$ptk" op attention --in "$dir/a.npy" --in "$dir/a.npy" --in "$dir/a.npy" --out "$dir/1.npy" --out "$dir/2.npy" --out "$dir/3.npy"
expect_refusal "flag value" "op matmul: trans_b must be 0 or 1, got '2'" \
  "$ptk" op matmul --in "$dir/a.npy" --in "$dir/b.npy" --set trans_b=2 --out "$dir/c.npy"
expect_refusal "index input" "dtype '<f4' is not supported for ids" \
  "$ptk" op embedding --in "$dir/a.npy" --in "$dir/b.npy" --out "$dir/c.npy"
[ ! -e "$dir/c.npy.ptk-partial" ] || fail "a refused run left a partial file"

# --- files that are not regular: inputs refused before they are read, outputs before anything is written -----
mkdir "$dir/adir"
mkfifo "$dir/fifo"
for input in /dev/zero "$dir/adir" "$dir/fifo"; do
  expect_refusal "--in $input" "not a regular file" timeout 60 "$ptk" op gelu --in "$input" --out "$dir/y.npy"
done
for output in /dev/null "$dir/fifo" "$dir/adir"; do
  expect_refusal "--out $output" "cannot write Y: $output: is a" timeout 60 "$ptk" op gelu --in "$dir/a.npy" --out "$output"
done
[ -c /dev/null ] && [ -p "$dir/fifo" ] && [ -d "$dir/adir" ] || fail "a refused output was replaced"
ln -s c.npy "$dir/link.npy"
expect_refusal "--out a symbolic link" "link.npy: is a symbolic link" "$ptk" op gelu --in "$dir/a.npy" --out "$dir/link.npy"
[ -L "$dir/link.npy" ] || fail "--out a symbolic link: the link was replaced"
expect_refusal "--out ''" "(empty path): not a file name" "$ptk" op gelu --in "$dir/a.npy" --out ""
# Two outputs that are one file (however spelled): the second would replace the first.
cp "$dir/c.npy" "$dir/o.npy"
expect_refusal "--out o.npy --out o.npy" "op attention: --out $dir/o.npy (lse) is the same file as --out $dir/o.npy (O)" \
  "$ptk" op attention --in "$dir/a.npy" --in "$dir/a.npy" --in "$dir/a.npy" --out "$dir/o.npy" --out "$dir/o.npy"
expect_refusal "the same output spelled twice" "is the same file as" \
  "$ptk" op attention --in "$dir/a.npy" --in "$dir/a.npy" --in "$dir/a.npy" --out "$dir/o.npy" --out "$dir/adir/../o.npy"
expect_refusal "a new output spelled twice" "is the same file as" \
  "$ptk" op attention --in "$dir/a.npy" --in "$dir/a.npy" --in "$dir/a.npy" --out "$dir/n.npy" --out "$dir/./n.npy"
cmp -s "$dir/c.npy" "$dir/o.npy" && [ ! -e "$dir/n.npy" ] || fail "a refused run wrote an output"

# --- command lines: CLI11 for op, info and bench; one line and status 2 for any bad one -------------------
expect_refusal "op: unknown option" "op: The following argument was not expected: --bogus" \
  "$ptk" op gelu --in "$dir/a.npy" --out "$dir/y.npy" --bogus
expect_refusal "op: two values to one --in" "op: The following argument was not expected: $dir/b.npy" \
  "$ptk" op gelu --in "$dir/a.npy" "$dir/b.npy" --out "$dir/y.npy"
expect_refusal "op: --in without a value" "--in" "$ptk" op gelu --out "$dir/y.npy" --in
expect_refusal "op: --device gpu" "--device: gpu not in {host,default}" \
  "$ptk" op gelu --in "$dir/a.npy" --out "$dir/y.npy" --device gpu
expect_refusal "op: --set without =" "op gelu: --set needs key=value, got 'a'" "$ptk" op gelu --in "$dir/a.npy" --set a --out "$dir/y.npy"
expect_refusal "op without a name" "op needs an op name" "$ptk" op --in "$dir/a.npy"
[ ! -e "$dir/y.npy" ] || fail "a refused op command line wrote its output"
expect_refusal "info: unknown option" "info: The following argument was not expected: --bogus" "$ptk" info --bogus
expect_refusal "info: --arch mamba" "--arch: mamba not in {gpt2,llama}" "$ptk" info --arch mamba
expect_refusal "info: --kv-heads 0" "--kv-heads: 0 is not a whole number in" "$ptk" info --model 1,4,16,16,72 --arch llama --kv-heads 0
expect_refusal "info: --kv-heads 3 of 4 heads" "info: --kv-heads must be a positive divisor of the heads H, got '3'" \
  "$ptk" info --model 1,4,16,16,72 --arch llama --kv-heads 3
expect_refusal "info: --kv-heads for gpt2" "info: --kv-heads is for --arch llama" "$ptk" info --kv-heads 2
expect_refusal "info: --model 1,2" "info: --model needs" "$ptk" info --model 1,2
expect_refusal "info: --model ''" "info: --model needs" "$ptk" info --model ""
expect_refusal "bench: unknown option" "bench: The following argument was not expected: --bogus" "$ptk" bench --bogus
expect_refusal "bench: --repetitions 0" "--repetitions: 0 is not a whole number in" "$ptk" bench --repetitions 0 --out "$dir/b"
expect_refusal "bench: --device gpu" "--device: gpu not in {host,default}" "$ptk" bench --device gpu --out "$dir/b"
[ ! -e "$dir/b" ] || fail "a refused bench command line created its --out"
expect_refusal "unknown command" "unknown command 'nope' (expected info, op, bench, train, generate, tokenize or convert)" "$ptk" nope
for command in op info bench tokenize convert; do
  "$ptk" $command --help >"$dir/help" 2>"$dir/err" || fail "ptk $command --help: exit $?: $(cat "$dir/err")"
  grep -q "^Usage: ptk $command" "$dir/help" || fail "ptk $command --help: $(head -3 "$dir/help")"
done
"$ptk" >"$dir/usage" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "^usage:" "$dir/usage" || fail "a bare ptk: exit $rc, $(head -2 "$dir/usage")"
echo "ok: op, info and bench refuse bad command lines with one line and status 2"

# --- ptk bench --out: one line, before anything runs or is created ----------------------------------------
touch "$dir/file"
expect_refusal "bench --out under a regular file" "bench: --out $dir/file/sub: Not a directory" "$ptk" bench --out "$dir/file/sub"
expect_refusal "bench --out /dev/null" "bench: --out /dev/null: /dev/null is not a directory" "$ptk" bench --out /dev/null
echo "PASS"
