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
verdict() {  # verdict STATUS LOG OK_TEXT FAIL_TEXT: ok when STATUS (a check's $?) is 0, else a failure with LOG's tail
  if [ "$1" -eq 0 ]; then echo "ok: $3"; else echo "FAIL: $4"; tail -8 "$2"; fail=1; fi
}
run() {  # run NAME PROGRAM ARGS...: the program must succeed
  local name=$1; shift
  if ! "$@" > "$tmp/$name.log" 2>&1; then
    echo "FAIL: $name: $*"; tail -20 "$tmp/$name.log"; fail=1; return 1
  fi
  echo "ok: $name ($(grep -m1 -o '; backend [^;]*' "$tmp/$name.log" | cut -c3- || true))"
}

run sweep-cpu "$cpu" --backend cpu --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/cpu" --quiet --threads 2
run sweep-emu "$emu" --backend cuda --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/emu" --quiet --threads 2
if [ $fail -eq 0 ]; then
  $compare "$tmp/cpu/summary.csv" "$tmp/emu/summary.csv" || fail=1
  rows=$(($(wc -l < "$tmp/emu/summary.csv") - 1))
  [ "$rows" -eq 6 ] || { echo "FAIL: the sweep has $rows results, expected 6"; fail=1; }
  grep -q ",error," "$tmp/emu/summary.csv" && { echo "FAIL: an experiment failed on the emulated device"; fail=1; }
fi

# Context parallelism and activation offload: the CP stream and the copy streams.
run cp-cpu "$cpu" --backend cpu --experiments "$src/tests/emu/data/cp_offload.yaml" --out "$tmp/cpcpu" --quiet --threads 2
run cp-emu "$emu" --backend cuda --experiments "$src/tests/emu/data/cp_offload.yaml" --out "$tmp/cpemu" --quiet --threads 2
if [ $fail -eq 0 ]; then
  $compare "$tmp/cpcpu/summary.csv" "$tmp/cpemu/summary.csv" || fail=1
  grep -q ",error," "$tmp/cpemu/summary.csv" && { echo "FAIL: a CP/offload experiment failed on the emulated device"; fail=1; }
fi

# Network detail drained from the device between runs (the flow log, link samples, queues):
# the same files.
run detail-cpu "$cpu" --backend cpu --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/dcpu" --quiet --threads 2 \
  --network-detail
run detail-emu "$emu" --backend cuda --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/demu" --quiet --threads 2 \
  --network-detail
# Link samples too: the packet-level experiments with network.link_bin.
sed 's/  network: {fidelity: packet, cc: dcqcn}/  network: {fidelity: packet, cc: dcqcn, link_bin: 20us}/; /^sweep:/,$d' \
  "$src/tests/emu/data/sweep.yaml" > "$tmp/links.yaml"
run links-cpu "$cpu" --backend cpu --experiments "$tmp/links.yaml" --out "$tmp/lcpu" --quiet --threads 2
run links-emu "$emu" --backend cuda --experiments "$tmp/links.yaml" --out "$tmp/lemu" --quiet --threads 2
if [ $fail -eq 0 ]; then
  links=0
  for f in "$tmp"/lcpu/experiments/*/links.csv; do
    cmp -s "$f" "$tmp/lemu/${f#"$tmp/lcpu/"}" || { echo "FAIL: ${f#"$tmp/lcpu/"} differs on the emulated device"; fail=1; }
    links=$((links + 1))
  done
  [ "$links" -eq 2 ] || { echo "FAIL: $links links.csv files, expected 2"; fail=1; }
  files=0
  for f in "$tmp"/dcpu/experiments/*/flows.csv "$tmp"/dcpu/experiments/*/queues.csv "$tmp"/dcpu/experiments/*/fct.txt; do
    other="$tmp/demu/${f#"$tmp/dcpu/"}"
    cmp -s "$f" "$other" || { echo "FAIL: ${f#"$tmp/dcpu/"} differs between cpu and the emulated device"; fail=1; }
    files=$((files + 1))
  done
  [ "$files" -eq 10 ] || { echo "FAIL: $files network detail files, expected 10 (flows and fct at 2 fidelities, queues at packet level, 2 experiments each)"; fail=1; }
fi

