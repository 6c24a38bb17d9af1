#!/bin/bash
# The launcher of an install (bin/ptk; src/tools/launcher.cpp, src/ptk/rt) against the one-backend ptk of the same build:
#   - the same bits: op cases of the parity suite's kinds (odd shapes, random data) and a 50-step training run,
#     run through the launcher's cpu module and through build/<preset>/ptk, compared byte for byte;
#   - discovery and choice: `ptk info` (table and --json), auto's one line, --backend / PTK_BACKEND refusals;
#   - fallbacks, with a fake module (fake_backend.cpp) standing in for a GPU backend: a probe that aborts, hangs,
#     fails, a device that does not open, no device, no driver, another ABI version, a truncated or absent module,
#     a directory in a module's place; a usable fake is chosen by auto and gets the command line without --backend,
#     and the process that runs it has no other module mapped (probes run in child processes).
# The modules are the ones the launcher finds itself (a build tree's backends/, an install's lib/ptk/backends): a
# CUDA or HIP module among them is skipped on this GPU-less machine with the runtime's reason, and --backend NAME
# is one line, exit 2. The checks then run on copies of them (PTK_BACKEND_PATH).
# usage: backends_test.sh LAUNCHER ONE_BACKEND_PTK FAKE_MODULE SOURCE_DIR
set -u
launcher=$(realpath "$1") ptk=$(realpath "$2") fake=$(realpath "$3") src=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$src/tests/cli_checks.sh"

unset PTK_BACKEND PTK_BACKEND_PATH
"$launcher" info --json >"$dir/found.json" || fail "ptk info --json: $(cat "$dir/found.json")"
mods=$dir/modules
mkdir -p "$mods"
/usr/bin/python3 -c 'import json,sys; [print(b["module"]) for b in json.load(open(sys.argv[1]))["backends"] if b["module"]]' \
  "$dir/found.json" >"$dir/found" || fail "info --json: $(cat "$dir/found.json")"
