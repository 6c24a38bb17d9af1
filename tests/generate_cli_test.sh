#!/bin/bash
# ptk generate end to end: from a short GPT-2 run's checkpoint and a short Llama run's (grouped-query), text
# streams after the echoed prompt, greedy is repeatable, a seed repeats a sampled text and another seed changes
# it, speeds are printed; bad prompts, oversize contexts and bad sampling options are refused with one line.
# ptk op decode_attention against NumPy (float64) on a cache whose unfilled positions hold NaN, and ptk info
# --model's inference estimate (the GQA cache), saturated for T = V = 2^32. Refused with one line and exit 2:
# inputs that are not regular files (/dev/zero, a directory, a fifo, /dev/stdin on a pipe), a temperature whose
# reciprocal overflows, a NaN weight (before the prompt is echoed), a standard output that cannot be written, and
# generate under mpirun -np 2.
# usage: generate_cli_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"

# Trained on the first 64 KiB of the text: each run's final validation reads its last tenth, not the whole text's
# (this entry took 27 s under the sanitizers).
head -c 65536 "$src/data/kjv_genesis_exodus.txt" >"$dir/text.txt"
tiny=(--layers 1 --width 16 --block 24 --batch 4 --steps 20 --device host --data "$dir/text.txt")
"$ptk" train "${tiny[@]}" --heads 2 --save "$dir/gpt.safetensors" >"$dir/train" 2>&1 || fail "train gpt2: $(cat "$dir/train")"
"$ptk" train "${tiny[@]}" --arch llama --heads 4 --kv-heads 2 --save "$dir/llama.safetensors" >"$dir/train" 2>&1 ||
  fail "train llama: $(cat "$dir/train")"

for model in gpt llama; do
  ck=$dir/$model.safetensors
  "$ptk" generate --load "$ck" --prompt "And God" -n 12 --temperature 0 --device host >"$dir/g1" 2>"$dir/e1" ||
    fail "$model greedy: $(cat "$dir/e1")"
  "$ptk" generate --load "$ck" --prompt "And God" -n 12 --temperature 0 --device host >"$dir/g2" 2>/dev/null
  cmp -s "$dir/g1" "$dir/g2" || fail "$model: greedy generation differs between two runs"
  [ "$(head -c 7 "$dir/g1")" = "And God" ] || fail "$model: the output does not start with the prompt: $(cat "$dir/g1")"
  # The prompt, 12 bytes and the final newline.
  [ "$(wc -c <"$dir/g1")" -eq 20 ] || fail "$model: expected 7 + 12 bytes and a newline, got $(wc -c <"$dir/g1")"
  grep -q "^prefill: 7 tokens in .* tokens/s); decode: 11 tokens in .* tokens/s); host" "$dir/e1" ||
    fail "$model: no speed line: $(cat "$dir/e1")"
  for seed in 1 1 2; do
    "$ptk" generate --load "$ck" --prompt "And" -n 20 --seed $seed --top-k 10 --top-p 0.95 --temperature 0.8 \
      --device host >"$dir/s$seed.$RANDOM" 2>/dev/null || fail "$model: sampling with seed $seed"
  done
  set -- "$dir"/s1.* ; cmp -s "$1" "$2" || fail "$model: seed 1 gave two different texts"
  ! cmp -s "$1" "$dir"/s2.* || fail "$model: seeds 1 and 2 gave the same text"
  rm -f "$dir"/s1.* "$dir"/s2.*
  echo "ok: $model: greedy repeats, seeds repeat and differ, speeds printed"
done

ck=$dir/gpt.safetensors
expect_refusal "a prompt byte outside the vocabulary" "byte 0x01 at offset 3 is not in the model's vocabulary" \
  "$ptk" generate --load "$ck" --prompt $'And\x01' --device host
expect_refusal "prompt + -n beyond block_size" "beyond the model's context 24 (at most -n 18)" \
  "$ptk" generate --load "$ck" --prompt "And God" -n 40 --device host
expect_refusal "a prompt longer than block_size" "exceed the model's context 24" \
  "$ptk" generate --load "$ck" --prompt "And God said, Let there be light" --device host
# --dtype: the linear layers' weights stored as each type (a Llama 64 wide: whole blocks of 32); greedy text of the
# right length, mostly the f32 run's (the tests of the stored types' numerics are Inference.Stored*).
"$ptk" train --layers 1 --width 64 --block 24 --batch 4 --steps 20 --device host --arch llama --heads 4 --kv-heads 2 \
  --data "$dir/text.txt" --save "$dir/wide.safetensors" >"$dir/train" 2>&1 || fail "train a 64-wide llama: $(cat "$dir/train")"
"$ptk" generate --load "$dir/wide.safetensors" --prompt "And God" -n 12 --temperature 0 --device host >"$dir/f32" 2>/dev/null ||
  fail "64-wide llama, f32"
