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
