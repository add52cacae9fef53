#!/usr/bin/env bash
# @file gpu_check.sh
# The whole check of the CUDA backend on a machine with a GPU, in one command; writes a
# report (report.md) and every log beside it. Steps, in order (each can be chosen alone):
#   query     the device (nvidia-smi), the toolkit, the driver
#   build     a Release build for this GPU's architecture only, -lineinfo -Xptxas=-v
#             (registers and spills per kernel end up in build.log and the report)
#   tests     the gpu-labelled test programs, each under a time limit (a stuck grid
#             barrier fails instead of hanging)
#   sanitize  compute-sanitizer memcheck and synccheck on each gpu test program
#   sweep     a sweep (examples/quickstart.yaml) and a netsim batch (examples/netsim/
#             incast.yaml) on --backend cpu and cuda; every results CSV compared without
#             its timing columns (scripts/compare_results.py): they must be identical
#   bench     mv_bench_network --backend cuda: packet-hops/s of the k=8 fat-tree at 1 to
#             1,024 experiments, the time per experiment at 64 against one alone, and the
#             megakernel's time per graph phase at 64 (MV_CUDA_PROFILE, docs/engine.md),
#             and 1 and 64 again with rows on the grid-stride loop (MV_CUDA_SPREAD_ROWS=0)
#   profile   ncu on the megakernel (one launch, full set) and nsys, when those tools exist
#
# Usage: bench/gpu_check.sh [--out DIR] [--build-dir DIR] [--steps a,b,...] [--timeout S]
#                           [--sweep FILE]
#   --out        where the report and logs go (default results/gpu_check)
#   --build-dir  a build tree to use; with the step 'build' it is (re)built there (default
#                build/gpu-check); without it, its programs are used as they are (e.g. a
#                tree built on another machine for this architecture)
#   --steps      comma-separated subset of the steps above (default: all of them)
#   --timeout    seconds allowed to each program run (default 900)
#   --sweep      the sweep of the step 'sweep' (default examples/quickstart.yaml)
# Exit code: 0 when every step that ran passed, 1 otherwise (the report says which).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

out=results/gpu_check
build=build/gpu-check
steps=query,build,tests,sanitize,sweep,bench,profile
limit=900
sweep_file=examples/quickstart.yaml
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --sweep) sweep_file=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$limit" in ''|*[!0-9]*) echo "gpu_check: --timeout must be a whole number of seconds" >&2; exit 2 ;; esac
for s in ${steps//,/ }; do
  case "$s" in query|build|tests|sanitize|sweep|bench|profile) ;;
    *) echo "gpu_check: unknown step '$s' (query, build, tests, sanitize, sweep, bench, profile)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
report=$out/report.md
failed=0
gpu_tests=(tests/kernels/mv_test_kernels_cuda tests/kernels/mv_test_cuda_network tests/kernels/mv_test_cuda_flow
           tests/kernels/mv_test_cuda_training)

wants() { [[ ",$steps," == *",$1,"* ]]; }
say() { echo "$@" | tee -a "$report"; }
verdict() {  # verdict NAME EXIT_CODE: one report line, counts failures
  if [ "$2" -eq 0 ]; then say "- $1: passed"; else say "- $1: FAILED (exit $2)"; failed=1; fi
}
# run NAME CMD...: runs CMD under the time limit, its output in NAME.log; the exit code.
run() {
  local name=$1; shift
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 124 ] && echo "gpu_check: killed after $limit s" >> "$out/$name.log"
  echo "$name: exit $rc in $((SECONDS - start)) s" >> "$out/times.log"
  return $rc
}
excerpt() { echo '```'; tail -n "${2:-15}" "$1"; echo '```'; }

: > "$report"
: > "$out/times.log"
say "# Multiverse GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say

if ! command -v nvidia-smi > /dev/null || ! nvidia-smi > /dev/null 2>&1; then
  say "No usable GPU (nvidia-smi missing or failing): nothing to check."
  exit 1
fi
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')

if wants query; then
  say "## Device"
  { echo '```'
    nvidia-smi --query-gpu=name,compute_cap,memory.total,mig.mode.current,driver_version --format=csv
    nvcc --version 2>/dev/null | tail -2
    echo '```'; } | tee -a "$report"
fi

if wants build; then
  say "## Build (sm_$arch)"
  bash scripts/install-deps.sh > "$out/deps.log" 2>&1 || say "- install-deps failed (no package registry?): building with what is installed"
  run configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMV_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" "-DCMAKE_CUDA_FLAGS=-lineinfo -Xptxas=-v"
  rc=$?
  if [ $rc -eq 0 ]; then run build cmake --build "$build" --parallel "$(nproc)"; rc=$?; fi
  verdict "configure and build" $rc
fi

# The build log of this run, or ptxas.log left in a tree built elsewhere.
log=$out/build.log; [ -f "$log" ] || log=$build/ptxas.log
if [ -f "$log" ]; then
  say "Registers, stack and spills of each kernel (ptxas; bench/ptxas_table.py):"
  { echo; python3 bench/ptxas_table.py "$log" || true; echo; } | tee -a "$report"
fi

bin() { echo "$build/$1"; }

if wants tests; then
  say "## gpu tests (limit $limit s each)"
  for t in "${gpu_tests[@]}"; do
    name=test-$(basename "$t")
    run "$name" "$(bin "$t")"
    rc=$?
    verdict "$(basename "$t")" $rc
    excerpt "$out/$name.log" 6 >> "$report"
  done
fi

