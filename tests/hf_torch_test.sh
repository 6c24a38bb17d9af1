#!/bin/bash
# ptk on Hugging Face directories written with PyTorch (Debian's python3-torch) by tests/hf_reference.py, against that
# script's float64 re-implementation of the models' math:
#   - LlamaForCausalLM: two BF16 shards with an index, a SentencePiece BPE tokenizer.model (spm_train here), BOS added;
#   - GPT2LMHeadModel: one F16 file with GPT-2's names, Conv1D weights and mask buffers, a byte-level vocab.json;
# for 3 prompts each: ptk's prompt ids equal the reference's (python3-sentencepiece; the bytes), `ptk generate
# --model DIR --temperature 0` gives the reference's 24 greedy tokens, and its --logits stay within the derived bound
# (hf_reference.py compare). --dtype bf16 / f16 (the weights as stored, multiplied in ptk's 16-bit kernels) is reported. Then what ptk refuses in a directory:
# each one line and exit 2. Without torch the test says so loudly and exits 77 (ctest: skipped).
# usage: hf_torch_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"
py=/usr/bin/python3
if ! $py -c "import torch, sentencepiece" 2>/dev/null; then
  echo "SKIPPED: PyTorch (Debian's python3-torch) or python3-sentencepiece is not installed: scripts/bootstrap.sh installs them"
  exit 77
fi
ref=$src/tests/hf_reference.py
spm_train --input="$src/data/kjv_genesis_exodus.txt" --model_prefix="$dir/spm" --vocab_size=1000 --model_type=bpe \
  --byte_fallback=true --minloglevel=2 >/dev/null 2>&1 || fail "spm_train"
prompts=("And God said" "In the beginning God created the heaven" "And Moses went up unto the LORD, émigré 🎉")
$py "$ref" llama "$dir/llama" "$dir/spm.model" "${prompts[@]}" || fail "hf_reference.py llama"
$py "$ref" gpt2 "$dir/gpt2" "${prompts[@]}" || fail "hf_reference.py gpt2"

for model in llama gpt2; do
  m=$dir/$model
  for i in 0 1 2; do
    p=${prompts[$i]}
    ids=$("$ptk" tokenize --tokenizer "$m" --text "$p") || fail "tokenize '$p'"
    [ "$ids" = "$(cat "$m/ref/$i.ids")" ] || fail "$model '$p': ptk's ids $ids, the reference's $(cat "$m/ref/$i.ids")"
    "$ptk" generate --model "$m" --prompt "$p" -n 24 --ignore-eos --temperature 0 --ids --logits "$dir/logits.npy" --device host \
      >"$dir/ptk" 2>"$dir/err" || fail "generate $model: $(cat "$dir/err")"
    [ "$(cat "$dir/ptk")" = "$(cat "$m/ref/$i.greedy")" ] ||
      fail "$model '$p': ptk's greedy tokens $(cat "$dir/ptk"), the reference's $(cat "$m/ref/$i.greedy")"
    err=$($py "$ref" compare "$dir/logits.npy" "$m/ref/$i.npy" "$m/config.json") || fail "$model '$p' logits: $err"
    echo "ok: $model '$p': ids equal, 24 greedy tokens equal, logit error $err"
    stored=$([ $model = llama ] && echo bf16 || echo f16)
    "$ptk" generate --model "$m" --prompt "$p" -n 24 --ignore-eos --temperature 0 --ids --dtype $stored --device host >"$dir/bf16" \
      2>"$dir/err" || fail "generate $model --dtype $stored: $(cat "$dir/err")"
    same=$($py -c "import sys; a, b = (open(p).readline().split() for p in sys.argv[1:3]); print(next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b))))" "$dir/bf16" "$m/ref/$i.greedy")
    echo "report: $model '$p' --dtype $stored (as stored): $same of 24 greedy tokens equal before the first difference"
  done
done
grep -q "peak resident memory" "$dir/err" || fail "generate reports no peak resident memory: $(cat "$dir/err")"