for yaml in examples/netsim/incast.yaml tests/emu/data/incast_bins.yaml; do
  n=$(basename "$yaml" .yaml)
  run "netsim-cpu-$n" "$cpu" netsim "$src/$yaml" --backend cpu --out "$tmp/ncpu-$n" --threads 2 || continue
  run "netsim-emu-$n" "$emu" netsim "$src/$yaml" --backend cuda --out "$tmp/nemu-$n" --threads 2 || continue
  grep -q "backend cuda" "$tmp/netsim-emu-$n.log" || { echo "FAIL: netsim --backend cuda did not say it runs on cuda"; fail=1; }
  pairs=("$tmp/ncpu-$n/summary.csv" "$tmp/nemu-$n/summary.csv")
  for f in "$tmp/ncpu-$n"/*/*.csv; do pairs+=("$f" "$tmp/nemu-$n/${f#"$tmp/ncpu-$n"/}"); done
  [ ${#pairs[@]} -ge 8 ] || { echo "FAIL: netsim $n wrote too few result files: ${pairs[*]}"; fail=1; }
  $compare "${pairs[@]}" > "$tmp/netsim-diff-$n.log" || { cat "$tmp/netsim-diff-$n.log"; fail=1; }
  echo "netsim $n: $(( ${#pairs[@]} / 2 )) result files compared"
done
# Systems' rows on the grid-stride loop instead of spread over the warps: same results; a
# value other than 0 or 1 is an error naming the variable.
if MV_CUDA_SPREAD_ROWS=0 run netsim-grid-stride "$emu" netsim "$src/examples/netsim/incast.yaml" --backend cuda \
    --out "$tmp/nstride" --threads 2; then
  $compare "$tmp/ncpu-incast/summary.csv" "$tmp/nstride/summary.csv" || fail=1
fi
MV_CUDA_SPREAD_ROWS=2 "$emu" netsim "$src/examples/netsim/incast.yaml" --backend cuda --out "$tmp/nbad" > "$tmp/nbad.log" 2>&1
grep -q "MV_CUDA_SPREAD_ROWS='2': expected a whole number from 0 to 1" "$tmp/nbad.log" ||
  { echo "FAIL: MV_CUDA_SPREAD_ROWS=2 was not refused by name"; cat "$tmp/nbad.log"; fail=1; }

# netsim on a GPU of 24 MiB: its three variants' worlds (HPCC's the largest) do not fit
# 90 % of it together (they do on 28 MiB; on 20 MiB they take 3 batches), so they run in
# two batches, results unchanged;
# on 1 MiB none fits: each variant fails alone with its bytes, exit 1.
if MV_EMU_MEMORY=25165824 run netsim-small-gpu "$emu" netsim "$src/examples/netsim/incast.yaml" --backend cuda \
    --out "$tmp/nsmall" --threads 2; then
  grep -q "; 2 batches to fit the GPU's memory" "$tmp/netsim-small-gpu.log" ||
    { echo "FAIL: a 24 MiB GPU did not cut netsim in 2 batches"; head -1 "$tmp/netsim-small-gpu.log"; fail=1; }
  pairs=("$tmp/ncpu-incast/summary.csv" "$tmp/nsmall/summary.csv")
  for f in "$tmp/ncpu-incast"/*/*.csv; do pairs+=("$f" "$tmp/nsmall/${f#"$tmp/ncpu-incast"/}"); done
  $compare "${pairs[@]}" > "$tmp/netsim-small-diff.log" || { cat "$tmp/netsim-small-diff.log"; fail=1; }
fi
MV_EMU_MEMORY=1048576 "$emu" netsim "$src/examples/netsim/incast.yaml" --backend cuda --out "$tmp/ntiny" --threads 2 \
  > "$tmp/ntiny.log" 2>&1
rc=$?
too_big=$(grep -c "stopped: CUDA error cudaErrorMemoryAllocation.*while uploading a world of [0-9]* bytes" "$tmp/ntiny.log")
[ $rc -eq 1 ] && [ "$too_big" = 3 ]
verdict $? "$tmp/ntiny.log" "netsim batches cut to the GPU's memory; a variant that does not fit fails alone, with its bytes" \
  "netsim variants larger than the GPU: exit $rc, $too_big of 3 reported with their bytes"
