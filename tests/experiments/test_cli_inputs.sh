#!/usr/bin/env bash
# @file test_cli_inputs.sh
# Bad inputs of issue #23, each refused with exit 2 (input) or 1 (environment) and a message
# naming the file, never a crash. Usage: test_cli_inputs.sh <path to multiverse>
set -u
exe=$(realpath "$1")
fail=0
source "$(dirname "$0")/cli_expect.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'src,dst,bytes,start_us\n1,0,1000,0\n' > "$tmp/flows.csv"

# A key written twice in one mapping: yaml-cpp would keep the first without a word.
cat > "$tmp/dup_key.yaml" <<'YAML'
topology: {kind: star, nics: 4}
network:
  cc: hpcc
  cc: dcqcn
flows: flows.csv
YAML
expect 2 "dup_key.yaml:4: network.cc: duplicate key (first at line 3" netsim "$tmp/dup_key.yaml" --out "$tmp/dup_key"
cat > "$tmp/dup_sweep.yaml" <<'YAML'
base:
  workload: {model: gpt3-13b, global_batch: 16}
  parallelism: {tp: 8, dp: 2}
  parallelism: {tp: 4, dp: 4}
YAML
expect 2 "dup_sweep.yaml:4: base.parallelism: duplicate key (first at line 3" validate "$tmp/dup_sweep.yaml"
expect 2 "dup_sweep.yaml:4: base.parallelism: duplicate key" --experiments "$tmp/dup_sweep.yaml" --out "$tmp/dup_run"

exit $fail