while read -r module; do cp "$module" "$mods/"; done <"$dir/found"
cpu_module=$(grep -E '/libptk_backend_cpu(-[a-z0-9_]+)?\.so$' "$dir/found" | head -1)
[ -n "$cpu_module" ] && cpu_module=$mods/${cpu_module##*/}
[ -f "$cpu_module" ] || fail "the launcher found no cpu module: $(cat "$dir/found.json")"
echo "modules found: $(tr '\n' ' ' <"$dir/found")"
export PTK_BACKEND_PATH=$mods

# --- CPU ISA variants (libptk_backend_cpu-<variant>.so beside the chosen one) --------------------------------------
variants=()
for m in "$(dirname "$(grep -E '/libptk_backend_cpu' "$dir/found" | head -1)")"/libptk_backend_cpu-*.so; do
  [ -f "$m" ] || continue
  cp "$m" "$mods/"
  v=${m##*/libptk_backend_cpu-}; variants+=("${v%.so}")
done
if [ ${#variants[@]} -gt 0 ]; then
  chosen=$(/usr/bin/python3 -c 'import json,sys; print([b for b in json.load(open(sys.argv[1]))["backends"] if b["name"]=="cpu"][0]["variant"])' "$dir/found.json")
  [ "$cpu_module" = "$mods/libptk_backend_cpu-$chosen.so" ] || fail "info --json: cpu variant '$chosen', module $cpu_module"
  "$launcher" info >"$dir/info" 2>"$dir/err" || fail "ptk info: $(cat "$dir/err")"
  grep -q "^          variant $chosen (the best this CPU runs" "$dir/info" || fail "info: the variant line: $(cat "$dir/info")"
  grep -q "host ISA compiled for *variant $chosen, " "$dir/info" || fail "info: the module's own ISA row: $(cat "$dir/info")"
  for v in "${variants[@]}"; do
    # A variant this CPU runs is taken when PTK_CPU_VARIANT names it; one it cannot run is refused in one line.
    if PTK_CPU_VARIANT=$v "$launcher" info >"$dir/info" 2>"$dir/err"; then
      grep -q "^          variant $v (PTK_CPU_VARIANT" "$dir/info" && grep -q "host ISA compiled for *variant $v, " "$dir/info" ||
        fail "PTK_CPU_VARIANT=$v: $(cat "$dir/info")"
      PTK_CPU_VARIANT=$v PTK_BACKEND=cpu "$launcher" op --list >"$dir/out" 2>"$dir/err" && grep -q "^matmul$" "$dir/out" ||
        fail "PTK_CPU_VARIANT=$v op --list: $(cat "$dir/err")"
      echo "ok: PTK_CPU_VARIANT=$v runs its module"
    else
      expect_refusal "PTK_CPU_VARIANT=$v on a CPU without it" "ptk: --backend cpu cannot run here: ISA missing: PTK_CPU_VARIANT=$v: this CPU lacks " \
        env PTK_CPU_VARIANT=$v "$launcher" --backend cpu op --list
    fi
  done
  # A CPU without VBMI (Skylake-X, Cascade Lake): auto takes avx2 and says why; avx512 by name is refused.
  if [ "$chosen" = avx512 ] && [ -f "$mods/libptk_backend_cpu-avx2.so" ]; then
    PTK_CPU_HIDE=avx512vbmi "$launcher" info >"$dir/info" 2>"$dir/err" || fail "PTK_CPU_HIDE=avx512vbmi: $(cat "$dir/err")"
    grep -q "^          variant avx2 (the best this CPU runs; avx512 skipped, this CPU lacks avx512vbmi)" "$dir/info" ||
      fail "a CPU without VBMI: $(grep -A1 "✓ cpu" "$dir/info")"
    expect_refusal "PTK_CPU_VARIANT=avx512 on a CPU without VBMI" \
      "ptk: --backend cpu cannot run here: ISA missing: PTK_CPU_VARIANT=avx512: this CPU lacks avx512vbmi" \
      env PTK_CPU_HIDE=avx512vbmi PTK_CPU_VARIANT=avx512 "$launcher" --backend cpu op --list
    expect_refusal "a CPU without AVX2" "ptk: --backend cpu cannot run here: ISA missing: avx512 skipped, this CPU lacks " \
      env PTK_CPU_HIDE="avx2 avx512f" "$launcher" --backend cpu op --list
  fi
  expect_refusal "PTK_CPU_VARIANT=bogus" "ptk: --backend cpu cannot run here: ISA missing: PTK_CPU_VARIANT is 'bogus'; the variants are " \
    env PTK_CPU_VARIANT=bogus "$launcher" --backend cpu op --list
  other=""
  for v in "${variants[@]}"; do [ "$v" = "$chosen" ] || other=$v; done
  if [ -n "$other" ]; then  # a directory holding another variant alone
    mkdir -p "$dir/one_variant" && cp "$mods/libptk_backend_cpu-$other.so" "$dir/one_variant/"
    expect_refusal "PTK_CPU_VARIANT naming a variant not installed" "not built: PTK_CPU_VARIANT=$chosen: no libptk_backend_cpu-$chosen.so in " \
      env PTK_CPU_VARIANT=$chosen PTK_BACKEND_PATH="$dir/one_variant" "$launcher" --backend cpu op --list
    rm -rf "$dir/one_variant"
  fi
  echo "ok: CPU variants ${variants[*]}: auto takes $chosen; PTK_CPU_VARIANT chooses, refusals in one line"
fi

# --- discovery -------------------------------------------------------------------------------------
"$launcher" info >"$dir/info" 2>"$dir/err" || fail "ptk info: $(cat "$dir/err")"
grep -q "^  ✓ cpu   Kokkos " "$dir/info" || fail "info: no usable cpu row: $(cat "$dir/info")"
for gpu in cuda hip; do
  if [ -f "$mods/libptk_backend_$gpu.so" ]; then
    grep -Eq "^  ✗ $gpu +(no device|driver missing|library missing): " "$dir/info" ||
      fail "info: the $gpu module is not skipped with a reason: $(grep "$gpu" "$dir/info")"
  else
    grep -Eq "^  ✗ $gpu +not built: no libptk_backend_$gpu.so in $mods$" "$dir/info" || fail "info: $gpu row: $(cat "$dir/info")"
  fi
done
grep -q "^  auto chooses: cpu$" "$dir/info" || fail "info: auto's choice: $(cat "$dir/info")"
grep -q "^Kokkos configuration$" "$dir/info" || fail "info: the cpu backend's own report is missing"
cat "$dir/info" | head -12
"$launcher" info --json >"$dir/info.json" || fail "ptk info --json"
/usr/bin/python3 - "$dir/info.json" <<'PY' || fail "info --json: $(cat "$dir/info.json")"
import json, sys
d = json.load(open(sys.argv[1]))
names = [b["name"] for b in d["backends"]]
assert names == ["cuda", "hip", "cpu"], names
cpu = d["backends"][2]
assert cpu["available"] and cpu["skip"] == "usable" and cpu["devices"][0]["total_bytes"] > 0, cpu
assert all(not b["available"] and b["reason"] for b in d["backends"][:2]), d
assert d["chosen"] == "cpu" and d["wanted"] == "auto", d
PY
echo "ok: ptk info lists cuda, hip, cpu with ✓/✗ and reasons; --json parses; auto chooses cpu"
expect_stdout_failure "ptk info --json" "$launcher" info --json
expect_stdout_failure "ptk op --list through the launcher" env PTK_BACKEND=cpu "$launcher" op --list

# --- the same bits as the one-backend build ---------------------------------------------------------
/usr/bin/python3 - "$dir" <<'PY'
import numpy as np, sys
d = sys.argv[1]
r = np.random.default_rng(7)
f = lambda name, *shape: np.save(f"{d}/{name}.npy", r.standard_normal(shape).astype(np.float32))
f("a", 17, 33); f("b", 33, 127); f("x", 3, 513); f("g", 513); f("be", 513)
f("q", 1, 4, 17, 16); f("k", 1, 2, 17, 16); f("v", 1, 2, 17, 16); f("dy", 3, 513)
np.save(f"{d}/t.npy", r.integers(0, 513, size=3).astype(np.int32))
PY
cases=(
  "matmul --in ../a.npy --in ../b.npy --out c.npy"
  "softmax --in ../x.npy --out y.npy --set scale=0.7"
  "layernorm --in ../x.npy --in ../g.npy --in ../be.npy --out y.npy"
  "rmsnorm_backward --in ../x.npy --in ../g.npy --in ../dy.npy --out dx.npy --out dw.npy"
  "gelu --in ../x.npy --out y.npy"
  "attention --in ../q.npy --in ../k.npy --in ../v.npy --out o.npy --out lse.npy --set causal=1"
  "cross_entropy --in ../x.npy --in ../t.npy --out l.npy --out ls.npy"
)
for c in "${cases[@]}"; do
  read -r -a words <<<"$c"
  mkdir -p "$dir/one" "$dir/launcher"
  (cd "$dir/one" && "$ptk" op "${words[@]}" 2>err) || fail "ptk op ${words[0]}: $(cat "$dir/one/err")"
  (cd "$dir/launcher" && PTK_BACKEND=cpu "$launcher" op "${words[@]}" 2>err) ||
    fail "launcher op ${words[0]}: $(cat "$dir/launcher/err")"
  for f in "$dir"/one/*.npy; do
    cmp -s "$f" "$dir/launcher/${f##*/}" || fail "op ${words[0]}: ${f##*/} differs"
  done
  rm -rf "$dir/one" "$dir/launcher"
done
echo "ok: ${#cases[@]} op cases give the same bytes through the launcher as from $ptk"

train=(train --layers 2 --heads 2 --width 32 --block 32 --batch 4 --steps 50 --seed 5 --device host)
"$ptk" "${train[@]}" --save "$dir/one.safetensors" >"$dir/one.log" 2>&1 || fail "train (one): $(tail -3 "$dir/one.log")"
"$launcher" "${train[@]}" --save "$dir/launcher.safetensors" >"$dir/launcher.log" 2>"$dir/launcher.err" ||
  fail "train (launcher): $(tail -3 "$dir/launcher.err")"
# A checkpoint's header names its file and run id: the tensors (weights, then AdamW's state) must be the same bytes.
data() {  # data CHECKPOINT OUT: the data section of a safetensors file
  /usr/bin/python3 -c 'import struct,sys; r=open(sys.argv[1],"rb").read(); open(sys.argv[2],"wb").write(r[8+struct.unpack("<Q",r[:8])[0]:])' "$1" "$2" ||
    fail "cannot read $1"
}
for who in one launcher; do
  data "$dir/$who.safetensors" "$dir/$who.weights"
  state=$(ls "$dir/$who".*state-50*) || fail "no optimizer state beside $who.safetensors: $(ls "$dir")"
  data "$state" "$dir/$who.state"
done
[ -s "$dir/one.weights" ] && cmp -s "$dir/one.weights" "$dir/launcher.weights" || fail "50-step weights differ"
[ -s "$dir/one.state" ] && cmp -s "$dir/one.state" "$dir/launcher.state" || fail "50-step optimizer states differ"
losses() { sed -n 's/^step \([0-9]*\)\/50 | loss \([0-9.]*\) .*/\1 \2/p' "$1"; }
[ "$(losses "$dir/one.log")" = "$(losses "$dir/launcher.log")" ] && [ -n "$(losses "$dir/one.log")" ] || fail "the loss curves differ"
grep -q "^ptk: backend cpu (auto: cuda skipped, " "$dir/launcher.err" || fail "auto's line: $(cat "$dir/launcher.err")"
echo "ok: a 50-step training run's checkpoint is byte for byte the one-backend build's; $(head -1 "$dir/launcher.err")"

# --- explicit choices and refusals ------------------------------------------------------------------
PTK_BACKEND=cpu "$launcher" op --list >"$dir/out" 2>"$dir/err" || fail "PTK_BACKEND=cpu"
[ ! -s "$dir/err" ] || fail "an explicit choice printed: $(cat "$dir/err")"
for gpu in cuda hip; do
  if [ -f "$mods/libptk_backend_$gpu.so" ]; then why="(no device|driver missing|library missing): "; else why="not built: "; fi
  expect_refusal "--backend $gpu" "ptk: --backend $gpu cannot run here: " "$launcher" --backend $gpu op --list
  grep -Eq "cannot run here: $why" "$dir/err" || fail "--backend $gpu: $(cat "$dir/err")"
  expect_refusal "PTK_BACKEND=$gpu" "ptk: PTK_BACKEND $gpu cannot run here: " env PTK_BACKEND=$gpu "$launcher" op --list
done
expect_refusal "--backend=bogus" "ptk: --backend is 'bogus'; expected auto, cpu, cuda or hip" "$launcher" --backend=bogus info
expect_refusal "a bare --backend" "--backend needs a value" "$launcher" info --backend
expect_refusal "one-backend build asked for cuda" "this program is a one-backend build (cpu)" "$ptk" info --backend cuda
# The command's own refusals pass through with their status.
expect_refusal "a command's own refusal" "unknown op 'nope'" env PTK_BACKEND=cpu "$launcher" op nope

# --- fallbacks: a fake module in the cuda slot --------------------------------------------------------
gpu_slot=$dir/fake
mkdir -p "$gpu_slot"
cp "$cpu_module" "$gpu_slot/"
cp "$fake" "$gpu_slot/libptk_backend_cuda.so"
expect_skip() {  # expect_skip MODE NEEDLE: auto skips the fake cuda module with NEEDLE and runs the cpu one
  PTK_BACKEND_PATH=$gpu_slot PTK_FAKE_BACKEND=$1 PTK_BACKEND_PROBE_TIMEOUT=2 "$launcher" op --list >"$dir/out" 2>"$dir/err" ||
    fail "fake $1: exit $? ($(cat "$dir/err"))"
  grep -q "^matmul$" "$dir/out" || fail "fake $1: the cpu backend did not run"
  [ "$(wc -l <"$dir/err")" -eq 1 ] && grep -q -- "^ptk: backend cpu (auto: cuda skipped, $2" "$dir/err" ||
    fail "fake $1: $(cat "$dir/err")"
  echo "ok: fake $1 -> $(cat "$dir/err")"
}
expect_skip abort "init failed: the probe was killed by signal 6"
expect_skip hang "init failed: the probe did not answer within 2 s"
expect_skip fail "init failed: the module's probe failed"
expect_skip init "init failed: made to fail (init)"
expect_skip nodevice "no device: made to fail (nodevice)"
expect_skip driver "driver missing: made to fail (driver)"
expect_skip abi "library missing: backend ABI 999, this launcher speaks 1"
PTK_BACKEND_PATH=$gpu_slot PTK_FAKE_BACKEND=noisy "$launcher" info --json >"$dir/noisy.json" 2>"$dir/err" ||
  fail "a probe printing on stdout: $(cat "$dir/err")"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["backends"][0]["skip"] == "no device", d' \
  "$dir/noisy.json" || fail "a probe's output got into info --json: $(head -3 "$dir/noisy.json")"
echo "ok: a probe that prints on stdout leaves ptk info --json whole"
head -c 4096 "$cpu_module" >"$gpu_slot/libptk_backend_cuda.so"
expect_skip truncated "library missing: .*libptk_backend_cuda.so: truncated (4096 bytes;"
rm "$gpu_slot/libptk_backend_cuda.so" && mkdir "$gpu_slot/libptk_backend_cuda.so"
expect_skip directory "not built;"
rmdir "$gpu_slot/libptk_backend_cuda.so"
expect_skip deleted "not built;"
cp "$fake" "$gpu_slot/libptk_backend_cuda.so"
PTK_BACKEND_PATH=$gpu_slot PTK_FAKE_BACKEND=ok PTK_FAKE_BACKEND_NAME=hip "$launcher" op --list >"$dir/out" 2>"$dir/err"
grep -q "cuda skipped, library missing: .*is the hip backend" "$dir/err" || fail "a module under another's name: $(cat "$dir/err")"
echo "ok: a module under another backend's name -> $(cat "$dir/err")"
# A usable fake: auto chooses it, it gets the command line without --backend, and nothing else is mapped.
PTK_BACKEND_PATH=$gpu_slot PTK_FAKE_BACKEND=ok "$launcher" op --backend auto --list >"$dir/out" 2>"$dir/err" || fail "fake ok"
grep -q "^fake backend main: op --list$" "$dir/out" || fail "fake ok: $(cat "$dir/out")"
grep -q "^PTK_BACKEND=cuda$" "$dir/out" || fail "fake ok: PTK_BACKEND not set for the module: $(cat "$dir/out")"
[ "$(grep "^mapped: " "$dir/out" | sort -u)" = "mapped: libptk_backend_cuda.so" ] ||
  fail "fake ok: other modules stay mapped after their probes: $(grep "^mapped" "$dir/out" | sort -u)"
grep -q "^ptk: backend cuda (auto)$" "$dir/err" || fail "fake ok: $(cat "$dir/err")"
echo "ok: a usable fake cuda module is chosen by auto; only it is mapped in the process that runs the command"
# The memory-aware choice: a GPU whose free memory is below the run's estimate (the cpu module's, from the command
# line) is skipped; with room, it is chosen.
small=(train --layers 2 --heads 4 --width 256 --block 128 --batch 8 --steps 1 --device host)
PTK_BACKEND_PATH=$gpu_slot PTK_FAKE_BACKEND=ok PTK_FAKE_BACKEND_FREE_MB=8 "$launcher" "${small[@]}" >"$dir/out" 2>"$dir/err" ||
  fail "memory-aware: $(cat "$dir/err")"
grep -Eq "^ptk: backend cpu \(auto: cuda skipped, too little memory: device 0 has 8 MiB free, the run needs about [0-9]+ MiB; hip" \
  "$dir/err" || fail "memory-aware: $(cat "$dir/err")"
grep -q "^step 1/1 " "$dir/out" || fail "memory-aware: the cpu backend did not train: $(cat "$dir/out")"
echo "ok: memory-aware -> $(head -1 "$dir/err")"
PTK_BACKEND_PATH=$gpu_slot PTK_FAKE_BACKEND=ok PTK_FAKE_BACKEND_FREE_MB=4096 "$launcher" "${small[@]}" >"$dir/out" 2>"$dir/err"
grep -q "^fake backend main: train " "$dir/out" || fail "memory-aware with room: $(cat "$dir/out" "$dir/err")"
expect_refusal "--backend cuda without room" "ptk: --backend cuda cannot run here: too little memory: device 0 has 8 MiB" \
  env PTK_BACKEND_PATH="$gpu_slot" PTK_FAKE_BACKEND=ok PTK_FAKE_BACKEND_FREE_MB=8 "$launcher" --backend cuda "${small[@]}"

# A truncated cpu module asked for by name: one line, exit 2.
head -c 4096 "$cpu_module" >"$gpu_slot/${cpu_module##*/}"
expect_refusal "a truncated cpu module" "ptk: --backend cpu cannot run here: library missing: " \
  env PTK_BACKEND_PATH="$gpu_slot" "$launcher" --backend cpu op --list
