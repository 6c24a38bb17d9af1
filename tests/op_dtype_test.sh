#!/bin/bash
# ptk op --set dtype=f16|bf16 against NumPy: inputs stored as float16 .npy (f16) or uint16 .npy of bfloat16 bits
# (bf16), outputs written so, losses and log-sum-exps as float32. NumPy computes each op in float64 from the stored
# input values; ptk's output must be a neighbour of that value in the type (off by less than one of the type's
# steps), equal to it rounded to nearest even for at least 99 % of the elements (the rest: ties within fp32's own
# error), and carry the right dtype in its header. Then the refusals: an input of another dtype, an unknown dtype.
# The ops written over the element type (softmax, layernorm, rmsnorm, gelu, silu, rope, attention, cross_entropy
# and its backward, embedding and its backward here; attention_backward too) run their 16-bit kernels; matmul computes on float32 copies.
# usage: op_dtype_test.sh PTK SOURCE_DIR
set -u
ptk=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"

/usr/bin/python3 - "$ptk" "$dir" <<'PY' || fail "ptk op with 16-bit storage against NumPy"
import subprocess, sys
import numpy as np

ptk, d = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(25)

def to_bf16_bits(x):  # float32 -> bfloat16 bits, round to nearest even (finite inputs)
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)

def store(name, x, dtype):  # the stored array, and its values as float64
    path = f"{d}/{name}.npy"
    if dtype == "f16":
        s = x.astype(np.float16); np.save(path, s); return path, s.astype(np.float64)
    b = to_bf16_bits(x); np.save(path, b); return path, from_bf16_bits(b).astype(np.float64)

def read(path, dtype):
    a = np.load(path)
    if dtype == "f32":
        assert a.dtype == np.float32, f"{path}: {a.dtype}, expected float32"; return a.astype(np.float64)
    if dtype == "f16":
        assert a.dtype == np.float16, f"{path}: {a.dtype}, expected float16"; return a.astype(np.float64)
    assert a.dtype == np.uint16, f"{path}: {a.dtype}, expected uint16 (bf16 bits)"
    return from_bf16_bits(a).astype(np.float64)

def rounded(ref, dtype):  # the float64 reference rounded to the type
    if dtype == "f16": return ref.astype(np.float16).astype(np.float64)
    return from_bf16_bits(to_bf16_bits(ref.astype(np.float32))).astype(np.float64)

def step(ref, dtype):  # the type's spacing at |ref| (f16: down to its subnormals' 2^-24)
    mant = 10 if dtype == "f16" else 7
    e = np.floor(np.log2(np.maximum(np.abs(ref), 1e-30)))
    if dtype == "f16": e = np.maximum(e, -14)
    return 2.0 ** (e - mant)

def check(op, dtype, got, ref):
    diff = np.abs(got - ref)
    bad = diff >= step(ref, dtype)
    assert not bad.any(), f"{op} {dtype}: {bad.sum()} values off by a step or more, first at {np.argwhere(bad)[0]}: {got[bad][0]} vs {ref[bad][0]}"
    exact = np.mean(got == rounded(ref, dtype))
    assert exact >= 0.99, f"{op} {dtype}: only {exact:.3f} equal to the reference rounded to nearest"
    print(f"ok: {op} --set dtype={dtype}: {ref.size} values within a step, {exact:.4f} rounded as NumPy rounds")

def run(op, ins, outs, sets, dtype):
    cmd = [ptk, "op", op, "--set", f"dtype={dtype}", "--device", "host"]
    for p in ins: cmd += ["--in", p]
    for p in outs: cmd += ["--out", p]
    for s in sets: cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}: {r.stderr}"

def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True)); return e / e.sum(-1, keepdims=True)