if wants sanitize; then
  if command -v compute-sanitizer > /dev/null; then
    say "## compute-sanitizer (limit $limit s each)"
    for tool in memcheck synccheck; do
      for t in "${gpu_tests[@]}"; do
        name=$tool-$(basename "$t")
        run "$name" compute-sanitizer --tool "$tool" --error-exitcode 3 "$(bin "$t")"
        rc=$?
        verdict "$tool $(basename "$t")" $rc
        excerpt "$out/$name.log" 4 >> "$report"
      done
    done
  else
    say "## compute-sanitizer: not installed, skipped"
  fi
fi

if wants sweep; then
  say "## $sweep_file and examples/netsim/incast.yaml, cpu against cuda"
  mv=$(bin experiments/multiverse)
  run sweep-cpu "$mv" --backend cpu --experiments "$sweep_file" --out "$out/sweep-cpu" --force --quiet
  rc_cpu=$?
  run sweep-cuda "$mv" --backend cuda --experiments "$sweep_file" --out "$out/sweep-cuda" --force --quiet
  rc_cuda=$?
  verdict "sweep on cpu" $rc_cpu
  verdict "sweep on cuda" $rc_cuda
  if [ $rc_cpu -eq 0 ] && [ $rc_cuda -eq 0 ]; then
    python3 scripts/compare_results.py "$out/sweep-cpu/summary.csv" "$out/sweep-cuda/summary.csv" > "$out/sweep-diff.log" 2>&1
    verdict "summaries identical (timing columns aside)" $?
    excerpt "$out/sweep-diff.log" 20 >> "$report"
    say "wall s, cpu then cuda: $(grep -E '^sweep-(cpu|cuda):' "$out/times.log" | sed 's/.* in //' | paste -sd' ')"
  fi
  rm -rf "$out/netsim-cpu" "$out/netsim-cuda"
  run netsim-cpu "$mv" netsim examples/netsim/incast.yaml --backend cpu --out "$out/netsim-cpu" --quiet
  rc_cpu=$?
  run netsim-cuda "$mv" netsim examples/netsim/incast.yaml --backend cuda --out "$out/netsim-cuda" --quiet
  rc_cuda=$?
  verdict "netsim on cpu" $rc_cpu
  verdict "netsim on cuda" $rc_cuda
  if [ $rc_cpu -eq 0 ] && [ $rc_cuda -eq 0 ]; then
    pairs=()
    for f in "$out"/netsim-cpu/summary.csv "$out"/netsim-cpu/*/*.csv; do pairs+=("$f" "$out/netsim-cuda/${f#"$out"/netsim-cpu/}"); done
    python3 scripts/compare_results.py "${pairs[@]}" > "$out/netsim-diff.log" 2>&1
    verdict "netsim results identical (timing columns aside), $(( ${#pairs[@]} / 2 )) files" $?
    excerpt "$out/netsim-diff.log" 10 >> "$report"
  fi
fi

if wants bench; then
  say "## network benchmark on the GPU (k=8 fat-tree, DCQCN)"
  MV_CUDA_PROFILE="$out/profile-permutation-64.txt" run bench-cuda-64 "$(bin bench/mv_bench_network)" --backend cuda --only permutation --batches 64
  verdict "per-phase GPU profile of the permutation at 64 experiments (MV_CUDA_PROFILE)" $?
  excerpt "$out/profile-permutation-64.txt" 30 >> "$report"
  run bench-cuda "$(bin bench/mv_bench_network)" --backend cuda --only permutation --batches 1 64 256 1024
  rc=$?
  verdict "mv_bench_network --backend cuda --only permutation --batches 1 64 256 1024" $rc
  excerpt "$out/bench-cuda.log" 9 >> "$report"
  MV_CUDA_SPREAD_ROWS=0 run bench-cuda-grid-stride "$(bin bench/mv_bench_network)" --backend cuda --only permutation \
    --batches 1 64
  verdict "the same at 1 and 64 with systems' rows on the grid-stride loop (MV_CUDA_SPREAD_ROWS=0)" $?
  excerpt "$out/bench-cuda-grid-stride.log" 4 >> "$report"
  run bench-cuda-a2a "$(bin bench/mv_bench_network)" --backend cuda --only all-to-all --batches 1 64
  rc=$?
  verdict "mv_bench_network --backend cuda --only all-to-all --batches 1 64" $rc
  excerpt "$out/bench-cuda-a2a.log" 6 >> "$report"
fi

if wants profile; then
  say "## profiles"
  if command -v ncu > /dev/null; then
    run ncu ncu -k regex:megakernel -c 1 --set full "$(bin kernels/mv_test_cuda_network)"
    verdict "ncu (megakernel of the network test, one launch)" $?
    { echo '```'
      grep -E "Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Block Limit|Local Memory Spilling|Duration|Waves Per SM|Grid Size" "$out/ncu.log" | head -20
      echo '```'; } >> "$report"
  else
    say "- ncu: not installed, skipped"
  fi
  if command -v nsys > /dev/null; then
    run nsys nsys profile -t cuda,nvtx -o "$out/quickstart" --force-overwrite true \
      "$(bin experiments/multiverse)" --backend cuda --experiments examples/quickstart.yaml --out "$out/sweep-nsys" --force --quiet
    rc=$?
    verdict "nsys profile of the quickstart on cuda" $rc
    if [ $rc -eq 0 ]; then
      nsys stats --report nvtx_sum,cuda_api_sum,cuda_gpu_kern_sum "$out/quickstart.nsys-rep" > "$out/nsys-stats.log" 2>&1
      excerpt "$out/nsys-stats.log" 40 >> "$report"
    fi
  else
    say "- nsys: not installed, skipped"
  fi
fi

say
say "Step times:"
excerpt "$out/times.log" 40 >> "$report"
[ $failed -eq 0 ] && say "gpu_check: every step that ran passed" || say "gpu_check: some steps FAILED (see above and the logs in $out)"
cd "$root"
exit $failed
