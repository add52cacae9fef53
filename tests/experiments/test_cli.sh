#!/usr/bin/env bash
# @file test_cli.sh
# The multiverse command line: --help and --version succeed, unknown flags fail with a
# clear message and exit code 2. Usage: test_cli.sh <path to multiverse>
set -u
exe="$1"
fail=0
expect() {  # expect <exit code> <text expected in output> <args...>
  local code="$1" text="$2"
  shift 2
  local out rc
  out=$("$exe" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then
    echo "FAIL: multiverse $* exited $rc, expected $code"; echo "$out"; fail=1
  elif ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL: multiverse $* did not print '$text'"; echo "$out"; fail=1
  else
    echo "ok: multiverse $* -> $rc"
  fi
}
expect 0 "Usage: multiverse" --help
expect 0 "multiverse 0." --version
expect 2 "--bogus" --bogus
expect 2 "multiverse --help" --threads-typo 4
exit $fail
