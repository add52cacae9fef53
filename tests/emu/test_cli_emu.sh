#!/usr/bin/env bash
# @file test_cli_emu.sh
# multiverse on the emulated device (--backend cuda) against multiverse on the CPU: a sweep
# at every network fidelity and a netsim batch must give the same results, bit for bit
# (timing columns aside). Usage: test_cli_emu.sh MULTIVERSE MULTIVERSE_EMU SOURCE_DIR
set -u
cpu=$1 emu=$2 src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compare="python3 $src/scripts/compare_results.py"
fail=0
run() {  # run NAME PROGRAM ARGS...: the program must succeed
  local name=$1; shift
  if ! "$@" > "$tmp/$name.log" 2>&1; then
    echo "FAIL: $name: $*"; tail -20 "$tmp/$name.log"; fail=1; return 1
  fi
  echo "ok: $name ($(grep -m1 -o 'backend [a-z]*[^;]*' "$tmp/$name.log" || true))"
}

run sweep-cpu "$cpu" --backend cpu --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/cpu" --quiet --threads 2
run sweep-emu "$emu" --backend cuda --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/emu" --quiet --threads 2
if [ $fail -eq 0 ]; then
  $compare "$tmp/cpu/summary.csv" "$tmp/emu/summary.csv" || fail=1
  rows=$(($(wc -l < "$tmp/emu/summary.csv") - 1))
  [ "$rows" -eq 6 ] || { echo "FAIL: the sweep has $rows results, expected 6"; fail=1; }
  grep -q ",error," "$tmp/emu/summary.csv" && { echo "FAIL: an experiment failed on the emulated device"; fail=1; }
fi

run netsim-cpu "$cpu" netsim "$src/examples/netsim/incast.yaml" --backend cpu --out "$tmp/ncpu" --threads 2
run netsim-emu "$emu" netsim "$src/examples/netsim/incast.yaml" --backend cuda --out "$tmp/nemu" --threads 2
grep -q "backend cuda" "$tmp/netsim-emu.log" || { echo "FAIL: netsim --backend cuda did not say it runs on cuda"; fail=1; }
if [ $fail -eq 0 ]; then
  pairs=("$tmp/ncpu/summary.csv" "$tmp/nemu/summary.csv")
  for f in "$tmp"/ncpu/*/*.csv; do pairs+=("$f" "$tmp/nemu/${f#"$tmp"/ncpu/}"); done
  [ ${#pairs[@]} -ge 8 ] || { echo "FAIL: netsim wrote too few result files: ${pairs[*]}"; fail=1; }
  $compare "${pairs[@]}" > "$tmp/netsim-diff.log" || { cat "$tmp/netsim-diff.log"; fail=1; }
  echo "netsim: $(( ${#pairs[@]} / 2 )) result files compared"
fi
# --backend auto trusts the emulated GPU only after its self-check; a device whose launches
# fail (MV_EMU_FAIL_LAUNCH=0) is dropped for the CPU with a warning, results unchanged.
run auto-emu "$emu" --backend auto --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/auto" --threads 2
grep -q "backend cuda" "$tmp/auto-emu.log" || { echo "FAIL: auto did not pick the emulated GPU"; fail=1; }
MV_EMU_FAIL_LAUNCH=0 run auto-faulty "$emu" --backend auto --experiments "$src/tests/emu/data/sweep.yaml" \
  --out "$tmp/fallback" --threads 2
grep -q "warning: the GPU self-check failed" "$tmp/auto-faulty.log" && grep -q "backend cpu" "$tmp/auto-faulty.log" ||
  { echo "FAIL: a failing GPU self-check did not fall back to the CPU with a warning"; cat "$tmp/auto-faulty.log"; fail=1; }
[ -f "$tmp/fallback/summary.csv" ] && { $compare "$tmp/cpu/summary.csv" "$tmp/fallback/summary.csv" || fail=1; }

# A device fault on --backend cuda: exit 1, every experiment reported (the first batch with
# the CUDA error, later batches of that worker as not run), no crash.
MV_EMU_FAIL_LAUNCH=0 "$emu" --backend cuda --batch-size 2 --experiments "$src/tests/emu/data/sweep.yaml" \
  --out "$tmp/fault" --threads 2 > "$tmp/fault.log" 2>&1
rc=$?
errors=$(grep -c ",error," "$tmp/fault/summary.csv" 2>/dev/null)
not_run=$(grep -c "not run: cuda (device 0) worker 0 failed: CUDA error" "$tmp/fault.log")
if [ $rc -ne 1 ] || [ "$errors" != 6 ] || [ "$not_run" != 4 ]; then
  echo "FAIL: device fault in a sweep: exit $rc, $errors error rows (6 expected), $not_run not run (4 expected)"
  tail -8 "$tmp/fault.log"; fail=1
else
  echo "ok: a device fault ends the worker; every experiment is reported"
fi
MV_EMU_FAIL_LAUNCH=0 "$emu" netsim "$src/examples/netsim/incast.yaml" --backend cuda --out "$tmp/nfault" > "$tmp/nfault.log" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "stopped: CUDA error cudaErrorLaunchFailure" "$tmp/nfault.log"; then
  echo "FAIL: device fault in netsim: exit $rc"; cat "$tmp/nfault.log"; fail=1
else
  echo "ok: a device fault stops netsim with exit 1 and a message"
fi

[ $fail -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
