#!/usr/bin/env bash
# @file scale.sh
# The scale table of issue #22 (bench/README.md): GPT-3 175B on 1,024 / 8,192 / 54,000 GPUs
# at analytical, flow and packet fidelity, one configuration per process (mv_bench_scale):
# build time and memory of each, then the iterations that fit this machine's time: whole
# iterations at analytical and flow fidelity, the first SIM_MS milliseconds at packet level.
# Usage: bench/scale.sh [BUILD_DIR] (default build/release); SIM_MS (default 2), MAX_GPUS
# (default 54000) and ITERATE_FLOW_MAX (largest flow-level iteration run, default 8192).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
bench="$build/bench/mv_bench_scale"
cmake --build "$build" --target mv_bench_scale > /dev/null
sim_ms="${SIM_MS:-2}"
max_gpus="${MAX_GPUS:-54000}"
flow_max="${ITERATE_FLOW_MAX:-8192}"
for config in "1024 8" "8192 8" "54000 6"; do
  read -r gpus pp <<< "$config"
  [ "$gpus" -le "$max_gpus" ] || continue
  "$bench" --gpus "$gpus" --pp "$pp" --fidelity analytical --iterate
  if [ "$gpus" -le "$flow_max" ]; then
    "$bench" --gpus "$gpus" --pp "$pp" --fidelity flow --iterate
  else
    "$bench" --gpus "$gpus" --pp "$pp" --fidelity flow
  fi
  "$bench" --gpus "$gpus" --pp "$pp" --fidelity packet --iterate --sim-ms "$sim_ms"
done
