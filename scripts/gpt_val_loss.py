#!/usr/bin/python3
"""Independent check of a ptk checkpoint: rebuilds the model (GPT-2 or Llama, by the metadata's `arch`; a file
without it is GPT-2) in PyTorch from the safetensors file alone (names, shapes and __metadata__ as docs/design.md
specifies) and prints the validation loss that `ptk train` defines, for comparison with the `val loss` line ptk
printed. The Llama forward is Hugging Face LlamaForCausalLM's math written out (rotate_half rope, grouped-query
attention by repeating each kv head for its group, silu-gated MLP, rmsnorm), sharing no code with ptk.

usage: scripts/gpt_val_loss.py CHECKPOINT TEXT [--batch B]

Validation: the last 10 % of TEXT's bytes (the cut at floor(0.9 n)), encoded with the checkpoint's vocabulary,
cut into consecutive non-overlapping windows of block_size + 1 tokens (a shorter tail dropped); inputs are a
window's first T tokens, targets its last T; the loss is the mean cross-entropy over every position.
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", f"{name}: dtype {info['dtype']}"
        begin, end = info["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(body[begin:end], dtype="<f4").reshape(info["shape"]).copy())
    return tensors, meta


def forward(p, idx, L, H):
    B, T = idx.shape
    C = p["wte.weight"].shape[1]
    x = p["wte.weight"][idx] + p["wpe.weight"][:T]
    for i in range(L):
        h = f"h.{i}."
        a = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], 1e-5)
        q, k, v = F.linear(a, p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"]).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        s = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"])
        m = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], 1e-5)
        m = F.gelu(F.linear(m, p[h + "mlp.c_fc.weight"], p[h + "mlp.c_fc.bias"]), approximate="tanh")
        x = x + F.linear(m, p[h + "mlp.c_proj.weight"], p[h + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
    return x @ p["wte.weight"].T


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_forward(p, idx, meta):
    B, T = idx.shape
    L, H, Hkv = int(meta["n_layer"]), int(meta["n_head"]), int(meta["n_kv_head"])
    base, eps = float(meta["rope_base"]), float(meta["norm_eps"])
    C = p["model.embed_tokens.weight"].shape[1]
    D = C // H
    # cos/sin [T, D]: angle t * base^(-2i/D) for i < D/2, repeated for both halves (computed in double).
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    cos, sin = angles.cos().float(), angles.sin().float()
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    x = p["model.embed_tokens.weight"][idx]
    for i in range(L):
        l = f"model.layers.{i}."
        h = rms_norm(x, p[l + "input_layernorm.weight"], eps)
        q = F.linear(h, p[l + "self_attn.q_proj.weight"]).view(B, T, H, D).transpose(1, 2)
        k = F.linear(h, p[l + "self_attn.k_proj.weight"]).view(B, T, Hkv, D).transpose(1, 2)
        v = F.linear(h, p[l + "self_attn.v_proj.weight"]).view(B, T, Hkv, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        y = (s.masked_fill(causal, float("-inf")).softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, p[l + "self_attn.o_proj.weight"])
        m = rms_norm(x, p[l + "post_attention_layernorm.weight"], eps)
        m = F.silu(F.linear(m, p[l + "mlp.gate_proj.weight"])) * F.linear(m, p[l + "mlp.up_proj.weight"])
        x = x + F.linear(m, p[l + "mlp.down_proj.weight"])
    return F.linear(rms_norm(x, p["model.norm.weight"], eps), p["lm_head.weight"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("text")
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    p, meta = read_safetensors(args.checkpoint)
    L, H, T = int(meta["n_layer"]), int(meta["n_head"]), int(meta["block_size"])
    arch = meta.get("arch", "gpt2")
    assert arch in ("gpt2", "llama"), f"unknown arch {arch}"
    vocab = [int(b) for b in meta["vocab"].split(",")]
    rank = {b: i for i, b in enumerate(vocab)}
    text = open(args.text, "rb").read()
    val = [rank[b] for b in text[len(text) * 9 // 10:]]
    windows = [val[s:s + T + 1] for s in range(0, len(val) - T, T + 1) if s + T + 1 <= len(val)]
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(windows), args.batch):
            w = torch.tensor(windows[i:i + args.batch], dtype=torch.long)
            logits = llama_forward(p, w[:, :T], meta) if arch == "llama" else forward(p, w[:, :T], L, H)
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum").item()
            count += w.shape[0] * T
    print(f"val loss {total / count:.4f}")


if __name__ == "__main__":
    sys.exit(main())
