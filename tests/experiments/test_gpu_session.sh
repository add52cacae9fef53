#!/usr/bin/env bash
# @file test_gpu_session.sh
# bench/gpu_session.sh, run here on a bundle made of this build's multiverse alone: every
# step runs and is logged with its exit status in session.log; the cpu sweeps of
# bench/gpu_flow64.yaml and bench/gpu_packet64.yaml pass and their summaries (64 rows each)
# land in the archive; the session's exit status says whether any step failed (here the
# cuda sweeps fail unless a GPU is present, and the other checks lack their programs); a
# missing bundle exits 2. Usage: test_gpu_session.sh <path to multiverse>
set -u
exe="$1"
fail=0
source "$(dirname "$0")/cli_expect.sh"
src_dir="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() {  # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what"
    fail=1
  fi
}

mkdir -p "$tmp/bundle/build/experiments" "$tmp/bundle/lib" "$tmp/out"
ln -s "$(realpath "$exe")" "$tmp/bundle/build/experiments/multiverse"
echo "test-bundle" > "$tmp/bundle/COMMIT"
OUT="$tmp/out" bash "$src_dir/bench/gpu_session.sh" --bundle "$tmp/bundle" > "$tmp/session.txt" 2>&1
rc=$?
log="$tmp/out/session.log"
check "session.log written" test -s "$log"
check "the bundle's commit is logged" grep -q "built at commit test-bundle" "$log"
for name in check-tests memcheck-training flow64-cpu flow64-cuda flow64-compare flow64-solo flow64-solo-compare \
            packet64-cpu packet64-cuda packet64-compare check-sweep check-bench; do
  check "step $name logged" grep -q "^$name: exit [0-9]*, " "$log"
done
check "the flow-level cpu sweep passes" grep -q "^flow64-cpu: exit 0," "$log"
check "the packet-level cpu sweep passes" grep -q "^packet64-cpu: exit 0," "$log"
check "the session ends with its verdict" grep -q "^gpu_session: done in" "$log"
if grep -q "^[a-z0-9-]*: exit [1-9]" "$log"; then
  check "a failed step makes the session exit 1 (got $rc)" test "$rc" -eq 1
else
  check "a session whose steps all passed exits 0 (got $rc)" test "$rc" -eq 0
fi
mkdir -p "$tmp/logs"
check "the archive unpacks" tar xzf "$tmp/out/logs.tgz" -C "$tmp/logs"
for name in flow64 packet64; do
  rows=$(($(wc -l < "$tmp/logs/$name-cpu.csv" 2> /dev/null || echo 0) - 1))
  check "$name-cpu.csv holds 64 experiments (got $rows)" test "$rows" -eq 64
done
check "each gpu_check step left its report" test -s "$tmp/out/check-tests.md" -a -s "$tmp/out/check-bench.md"

expect_cmd 2 "no bundle in '$tmp/none'" bash "$src_dir/bench/gpu_session.sh" --bundle "$tmp/none"

if [ $fail -ne 0 ]; then
  echo "--- gpu_session.sh output"
  cat "$tmp/session.txt"
fi
exit $fail