# ptk convert between the three forms, from the Llama PyTorch wrote: the directory -> GGUF (f32) -> a new directory
# (bf16) -> a ptk checkpoint. The directory ptk wrote holds the source's model (hf_reference.py same: tensors value
# for value through its own safetensors reader, config fields, python3-sentencepiece's ids), and every form gives
# the reference's greedy tokens.
m=$dir/llama
for step in "$m $dir/rt.gguf" "$dir/rt.gguf $dir/rt --dtype bf16" "$dir/rt $dir/rt.safetensors"; do
  # shellcheck disable=SC2086
  "$ptk" convert $step >"$dir/convert" 2>&1 || fail "convert $step: $(cat "$dir/convert")"
  echo "ok: $(cat "$dir/convert")"
done
same=$($py "$ref" same "$m" "$dir/rt" "${prompts[@]}") || fail "the directory ptk convert wrote: $same"
echo "ok: the directory ptk convert wrote (GGUF -> bf16 directory): $same"
for i in 0 1 2; do
  for form in "--model $dir/rt.gguf" "--model $dir/rt" "--load $dir/rt.safetensors --tokenizer $dir/rt"; do
    # shellcheck disable=SC2086
    "$ptk" generate $form --prompt-ids "$(cat "$m/ref/$i.ids")" -n 24 --ignore-eos --temperature 0 --ids --device host \
      >"$dir/ptk" 2>"$dir/err" || fail "generate $form: $(cat "$dir/err")"
    [ "$(cat "$dir/ptk")" = "$(cat "$m/ref/$i.greedy")" ] ||
      fail "convert: $form, prompt $i: greedy tokens $(cat "$dir/ptk"), the reference's $(cat "$m/ref/$i.greedy")"
  done
done
echo "ok: the GGUF file, the directory and the checkpoint ptk convert wrote give the reference's 24 greedy tokens x 3"
"$ptk" generate --model "$dir/rt" --prompt "${prompts[1]}" -n 2 --ids --device host >/dev/null 2>"$dir/err" ||
  fail "generate --model rt --prompt: $(cat "$dir/err")"
expect_refusal "convert onto an existing directory" "rt: exists" "$ptk" convert "$dir/rt.gguf" "$dir/rt"
expect_refusal "convert to a directory at q8_0" "holds f32, bf16 or f16, not --dtype q8_0" "$ptk" convert "$dir/rt.gguf" "$dir/q8" --dtype q8_0
expect_refusal "convert to a checkpoint at bf16" "a ptk checkpoint holds f32" "$ptk" convert "$dir/rt.gguf" "$dir/c.safetensors" --dtype bf16
[ ! -e "$dir/q8" ] && [ ! -e "$dir/c.safetensors" ] || fail "a refused convert wrote something"

