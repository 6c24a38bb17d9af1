# Shared by the command-line tests (sourced; they set $dir, a scratch directory).
fail() { echo "FAIL: $*"; exit 1; }

# expect_refusal WHAT NEEDLE CMD...: CMD exits 2 with exactly one line on stderr that contains NEEDLE and
# no full-range bound (DBL_MAX), and it refused before training (no "step" line on stdout).
expect_refusal() {
  local what=$1 needle=$2; shift 2
  "$@" >"$dir/out" 2>"$dir/err"; local rc=$?
  [ $rc -eq 2 ] || fail "$what: exit status $rc, expected 2 ($(head -3 "$dir/err"))"
  [ "$(wc -l <"$dir/err")" -eq 1 ] || fail "$what: expected one line on stderr, got: $(cat "$dir/err")"
  grep -q -- "$needle" "$dir/err" || fail "$what: '$needle' not in: $(cat "$dir/err")"
  ! grep -q "e+308\|1.79769" "$dir/err" || fail "$what: DBL_MAX in the message"
  ! grep -q "^step " "$dir/out" || fail "$what: refused only after training"
  echo "ok: $what -> $(cat "$dir/err")"
}

# edit_checkpoint SRC DST EDIT [AFTER]: DST is the safetensors file SRC with the Python statements EDIT applied to h
# (its JSON header, a dict) and data (its data section, a bytearray), then both CRC-32s written again as ptk writes
# them (io/safetensors.hpp), so that the edit alone is wrong; AFTER then runs on h (m is its __metadata__), unstamped.
edit_checkpoint() {
  /usr/bin/python3 - "$@" <<'PY'
import json, struct, sys, zlib
src, dst, edit = sys.argv[1:4]
after = sys.argv[4] if len(sys.argv) > 4 else ""
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
exec(edit)
dump = lambda x: json.dumps(x, separators=(",", ":"), sort_keys=True)
m = h["__metadata__"]
m.pop("header_crc32", None)
m["crc32"] = "%08x" % zlib.crc32(bytes(data))
m["header_crc32"] = "%08x" % zlib.crc32(dump(h).encode())
exec(after)
text = dump(h).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))
PY
}

# expect_stdout_failure WHAT CMD...: CMD, its standard output on /dev/full (every write fails), exits 2 with one line on
# stderr that says so, instead of 0.
expect_stdout_failure() {
  local what=$1; shift
  "$@" >/dev/full 2>"$dir/err"; local rc=$?
  [ $rc -eq 2 ] || fail "$what >/dev/full: exit status $rc, expected 2 ($(head -3 "$dir/err"))"
  [ "$(wc -l <"$dir/err")" -eq 1 ] || fail "$what >/dev/full: expected one line on stderr, got: $(cat "$dir/err")"
  grep -q "cannot write to standard output" "$dir/err" || fail "$what >/dev/full: $(cat "$dir/err")"
  echo "ok: $what >/dev/full -> $(cat "$dir/err")"
}
