#!/usr/bin/env bash
# @file gpu_session.sh
# A lent GPU's whole first call, most important check first, in one command that fits the
# device tool's 10 minutes: it runs on a bundle that bench/gpu_bundle.sh built here, and
# leaves each result in OUT as soon as it exists (a call cut short keeps what finished).
#   1. gpu_check.sh query,tests: the device, and every gpu test program against the CPU
#   2. 64 packet-level training experiments (bench/gpu_packet64.yaml) and 64 flow-level ones
#      whose DP rings cross NVLink (bench/gpu_flow64.yaml), --backend cpu against cuda,
#      compared; the cuda runs write the megakernel's time per graph phase
#      (MV_CUDA_PROFILE) to OUT/profile-NAME.txt; the flow-level batch runs a second time on
#      cuda with one thread per experiment's event loop instead of a warp (MV_CUDA_TEAM_ROWS=0)
#   3. gpu_check.sh sweep: a small sweep (tests/emu/data/sweep.yaml) and the netsim incast,
#      cpu against cuda; the small sweep again on --backend auto (the flow-level experiments
#      on CPU workers beside the GPU), against the CPU
#   4. gpu_check.sh bench: packet hops/s and the batch ratio of the network benchmark
#   5. compute-sanitizer memcheck of the training test's first kernel launches (the whole
#      test under memcheck outlasts a session), with whatever time is left
# Each step has a time limit (at most 550 s in all); OUT/session.log lists every step's exit
# status and time, and the session exits 1 when a step failed.
# Usage (on the GPU machine, at the repository root):
#   bash bench/gpu_session.sh [--bundle DIR] [--out DIR]
#   --bundle  what gpu_bundle.sh packed (default gpurun)
#   --out     where results go (default $OUT, the device tool's folder, else results/gpu_session)
set -uo pipefail
here=$PWD
cd "$(dirname "$0")/.."
root=$PWD
bundle=
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "gpu_session: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# Relative paths given on the command line are the caller's; the defaults are the tree's.
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$2/$1" ;; esac; }
if [ -z "$bundle" ]; then bundle=$root/gpurun; else bundle=$(absolute "$bundle" "$here"); fi
if [ -z "$out" ]; then out=${OUT:-$root/results/gpu_session}; else out=$(absolute "$out" "$here"); fi
[ -x "$bundle/build/experiments/multiverse" ] || {
  echo "gpu_session: no bundle in '$bundle' (build one with bench/gpu_bundle.sh)" >&2
  exit 2
}
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
build="$bundle/build"
work=$(mktemp -d)
mkdir -p "$out"
log="$out/session.log"
echo "bundle $bundle, built at commit $(cat "$bundle/COMMIT" 2>/dev/null || echo unknown); tree at" \
  "$(git rev-parse HEAD 2>/dev/null || echo unknown)" | tee "$log"
start=$SECONDS
failed=0

# Copies the reports and every log written so far into OUT (the archive replaced whole, so
# a session cut short mid-copy keeps the previous one).
keep() {
  for report in "$work"/check-*/report.md; do
    [ -f "$report" ] && cp "$report" "$out/$(basename "$(dirname "$report")").md"
  done
  tar czf "$out/logs.tgz.tmp" -C "$work" . 2>/dev/null && mv -f "$out/logs.tgz.tmp" "$out/logs.tgz"
}
trap keep EXIT
# step NAME LIMIT COMMAND...: runs COMMAND under LIMIT seconds and logs its status.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$work/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || failed=1
  echo "$name: exit $rc, $((SECONDS - t0)) s (at $((SECONDS - start)) s)" | tee -a "$log"
  keep
}
# sweep NAME FILE LIMIT CUDA_LIMIT [BACKEND]: the sweep on the CPU and on BACKEND (default
# cuda; with its phase profile, limit CUDA_LIMIT), then their results compared.
sweep() {
  local name=$1 file=$2 limit=$3 cuda_limit=$4 other=${5:-cuda} quiet=--quiet
  [ "$other" = auto ] && quiet=  # its first line says where the experiments ran
  step "$name-cpu" "$limit" "$build/experiments/multiverse" --experiments "$file" --backend cpu \
    --out "$work/$name-cpu" --force --quiet --heartbeat 0
  MV_CUDA_PROFILE="$out/profile-$name.txt" step "$name-$other" "$cuda_limit" "$build/experiments/multiverse" \
    --experiments "$file" --backend "$other" --out "$work/$name-$other" --force $quiet --heartbeat 0
  grep -m1 -o "; backend [^;]*" "$work/$name-$other.log" >> "$log"
  step "$name-compare" 10 python3 scripts/compare_results.py "$work/$name-cpu/summary.csv" \
    "$work/$name-$other/summary.csv"
  tail -n 3 "$work/$name-compare.log" >> "$log"
  for backend in cpu "$other"; do  # the summaries stay; the rest would swell the logs
    cp "$work/$name-$backend/summary.csv" "$work/$name-$backend.csv" 2>/dev/null
    rm -rf "${work:?}/$name-$backend"
  done
  keep
}
# check NAME LIMIT PER_PROGRAM STEPS [ARGS...]: gpu_check.sh's STEPS on the bundle, into
# check-NAME, each of its programs under PER_PROGRAM seconds (it adds 10 to kill one), so
# that a stuck program ends inside LIMIT and does not outlive its step.
check() {
  local name=$1 limit=$2 per_program=$3 steps=$4
  shift 4
  step "check-$name" "$limit" bash bench/gpu_check.sh --build-dir "$build" --out "$work/check-$name" \
    --timeout "$per_program" --steps "$steps" "$@"
}
check tests 100 30 query,tests                       # 4 test programs
sweep packet64 bench/gpu_packet64.yaml 30 30
sweep flow64 bench/gpu_flow64.yaml 30 90              # cuda took 30-84 s on 2026-12-01, one thread per loop
# The same flow-level batch with one GPU thread per experiment's event loop, as before the
# warp teams (MV_CUDA_TEAM_ROWS=0): its time and profile beside flow64-cuda's, its results
# against the CPU's.
MV_CUDA_TEAM_ROWS=0 MV_CUDA_PROFILE="$out/profile-flow64-solo.txt" step flow64-solo 50 \
  "$build/experiments/multiverse" --experiments bench/gpu_flow64.yaml --backend cuda --out "$work/flow64-solo" \
  --force --quiet --heartbeat 0
step flow64-solo-compare 10 python3 scripts/compare_results.py "$work/flow64-cpu.csv" "$work/flow64-solo/summary.csv"
tail -n 3 "$work/flow64-solo-compare.log" >> "$log"
rm -rf "${work:?}/flow64-solo"
check sweep 90 12 sweep --sweep tests/emu/data/sweep.yaml   # 4 programs
# --backend auto on a mixed sweep: its flow-level experiments on CPU workers beside the GPU.
sweep auto tests/emu/data/sweep.yaml 20 40 auto
check bench 100 60 bench
# Last, in what is left of 550 s: the whole training test took over 420 s under memcheck.
left=$((550 - (SECONDS - start)))
if [ $left -gt 30 ]; then
  step memcheck-training "$left" compute-sanitizer --tool memcheck --launch-count 3 --print-limit 5 \
    --error-exitcode 3 "$build/tests/kernels/mv_test_cuda_training"
  tail -n 4 "$work/memcheck-training.log" | cut -c1-300 >> "$log"
fi
echo "gpu_session: done in $((SECONDS - start)) s, $([ $failed -eq 0 ] && echo "every step passed" || echo "a step failed"); results in $out" | tee -a "$log"
exit $failed
