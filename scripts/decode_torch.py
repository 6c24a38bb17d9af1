#!/usr/bin/python3
"""The decode sweep of benchmarks/decode_bench.cpp, in PyTorch: one generation step with a KV cache at a fixed
context, for the same models (GPT-2 layout, byte vocabulary of 256, block 1024), contexts and batches; and the
comparison table against ptk_bench's JSON of the same sweep.

usage: scripts/decode_torch.py [--quick] [--threads N] [--min-time S] [--device cpu|cuda] [--out FILE] [--ptk PTK_JSON]

The step is what ptk's is: embed the new token (and its position), per layer layernorm, qkv projection, the
new key and value written into a preallocated cache at position ctx - 1 (as a static KV cache does: no
concatenation), attention of the one query over the ctx cached keys, projection, residual, layernorm, gelu
(tanh) MLP, residual; final layernorm, logits against the tied embedding, softmax, one multinomial draw.
PyTorch runs at its best: inference_mode, its own intra-op pool of --threads threads, warmed up, each point
timed over at least --min-time seconds. Debian's PyTorch 1.13 calls a generic BLAS (OpenBLAS through the
alternatives), whose own thread pool fights PyTorch's on some shapes (measured: 17.9 ms a step at context 128,
74 ms at 256, L12/C768): every point is measured twice, in this process and in a child with
OPENBLAS_NUM_THREADS=1, and the faster is kept (the JSON says which). Prints one line per point and writes Google Benchmark-style JSON
(name decode/pytorch/<shape>, real_time in ms, GB/s, tokens/s); with --ptk, a markdown table of both.
Progress goes to stderr.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import openblas_best  # before torch: OpenBLAS reads OPENBLAS_CORETYPE when it loads
import torch
import torch.nn.functional as F

MODELS = {"L4_H4_C128": (4, 4, 128), "L12_H12_C768": (12, 12, 768)}
VOCAB, BLOCK = 256, 1024


class Gpt2Decoder:
    def __init__(self, layers, heads, width, batch, ctx, seed=1, device="cpu"):
        g = torch.Generator().manual_seed(seed)
        n = lambda *shape: torch.randn(*shape, generator=g) * 0.02
        C = width
        self.L, self.H, self.C, self.D = layers, heads, width, width // heads
        self.wte, self.wpe = n(VOCAB, C), n(BLOCK, C)
        self.blocks = []
        for _ in range(layers):
            self.blocks.append(dict(ln1_w=torch.ones(C), ln1_b=torch.zeros(C), attn_w=n(3 * C, C), attn_b=torch.zeros(3 * C),
                                    proj_w=n(C, C), proj_b=torch.zeros(C), ln2_w=torch.ones(C), ln2_b=torch.zeros(C),
                                    fc_w=n(4 * C, C), fc_b=torch.zeros(4 * C), fc2_w=n(C, 4 * C), fc2_b=torch.zeros(C)))
        self.lnf_w, self.lnf_b = torch.ones(C), torch.zeros(C)
        # The cache holds ctx positions per layer: keys and values [B, H, ctx, D], filled with random values.
        self.k = [torch.randn(batch, heads, ctx, self.D, generator=g) for _ in range(layers)]
        self.v = [torch.randn(batch, heads, ctx, self.D, generator=g) for _ in range(layers)]
        self.ctx, self.batch = ctx, batch
        self.scale = 1.0 / math.sqrt(self.D)
        self.device = device
        if device != "cpu":  # drawn on the CPU (the same values as there), then moved
            to = lambda t: t.to(device)
            self.wte, self.wpe, self.lnf_w, self.lnf_b = map(to, (self.wte, self.wpe, self.lnf_w, self.lnf_b))
            self.blocks = [{k: to(v) for k, v in blk.items()} for blk in self.blocks]
            self.k, self.v = [to(t) for t in self.k], [to(t) for t in self.v]

    def step(self, ids):
        B, C, H, D, pos = self.batch, self.C, self.H, self.D, self.ctx - 1
        x = self.wte[ids] + self.wpe[pos]  # [B, C]
        for blk, kc, vc in zip(self.blocks, self.k, self.v):
            a = F.layer_norm(x, (C,), blk["ln1_w"], blk["ln1_b"], 1e-5)
            q, k, v = F.linear(a, blk["attn_w"], blk["attn_b"]).split(C, dim=1)
            kc[:, :, pos] = k.view(B, H, D)
            vc[:, :, pos] = v.view(B, H, D)
            att = torch.softmax(torch.matmul(kc, q.view(B, H, D, 1)).squeeze(-1) * self.scale, dim=-1)  # [B, H, ctx]
            y = torch.matmul(att.unsqueeze(2), vc).reshape(B, C)
            x = x + F.linear(y, blk["proj_w"], blk["proj_b"])
            m = F.layer_norm(x, (C,), blk["ln2_w"], blk["ln2_b"], 1e-5)
            x = x + F.linear(F.gelu(F.linear(m, blk["fc_w"], blk["fc_b"]), approximate="tanh"), blk["fc2_w"], blk["fc2_b"])
        x = F.layer_norm(x, (C,), self.lnf_w, self.lnf_b, 1e-5)
        probs = torch.softmax(F.linear(x, self.wte), dim=-1)
        return torch.multinomial(probs, 1).squeeze(1)

    def parameters(self):
        return VOCAB * self.C + BLOCK * self.C + self.L * (12 * self.C * self.C + 13 * self.C) + 2 * self.C


def measure(model, min_time):
    ids = torch.ones(model.batch, dtype=torch.long, device=model.device)
    sync = torch.cuda.synchronize if model.device != "cpu" else (lambda: None)
    for _ in range(3):
        model.step(ids)
    sync()
    iters, start = 0, time.perf_counter()
    while True:
        model.step(ids)
        iters += 1
        sync()  # a GPU step is timed to its end; the multinomial draw also waits for it, as ptk's does
        elapsed = time.perf_counter() - start
        if elapsed >= min_time and iters >= 5:
            return elapsed / iters


def table(ptk_json, torch_rows):
    ptk = {}
    for b in json.load(open(ptk_json))["benchmarks"]:
        name = b["name"].split("/min_time")[0]
        if name.startswith("decode/ptk/") and b.get("run_type", "iteration") == "iteration":
            ptk[name[len("decode/ptk/"):]] = b
    lines = ["| model | context | batch | ptk tokens/s | PyTorch tokens/s | ptk / PyTorch | ptk GB/s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    ratios = []
    for r in torch_rows:
        shape = r["name"][len("decode/pytorch/"):]
        if shape not in ptk:
            continue
        p = ptk[shape]
        ms = p["real_time"] if p.get("time_unit", "ms") == "ms" else p["real_time"] / 1e6
        batch = int(shape.split("B=")[1])
        ptk_tps = batch / (ms / 1e3)
        ratio = ptk_tps / r["tokens/s"]
        ratios.append(ratio)
        fields = dict(kv.split("=") for kv in shape.split(","))
        lines.append(f"| {fields['model']} | {fields['ctx']} | {batch} | {ptk_tps:,.0f} | {r['tokens/s']:,.0f} | "
                     f"{ratio:.2f}x | {p['GB/s']:.1f} |")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines.append(f"\ngeometric mean of ptk / PyTorch over {len(ratios)} points: {geo:.2f}x")
    return "\n".join(lines)


def sweep(args):
    contexts, batches = ([128, 1024], [1]) if args.quick else ([128, 256, 512, 1024], [1, 8])
    rows = []
    with torch.inference_mode():
        for name, (L, H, C) in MODELS.items():
            for ctx in contexts:
                for B in batches:
                    model = Gpt2Decoder(L, H, C, B, ctx, device=args.device)
                    seconds = measure(model, args.min_time)
                    shape = f"model={name},ctx={ctx},B={B}"
                    bytes_ = 4.0 * (model.parameters() + 2.0 * L * B * ctx * C)
                    rows.append({"name": f"decode/pytorch/{shape}", "real_time": seconds * 1e3, "time_unit": "ms",
                                 "GB/s": bytes_ / seconds / 1e9, "tokens/s": B / seconds,
                                 "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
                                 **openblas_best.coretype()})
                    print(f"decode/pytorch/{shape} (OPENBLAS_NUM_THREADS={rows[-1]['openblas_threads']}): "
                          f"{seconds * 1e3:.3f} ms/step, {B / seconds:,.0f} tokens/s", file=sys.stderr, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="contexts 128 and 1024, batch 1 (as ptk_bench --quick)")
    ap.add_argument("--threads", type=int, default=2, help="PyTorch intra-op threads (default 2)")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds timed per point (default 0.5)")
    ap.add_argument("--out", help="write the results as Google Benchmark-style JSON")
    ap.add_argument("--ptk", help="ptk_bench --benchmark_out JSON of the decode sweep: print the comparison table")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where PyTorch runs (default cpu)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        json.dump(sweep(args), sys.stdout)
        return 0
    rows = sweep(args)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if args.device != "cpu":  # no OpenBLAS on a GPU: one measurement
        env = None
    child = [sys.executable, __file__, "--child", "--threads", str(args.threads), "--min-time", str(args.min_time)]
    child += ["--quick"] if args.quick else []
    others = [] if env is None else json.loads(subprocess.run(child, env=env, check=True, stdout=subprocess.PIPE,
                                                              text=True).stdout)
    for other in others:
        mine = next(r for r in rows if r["name"] == other["name"])
        if other["real_time"] < mine["real_time"]:
            rows[rows.index(mine)] = other
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"context": {"torch_version": torch.__version__, "threads": args.threads, "device": args.device},
                       "benchmarks": rows}, f,
                      indent=1)
    if args.ptk:
        print(table(args.ptk, rows))


if __name__ == "__main__":
    sys.exit(main())
