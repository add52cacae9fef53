#!/usr/bin/env bash
# @file sweep_batching.sh
# Issue #5 benchmark: N packet-level training experiments as one sweep (one multiverse
# process, batched as --batch-size says) versus the same N run one per process,
# sequentially; prints both wall times, the ratio, and whether every experiment got the
# same result both ways. The experiments differ only in their seed (ECMP and every random
# stream).
#
#   bench/sweep_batching.sh [--quick] [--payload BYTES] [--sample K] [--batch-size B] [N] [path/to/multiverse]
#
# Full job: GPT-3 13B on 128 A100s (TP 4, PP 4, DP 8, rail-optimised 100 Gb/s, DCQCN).
# --quick:   the quickstart's TP 2 / PP 2 / DP 4 split of GPT-3 13B cut to 8 layers on 16 GPUs.
# --payload: packet payload in bytes (default: the network default, 1000).
# --sample:  run only the first K of the N single-experiment processes and extrapolate the
#            per-process total as N/K times their wall time (the runs differ only in seed).
# --batch-size: passed to the sweep (default auto: batches of 8 on the CPU; 0 = one batch).
set -euo pipefail
quick=0
payload=""
sample=""
batch_size=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --payload) payload="$2"; shift 2 ;;
    --sample) sample="$2"; shift 2 ;;
    --batch-size) batch_size="$2"; shift 2 ;;
    *) break ;;
  esac
done
n="${1:-64}"
exe="${2:-$(dirname "$0")/../build/release/experiments/multiverse}"
k="${sample:-$n}"
[ "$k" -ge 1 ] && [ "$k" -le "$n" ] || { echo "sweep_batching.sh: --sample must be 1..N" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
net_extra=""
[ -n "$payload" ] && net_extra=", payload: $payload"

job() {  # job <seed list>
  if [ "$quick" -eq 1 ]; then
    cat <<YAML
base:
  name: seed
  workload: {model: {base: gpt3-13b, layers: 8}, global_batch: 32, micro_batch: 1, seq: 2048}
  parallelism: {tp: 2, pp: 2, dp: 4, sp: true, recompute: selective, distributed_optimizer: true}
  cluster: {gpu: a100-80gb, gpus: 16, gpus_per_server: 8, nics_per_server: 8}
  network: {fidelity: packet, cc: hpcc$net_extra}
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
  network: {fidelity: packet, cc: dcqcn$net_extra}
sweep:
  seed: [$1]
YAML
  fi
}

# iteration_ms of every experiment of a results folder, "name value" per line.
iterations() { awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "iteration_ms") c = i; next } { print $1, $c }' "$1/summary.csv"; }

job "$(seq -s, 1 "$n")" > "$tmp/batch.yaml"
start=$(date +%s.%N)
"$exe" --experiments "$tmp/batch.yaml" --out "$tmp/batch" --quiet --batch-size "$batch_size"
batch=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')

start=$(date +%s.%N)
for s in $(seq 1 "$k"); do
  job "$s" > "$tmp/one$s.yaml"
  "$exe" --experiments "$tmp/one$s.yaml" --out "$tmp/one$s" --quiet
done
single=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')
total=$(awk -v s="$single" -v n="$n" -v k="$k" 'BEGIN { print s * n / k }')

same=yes
for s in $(seq 1 "$k"); do
  one=$(iterations "$tmp/one$s" | awk '{ print $2 }')
  in_batch=$(iterations "$tmp/batch" | awk -v name="seed-seed$s" '$1 == name { print $2 }')
  [ "$one" = "$in_batch" ] || { same=no; echo "seed $s: alone $one ms, in the batch $in_batch ms"; }
done

printf '%d experiments, %s%s\n' "$n" \
  "$([ "$quick" -eq 1 ] && echo "quick job (GPT-3 13B, 8 layers, 16 GPUs)" || echo "GPT-3 13B on 128 GPUs")" \
  "$([ -n "$payload" ] && echo ", payload $payload B")"
printf '  %-34s %10.2f s\n' "one process (--batch-size $batch_size):" "$batch"
if [ "$k" -lt "$n" ]; then
  printf '  %-34s %10.2f s  (%d of %d runs took %.2f s; scaled by %d/%d)\n' "one per process:" "$total" "$k" "$n" "$single" "$n" "$k"
else
  printf '  %-34s %10.2f s\n' "one per process:" "$total"
fi
printf '  %-34s %10.3f\n' "one process / per-process:" "$(awk -v a="$batch" -v b="$total" 'BEGIN { print a / b }')"
printf '  %-34s %s (%d experiments compared)\n' "same iteration times:" "$same" "$k"