# Refusals: a copy of the llama directory with one thing changed.
variant() {  # variant NAME PYTHON: $dir/NAME is the llama directory, then PYTHON runs with c its config (written back)
  rm -rf "${dir:?}/$1" && cp -r "$dir/llama" "$dir/$1"
  $py - "$dir/$1" "$2" <<'PY'
import json, os, sys
d, edit = sys.argv[1:3]
c = json.load(open(os.path.join(d, "config.json")))
exec(edit)
json.dump(c, open(os.path.join(d, "config.json"), "w"))
PY
}
gen() { "$ptk" generate --model "$dir/$1" --prompt "And" -n 4 --device host; }
variant arch 'c["architectures"] = ["FalconForCausalLM"]'
expect_refusal "another architecture" "architectures = \[\"FalconForCausalLM\"\] is not supported" gen arch
variant scaling 'c["rope_scaling"] = {"type": "linear", "factor": 2.0}'
expect_refusal "rope_scaling" "rope_scaling = {\"factor\":2.0,\"type\":\"linear\"} is not supported" gen scaling
variant act 'c["hidden_act"] = "gelu"'
expect_refusal "hidden_act" "hidden_act = \"gelu\" is not supported" gen act
variant headdim 'c["head_dim"] = 32'
expect_refusal "head_dim" "head_dim = 32 is not supported" gen headdim
variant heads 'c["num_key_value_heads"] = 3'
expect_refusal "kv heads" "is not a multiple of kv_heads = 3" gen heads
variant missing 'c.pop("hidden_size")'
expect_refusal "a missing field" "hidden_size is missing" gen missing
variant wide 'c["hidden_size"] = 128'
expect_refusal "a config that disagrees with the tensors" "has shape \[1024, 64\], but the config needs \[1024, 128\]" gen wide
variant shard 'os.remove(os.path.join(d, "model-00002-of-00002.safetensors"))'
expect_refusal "a missing shard" "model-00002-of-00002.safetensors: cannot open" gen shard
variant escape 'i = json.load(open(os.path.join(d, "model.safetensors.index.json"))); i["weight_map"]["lm_head.weight"] = "../../etc/passwd"; json.dump(i, open(os.path.join(d, "model.safetensors.index.json"), "w"))'
expect_refusal "a shard outside the directory" "is not a plain file name in the directory" gen escape
variant lying 'i = json.load(open(os.path.join(d, "model.safetensors.index.json"))); i["weight_map"]["lm_head.weight"] = "model-00002-of-00002.safetensors" if i["weight_map"]["lm_head.weight"].startswith("model-00001") else "model-00001-of-00002.safetensors"; json.dump(i, open(os.path.join(d, "model.safetensors.index.json"), "w"))'
expect_refusal "an index that lies" "'lm_head.weight' is said to be in" gen lying
variant nojson 'open(os.path.join(d, "config.json"), "w").write("{\"architectures\": [")'
printf '{"architectures": [' >"$dir/nojson/config.json"
expect_refusal "config.json that is not JSON" "config.json: not valid JSON" gen nojson
mkdir -p "$dir/empty"
expect_refusal "a directory without config.json" "a directory without config.json is not a Hugging Face model" gen empty

# Mistral's sliding window shorter than the context: the context is capped at the window, and said so.
variant mistral 'c["architectures"] = ["MistralForCausalLM"]; c["sliding_window"] = 16'
"$ptk" generate --model "$dir/mistral" --prompt "And God said" -n 12 --ignore-eos --temperature 0 --ids --device host >"$dir/out" \
  2>"$dir/err" || fail "mistral: $(cat "$dir/err")"
grep -q "context capped at sliding_window 16" "$dir/err" || fail "mistral: no note of the capped context: $(cat "$dir/err")"
[ "$(cat "$dir/out")" = "$(cut -d' ' -f1-12 "$dir/llama/ref/0.greedy")" ] ||
  fail "mistral within its window: $(cat "$dir/out"), llama's $(cut -d' ' -f1-12 "$dir/llama/ref/0.greedy")"
echo "ok: MistralForCausalLM with sliding_window 16: $(head -1 "$dir/err")"
expect_refusal "mistral past its window" "beyond the model's context 16" \
  "$ptk" generate --model "$dir/mistral" --prompt "And God said" -n 14 --device host
# The end of a text: with eos_token_id set to the first greedy token of "And God said", generate emits that token
# and stops (the text path renders nothing for it), and says so; --ignore-eos goes on to -n.
first=$(cut -d' ' -f1 "$dir/llama/ref/0.greedy")
variant eos "c['eos_token_id'] = $first"
"$ptk" generate --model "$dir/eos" --prompt "And God said" -n 12 --temperature 0 --ids --device host >"$dir/out" \
  2>"$dir/err" || fail "eos: $(cat "$dir/err")"
[ "$(cat "$dir/out")" = "$first" ] || fail "eos $first: generated $(cat "$dir/out")"
grep -q "the model ended its text (end-of-sequence id $first) after 1 of 12 tokens" "$dir/err" ||
  fail "eos: no note of the end: $(cat "$dir/err")"
"$ptk" generate --model "$dir/eos" --prompt "And God said" -n 12 --ignore-eos --temperature 0 --ids --device host \
  >"$dir/out" 2>/dev/null && [ "$(wc -w <"$dir/out")" -eq 12 ] || fail "eos with --ignore-eos: $(cat "$dir/out")"
echo "ok: eos_token_id ends the text after its token ($first); --ignore-eos goes on to -n"
echo "PASS"
