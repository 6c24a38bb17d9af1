"""OpenBLAS at its best in a peer's process, as ptk_bench runs it (benchmarks/bench_main.cpp): imported before torch.

Debian's PyTorch 1.13 calls a generic BLAS, OpenBLAS 0.3.21, which picks its kernels when the library loads: from
CPUID, which on a newer Xeon behind a hypervisor it does not recognise (Prescott SSE3 kernels: 67 GFLOP/s for a
1024^3 torch.matmul on 2 threads instead of 294), or from OPENBLAS_CORETYPE, which some machines preset to Haswell
on AVX-512 CPUs. So the core type follows the ISA this CPU has, whatever was inherited; `coretype()` says both.
"""
import os

_INHERITED = os.environ.get("OPENBLAS_CORETYPE")


def _loaded():
    """Whether OpenBLAS is already in this process (imported after numpy or torch: too late to choose)."""
    try:
        with open("/proc/self/maps") as f:
            return any("openblas" in line for line in f)
    except OSError:
        return False


_LATE = _loaded()


def _best():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    return "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None


_BEST = _best()
if _BEST:
    os.environ["OPENBLAS_CORETYPE"] = _BEST


def coretype():
    """{'openblas_coretype': the one in force, 'openblas_coretype_inherited': what the environment had}."""
    chosen = os.environ.get("OPENBLAS_CORETYPE", "(OpenBLAS's own choice)")
    return {"openblas_coretype": "(OpenBLAS loaded first: its own choice)" if _LATE else chosen,
            "openblas_coretype_inherited": _INHERITED or "(unset)"}
