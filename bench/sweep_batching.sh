#!/usr/bin/env bash
# @file sweep_batching.sh
# Issue #5 benchmark: N packet-level training experiments in one batch (one multiverse
# process) versus the same N run one per process, sequentially; prints both wall times and
# the ratio. The experiments differ only in their seed (ECMP and every random stream).
#
#   bench/sweep_batching.sh [--quick] [N] [path/to/multiverse]
#
# Full job: GPT-3 13B on 128 A100s (TP 4, PP 4, DP 8, rail-optimised 100 Gb/s, DCQCN).
# --quick:  the quickstart's TP 2 / PP 2 / DP 4 split of GPT-3 13B cut to 8 layers on 16 GPUs.
set -euo pipefail
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
n="${1:-64}"
exe="${2:-$(dirname "$0")/../build/release/experiments/multiverse}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

job() {  # job <seed list>
  if [ "$quick" -eq 1 ]; then
    cat <<YAML
base:
  name: seed
  workload: {model: {base: gpt3-13b, layers: 8}, global_batch: 32, micro_batch: 1, seq: 2048}
  parallelism: {tp: 2, pp: 2, dp: 4, sp: true, recompute: selective, distributed_optimizer: true}
  cluster: {gpu: a100-80gb, gpus: 16, gpus_per_server: 8, nics_per_server: 8}
  network: {fidelity: packet, cc: hpcc}
sweep:
  seed: [$1]
YAML
  else
    cat <<YAML
base:
  name: seed
  workload: {model: gpt3-13b, global_batch: 256, micro_batch: 1, seq: 2048}
  parallelism: {tp: 4, pp: 4, dp: 8, sp: true, recompute: selective, distributed_optimizer: true}
  cluster: {gpu: a100-80gb, gpus: 128, gpus_per_server: 8, nics_per_server: 8}
  network: {fidelity: packet, cc: dcqcn}
sweep:
  seed: [$1]
YAML
  fi
}

seeds=$(seq -s, 1 "$n")
job "$seeds" > "$tmp/batch.yaml"
start=$(date +%s.%N)
"$exe" --experiments "$tmp/batch.yaml" --out "$tmp/batch" --quiet
batch=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')

start=$(date +%s.%N)
for s in $(seq 1 "$n"); do
  job "$s" > "$tmp/one$s.yaml"
  "$exe" --experiments "$tmp/one$s.yaml" --out "$tmp/one$s" --quiet
done
single=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')

printf '%d experiments, %s\n' "$n" "$([ "$quick" -eq 1 ] && echo "quick job (GPT-3 13B, 8 layers, 16 GPUs)" || echo "GPT-3 13B on 128 GPUs")"
printf '  one batch:           %8.2f s\n' "$batch"
printf '  one per process:     %8.2f s\n' "$single"
printf '  batch / per-process: %8.3f\n' "$(awk -v a="$batch" -v b="$single" 'BEGIN { print a / b }')"
