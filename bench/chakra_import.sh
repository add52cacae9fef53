#!/usr/bin/env bash
# @file chakra_import.sh
# What importing a job as Chakra traces costs (docs/chakra.md): GPT-3 13B on 128 H100s
# (TP 8, PP 4, DP 4, ZeRO-1, analytical) run from its generated program, from its exported
# traces as stage programs, and from the same traces as per-rank programs with ASTRA-sim's
# group file. Prints the iteration (which must agree), the simulation memory `validate`
# counts, and the wall time and peak RSS of each run.
# Usage: bench/chakra_import.sh <path to multiverse>
set -euo pipefail
exe=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > generated.yaml <<'YAML'
base:
  name: "g13b"
  workload: {model: gpt3-13b, global_batch: 512, seq: 2048}
  parallelism: {tp: 8, pp: 4, dp: 4, distributed_optimizer: true}
  cluster: {gpu: h100, gpus: 128, gpus_per_server: 8, nics_per_server: 8}
  network: {fidelity: analytical}
YAML
"$exe" export-chakra generated.yaml --out ranks > /dev/null
"$exe" export-chakra generated.yaml --out stages --layout stages > /dev/null
sed 's#seq: 2048}#seq: 2048, chakra: stages/g13b/job, chakra_layout: stages}#' generated.yaml > stages.yaml
sed 's#seq: 2048}#seq: 2048, chakra: ranks/g13b/job, chakra_groups: ranks/g13b/groups.json}#' generated.yaml > ranks.yaml
echo "traces: $(du -sh ranks/g13b | cut -f1) for 128 ranks"
printf '%-10s %14s %22s %8s %10s\n' source iteration_ms simulation_memory wall_s peak_rss
for source in generated stages ranks; do
  memory=$("$exe" validate "$source.yaml" | sed -n 's/^simulation memory: \(.*\) in all.*/\1/p')
  # Wall time and the child's peak RSS (KiB), measured by Python (no GNU time needed).
  read -r wall rss < <(python3 -c 'import resource, subprocess, sys, time
t = time.perf_counter(); subprocess.run(sys.argv[1:], check=True)
print(f"{time.perf_counter() - t:.2f}", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
    "$exe" --experiments "$source.yaml" --out "out_$source" --quiet)
  iteration=$(cut -d, -f4 "out_$source/summary.csv" | tail -1)
  printf '%-10s %14s %22s %8s %7d MB\n' "$source" "$iteration" "$memory" "$wall" $((rss / 1024))
done
