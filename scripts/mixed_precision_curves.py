#!/usr/bin/env python3
"""Mixed-precision training against fp32: the same run (same seed, same batches) with `ptk train --dtype f32`,
`bf16` and `f16`, and a Markdown table of how far each 16-bit loss curve strays from the fp32 one, against the
tolerance docs/tolerances.md derives ("Mixed-precision training"): every step's loss within sigma_b of fp32's on
the same batch, sigma_b being the batch-to-batch noise of the loss that the fp32 run itself shows (E|l_s - l_s-1|
= 2 sigma_b / sqrt(pi) for two independent batch means, over the steps after the first third); and the final
validation loss within 1 %. Progress goes to stderr; docs/benchmarks.md keeps the runs.

usage: mixed_precision_curves.py PTK [--steps N] [-- extra ptk train options...]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

DTYPES = ["f32", "bf16", "f16"]


def train(ptk, dtype, steps, extra, log):
    cmd = [ptk, "train", "--steps", str(steps), "--dtype", dtype, "--log", log, "--eval-every", str(steps)] + extra
    print(f"[mixed_precision_curves] {' '.join(cmd)}", file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mixed_precision_curves: --dtype {dtype} failed ({r.returncode}): {r.stderr.strip()}")
    steps_by_number = {}
    for line in open(log):
        record = json.loads(line)
        if "step" in record:
            steps_by_number[record["step"]] = record
    return steps_by_number


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ptk")
    ap.add_argument("--steps", type=int, default=300)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)  # what follows -- goes to ptk train as it is
    args = ap.parse_args(argv[:cut])
    args.extra = argv[cut + 1:]
    with tempfile.TemporaryDirectory() as tmp:
        runs = {d: train(args.ptk, d, args.steps, args.extra, os.path.join(tmp, d + ".jsonl")) for d in DTYPES}
    ref = runs["f32"]
    steps = sorted(ref)
    settled = [s for s in steps if s > args.steps // 3 and s - 1 in ref]
    sigma_b = statistics.mean(abs(ref[s]["loss"] - ref[s - 1]["loss"]) for s in settled) * math.sqrt(math.pi) / 2
    ref_val = ref[steps[-1]]["val_loss"]
    ms = {d: statistics.median(r[s]["ms"] for s in steps[1:]) for d, r in runs.items()}
    print(f"sigma_b (batch-to-batch noise of the fp32 loss, steps > {args.steps // 3}): {sigma_b:.4f}\n")
    print("| dtype | max \\|Δ loss\\| | mean \\|Δ loss\\| | max / σ_b | steps skipped | val loss | vs fp32 | ms/step (median) | time vs fp32 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in DTYPES:
        r = runs[d]
        diffs = [abs(r[s]["loss"] - ref[s]["loss"]) for s in steps]
        val = r[steps[-1]]["val_loss"]
        skipped = sum(1 for s in steps if r[s].get("skipped"))
        print(f"| {d} | {max(diffs):.4f} | {statistics.mean(diffs):.4f} | {max(diffs) / sigma_b:.2f} | {skipped} | "
              f"{val:.4f} | {100 * (val - ref_val) / ref_val:+.2f} % | {ms[d]:.1f} | {ms[d] / ms['f32']:.2f} |")
    bad = [d for d in DTYPES if max(abs(runs[d][s]["loss"] - ref[s]["loss"]) for s in steps) > sigma_b or
           abs(runs[d][steps[-1]]["val_loss"] - ref_val) > 0.01 * ref_val]
    if bad:
        print(f"\noutside the tolerance: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
