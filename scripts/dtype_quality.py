#!/usr/bin/env python3
"""What reduced precision costs a trained model: the validation loss with the linear weights stored as each dtype
(ptk train --eval-only --dtype), and greedy agreement with the f32 run (ptk generate --temperature 0) over a fixed
set of prompts from the validation text, for each weight dtype and each KV cache dtype. Prints a Markdown table
(docs/benchmarks.md keeps the runs); progress goes to stderr.

usage: dtype_quality.py PTK CHECKPOINT TEXT [--prompts N] [--prompt-bytes P] [--new-bytes N]
The checkpoint's linear layers must be whole blocks of 32 wide for q8_0 and q4_0.
"""
import argparse
import re
import subprocess
import sys

WEIGHTS = ["f32", "bf16", "f16", "q8_0", "q4_0"]
KV_ROWS = [("f32", "bf16"), ("f32", "f16"), ("q8_0", "f16"), ("q4_0", "f16")]


def run(cmd, input_bytes=None):
    r = subprocess.run(cmd, input=input_bytes, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"dtype_quality: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode(errors='replace').strip()}")
    return r


def val_loss(ptk, ckpt, text, dtype):
    out = run([ptk, "train", "--load", ckpt, "--data", text, "--eval-only", "--dtype", dtype, "--device", "host"])
    m = re.search(rb"^val loss ([0-9.]+)$", out.stdout, re.M)
    if not m:
        sys.exit(f"dtype_quality: no val loss line for --dtype {dtype}")
    return float(m.group(1))


def prompts_from(text_path, count, length):
    """count prompts of `length` bytes, evenly spaced over the text's last 10 % (the validation split), each
    starting after a newline so that it reads as the start of a line."""
    data = open(text_path, "rb").read()
    start = len(data) * 9 // 10
    span = len(data) - start - 2 * length
    out = []
    for i in range(count):
        at = start + span * i // max(1, count)
        nl = data.find(b"\n", at)
        at = nl + 1 if 0 <= nl < at + 200 else at
        out.append(data[at:at + length])
    return out


def greedy(ptk, ckpt, prompt, new_bytes, dtype, kv_dtype):
    r = run([ptk, "generate", "--load", ckpt, "--prompt", prompt.decode("latin-1"), "-n", str(new_bytes),
             "--temperature", "0", "--dtype", dtype, "--kv-dtype", kv_dtype, "--device", "host"])
    return r.stdout[len(prompt):len(prompt) + new_bytes]


def agreement(runs, base):
    """(continuations identical to f32's, mean bytes before the first difference, bytes equal at their position)."""
    same = sum(1 for a, b in zip(runs, base) if a == b)
    prefix = []
    equal = 0
    for a, b in zip(runs, base):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        prefix.append(n)
        equal += sum(1 for x, y in zip(a, b) if x == y)
    total = sum(len(b) for b in base)
    return same, sum(prefix) / len(prefix), equal / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ptk")
    ap.add_argument("checkpoint")
    ap.add_argument("text")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--prompt-bytes", type=int, default=32)
    ap.add_argument("--new-bytes", type=int, default=96)
    a = ap.parse_args()
    prompts = prompts_from(a.text, a.prompts, a.prompt_bytes)
    rows = [(w, "f32") for w in WEIGHTS] + KV_ROWS
    losses = {}
    texts = {}
    for i, (w, kv) in enumerate(rows):
        print(f"[{i + 1}/{len(rows)}] weights {w}, KV cache {kv}", file=sys.stderr, flush=True)
        if kv == "f32":
            losses[w] = val_loss(a.ptk, a.checkpoint, a.text, w)
        texts[(w, kv)] = [greedy(a.ptk, a.checkpoint, p, a.new_bytes, w, kv) for p in prompts]
    base_loss, base = losses["f32"], texts[("f32", "f32")]
    print(f"| weights | KV cache | val loss | vs f32 | greedy: identical of {len(prompts)} | "
          f"bytes before the first difference (of {a.new_bytes}) | bytes equal |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for w, kv in rows:
        same, prefix, equal = agreement(texts[(w, kv)], base)
        loss = f"{losses[w]:.4f}" if kv == "f32" else "—"
        delta = f"{100 * (losses[w] - base_loss) / base_loss:+.2f} %" if kv == "f32" else "—"
        print(f"| {w} | {kv} | {loss} | {delta} | {same} | {prefix:.1f} | {100 * equal:.1f} % |")


if __name__ == "__main__":
    main()
