#!/usr/bin/python3
"""Accuracy of ptk's row ops against float64, beside PyTorch's fp32 kernels, on hard rows.

Runs `ptk op` (through .npy files) and PyTorch fp32 on the same float32 inputs and compares
both with PyTorch in float64 on those inputs. Prints one table: max and mean error per op and
case, for ptk and for torch, and ptk's max over torch's. Errors are absolute for layernorm and
rmsnorm (outputs are O(1)) and relative for softmax (outputs are probabilities, ~1/N).

    scripts/accuracy_vs_torch.py [--ptk build/cpu/ptk] [--threads 2]

Needs numpy and torch (Debian: python3-torch).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

EPS = 1e-5


def cases():
    rng = np.random.default_rng(0)
    yield "1000+N(0,1) 64x768", (1000.0 + rng.standard_normal((64, 768))).astype(np.float32)
    yield "1000+N(0,1) 1x1048576", (1000.0 + rng.standard_normal((1, 1 << 20))).astype(np.float32)
    yield "N(0,1) 4x1048576", rng.standard_normal((4, 1 << 20)).astype(np.float32)
    yield "U(-2,2) 4096x768", rng.uniform(-2, 2, (4096, 768)).astype(np.float32)
    # 48 MiB a tensor: past RowTraits::stream_store_bytes, the forwards' streaming-store paths.
    yield "1000+N(0,1) 16384x768", (1000.0 + rng.standard_normal((16384, 768))).astype(np.float32)


def layernorm(x, dtype):
    t = torch.from_numpy(x).to(dtype)
    n = t.shape[-1]
    return torch.nn.functional.layer_norm(t, (n,), torch.ones(n, dtype=dtype), torch.zeros(n, dtype=dtype), EPS)


def rmsnorm(x, dtype):
    # torch 1.13 has no rms_norm op: the usual module form (as in Llama), in the given dtype.
    t = torch.from_numpy(x).to(dtype)
    return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS) * torch.ones(t.shape[-1], dtype=dtype)


def softmax(x, dtype):
    return torch.softmax(torch.from_numpy(x).to(dtype), dim=-1)


def run_ptk(ptk, op, x, tmp):
    n = x.shape[-1]
    paths = [os.path.join(tmp, "x.npy")]
    np.save(paths[0], x)
    if op in ("layernorm", "rmsnorm"):
        paths.append(os.path.join(tmp, "g.npy"))
        np.save(paths[-1], np.ones(n, np.float32))
    if op == "layernorm":
        paths.append(os.path.join(tmp, "b.npy"))
        np.save(paths[-1], np.zeros(n, np.float32))
    out = os.path.join(tmp, "y.npy")
    cmd = [ptk, "op", op] + sum((["--in", p] for p in paths), []) + ["--out", out, "--device", "host"]
    if op != "softmax":
        cmd += ["--set", "eps=%g" % EPS]
    subprocess.run(cmd, check=True)
    return np.load(out)


def errors(y, ref, relative):
    d = np.abs(y.astype(np.float64) - ref)
    if relative:
        d = d / np.maximum(np.abs(ref), 1e-30)
    return d.max(), d.mean()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptk", default=os.path.join(os.path.dirname(__file__), "..", "build", "cpu", "ptk"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    ops = {"layernorm": layernorm, "rmsnorm": rmsnorm, "softmax": softmax}
    print("torch %s; errors vs float64 (layernorm/rmsnorm: absolute, softmax: relative)" % torch.__version__)
    print("| op | rows | ptk max | ptk mean | torch max | torch mean | ptk/torch max | ptk/torch mean |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for label, x in cases():
            for op, fn in ops.items():
                ref = fn(x, torch.float64).numpy()
                rel = op == "softmax"
                pm, pa = errors(run_ptk(args.ptk, op, x, tmp), ref, rel)
                tm, ta = errors(fn(x, torch.float32).numpy(), ref, rel)
                print("| %s | %s | %.3g | %.3g | %.3g | %.3g | %.2f | %.2f |" % (op, label, pm, pa, tm, ta,
                                                                           pm / tm if tm else float("nan"),
                                                                           pa / ta if ta else float("nan")))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
