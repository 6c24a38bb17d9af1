#!/usr/bin/python3
"""The training step of `ptk train` (its default GPT-2 architecture) in PyTorch, timed, for scripts/train_speed.sh.

The same model as ptk's: a byte vocabulary (the text's sorted distinct bytes), token and position tables, L blocks
of pre-norm layernorm, causal self-attention (one [3C, C] projection), a 4C tanh-gelu MLP, a final layernorm and
the LM head tied to the token table; cross-entropy on B random windows of T + 1 bytes; AdamW (lr 2e-3, betas 0.9,
0.95, weight decay 0.1 on matrices), gradient norm clipped at 1 as ptk does. PyTorch's own thread pool
(torch.set_num_threads) and its fused kernels; attention written out (PyTorch 1.13 has no scaled_dot_product_attention).
Prints one JSON line: the median ms of the steps after `--warmup`, and tokens/s from it.
usage: train_torch.py --layers L --width C --heads H --block T --batch B [--steps N] [--warmup W] [--threads n]
"""
import argparse
import json
import math
import os
import statistics
import time

import openblas_best  # before numpy and torch: OpenBLAS reads OPENBLAS_CORETYPE when it loads

import numpy as np
import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(C), torch.nn.LayerNorm(C)
        self.c_attn, self.c_proj = torch.nn.Linear(C, 3 * C), torch.nn.Linear(C, C)
        self.c_fc, self.mlp_proj = torch.nn.Linear(C, 4 * C), torch.nn.Linear(4 * C, C)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        heads = lambda t: t.view(B, T, self.H, C // self.H).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.H))
        att = F.softmax(att.masked_fill(mask[:T, :T], float("-inf")), dim=-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(torch.nn.Module):
    def __init__(self, V, L, C, H, T):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(V, C), torch.nn.Embedding(T, C)
        self.blocks = torch.nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = torch.nn.LayerNorm(C)
        self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x, self.mask)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("layers", "width", "heads", "block", "batch"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", default=os.path.join(root, "data", "kjv_genesis_exodus.txt"))
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1337)
    raw = np.frombuffer(open(a.data, "rb").read(), dtype=np.uint8)
    vocab = np.unique(raw)
    ids = torch.from_numpy(np.searchsorted(vocab, raw).astype(np.int64))
    model = Gpt(len(vocab), a.layers, a.width, a.heads, a.block)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    rest = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=2e-3, betas=(0.9, 0.95))
    rng = np.random.default_rng(5)
    times = []
    for step in range(a.steps):
        starts = torch.from_numpy(rng.integers(0, len(ids) - a.block - 1, a.batch))
        x = torch.stack([ids[s:s + a.block] for s in starts])
        y = torch.stack([ids[s + 1:s + a.block + 1] for s in starts])
        t0 = time.perf_counter()
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    ms = statistics.median(times[a.warmup:])
    print(json.dumps({"ms_per_step": ms, "tokens_per_s": a.batch * a.block / (ms / 1e3), "loss": loss.item(),
                      "torch": torch.__version__, "threads": a.threads, **openblas_best.coretype()}))


if __name__ == "__main__":
    main()
