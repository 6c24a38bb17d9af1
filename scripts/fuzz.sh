#!/usr/bin/env bash
# Fuzzes every file reader ptk has with libFuzzer (Debian's clang), under ASan and UBSan.
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [TARGET ...]     (default: every target, 10 s each)
#
# Targets (fuzz/<target>_fuzz.cpp): npy, safetensors, gguf, hf_config, tokenizer_json, gpt2_vocab, sentencepiece,
# gguf_tokenizer, bpe_encode. Each is built into build/fuzz/ from the reader's own sources (no Kokkos library;
# npy.cpp sees the headers of the cpu preset's Kokkos, which scripts/bootstrap.sh cpu installs), then runs for N
# seconds from its
# committed seeds (fuzz/corpus/<target>/, written by fuzz/make_seeds.py) and what it has found before
# (build/fuzz/corpus/<target>/, never committed). A crash, a sanitizer report, an exception other than ptk::Error,
# a refusal of more than one line or an allocation over 1 GiB fails the run; the input is saved as
# build/fuzz/crashes/<target>-*. Prints a table: executions, coverage (libFuzzer's cov and ft), corpus size, result.
# Exit 1 if any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=10
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(npy safetensors gguf hf_config tokenizer_json gpt2_vocab sentencepiece gguf_tokenizer bpe_encode)
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (Debian: apt-get install clang)" >&2; exit 2; }
kokkos=${PTK_CACHE:-$HOME/.cache/ptk}/kokkos-3.4.01/cpu/include
[ -f "$kokkos/Kokkos_Core.hpp" ] || { echo "fuzz: no Kokkos headers in $kokkos (run scripts/bootstrap.sh cpu)" >&2; exit 2; }

out=build/fuzz
mkdir -p "$out/obj" "$out/crashes"
# -gline-tables-only: file and line in a crash's stack, no variable info (as the debug preset's -g1), less to compile.
flags=(-std=c++17 -O1 -gline-tables-only -fno-omit-frame-pointer -march=native -fopenmp -fsanitize=address,undefined
       -fno-sanitize-recover=all -Isrc -Ifuzz -isystem "$kokkos")
declare -A sources=(
  [npy]="src/ptk/io/npy.cpp src/ptk/io/npy_header.cpp src/ptk/io/atomic_file.cpp"
  [safetensors]="src/ptk/io/safetensors.cpp src/ptk/io/atomic_file.cpp"
  [gguf]="src/ptk/io/gguf.cpp src/ptk/io/atomic_file.cpp"
  [hf_config]="src/ptk/nn/hf_config.cpp src/ptk/nn/decoder_config.cpp"
)
# The tokenizer library's sources and what they call in io (read_regular_file, crc32_hex, GGUF, a mapped file).
text_sources="src/ptk/io/atomic_file.cpp src/ptk/io/safetensors.cpp src/ptk/io/gguf.cpp src/ptk/io/mapped_file.cpp $(ls src/ptk/text/*.cpp | tr '\n' ' ')"
text_libs="$(pkg-config --libs libpcre2-8 sentencepiece) -lz"
for t in tokenizer_json gpt2_vocab sentencepiece gguf_tokenizer bpe_encode; do sources[$t]=$text_sources; done

build() {  # build TARGET: objects once each (ccache where present), then the fuzzer
  local t=$1 objs=() src obj
  for src in ${sources[$t]}; do
    obj=$out/obj/$(echo "$src" | tr / _).o
    # Rebuilt when its source or any header is newer (a header change reaches every object that may include it).
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find src/ptk fuzz -name '*.hpp' -newer "$obj" | head -1)" ]; then
      clang++ "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj" || return 1
    fi
    objs+=("$obj")
  done
  local libs=""
  [ "$t" = safetensors ] && libs="-lz"
  case "$t" in tokenizer_json | gpt2_vocab | sentencepiece | gguf_tokenizer | bpe_encode) libs=$text_libs ;; esac
  clang++ "${flags[@]}" -fsanitize=fuzzer "fuzz/${t}_fuzz.cpp" "${objs[@]}" $libs -o "$out/$t"
}

rows=()
failed=0
for t in "${targets[@]}"; do
  [ -n "${sources[$t]:-}" ] || { echo "fuzz: unknown target '$t'" >&2; exit 2; }
  echo "=== fuzz: $t (building)"
  if ! build "$t" >"$out/$t.build.log" 2>&1; then
    cat "$out/$t.build.log"; rows+=("| $t | — | — | — | — | build failed |"); failed=1; continue
  fi
  mkdir -p "$out/corpus/$t"
  echo "=== fuzz: $t ($seconds s)"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$out/$t" -max_total_time="$seconds" -rss_limit_mb=3072 -malloc_limit_mb=1024 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$out/crashes/$t-" "$out/corpus/$t" "fuzz/corpus/$t" >"$out/$t.log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log")
  last=$(grep -E "^#[0-9]+.*(cov|DONE)" "$out/$t.log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(ls "$out/corpus/$t" | wc -l)
  if [ $rc -eq 0 ]; then result=ok; else result="**FAILED** (exit $rc; $out/$t.log)"; failed=1; grep -m3 -E "ERROR|SUMMARY|runtime error|abort" "$out/$t.log"; fi
  rows+=("| $t | $seconds s | ${runs:-?} | ${cov:-?} / ${ft:-?} | $corp | $result |")
done
echo
echo "| target | time | executions | coverage (cov / ft) | corpus found | result |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
printf '%s\n' "${rows[@]}"
exit $failed
