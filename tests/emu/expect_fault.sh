#!/usr/bin/env bash
# @file expect_fault.sh
# expect_fault.sh PROGRAM FAULT PATTERN: `PROGRAM FAULT` must fail and print a line
# matching PATTERN (grep -E), or, with PATTERN "SIGSEGV", die of a segmentation fault:
# the emulated device's own checks (tests/emu/emu_faults.cpp).
set -uo pipefail
out=$("$1" "$2" 2>&1)
rc=$?
echo "$out" | tail -5
echo "exit code $rc"
if [ "$3" = "SIGSEGV" ]; then
  [ $rc -eq 139 ] || { echo "FAIL: '$2' did not die of SIGSEGV"; exit 1; }
else
  [ $rc -ne 0 ] || { echo "FAIL: '$2' ran to the end"; exit 1; }
  grep -Eq "$3" <<< "$out" || { echo "FAIL: no line matches '$3'"; exit 1; }
fi
echo "ok: $2 stopped the program as expected"
