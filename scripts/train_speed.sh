#!/usr/bin/env bash
# Training speed, ptk against PyTorch on this machine in one session: `ptk train` (GPT-2, bytes of data/) and
# scripts/train_torch.py (the same model, data, optimizer and clipping in PyTorch) at each configuration, STEPS
# steps each, ROUNDS alternated rounds (the order swapped every round), THREADS threads each (OpenMP; PyTorch's
# pool). A step's time is the median over the steps after the first 5 (ptk: its --log; PyTorch: timed around
# forward, backward and the update); the table gives the medians over the rounds and ptk / PyTorch in tokens/s.
# usage: scripts/train_speed.sh [BUILD_DIR] [OUT_DIR] [ROUNDS] [STEPS]   (defaults build/cpu, train-speed, 3, 30)
# Configurations (layers, width, heads, block, batch): 4 128 4 128 16 and 6 384 6 256 8 (CONFIGS overrides, e.g.
# CONFIGS="4 128 4 64 16"). Installs nothing: /usr/bin/python3 needs torch (Debian: python3-torch). PyTorch's OpenBLAS
# runs with the core type of this CPU's ISA (scripts/openblas_best.py), as ptk_bench runs its peers.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu} out=${2:-train-speed} rounds=${3:-3} steps=${4:-30}
threads=${THREADS:-2}
configs=${CONFIGS:-"4 128 4 128 16;6 384 6 256 8"}
[ -x "$build/ptk" ] || { echo "train_speed: no $build/ptk (build the preset first)" >&2; exit 2; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "train_speed: /usr/bin/python3 has no torch (apt-get install python3-torch)" >&2; exit 2; }
mkdir -p "$out"
log() { printf '[train_speed] %s\n' "$*" >&2; }
median_ms() {  # the median ms of a ptk --log's steps after the first 5
  /usr/bin/python3 -c "import json, statistics, sys; r = [json.loads(l) for l in open(sys.argv[1])];
ms = [x['ms'] for x in r if 'step' in x and x['step'] > 5]; print(statistics.median(ms))" "$1"
}
IFS=';' read -r -a list <<<"$configs"
: >"$out/runs.tsv"
for r in $(seq 1 "$rounds"); do
  for c in "${list[@]}"; do
    read -r L C H T B <<<"$c"
    name="L$L C$C H$H T$T B$B"
    run_ptk() {
      rm -f "$out/ptk.jsonl"
      OMP_NUM_THREADS=$threads OMP_PROC_BIND=spread OMP_PLACES=threads "$build/ptk" train --layers "$L" --width "$C" \
        --heads "$H" --block "$T" --batch "$B" --steps "$steps" --eval-every 0 --log "$out/ptk.jsonl" --device host \
        >"$out/ptk.log" 2>&1
      printf '%s\tptk\t%s\n' "$name" "$(median_ms "$out/ptk.jsonl")" >>"$out/runs.tsv"
    }
    run_torch() {
      /usr/bin/python3 scripts/train_torch.py --layers "$L" --width "$C" --heads "$H" --block "$T" --batch "$B" \
        --steps "$steps" --threads "$threads" >"$out/torch.json"
      printf '%s\ttorch\t%s\n' "$name" "$(/usr/bin/python3 -c "import json; print(json.load(open('$out/torch.json'))['ms_per_step'])")" >>"$out/runs.tsv"
    }
    log "round $r/$rounds: $name"
    if [ $((r % 2)) -eq 1 ]; then run_ptk; run_torch; else run_torch; run_ptk; fi
    log "  $(tail -2 "$out/runs.tsv" | cut -f2,3 | tr '\t\n' '  ')"
  done
done
/usr/bin/python3 - "$out/runs.tsv" "$threads" <<'EOF' | tee "$out/train_speed.md"
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, engine, ms = line.rstrip("\n").split("\t")
    runs.setdefault(name, {}).setdefault(engine, []).append(float(ms))
print("| model (GPT-2, %s threads) | ptk ms/step | PyTorch ms/step | ptk tokens/s | PyTorch tokens/s | ptk / PyTorch (rounds) |" % sys.argv[2])
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name, e in runs.items():
    T, B = (int(w[1:]) for w in name.split()[3:5])
    p, t = statistics.median(e["ptk"]), statistics.median(e["torch"])
    each = [b / a for a, b in zip(e["ptk"], e["torch"])]
    print("| %s | %.1f | %.1f | %.0f | %.0f | %.2f (%.2f-%.2f) |" % (name, p, t, B * T / p * 1e3, B * T / t * 1e3,
                                                                t / p, min(each), max(each)))
EOF
/usr/bin/python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print('\nPyTorch %s: OpenBLAS core type %s (inherited: %s).' % (j['torch'], j['openblas_coretype'], j['openblas_coretype_inherited']))" "$out/torch.json" | tee -a "$out/train_speed.md"
