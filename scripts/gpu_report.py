#!/usr/bin/env python3
"""What each hot kernel of a CUDA build asks of an H100, read from the binary without a GPU.

    scripts/gpu_report.py CUDA_BINARY LAUNCHES_CSV [--out FILE.md]

CUDA_BINARY: the cuda preset's library, which instantiates every kernel once (build/cuda/src/libptk.a).
LAUNCHES_CSV: the output of ptk_gpu_launches (threads and scratch bytes per kernel under the GPU tuning).

For each kernel: registers, stack and spill (local) bytes, Kokkos' static shared memory and ptk's
requested level-0 scratch (cuobjdump --dump-resource-usage); the theoretical occupancy on an H100
(sm_90) at its launch configuration (for kernels whose block size Kokkos picks, the best over block
sizes, as Kokkos picks by occupancy); and for the GEMM, the ratio of FFMA to load instructions in
its main loop (the backward branch of the SASS with the most FFMAs). A kernel that appears in
several instantiations or launch variants is reported at its worst (most registers, most stack).
Targets (docs/design.md): GEMM main loop >= 8 FFMA per load, stack 0 in the GEMM, attention and row
kernels, occupancy >= 25 % everywhere.
"""
import argparse
import csv
import re
import subprocess
import sys

# sm_90 (H100) limits, from NVIDIA's CUDA occupancy calculator for compute capability 9.0.
SM = dict(max_warps=64, max_blocks=32, regs=65536, reg_unit=256, max_regs=255,
          smem=233472, smem_per_block_reserved=1024, smem_unit=128, warp_alloc=4)


def occupancy(threads, regs, smem_bytes):
    """Active warps / max warps for one block size."""
    warps = -(-threads // 32)
    regs_per_warp = -(-max(regs, 1) * 32 // SM["reg_unit"]) * SM["reg_unit"]
    # Registers are split over the SM's 4 sub-partitions; warps are allocated per sub-partition.
    warps_by_regs = SM["warp_alloc"] * ((SM["regs"] // SM["warp_alloc"]) // regs_per_warp)
    by_regs = warps_by_regs // warps
    smem = -(-(smem_bytes + SM["smem_per_block_reserved"]) // SM["smem_unit"]) * SM["smem_unit"]
    by_smem = SM["smem"] // smem
    blocks = min(SM["max_blocks"], SM["max_warps"] // warps, by_regs, by_smem)
    return blocks * warps / SM["max_warps"], blocks


def resource_usage(binary):
    out = subprocess.run(["cuobjdump", "--dump-resource-usage", binary], capture_output=True, text=True,
                         check=True).stdout
    kernels, name = [], None
    for line in out.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", line)
        if m and name:
            kernels.append(dict(mangled=name, reg=int(m.group(1)), stack=int(m.group(2)),
                                shared=int(m.group(3)), local=int(m.group(4))))
            name = None
    names = subprocess.run(["cu++filt"], input="\n".join(k["mangled"] for k in kernels), capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for k, n in zip(kernels, names):
        k["name"] = n
    return kernels


def main_loop_ratio(binary, mangled):
    """(FFMA, loads, ratio) of the main loop: the innermost loop (the shortest span from a backward
    branch's target to the branch) that holds at least 16 FFMAs."""
    sass = subprocess.run(["cuobjdump", "-sass", "-fun", mangled, binary], capture_output=True, text=True).stdout
    code = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            code.append((int(m.group(1), 16), m.group(2).strip()))
    if not code:
        return None
    best = None
    for at, ins in code:
        m = re.search(r"\bBRA\s+(?:`\()?(0x[0-9a-f]+)", ins)
        if not m or int(m.group(1), 16) >= at:
            continue
        body = [i for a, i in code if int(m.group(1), 16) <= a <= at]
        ffma = sum(1 for i in body if re.search(r"\bFFMA\b", i))
        loads = sum(1 for i in body if re.search(r"\b(LDS|LDG|LD|LDL|LDSM)(\.|\s)", i))
        if ffma >= 16 and (best is None or len(body) < best[2]):
            best = (ffma, loads, len(body))
    if not best:
        return None
    ffma, loads, _ = best
    return ffma, loads, (ffma / loads if loads else float("inf"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("launches")
    ap.add_argument("--out")
    args = ap.parse_args()
    kernels = [k for k in resource_usage(args.binary) if "Kokkos::Cuda" in k["name"]]
    if not kernels:
        sys.exit(f"gpu_report: no Kokkos::Cuda kernels in {args.binary} (is it a cuda-preset binary?)")
    rows, problems = [], []
    with open(args.launches) as f:
        launches = list(csv.DictReader(f))
    for launch in launches:
        symbol = "ptk::kernels::" + launch["symbol"]
        found = [k for k in kernels if symbol in k["name"]]
        if not found:
            problems.append(f"{launch['kernel']}: no kernel named {symbol} in the binary")
            continue
        worst = max(found, key=lambda k: (k["reg"], k["stack"]))
        stack = max(k["stack"] for k in found)
        local = max(k["local"] for k in found)
        threads = int(launch["threads"])
        level0, level1 = int(launch["level0_bytes"]), int(launch["level1_bytes"])
        smem = worst["shared"] + level0
        if threads:
            occ, blocks = occupancy(threads, worst["reg"], smem)
            block = str(threads)
        else:
            occ, blocks, threads = max((occupancy(t, worst["reg"], smem) + (t,) for t in range(1024, 31, -32)),
                                       key=lambda x: (x[0], x[2]))
            block = f"{threads} (Kokkos)"
        ratio = ""
        if launch["kernel"].startswith("matmul"):
            r = main_loop_ratio(args.binary, worst["mangled"])
            if r:
                ratio = f"{r[2]:.1f} ({r[0]} FFMA / {r[1]} loads)"
                if r[2] < 8:
                    problems.append(f"{launch['kernel']}: main loop {r[2]:.1f} FFMA per load (< 8)")
        if occ < 0.25:
            problems.append(f"{launch['kernel']}: occupancy {occ:.0%} (< 25 %)")
        if stack:
            problems.append(f"{launch['kernel']}: {stack} bytes of stack")
        rows.append([launch["kernel"], str(worst["reg"]), str(stack), str(local), str(worst["shared"]),
                     str(level0), str(level1), block, f"{occ:.0%} ({blocks} blocks)", ratio])
    head = ["kernel", "registers", "stack B", "local B", "static shared B", "level-0 scratch B",
            "level-1 scratch B", "threads/block", "H100 occupancy", "GEMM main loop FFMA/load"]
    table = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(table) + "\n"
    if problems:
        text += "\nBelow target:\n" + "".join(f"- {p}\n" for p in problems)
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