for t in bf16 f16 q8_0 q4_0; do
  "$ptk" generate --load "$dir/wide.safetensors" --prompt "And God" -n 12 --temperature 0 --device host --dtype $t \
    >"$dir/$t" 2>"$dir/e1" || fail "--dtype $t: $(cat "$dir/e1")"
  [ "$(wc -c <"$dir/$t")" -eq 20 ] || fail "--dtype $t: expected 7 + 12 bytes and a newline, got $(wc -c <"$dir/$t")"
  grep -q "^prefill: 7 tokens" "$dir/e1" || fail "--dtype $t: no speed line: $(cat "$dir/e1")"
  same=$(cmp -l "$dir/f32" "$dir/$t" | wc -l)
  echo "ok: --dtype $t: $((19 - same)) of 19 bytes as the f32 run's"
done
# --kv-dtype: the KV cache stored as bf16 or f16, with q8_0 weights too (Inference.*KvCache* test the numerics).
for t in bf16 f16; do
  "$ptk" generate --load "$dir/wide.safetensors" --prompt "And God" -n 12 --temperature 0 --device host --kv-dtype $t \
    --dtype q8_0 >"$dir/kv$t" 2>"$dir/e1" || fail "--kv-dtype $t: $(cat "$dir/e1")"
  [ "$(wc -c <"$dir/kv$t")" -eq 20 ] || fail "--kv-dtype $t: expected 7 + 12 bytes and a newline, got $(wc -c <"$dir/kv$t")"
  same=$(cmp -l "$dir/f32" "$dir/kv$t" | wc -l)
  echo "ok: --kv-dtype $t --dtype q8_0: $((19 - same)) of 19 bytes as the f32 run's"
done
expect_refusal "--kv-dtype q8_0" "kv-dtype" "$ptk" generate --load "$dir/wide.safetensors" --kv-dtype q8_0
expect_refusal "--dtype q8_0 on a 16-wide model" "q8_0 stores the last dimension in blocks of 32" \
  "$ptk" generate --load "$dir/gpt.safetensors" --dtype q8_0 --device host
expect_refusal "--dtype q5_1" "q5_1" "$ptk" generate --load "$dir/gpt.safetensors" --dtype q5_1
expect_refusal "--top-p 0" "top-p" "$ptk" generate --load "$ck" --top-p 0
expect_refusal "--temperature -1" "temperature" "$ptk" generate --load "$ck" --temperature -1
expect_refusal "--top-k -3" "top-k" "$ptk" generate --load "$ck" --top-k -3
expect_refusal "no --load" "--load" "$ptk" generate --prompt "And"
expect_refusal "a missing checkpoint" "$dir/none.safetensors" "$ptk" generate --load "$dir/none.safetensors"
expect_refusal "--prompt and --prompt-file" "excludes" "$ptk" generate --load "$ck" --prompt a --prompt-file "$ck"

# Inputs that are not regular files are refused before they are read: nothing is read without bound, no fifo is
# waited on (timeout: a hang fails the test instead of stopping it).
mkdir "$dir/adir"
mkfifo "$dir/fifo"
for input in /dev/zero /dev/urandom "$dir/adir" "$dir/fifo"; do
  expect_refusal "--prompt-file $input" "not a regular file" timeout 60 "$ptk" generate --load "$ck" --prompt-file "$input" --device host
  expect_refusal "--load $input" "not a regular file" timeout 60 "$ptk" generate --load "$input" --device host
done
expect_refusal "--prompt-file /dev/stdin on a pipe" "/dev/stdin: is a fifo" \
  timeout 60 "$ptk" generate --load "$ck" --prompt-file /dev/stdin --device host < <(echo And)
printf 'And God' >"$dir/prompt"
"$ptk" generate --load "$ck" --prompt-file /dev/stdin -n 12 --temperature 0 --device host <"$dir/prompt" >"$dir/g1" 2>"$dir/err" ||
  fail "--prompt-file /dev/stdin on a regular file: $(cat "$dir/err")"
[ "$(head -c 7 "$dir/g1")" = "And God" ] || fail "--prompt-file /dev/stdin: $(cat "$dir/g1")"
head -c 100 "$src/data/kjv_genesis_exodus.txt" >"$dir/long"
expect_refusal "a prompt file longer than block_size" "100 bytes, more than the limit of 24 bytes" \
  "$ptk" generate --load "$ck" --prompt-file "$dir/long" --device host
expect_refusal "--prompt-file ''" "an empty file name" "$ptk" generate --load "$ck" --prompt-file ""
expect_refusal "--load ''" "an empty file name" "$ptk" generate --load ""

