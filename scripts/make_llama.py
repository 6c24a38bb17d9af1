#!/usr/bin/python3
"""Writes a Hugging Face directory of a Llama-family model with random BF16 weights, in one of two shapes:
  mistral7b  Mistral 7B v0.1 (hidden 4096, intermediate 14336, 32 layers, 32 heads, 8 key/value heads, vocabulary
             32000, sliding window 4096 of 32768 positions): ~14.5 GB in four shards (scripts/mistral7b_sweep.sh);
  llama75m   a 75 M-parameter Llama (hidden 768, intermediate 2048, 10 layers, 12 heads, 4 key/value heads,
             vocabulary 8000, 4096 positions): 150 MB in one shard (scripts/llama_cpp_sweep.sh's default model).
Shards with model.safetensors.index.json, config.json, and a SentencePiece BPE tokenizer.model of 8000 ids trained
here by spm_train on data/ (mistral7b: fewer ids than its 32000 rows, the rest padding, as in many real vocabularies).

The weights are N(0, 0.02^2) (Hugging Face's initializer_range), norms 1: the model says nothing, but its every
byte is read as a real one's is. Made on the fly by the sweeps, never committed.
usage: make_llama.py DIR [--shape mistral7b|llama75m]   (default mistral7b; progress on stderr; numpy only)
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

# name: layers, hidden, intermediate, heads, kv heads, vocabulary, positions, sliding window, shards, architecture
SHAPES = {"mistral7b": (32, 4096, 14336, 32, 8, 32000, 32768, 4096, 4, "Mistral"),
          "llama75m": (10, 768, 2048, 12, 4, 8000, 4096, None, 1, "Llama")}


def shapes(L, C, F, H, HKV, V):
    D = C // H
    yield "model.embed_tokens.weight", (V, C)
    for i in range(L):
        p = "model.layers.%d." % i
        yield p + "input_layernorm.weight", (C,)
        yield p + "self_attn.q_proj.weight", (C, C)
        yield p + "self_attn.k_proj.weight", (HKV * D, C)
        yield p + "self_attn.v_proj.weight", (HKV * D, C)
        yield p + "self_attn.o_proj.weight", (C, C)
        yield p + "post_attention_layernorm.weight", (C,)
        yield p + "mlp.gate_proj.weight", (F, C)
        yield p + "mlp.up_proj.weight", (F, C)
        yield p + "mlp.down_proj.weight", (C, F)
    yield "model.norm.weight", (C,)
    yield "lm_head.weight", (V, C)


def bf16_bits(x):
    """float32 -> bfloat16 bits, rounded to nearest even (no NaN here)."""
    u = x.view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_shard(path, names, rng):
    header, offset = {}, 0
    for name, shape in names:
        n = int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + 2 * n]}
        offset += 2 * n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name, shape in names:
            n = int(np.prod(shape))
            if len(shape) == 1:
                f.write(bf16_bits(np.ones(n, dtype=np.float32)).tobytes())
                continue
            for start in range(0, n, 1 << 26):  # 64 Mi values at a time
                x = rng.standard_normal(min(1 << 26, n - start), dtype=np.float32) * np.float32(0.02)
                f.write(bf16_bits(x).tobytes())


def main(out, shape, root):
    L, C, F, H, HKV, V, positions, window, count, arch = SHAPES[shape]
    os.makedirs(out, exist_ok=True)
    tensors = list(shapes(L, C, F, H, HKV, V))
    shards = [[] for _ in range(count)]
    total = sum(np.prod(s) for _, s in tensors)
    for name, dims in tensors:  # shards of about equal size, tensors in order
        done = sum(np.prod(s) for part in shards for _, s in part)
        shards[min(count - 1, int(count * done / total))].append((name, dims))
    rng = np.random.default_rng(7)
    weight_map, t0 = {}, time.time()
    for i, part in enumerate(shards):
        file = "model-%05d-of-%05d.safetensors" % (i + 1, count)
        write_shard(os.path.join(out, file), part, rng)
        weight_map.update({name: file for name, _ in part})
        print("make_llama: %s shard %d of %d written (%.0f s)" % (shape, i + 1, count, time.time() - t0),
              file=sys.stderr, flush=True)
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)
    config = {"architectures": [arch + "ForCausalLM"], "model_type": arch.lower(), "hidden_size": C,
              "intermediate_size": F, "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": HKV,
              "vocab_size": V, "max_position_embeddings": positions, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu", "bos_token_id": 1,
              "eos_token_id": 2, "torch_dtype": "bfloat16"}
    if window:
        config["sliding_window"] = window
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    subprocess.run(["spm_train", "--input=" + os.path.join(root, "data", "kjv_genesis_exodus.txt"),
                    "--model_prefix=" + os.path.join(out, "tokenizer"), "--vocab_size=8000", "--model_type=bpe",
                    "--byte_fallback=true", "--minloglevel=2"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    os.remove(os.path.join(out, "tokenizer.vocab"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>"}, f)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="mistral7b")
    args = parser.parse_args()
    main(args.dir, args.shape, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
