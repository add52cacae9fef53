#!/usr/bin/env bash
# @file scale.sh
# The scale table of issue #22 (bench/README.md): GPT-3 175B on 1,024 / 8,192 / 54,000 GPUs
# at analytical, flow and packet fidelity, one configuration per process (mv_bench_scale):
# what `validate` costs (time, peak memory) and the simulation memory of each; building
# every table as a run does; a whole iteration at analytical fidelity; at 1,024 GPUs the
# first FLOW_SIM_MS (default 2) simulated milliseconds at flow level and the first
# PACKET_SIM_MS (default 0.2) at packet level (whole iterations there take hours).
# Usage: bench/scale.sh [BUILD_DIR] (default build/release); MAX_GPUS (default 54000) skips
# the larger clusters (54,000 GPUs at packet level needs about 10 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
bench="$build/bench/mv_bench_scale"
cmake --build "$build" --target mv_bench_scale > /dev/null
max_gpus="${MAX_GPUS:-54000}"
for config in "1024 8" "8192 8" "54000 6"; do
  read -r gpus pp <<< "$config"
  [ "$gpus" -le "$max_gpus" ] || continue
  "$bench" --gpus "$gpus" --pp "$pp" --fidelity analytical --iterate
  if [ "$gpus" -eq 1024 ]; then
    "$bench" --gpus "$gpus" --pp "$pp" --fidelity flow --iterate --sim-ms "${FLOW_SIM_MS:-2}"
    "$bench" --gpus "$gpus" --pp "$pp" --fidelity packet --iterate --sim-ms "${PACKET_SIM_MS:-0.2}"
  else
    "$bench" --gpus "$gpus" --pp "$pp" --fidelity flow --build
    "$bench" --gpus "$gpus" --pp "$pp" --fidelity packet --build
  fi
done
# A campaign of 1,024-GPU packet-level experiments: the resident memory one more experiment
# adds (peak RSS of COPIES copies in one batch less that of one, over COPIES - 1), with the
# switch pool its run needs so that no restart doubles it.
copies="${COPIES:-8}"
campaign() {
  "$bench" --gpus 1024 --pp 8 --fidelity packet --iterate --sim-ms "${PACKET_SIM_MS:-0.2}" --switch-pool 1048576 \
    --copies "$1" | tail -n 1
}
one=$(campaign 1)
many=$(campaign "$copies")
echo "$one"
echo "$many"
mib() { sed -E 's/.*\(([0-9]+) MiB\)$/\1/' <<< "$1"; }
echo "1024 GPUs  packet      campaign: $(( ($(mib "$many") - $(mib "$one")) / (copies - 1) )) MiB resident per experiment"
