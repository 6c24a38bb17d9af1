#!/usr/bin/env bash
# Scaling of data-parallel training on this machine: tokens/s of mpirun -np 2 (1 thread a rank; plain, sharded, and
# with the allreduce overlapped with the backward pass) against one process with 2 threads, at two model sizes, and
# the share of a step spent in collectives (docs/distributed.md).
#   scripts/distributed_scaling.sh [BUILD_DIR] [STEPS] [ROUNDS]   (default build/cpu, 40 steps a run, 3 rounds; the first 10
#                                                                  steps of a run are not timed)
# The runs alternate (one process, two ranks, two ranks sharded) round after round; the table gives the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu}
steps=${2:-40}
rounds=${3:-3}
ptk=$(realpath "$build/ptk")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptk-scaling.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
models=("small:--layers 4 --width 128 --heads 4 --batch 16 --block 64" "medium:--layers 4 --width 384 --heads 6 --batch 16 --block 64")
for round in $(seq "$rounds"); do
  for m in "${models[@]}"; do
    name=${m%%:*}; read -r -a flags <<<"${m#*:}"
    echo "[scaling] round $round/$rounds, $name: np=1 x 2 threads, np=2 x 1 thread: plain, sharded, overlapped" >&2
    OMP_NUM_THREADS=2 "$ptk" train "${flags[@]}" --steps "$steps" --eval-every 0 --log "$tmp/$name-np1-$round.jsonl" >/dev/null
    OMP_NUM_THREADS=1 mpirun --oversubscribe -np 2 --bind-to core "$ptk" train "${flags[@]}" --steps "$steps" --eval-every 0 \
      --log "$tmp/$name-np2-$round.jsonl" >/dev/null
    OMP_NUM_THREADS=1 mpirun --oversubscribe -np 2 --bind-to core "$ptk" train "${flags[@]}" --steps "$steps" --eval-every 0 \
      --shard-optimizer --log "$tmp/$name-np2s-$round.jsonl" >/dev/null
    OMP_NUM_THREADS=1 mpirun --oversubscribe -np 2 --bind-to core "$ptk" train "${flags[@]}" --steps "$steps" --eval-every 0 \
      --overlap-comm --bucket-mb 1 --log "$tmp/$name-np2o-$round.jsonl" >/dev/null
  done
done
python3 - "$tmp" "${models[@]}" <<'PY'
import json, statistics, sys, glob
tmp, models = sys.argv[1], sys.argv[2:]
print("| model | flags | np=1 x 2 threads tokens/s | np=2 x 1 thread tokens/s | ratio | comm share | np=2 sharded tokens/s | ratio | np=2 overlapped (1 MiB buckets) tokens/s | ratio | exposed comm share |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
def run(path):
    rows = [json.loads(l) for l in open(path)]
    steps = [r for r in rows if "step" in r and r["step"] > 10]
    ms = statistics.median(r["ms"] for r in steps)
    tps = statistics.median(r["tokens_per_s"] for r in steps)
    comm = sum(r.get("comm_ms", 0) for r in steps) / sum(r["ms"] for r in steps)
    return tps, comm
for m in models:
    name, flags = m.split(":", 1)
    res = {k: [run(p) for p in sorted(glob.glob(f"{tmp}/{name}-{k}-*.jsonl"))] for k in ("np1", "np2", "np2s", "np2o")}
    med = {k: statistics.median(t for t, _ in v) for k, v in res.items()}
    comm = {k: statistics.median(c for _, c in v) for k, v in res.items()}
    print(f"| {name} | `{flags.strip()}` | {med['np1']:.0f} | {med['np2']:.0f} | {med['np2']/med['np1']:.2f} | "
          f"{100*comm['np2']:.1f} % | {med['np2s']:.0f} | {med['np2s']/med['np1']:.2f} | {med['np2o']:.0f} | "
          f"{med['np2o']/med['np1']:.2f} | {100*comm['np2o']:.1f} % |")
PY