# A temperature whose reciprocal overflows a float (the sampler's 1/T) is refused; the smallest that does not
# draws the most likely byte every time, as greedy does.
for t in 2.9e-39 1e-45 1e-50; do
  expect_refusal "--temperature $t" "1/T overflows a float" "$ptk" generate --load "$ck" --temperature $t --device host
done
"$ptk" generate --load "$ck" --prompt "And God" -n 12 --temperature 3e-39 --device host >"$dir/tiny" 2>"$dir/err" ||
  fail "--temperature 3e-39: $(cat "$dir/err")"
cmp -s "$dir/tiny" "$dir/g1" || fail "--temperature 3e-39 is not greedy: $(cat "$dir/tiny") vs $(cat "$dir/g1")"
echo "ok: --temperature 3e-39 draws as greedy"

# A NaN in the weights (a file whose CRC-32s were made again, so only the NaN is wrong) is refused before the prompt
# is echoed; the same edit without the NaN loads (edit_checkpoint writes what ptk writes).
edit_checkpoint "$ck" "$dir/same.safetensors" ""
"$ptk" generate --load "$dir/same.safetensors" --prompt "And God" -n 12 --temperature 0 --device host >"$dir/g2" 2>"$dir/err" ||
  fail "a checkpoint rewritten by edit_checkpoint: $(cat "$dir/err")"
cmp -s "$dir/g1" "$dir/g2" || fail "the rewritten checkpoint generates another text"
edit_checkpoint "$ck" "$dir/nan.safetensors" \
  "import struct; o = h['h.0.ln_1.weight']['data_offsets'][0]; data[o:o + 4] = struct.pack('<f', float('nan'))"
expect_refusal "a NaN weight" "tensor 'h.0.ln_1.weight' holds NaN at element 0" \
  "$ptk" generate --load "$dir/nan.safetensors" --prompt And --device host
[ ! -s "$dir/out" ] || fail "a NaN weight: refused after the prompt was echoed: $(cat "$dir/out")"

# Standard output that cannot be written is an error, not exit 0.
expect_stdout_failure "generate" "$ptk" generate --load "$ck" --prompt And -n 5 --device host
expect_stdout_failure "info" "$ptk" info
expect_stdout_failure "--help" "$ptk" --help

# Under mpirun (a build with MPI): generate runs once, in one process; two ranks are refused with one line.
if command -v mpirun >/dev/null && ldd "$ptk" | grep -q libmpi; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
    timeout 120 mpirun --oversubscribe -np 2 "$ptk" generate --load "$ck" --prompt And -n 3 --device host >"$dir/out" 2>"$dir/err"
  rc=$?
  [ $rc -eq 2 ] || fail "mpirun -np 2 generate: exit status $rc: $(cat "$dir/err")"
  [ "$(grep -c '^ptk: ' "$dir/err")" -eq 1 ] && grep -q "^ptk: generate runs in one process" "$dir/err" ||
    fail "mpirun -np 2 generate: $(cat "$dir/err")"
  [ ! -s "$dir/out" ] || fail "mpirun -np 2 generate printed: $(cat "$dir/out")"
  echo "ok: mpirun -np 2 generate -> $(grep '^ptk: ' "$dir/err")"
else
  echo "note: no mpirun or no MPI in this build; the mpirun refusal did not run"
fi

