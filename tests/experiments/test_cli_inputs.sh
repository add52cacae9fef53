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

# Names become folder names: a netsim experiment named like a path stays inside --out, and
# the file's name (the default results/<name>) inside results/.
cat > "$tmp/escape.yaml" <<YAML
name: ../../top
topology: {kind: star, nics: 4}
flows: flows.csv
experiments:
  - {name: ../../x}
  - {name: $tmp/abs}
YAML
expect 0 "2 experiment(s)" netsim "$tmp/escape.yaml" --out "$tmp/a/b" --threads 1
[ -s "$tmp/a/b/x/flows.csv" ] || { echo "FAIL: ../../x was not written as $tmp/a/b/x"; fail=1; }
[ ! -e "$tmp/x" ] && [ ! -e "$tmp/abs" ] || { echo "FAIL: netsim wrote outside --out"; fail=1; }
[ "$(find "$tmp/a/b" -name flows.csv | wc -l)" -eq 2 ] || { echo "FAIL: the absolute name is not under --out"; fail=1; }
mkdir -p "$tmp/cwd/sub"
expect_cmd 0 "results in results/top" env -C "$tmp/cwd/sub" "$exe" netsim "$tmp/escape.yaml" --threads 1
[ ! -e "$tmp/cwd/top" ] || { echo "FAIL: netsim's default folder left results/"; fail=1; }
cat > "$tmp/clash.yaml" <<'YAML'
topology: {kind: star, nics: 4}
flows: flows.csv
experiments:
  - {name: a/b}
  - {name: a_b}
YAML
expect 2 "clash.yaml:5: experiments[1].name: duplicate experiment name 'a_b'" netsim "$tmp/clash.yaml" --out "$tmp/clash"

# Two runs into one folder: the second is refused (exit 1) while the first holds the lock.
cat > "$tmp/small.yaml" <<'YAML'
base:
  workload: {model: {layers: 2, hidden: 256, heads: 4, vocab: 512, seq: 256}, global_batch: 4}
  parallelism: {dp: 4}
  cluster: {gpus: 4, gpus_per_server: 4, nics_per_server: 4}
  network: {fidelity: analytical}
YAML
mkdir -p "$tmp/busy"
busy="is being written by another multiverse run (it holds $tmp/busy/.lock)"
expect_cmd 1 "$busy" flock "$tmp/busy/.lock" "$exe" --experiments "$tmp/small.yaml" --out "$tmp/busy"
expect_cmd 1 "$busy" flock "$tmp/busy/.lock" "$exe" --experiments "$tmp/small.yaml" --out "$tmp/busy" --resume
expect_cmd 1 "$busy" flock "$tmp/busy/.lock" "$exe" netsim "$tmp/escape.yaml" --out "$tmp/busy"
[ ! -e "$tmp/busy/summary.csv" ] || { echo "FAIL: a refused run wrote results"; fail=1; }
expect 0 "results in $tmp/busy" --experiments "$tmp/small.yaml" --out "$tmp/busy"
expect 0 "1 already done" --experiments "$tmp/small.yaml" --out "$tmp/busy" --resume

# Results that cannot be written (here a file where the traces' folder goes, as a full
# disk would fail a write): exit 1 naming the folder and the cause, no crash.
mkdir -p "$tmp/unwritable"
: > "$tmp/unwritable/experiments"
expect 1 "results could not be written to $tmp/unwritable:" --experiments "$tmp/small.yaml" --out "$tmp/unwritable" --trace --resume

# A misspelt command gets the nearest one; --resume and --force together are refused.
expect 2 "unknown command 'valdate' (did you mean 'validate'?)" valdate "$tmp/small.yaml"
expect 2 "unknown command 'frob' (commands: netsim, validate;" frob
expect 2 "--resume excludes --force" --experiments "$tmp/small.yaml" --out "$tmp/both" --resume --force
[ ! -e "$tmp/both" ] || { echo "FAIL: a refused command line created its results folder"; fail=1; }

