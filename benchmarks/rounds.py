#!/usr/bin/env python3
"""ptk against a peer library, shape by shape, in alternating rounds: each (implementation, shape) runs
in its own ptk_bench process (so neither inherits the other's warm thread pool or spinning OpenMP
threads), ratios are taken within a round, and the table gives the median ratio, its range and the
geometric mean over the shapes. The machine is shared and noisy: report ratios, not times.

    benchmarks/rounds.py BUILD/ptk_bench [--family matmul] [--peer openblas] [--rounds 3] [SHAPE ...]
    benchmarks/rounds.py NEW/ptk_bench --peer ptk --peer-bench OLD/ptk_bench   (before / after a change)
    benchmarks/rounds.py BUILD/ptk_bench --load 2   (both sides beside a competing process of 2 busy threads)

A SHAPE is the benchmark name's shape part, e.g. M=1024,N=1024,K=1024 (default: the matmul
performance shapes of docs/benchmarks.md).
"""
import argparse
import json
import math
import multiprocessing
import statistics
import subprocess
import sys

MATMUL_SHAPES = ["M=512,N=512,K=512", "M=1024,N=1024,K=1024", "M=2048,N=2048,K=2048", "M=4096,N=2304,K=768",
                 "M=4096,N=768,K=768", "M=4096,N=3072,K=768", "M=4096,N=768,K=3072"]


def seconds(bench, family, impl, shape):
    """Real time per iteration of family/impl/shape, from a process of its own."""
    name = f"^{family}/{impl}/{shape}/"
    out = subprocess.run([bench, f"--benchmark_filter={name}", "--benchmark_format=json"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        sys.exit(f"rounds: {bench} failed for {name}: {out.stderr.strip()[-300:]}")
    runs = [b for b in json.loads(out.stdout)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    if not runs:
        sys.exit(f"rounds: no benchmark matches {name}")
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[runs[0]["time_unit"]]
    return runs[0]["real_time"] * unit


def spin():
    while True:
        pass


def start_load(threads):
    """A competing process of `threads` busy threads (processes here: Python's threads share one interpreter lock),
    running until stop_load: the same load for both sides of every round."""
    procs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(threads)]
    for p in procs:
        p.start()
    return procs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench")
    ap.add_argument("shapes", nargs="*")
    ap.add_argument("--family", default="matmul")
    ap.add_argument("--impl", default="ptk")
    ap.add_argument("--peer", default="openblas")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peer-bench", help="run the peer from this ptk_bench instead (e.g. a baseline build)")
    ap.add_argument("--load", type=int, default=0, metavar="THREADS",
                    help="run every measurement beside THREADS busy threads of another process")
    args = ap.parse_intermixed_args()
    load = start_load(args.load) if args.load > 0 else []
    shapes = args.shapes or MATMUL_SHAPES
    peer_name = args.peer + (f" of {args.peer_bench}" if args.peer_bench else "")
    ratios = {s: [] for s in shapes}
    for r in range(args.rounds):
        for shape in shapes:
            # Alternate which side runs first, so a drift in the machine's load favours neither.
            sides = [("ours", args.bench, args.impl), ("peer", args.peer_bench or args.bench, args.peer)]
            t = {side: seconds(bench, args.family, impl, shape) for side, bench, impl in (sides if r % 2 == 0 else sides[::-1])}
            ratios[shape].append(t["peer"] / t["ours"])
            print(f"round {r + 1}/{args.rounds} {shape}: {args.impl} {t['ours'] * 1e3:.2f} ms, "
                  f"{peer_name} {t['peer'] * 1e3:.2f} ms, ratio {ratios[shape][-1]:.2f}", file=sys.stderr, flush=True)
    for p in load:
        p.terminate()
    beside = f", beside {args.load} busy threads" if args.load else ""
    print(f"| {args.family} shape | {args.impl} / {peer_name} (median of {args.rounds}{beside}) | range |")
    print("| --- | --- | --- |")
    for shape in shapes:
        print(f"| {shape} | {statistics.median(ratios[shape]):.2f} | {min(ratios[shape]):.2f}–{max(ratios[shape]):.2f} |")
    geomean = math.exp(statistics.mean(math.log(statistics.median(ratios[s])) for s in shapes))
    print(f"| geometric mean | {geomean:.2f} | |")


if __name__ == "__main__":
    main()
