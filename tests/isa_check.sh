#!/bin/bash
# What the built objects of a CPU ISA variant hold (docs/design.md, "CPU ISA variants"), read with objdump:
#   fma512 OBJECT...  the host GEMM's micro-kernel (every function of ptk::kernels::MatmulBlocked) holds 512-bit FMAs:
#                     an AVX-512 build whose tuning chose 256-bit vectors (g++ 12's -march=icelake-server,
#                     sapphirerapids, rocketlake) runs the GEMM at half the FMA width, and fails here
#   no512 OBJECT...   no instruction names a zmm or an opmask register: objects that an AVX2 CPU runs (the avx2
#                     variant's kernels, the core, the GPU tuning's units) would die of SIGILL on one
# Prints the counts it read.
set -u -o pipefail
mode=$1
shift
objects=()
for arg in "$@"; do  # ctest passes each $<TARGET_OBJECTS:...> list as one argument
  IFS=';' read -r -a some <<<"$arg"
  objects+=("${some[@]}")
done
[ ${#objects[@]} -gt 0 ] || { echo "FAIL: no objects given"; exit 1; }
set -- "${objects[@]}"
objdump=${OBJDUMP:-objdump}
disassemble() {  # the objects' code, or FAIL: a check that read nothing must not pass
  "$objdump" -d --no-show-raw-insn "$@" "${objects[@]}" || { echo "FAIL: $objdump could not read the objects"; exit 1; }
}
case "$mode" in
  fma512)
    code=$(disassemble -C) || { echo "$code" | tail -1; exit 1; }
    counts=$(awk '
      /^[0-9a-f]+ <.*>:$/ { in_gemm = index($0, "ptk::kernels::MatmulBlocked<") > 0 }
      in_gemm && /\tvfn?madd[0-9]+ps / { if ($0 ~ /%zmm/) z++; else if ($0 ~ /%ymm/) y++; else x++ }
      END { printf "%d %d %d\n", z, y, x }' <<<"$code")
    read -r zmm ymm xmm <<<"$counts"
    echo "MatmulBlocked FMAs: $zmm zmm, $ymm ymm, $xmm xmm (in $# objects)"
    [ "$zmm" -gt 0 ] || { echo "FAIL: the GEMM micro-kernel of an AVX-512 build holds no 512-bit FMA"; exit 1; }
    [ "$zmm" -ge "$ymm" ] || { echo "FAIL: the GEMM holds more 256-bit FMAs ($ymm) than 512-bit ones ($zmm)"; exit 1; }
    ;;
  no512)
    code=$(disassemble) || { echo "$code" | tail -1; exit 1; }
    wide=$(grep -cE '%zmm|%k[0-7]' <<<"$code")
    echo "instructions on zmm or opmask registers: $wide (in $# objects)"
    if [ "$wide" -ne 0 ]; then
      grep -E '%zmm|%k[0-7]|^[0-9a-f]+ <' <<<"$code" | grep -B1 -E '%zmm|%k[0-7]' | head -6
      echo "FAIL: objects meant for AVX2 CPUs hold AVX-512 instructions"
      exit 1
    fi
    ;;
  *) echo "usage: isa_check.sh fma512|no512 OBJECT..."; exit 2 ;;
esac
echo "ok: $mode"