ls "$tmp/nemu-incast_bins"/*/links.csv > /dev/null 2>&1 || { echo "FAIL: netsim with link_bin wrote no links.csv"; fail=1; }
# Device memory: a GPU of 14 MiB (90 % of it for a batch) takes the 6 experiments (13.3 MiB
# by the estimates) in two batches, results unchanged (the device world holds what the
# estimates count: its buffers share one allocation); on a GPU of 1 MiB the packet- and
# flow-level experiments fit in no batch, and each fails with the bytes it needed while the
# worker goes on with the next: the two analytical ones (a few hundred KB) run.
MV_EMU_MEMORY=14680064 run small-gpu "$emu" --backend cuda --experiments "$src/tests/emu/data/sweep.yaml" \
  --out "$tmp/small" --threads 2
grep -q "; 2 batches;" "$tmp/small-gpu.log" || { echo "FAIL: a 14 MiB GPU did not cut the sweep in 2 batches"; head -1 "$tmp/small-gpu.log"; fail=1; }
[ -f "$tmp/small/summary.csv" ] && { $compare "$tmp/cpu/summary.csv" "$tmp/small/summary.csv" || fail=1; }
MV_EMU_MEMORY=1048576 "$emu" --backend cuda --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/tiny" --threads 2 \
  > "$tmp/tiny.log" 2>&1
rc=$?
too_big=$(grep -c "does not fit the GPU's memory (CUDA error cudaErrorMemoryAllocation.*while uploading a world of [0-9]* bytes)" "$tmp/tiny.log")
ran=$(grep -c "^\[[0-9/]*\] ok .*analytical" "$tmp/tiny.log")
[ $rc -eq 1 ] && [ "$too_big" = 4 ] && [ "$ran" = 2 ] && ! grep -q "not run" "$tmp/tiny.log"
verdict $? "$tmp/tiny.log" "batches cut to the GPU's memory; one that does not fit fails alone, with its bytes" \
  "batches larger than the GPU: exit $rc, $too_big of 4 reported with their bytes, $ran of 2 analytical ran"

# --backend auto trusts the emulated GPU only after its self-check; a device whose launches
# fail (MV_EMU_FAIL_LAUNCH=0) is dropped for the CPU with a warning, results unchanged.
# Auto puts flow-level experiments on CPU workers beside the GPU, with a note.
run auto-emu "$emu" --backend auto --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/auto" --threads 2
grep -q "backend cuda (device 0), flow level on cpu (1 worker of 1 thread)" "$tmp/auto-emu.log" &&
  grep -q "note: 2 of 6 experiments to run are flow-level; they run on the CPU beside the GPU" "$tmp/auto-emu.log" ||
  { echo "FAIL: auto did not pick the emulated GPU with the flow level on the CPU"; head -3 "$tmp/auto-emu.log"; fail=1; }
[ -f "$tmp/auto/summary.csv" ] && { $compare "$tmp/cpu/summary.csv" "$tmp/auto/summary.csv" || fail=1; }
# Which ran where: the self-check takes one launch; every launch after it fails, so the
# experiments placed on the device fail and the flow-level ones, on the CPU, do not.
MV_EMU_FAIL_LAUNCH=1 "$emu" --backend auto --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/auto-place" \
  --threads 2 > "$tmp/auto-place.log" 2>&1
rc=$?
ok_flow=$(grep -c "^\[[0-9/]*\] ok .*-flow " "$tmp/auto-place.log")
device_failed=$(grep -c "^\[[0-9/]*\] error .*-\(packet\|analytical\) .*CUDA error" "$tmp/auto-place.log")
[ $rc -eq 1 ] && [ "$ok_flow" = 2 ] && [ "$device_failed" = 4 ]
verdict $? "$tmp/auto-place.log" "auto runs the flow-level experiments on the CPU and the others on the device" \
  "auto's placement: exit $rc, $ok_flow of 2 flow-level ran on the CPU, $device_failed of 4 others on the device"
# A sweep of flow-level experiments alone runs on the CPU without touching the device: no
# self-check, so even a device whose every launch fails is not noticed.
sed 's/network.fidelity: \[analytical, flow, packet\]/network.fidelity: [flow]/' "$src/tests/emu/data/sweep.yaml" \
  > "$tmp/flow_only.yaml"
MV_EMU_FAIL_LAUNCH=0 run auto-flow "$emu" --backend auto --experiments "$tmp/flow_only.yaml" --out "$tmp/auto-flow" \
  --threads 2
if grep -q "note: all 2 experiments to run are flow-level, so they run on the CPU" "$tmp/auto-flow.log" &&
    grep -q "; backend cpu" "$tmp/auto-flow.log" && ! grep -q "warning" "$tmp/auto-flow.log"; then
  echo "ok: auto runs a flow-level sweep on the CPU, with a note"
else
  echo "FAIL: a flow-level sweep under auto did not run on the CPU with a note"; head -3 "$tmp/auto-flow.log"; fail=1
fi
# --resume decides on what is left: flow-level experiments alone run on the CPU without the
# device (even one whose launches fail), the others on the device with no CPU worker beside.
for left in flow packet; do
  cp -r "$tmp/cpu" "$tmp/resume-$left"
  if [ $left = flow ]; then keep_re=",flow,"; else keep_re=",(packet|analytical),"; fi
  grep -v -E "$keep_re" "$tmp/cpu/summary.csv" > "$tmp/resume-$left/summary.csv"
  for d in "$tmp/resume-$left"/experiments/*; do
    echo ",$(basename "$d" | sed 's/.*-//')," | grep -q -E "$keep_re" && rm -rf "$d"
  done
done
MV_EMU_FAIL_LAUNCH=0 run resume-flow "$emu" --backend auto --experiments "$src/tests/emu/data/sweep.yaml" \
  --out "$tmp/resume-flow" --resume --threads 2
run resume-packet "$emu" --backend auto --experiments "$src/tests/emu/data/sweep.yaml" --out "$tmp/resume-packet" \
  --resume --threads 2
if grep -q "4 already done; backend cpu" "$tmp/resume-flow.log" && ! grep -q "warning" "$tmp/resume-flow.log" &&
    grep -q "2 already done; backend cuda (device 0); 1 batch;" "$tmp/resume-packet.log"; then
  echo "ok: --resume under auto places what is left"
  for left in flow packet; do $compare "$tmp/cpu/summary.csv" "$tmp/resume-$left/summary.csv" || fail=1; done
else
  echo "FAIL: --resume under auto did not place what is left"; head -2 "$tmp/resume-flow.log" "$tmp/resume-packet.log"
  fail=1
fi
MV_EMU_FAIL_LAUNCH=0 run auto-faulty "$emu" --backend auto --experiments "$src/tests/emu/data/sweep.yaml" \
  --out "$tmp/fallback" --threads 2
grep -q "warning: the GPU self-check failed" "$tmp/auto-faulty.log" && grep -q "; backend cpu" "$tmp/auto-faulty.log" &&
  ! grep -q "note:" "$tmp/auto-faulty.log" ||
  { echo "FAIL: a failing GPU self-check did not fall back to the CPU with a warning"; cat "$tmp/auto-faulty.log"; fail=1; }
[ -f "$tmp/fallback/summary.csv" ] && { $compare "$tmp/cpu/summary.csv" "$tmp/fallback/summary.csv" || fail=1; }

# A device fault on --backend cuda: exit 1, every experiment reported (the first batch with
# the CUDA error, later batches of that worker as not run), no crash.
MV_EMU_FAIL_LAUNCH=0 "$emu" --backend cuda --batch-size 2 --experiments "$src/tests/emu/data/sweep.yaml" \
  --out "$tmp/fault" --threads 2 > "$tmp/fault.log" 2>&1
rc=$?
errors=$(grep -c ",error," "$tmp/fault/summary.csv" 2>/dev/null)
not_run=$(grep -c "not run: cuda (device 0) worker 0 failed: CUDA error" "$tmp/fault.log")
[ $rc -eq 1 ] && [ "$errors" = 6 ] && [ "$not_run" = 4 ]
verdict $? "$tmp/fault.log" "a device fault ends the worker; every experiment is reported" \
  "device fault in a sweep: exit $rc, $errors error rows (6 expected), $not_run not run (4 expected)"
MV_EMU_FAIL_LAUNCH=0 "$emu" netsim "$src/examples/netsim/incast.yaml" --backend cuda --out "$tmp/nfault" > "$tmp/nfault.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "stopped: CUDA error cudaErrorLaunchFailure" "$tmp/nfault.log"
verdict $? "$tmp/nfault.log" "a device fault stops netsim with exit 1 and a message" \
  "device fault in netsim: exit $rc"

[ $fail -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