# A topology.txt whose nodes are all switches, or with a host on no switch: an error at the
# file's line (it was a division by zero in the run).
printf '2 2 1\n0 1\n0 1 100Gbps 1us 0\n' > "$tmp/switches.txt"
printf '3 1 1\n2\n0 2 100Gbps 1us 0\n' > "$tmp/lonely.txt"
printf '3 1 2\n2\n0 1 100Gbps 1us 0\n1 2 100Gbps 1us 0\n' > "$tmp/hosts.txt"
for t in switches lonely hosts; do
  printf 'topology: {kind: file, path: %s.txt}\nflows: flows.csv\n' "$t" > "$tmp/topo_$t.yaml"
done
expect 2 "switches.txt:1: every node is a switch: no NICs" netsim "$tmp/topo_switches.yaml" --out "$tmp/topo"
expect 2 "lonely.txt:1: node 1 is a host (not listed as a switch) with no link" netsim "$tmp/topo_lonely.yaml" --out "$tmp/topo"
expect 2 "hosts.txt:3: link between hosts '0' and '1'" netsim "$tmp/topo_hosts.yaml" --out "$tmp/topo"
cat "$tmp/small.yaml" > "$tmp/switches_sweep.yaml"
printf '  topology: {kind: file, path: switches.txt}\n' >> "$tmp/switches_sweep.yaml"
expect 2 "switches.txt:1: every node is a switch" validate "$tmp/switches_sweep.yaml"

# Two combinations with one configuration (here a repeated seed) would be one experiment
# run twice: an error at the axis, for validate and for a run.
cat "$tmp/small.yaml" > "$tmp/seeds.yaml"
printf 'sweep:\n  seed: [1, 1]\n' >> "$tmp/seeds.yaml"
same="seeds.yaml:7: sweep.seed: experiments 'seeds-seed1' and 'seeds-seed1-2' have the same configuration"
expect 2 "$same" validate "$tmp/seeds.yaml"
expect 2 "$same" --experiments "$tmp/seeds.yaml" --out "$tmp/seeds"

# A directory where a file is expected: exit 2 naming the path, for every kind of input.
isdir="it is a directory, not a file"
mkdir -p "$tmp/dir.yaml" "$tmp/flows_dir" "$tmp/topo_dir" "$tmp/traces/job.0.et"
expect 2 "dir.yaml: cannot open the file: $isdir" validate "$tmp/dir.yaml"
expect 2 "dir.yaml: cannot open the file: $isdir" --experiments "$tmp/dir.yaml" --out "$tmp/dir_run"
expect 2 "dir.yaml: cannot open the file: $isdir" netsim "$tmp/dir.yaml" --out "$tmp/dir_run"
printf 'topology: {kind: star, nics: 4}\nflows: flows_dir\n' > "$tmp/flows_dir.yaml"
expect 2 "flows_dir: cannot open the flow list: $isdir" netsim "$tmp/flows_dir.yaml" --out "$tmp/dir_run"
printf 'topology: {kind: file, path: topo_dir}\nflows: flows.csv\n' > "$tmp/topo_dir.yaml"
expect 2 "topo_dir: cannot open the topology file: $isdir" netsim "$tmp/topo_dir.yaml" --out "$tmp/dir_run"
cat "$tmp/small.yaml" > "$tmp/topo_dir_sweep.yaml"
printf '  topology: {kind: file, path: topo_dir}\n' >> "$tmp/topo_dir_sweep.yaml"
expect 2 "topo_dir: cannot open the topology file: $isdir" validate "$tmp/topo_dir_sweep.yaml"
cat > "$tmp/chakra_dir.yaml" <<'YAML'
base:
  workload: {model: gpt3-13b, chakra: traces/job, global_batch: 1}
  parallelism: {dp: 1}
  cluster: {gpus_per_server: 1, nics_per_server: 1}
YAML
expect 2 "traces/job.0.et: it is a directory, not a trace file" validate "$tmp/chakra_dir.yaml"

exit $fail