for dtype in ("f16", "bf16"):
    xp, x = store("x", rng.uniform(-4, 4, (17, 127)).astype(np.float32), dtype)
    run("softmax", [xp], [f"{d}/y.npy"], [], dtype)
    check("softmax", dtype, read(f"{d}/y.npy", dtype), softmax(x))

    gp, g = store("g", rng.uniform(0.5, 1.5, 127).astype(np.float32), dtype)
    bp, b = store("b", rng.uniform(-1, 1, 127).astype(np.float32), dtype)
    run("layernorm", [xp, gp, bp], [f"{d}/y.npy"], [], dtype)
    mu = x.mean(-1, keepdims=True); var = ((x - mu) ** 2).mean(-1, keepdims=True)
    check("layernorm", dtype, read(f"{d}/y.npy", dtype), (x - mu) / np.sqrt(var + 1e-5) * g + b)

    run("rmsnorm", [xp, gp], [f"{d}/y.npy"], [], dtype)
    check("rmsnorm", dtype, read(f"{d}/y.npy", dtype), x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5) * g)

    run("gelu", [xp], [f"{d}/y.npy"], [], dtype)
    check("gelu", dtype, read(f"{d}/y.npy", dtype), 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))))

    run("silu", [xp], [f"{d}/y.npy"], [], dtype)
    check("silu", dtype, read(f"{d}/y.npy", dtype), x / (1 + np.exp(-x)))

    rp, r = store("r", rng.uniform(-1, 1, (2, 9, 3, 16)).astype(np.float32), dtype)  # [B,T,H,D], bthd
    run("rope", [rp], [f"{d}/y.npy"], ["pos_offset=5"], dtype)
    theta = (np.arange(9) + 5)[:, None] * 10000.0 ** (-2 * np.arange(8) / 16)  # [T, D/2]
    c, s = np.cos(theta)[None, :, None, :], np.sin(theta)[None, :, None, :]
    r1, r2 = r[..., :8], r[..., 8:]
    check("rope", dtype, read(f"{d}/y.npy", dtype), np.concatenate([r1 * c - r2 * s, r1 * s + r2 * c], -1))

    ap, a = store("a", rng.uniform(-1, 1, (9, 513)).astype(np.float32), dtype)
    wp, w = store("w", rng.uniform(-1, 1, (33, 513)).astype(np.float32), dtype)
    run("matmul", [ap, wp], [f"{d}/c.npy"], ["trans_b=1"], dtype)
    check("matmul", dtype, read(f"{d}/c.npy", dtype), a @ w.T)

    qp, q = store("q", rng.uniform(-1, 1, (1, 2, 17, 32)).astype(np.float32), dtype)
    kp, k = store("k", rng.uniform(-1, 1, (1, 2, 17, 32)).astype(np.float32), dtype)
    vp, v = store("v", rng.uniform(-1, 1, (1, 2, 17, 32)).astype(np.float32), dtype)
    run("attention", [qp, kp, vp], [f"{d}/o.npy", f"{d}/lse.npy"], ["causal=1"], dtype)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(32) + np.triu(np.full((17, 17), -np.inf), 1)
    check("attention", dtype, read(f"{d}/o.npy", dtype), softmax(s) @ v)
    lse = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
    got = read(f"{d}/lse.npy", "f32")  # float32 whatever the dtype
    assert np.max(np.abs(got - lse)) < 1e-5, f"attention lse {dtype}: {np.max(np.abs(got - lse))}"
    print(f"ok: attention --set dtype={dtype}: lse written as float32")

    lp, logits = store("logits", rng.uniform(-3, 3, (9, 50)).astype(np.float32), dtype)
    t = rng.integers(0, 50, 9).astype(np.int64); np.save(f"{d}/t.npy", t)
    run("cross_entropy", [lp, f"{d}/t.npy"], [f"{d}/loss.npy", f"{d}/losses.npy"], [], dtype)
    m = logits.max(-1); ref = np.log(np.exp(logits - m[:, None]).sum(-1)) + m - logits[np.arange(9), t]
    got = read(f"{d}/losses.npy", "f32")
    assert np.max(np.abs(got - ref)) < 1e-5, f"cross_entropy {dtype}: {np.max(np.abs(got - ref))}"
    assert abs(read(f"{d}/loss.npy", "f32") - ref.mean()) < 1e-5
    print(f"ok: cross_entropy --set dtype={dtype}: loss and losses written as float32")
    run("cross_entropy_backward", [lp, f"{d}/t.npy"], [f"{d}/dl.npy"], [], dtype)
    p = np.exp(logits - (ref + logits[np.arange(9), t])[:, None]); p[np.arange(9), t] -= 1
    check("cross_entropy_backward", dtype, read(f"{d}/dl.npy", dtype), p / 9)

    tp, table = store("table", rng.uniform(-1, 1, (11, 40)).astype(np.float32), dtype)
    ids = rng.integers(0, 11, 57).astype(np.int32); ids[:20] = 3; np.save(f"{d}/ids.npy", ids)
    run("embedding", [f"{d}/ids.npy", tp], [f"{d}/e.npy"], [], dtype)
    assert np.array_equal(read(f"{d}/e.npy", dtype), table[ids]), f"embedding {dtype}: not the stored rows"
    print(f"ok: embedding --set dtype={dtype}: the stored rows, exactly")
    gp, g = store("g", rng.uniform(-1, 1, (57, 40)).astype(np.float32), dtype)
    run("embedding_backward", [f"{d}/ids.npy", gp], [f"{d}/dt.npy"], ["vocab=11"], dtype)
    ref = np.zeros((11, 40)); np.add.at(ref, ids, g)
    check("embedding_backward", dtype, read(f"{d}/dt.npy", dtype), ref)
PY

x32="$dir/x32.npy"
/usr/bin/python3 -c "import numpy as np; np.save('$x32', np.ones((2, 3), np.float32)); np.save('$dir/xu.npy', np.ones((2, 3), np.uint16))"
expect_refusal "f32 input under dtype=f16" "dtype '<f4' (float32) is not the expected '<f2' (float16)" \
  "$ptk" op softmax --in "$x32" --set dtype=f16 --out "$dir/y1.npy"
expect_refusal "bf16 bits without dtype=bf16" "'<u2'" "$ptk" op softmax --in "$dir/xu.npy" --out "$dir/y2.npy"
expect_refusal "unknown dtype" "op softmax: dtype must be f32, bf16 or f16, got 'q8_0'" \
  "$ptk" op softmax --in "$x32" --set dtype=q8_0 --out "$dir/y3.npy"
expect_refusal "dtype twice" "op softmax: key 'dtype' is set twice" \
  "$ptk" op softmax --in "$x32" --set dtype=f16 --set dtype=bf16 --out "$dir/y4.npy"
for f in y1 y2 y3 y4; do [ ! -e "$dir/$f.npy" ] || fail "a refused run wrote $f.npy"; done
echo "op_dtype: all checks passed"
