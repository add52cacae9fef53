# @file cli_expect.sh
# Sourced by the CLI test scripts, after they set exe (the multiverse binary) and fail=0.
# expect <exit code> <text> <args...>: runs multiverse with the arguments;
# expect_cmd <exit code> <text> <command...>: runs any command (a wrapper around multiverse).
# Each prints ok, or FAIL with the output and sets fail=1, unless the command exits with
# that code and prints the text (stdout or stderr).
expect_cmd() {
  local code="$1" text="$2"
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then
    echo "FAIL: $* exited $rc, expected $code"; echo "$out"; fail=1
  elif ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL: $* did not print '$text'"; echo "$out"; fail=1
  else
    echo "ok: $* -> $rc"
  fi
}
expect() {
  local code="$1" text="$2"
  shift 2
  expect_cmd "$code" "$text" "$exe" "$@"
}
