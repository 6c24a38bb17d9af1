#!/usr/bin/env python3
"""PyTorch (cuBLAS / its own CUDA kernels) at the shapes of a ptk_bench JSON, on the same GPU.

    device_torch.py PTK_BENCH.json --out TORCH.json

For every `family/ptk/shape` entry whose family PyTorch has (matmul, softmax, layernorm, rmsnorm,
attention, gelu, silu), times the PyTorch op at that shape in fp32 with CUDA events (median of
repeated launches after a warm-up) and writes Google Benchmark-shaped JSON: `family/torch/shape`
with the same counter (GFLOP/s or GB/s, same byte and FLOP conventions as ptk_bench), so that
scripts/bench_report.py and a reader can put the two side by side. Matmul is timed twice: with
TF32 off (`torch`, the same fp32 arithmetic as ptk) and on (`torch_tf32`, what PyTorch users get
with `allow_tf32`). A matmul whose shape key names `dtype=bf16|f16` (ptk's GEMM over stored 16-bit
inputs, fp32 accumulation) is timed with PyTorch's inputs in that type: cuBLAS on the tensor cores,
the vendor route the portable kernel is compared with. Progress goes to stderr.
"""
import argparse
import json
import math
import re
import sys

import torch
import torch.nn.functional as F


def parse(shape):
    """Shape key to a dict; integer values as int, others (dtype=bf16) as str."""
    return {k: int(v) if v.lstrip("-").isdigit() else v for k, v in (kv.split("=") for kv in shape.split(","))}


TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def timed(fn, min_time=0.2):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, total = [], 0.0
    while total < min_time * 1000 or len(times) < 5:
        start.record()
        fn()
        end.record()
        end.synchronize()
        t = start.elapsed_time(end)
        times.append(t)
        total += t
    times.sort()
    return times[len(times) // 2] / 1000.0  # seconds


def matmul_case(s, tf32):
    dtype = getattr(torch, TORCH_DTYPES[s.get("dtype", "f32")])
    if "B" in s:
        a = torch.rand(s["B"], s["M"], s["K"], device="cuda", dtype=dtype)
        b = torch.rand(s["B"], s["K"], s["N"], device="cuda", dtype=dtype)
        flops = 2.0 * s["B"] * s["M"] * s["N"] * s["K"]
    else:
        a = torch.rand(s["M"], s["K"], device="cuda", dtype=dtype)
        b = torch.rand(s["K"], s["N"], device="cuda", dtype=dtype)
        flops = 2.0 * s["M"] * s["N"] * s["K"]
    def run():
        torch.backends.cuda.matmul.allow_tf32 = tf32  # set where it is timed: the flag is global
        return torch.matmul(a, b)
    return run, "GFLOP/s", flops


def rows_case(family, s):
    rows, cols = s["rows"], s["cols"]
    x = torch.rand(rows, cols, device="cuda")
    w = torch.rand(cols, device="cuda")
    b = torch.rand(cols, device="cuda")
    if family == "softmax":
        return (lambda: torch.softmax(x, -1)), "GB/s", 2.0 * 4 * rows * cols
    if family == "layernorm":
        return (lambda: F.layer_norm(x, (cols,), w, b, 1e-5)), "GB/s", 2.0 * 4 * rows * cols
    if family == "rmsnorm" and hasattr(F, "rms_norm"):
        return (lambda: F.rms_norm(x, (cols,), w, 1e-5)), "GB/s", 2.0 * 4 * rows * cols
    return None


def attention_case(s):
    B, H, T, D = s["B"], s["H"], s["T"], s["D"]
    q, k, v = (torch.rand(B, H, T, D, device="cuda") for _ in range(3))
    causal = bool(s.get("causal", 0))
    # Dense FLOPs (4·B·H·T²·D), halved for a causal mask, as attention_bench.cpp counts them.
    flops = 4.0 * B * H * T * T * D * (0.5 if causal else 1.0)
    return (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)), "GFLOP/s", flops


def activation_case(family, s):
    x = torch.rand(s["n"], device="cuda")
    fn = {"gelu": lambda: F.gelu(x, approximate="tanh"), "silu": lambda: F.silu(x)}[family]
    return fn, "GB/s", 2.0 * 4 * s["n"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ptk_json")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    entries = json.load(open(args.ptk_json))["benchmarks"]
    torch.backends.cuda.matmul.allow_tf32 = False
    out = {"context": {"torch": torch.__version__, "cuda": torch.version.cuda,
                       "device": torch.cuda.get_device_name(0)}, "benchmarks": []}
    seen = set()
    for e in entries:
        m = re.match(r"^([a-z_]+)/ptk/(.+)$", e["name"])
        if not m or m.group(1) + m.group(2).split("/")[0] in seen:
            continue
        seen.add(m.group(1) + m.group(2).split("/")[0])
        family, shape = m.group(1), m.group(2).split("/")[0]  # Google Benchmark appends /min_time:…
        try:
            s = parse(shape)
        except ValueError:  # a shape without key=value pairs: no single PyTorch op
            continue
        if "model" in s or s.get("dtype", "f32") not in TORCH_DTYPES:  # decode of a model; q8_0/q4_0 weights
            continue
        cases = []
        if family == "matmul" and "dtype" in s:  # TF32 is an fp32 mode: one case for 16-bit inputs
            cases = [("torch", matmul_case(s, False))]
        elif family == "matmul":
            cases = [("torch", matmul_case(s, False)), ("torch_tf32", matmul_case(s, True))]
        elif family in ("softmax", "layernorm", "rmsnorm"):
            cases = [("torch", rows_case(family, s))]
        elif family == "attention":
            cases = [("torch", attention_case(s))]
        elif family in ("gelu", "silu"):
            cases = [("torch", activation_case(family, s))]
        for impl, case in cases:
            if case is None:
                continue
            fn, counter, amount = case
            sec = timed(fn)
            torch.backends.cuda.matmul.allow_tf32 = False
            name = f"{family}/{impl}/{shape}"
            print(f"[device_torch] {name}: {sec * 1e3:.4f} ms, {amount / sec / 1e9:.1f} {counter}", file=sys.stderr)
            out["benchmarks"].append({"name": name, "real_time": sec * 1e3, "time_unit": "ms",
                                      counter: amount / sec / 1e9})
    json.dump(out, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
