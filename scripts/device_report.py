#!/usr/bin/env python3
"""A markdown table of ptk against its peers on one device, from ptk_bench's and device_torch.py's JSON.

    device_report.py PTK_BENCH.json [MORE.json ...] > report.md   (ptk_bench's, device_torch.py's)

One row per `family/ptk/shape`: ptk's rate, each peer's (memcpy, kokkos_blas, ptk_portable: ptk's own kernel
where "ptk" is the vendor GEMM, ptk_unsplit: ptk's GEMM with K never split, torch, torch_tf32) at that shape, and
ptk / peer.
"""
import json
import sys
from collections import defaultdict


def rates(path):
    out = {}
    for e in json.load(open(path))["benchmarks"]:
        if e.get("run_type", "iteration") != "iteration":
            continue
        counter = "GFLOP/s" if "GFLOP/s" in e else "GB/s" if "GB/s" in e else None
        if counter:
            family, impl, shape = e["name"].split("/")[:3]
            out[(family, impl, shape)] = (e[counter], counter)
    return out


def main():
    r = rates(sys.argv[1])
    for path in sys.argv[2:]:  # a step that timed out leaves no or partial JSON: report what there is
        try:
            r.update(rates(path))
        except (OSError, ValueError, KeyError):
            pass
    by_shape = defaultdict(dict)
    for (family, impl, shape), v in r.items():
        by_shape[(family, shape)][impl] = v
    peers = ["memcpy", "kokkos_blas", "ptk_portable", "ptk_unsplit", "torch", "torch_tf32"]
    print("| family | shape | unit | ptk | " + " | ".join(f"{p} | ptk/{p}" for p in peers) + " |")
    print("|---" * (4 + 2 * len(peers)) + "|")
    for (family, shape), impls in sorted(by_shape.items()):
        if "ptk" not in impls:
            continue
        ptk, unit = impls["ptk"]
        cells = []
        for p in peers:
            if p in impls:
                cells += [f"{impls[p][0]:.1f}", f"{ptk / impls[p][0]:.2f}"]
            else:
                cells += ["", ""]
        print(f"| {family} | {shape} | {unit} | {ptk:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