# --- ptk op decode_attention against NumPy ------------------------------------------------------------
/usr/bin/python3 - "$dir" <<'PY' || fail "decode_attention inputs"
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
B, Hq, Hkv, Tq, Tmax, D, L = 2, 6, 2, 3, 40, 16, 29
q = rng.uniform(-1, 1, (B, Hq, Tq, D)).astype(np.float32)
k = rng.uniform(-1, 1, (B, Hkv, Tmax, D)).astype(np.float32)
v = rng.uniform(-1, 1, (B, Hkv, Tmax, D)).astype(np.float32)
k[:, :, L:] = np.nan; v[:, :, L:] = np.nan  # never read
for name, x in (("q", q), ("k", k), ("v", v)): np.save(f"{d}/{name}.npy", x)
out = np.zeros((B, Hq, Tq, D))
G = Hq // Hkv
for b in range(B):
    for h in range(Hq):
        for i in range(Tq):
            n = L - Tq + i + 1
            s = k[b, h // G, :n].astype(np.float64) @ q[b, h, i].astype(np.float64) / np.sqrt(D)
            p = np.exp(s - s.max()); p /= p.sum()
            out[b, h, i] = p @ v[b, h // G, :n].astype(np.float64)
np.save(f"{d}/want.npy", out)
PY
for splits in 0 4; do
  "$ptk" op decode_attention --in "$dir/q.npy" --in "$dir/k.npy" --in "$dir/v.npy" --set length=29 --set splits=$splits \
    --out "$dir/o.npy" --device host 2>"$dir/err" || fail "ptk op decode_attention: $(cat "$dir/err")"
  /usr/bin/python3 -c "
import sys, numpy as np
got, want = np.load('$dir/o.npy'), np.load('$dir/want.npy')
err = np.abs(got - want).max()
print(f'ok: ptk op decode_attention (splits=$splits) vs NumPy float64: max |diff| {err:.2e}')
sys.exit(0 if got.shape == want.shape and err < 1e-5 else 1)" || fail "decode_attention differs from NumPy"
done
# ptk op attention with grouped kv heads (the training and prefill path): causal, K and V with Hq / 3 heads.
/usr/bin/python3 - "$dir" <<'PY' || fail "grouped attention"
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(8)
B, Hq, Hkv, T, D = 2, 6, 2, 37, 16
q = rng.uniform(-1, 1, (B, Hq, T, D)).astype(np.float32)
k = rng.uniform(-1, 1, (B, Hkv, T, D)).astype(np.float32)
v = rng.uniform(-1, 1, (B, Hkv, T, D)).astype(np.float32)
for name, x in (("gq", q), ("gk", k), ("gv", v)): np.save(f"{d}/{name}.npy", x)
out = np.zeros((B, Hq, T, D))
for b in range(B):
    for h in range(Hq):
        for t in range(T):
            s = k[b, h // (Hq // Hkv), :t + 1].astype(np.float64) @ q[b, h, t].astype(np.float64) / np.sqrt(D)
            p = np.exp(s - s.max()); p /= p.sum()
            out[b, h, t] = p @ v[b, h // (Hq // Hkv), :t + 1].astype(np.float64)
np.save(f"{d}/gwant.npy", out)
PY
"$ptk" op attention --in "$dir/gq.npy" --in "$dir/gk.npy" --in "$dir/gv.npy" --set causal=1 --out "$dir/go.npy" \
  --device host 2>"$dir/err" || fail "ptk op attention (grouped): $(cat "$dir/err")"
/usr/bin/python3 -c "
import sys, numpy as np
got, want = np.load('$dir/go.npy'), np.load('$dir/gwant.npy')
err = np.abs(got - want).max()
print(f'ok: ptk op attention, 6 query heads on 2 kv heads, causal, vs NumPy float64: max |diff| {err:.2e}')
sys.exit(0 if got.shape == want.shape and err < 1e-5 else 1)" || fail "grouped attention differs from NumPy"
expect_refusal "decode_attention with a length beyond Tmax" "length 41 must be in" \
  "$ptk" op decode_attention --in "$dir/q.npy" --in "$dir/k.npy" --in "$dir/v.npy" --set length=41 --out "$dir/o.npy"
expect_refusal "decode_attention with Hq not a multiple of Hkv" "not a multiple" \
  "$ptk" op decode_attention --in "$dir/k.npy" --in "$dir/q.npy" --in "$dir/q.npy" --set length=3 --out "$dir/o.npy"

# --- ptk info --model: the inference estimate, GQA-aware ---------------------------------------------------
# A Llama-2-7B shape with 8 kv heads of 32 (as Llama-2-70B groups them): K and V x 32 layers x 1 x 4096 positions
# x 8 heads x 128 dims x 4 bytes = 1 GiB, a quarter of the 4 GiB that 32 kv heads keep.
for kv in 8 32; do
  "$ptk" info --model 32,32,4096,4096,32000 --arch llama --kv-heads $kv >"$dir/info" 2>&1 || fail "ptk info: $(cat "$dir/info")"
  grep -q "^Inference memory" "$dir/info" || fail "no inference estimate: $(cat "$dir/info")"
  want=$([ $kv = 8 ] && echo "1.00 GiB" || echo "4.00 GiB")
  grep "KV cache" "$dir/info" | grep -q "$want" || fail "kv heads $kv: KV cache line $(grep 'KV cache' "$dir/info"), want $want"
done
echo "ok: ptk info --model gives the inference estimate"
# T = V = 2^32: the training logits pass the int64 limit. Every size saturates ("> ..."), none is negative, and
# neither estimate fits.
"$ptk" info --model 1,1,1,4294967296,4294967296,1 >"$dir/info" 2>&1 || fail "ptk info, T = V = 2^32: $(cat "$dir/info")"
! grep -q -- "-[0-9][0-9.]* GiB" "$dir/info" || fail "a negative size: $(grep -- '-[0-9][0-9.]* GiB' "$dir/info")"
[ "$(grep -c '^  fits  *no: ' "$dir/info")" -eq 2 ] || fail "T = V = 2^32 fits: $(grep fits "$dir/info")"
grep -q "^  total  *> [0-9.]* GiB" "$dir/info" || fail "the saturated total does not print as '> ...': $(grep total "$dir/info")"
echo "ok: ptk info --model 1,1,1,2^32,2^32,1 saturates: $(grep -m1 '^  total' "$dir/info" | tr -s ' ')"
echo "generate_cli: all checks passed"
