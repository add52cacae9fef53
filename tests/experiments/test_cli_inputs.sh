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
: > "$tmp/unwritable/.multiverse"  # a results folder of Multiverse's (else it is refused untouched)
expect 1 "results could not be written to $tmp/unwritable:" --experiments "$tmp/small.yaml" --out "$tmp/unwritable" --trace --resume

# A misspelt command gets the nearest one; --resume and --force together are refused.
expect 2 "unknown command 'valdate' (did you mean 'validate'?)" valdate "$tmp/small.yaml"
expect 2 "unknown command 'frob' (commands: netsim, validate, report, export-chakra;" frob
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

# Chakra traces whose messages do not match across ranks: a receive nobody sends to hung
# until the time limit; a wait that loops across ranks deadlocked. Both refused at validate.
mkdir -p "$tmp/p2p"
comm() { printf '{"name": "comm_size", "int64_val": 1024}, {"name": "%s", "int32_val": %s}, {"name": "comm_tag", "int32_val": %s}' "$@"; }
cat > "$tmp/p2p/orphan.0.json" <<JSON
{"nodes": [{"id": 1, "type": "COMP_NODE", "duration_micros": 100},
  {"id": 2, "type": "COMM_SEND_NODE", "data_deps": [1], "attr": [$(comm comm_dst 1 5)]}]}
JSON
cat > "$tmp/p2p/orphan.1.json" <<JSON
{"nodes": [{"id": 1, "type": "COMM_RECV_NODE", "attr": [$(comm comm_src 0 5)]},
  {"id": 2, "type": "COMM_RECV_NODE", "attr": [$(comm comm_src 0 6)]}]}
JSON
cat > "$tmp/p2p/loop.0.json" <<JSON
{"nodes": [{"id": 1, "type": "COMM_RECV_NODE", "attr": [$(comm comm_src 1 7)]},
  {"id": 2, "type": "COMM_SEND_NODE", "data_deps": [1], "attr": [$(comm comm_dst 1 5)]}]}
JSON
cat > "$tmp/p2p/loop.1.json" <<JSON
{"nodes": [{"id": 1, "type": "COMM_RECV_NODE", "attr": [$(comm comm_src 0 5)]},
  {"id": 2, "type": "COMM_SEND_NODE", "data_deps": [1], "attr": [$(comm comm_dst 0 7)]}]}
JSON
for job in orphan loop; do
  printf 'base:\n  workload: {model: megatron-1.7b, global_batch: 1,\n    chakra: p2p/%s}\n  parallelism: {pp: 2, dp: 1}\n  cluster: {gpus_per_server: 1, nics_per_server: 1}\n' "$job" > "$tmp/$job.yaml"
done
expect 2 "orphan.yaml:3: workload.chakra: $tmp/p2p/orphan.1.json: node 2: receives from rank 0 with tag 6, but no send of that rank matches it" validate "$tmp/orphan.yaml"
expect 2 "orphan.yaml:3: workload.chakra: $tmp/p2p/orphan.1.json: node 2: receives from rank 0" --experiments "$tmp/orphan.yaml" --out "$tmp/orphan_run"
# Only that problem: a build that throws leaves the memory figure zero, not a spurious one.
expect 2 "multiverse: 1 problem in $tmp/orphan.yaml" validate "$tmp/orphan.yaml"
expect 2 "loop.yaml:3: workload.chakra: $tmp/p2p/loop.0.json: node 1: can never start" validate "$tmp/loop.yaml"

# A general Chakra job (per-rank programs over communicator groups): the bundled example runs,
# and its group file's problems are refused at validate, naming the file and the group.
examples=$(dirname "$0")/../../examples/chakra
cp -r "$examples/general" "$examples/general.yaml" "$tmp/"
expect 0 "2 experiments" validate "$tmp/general.yaml"
expect 0 "general-packet" --experiments "$tmp/general.yaml" --out "$tmp/general_run"
echo '{"0": [0, 1], "1": [2, 9], "2": [0, 2], "3": [1, 3]}' > "$tmp/general/bad.json"
sed 's#general/groups.json#general/bad.json#' "$tmp/general.yaml" > "$tmp/bad_groups.yaml"
expect 2 "bad_groups.yaml:11: workload.chakra_groups: $tmp/general/bad.json: group '1': 9 is not a rank of the job (0 to 3)" validate "$tmp/bad_groups.yaml"
expect 2 "multiverse: 1 problem in" validate "$tmp/bad_groups.yaml"
sed 's#general/groups.json#general/none.json#' "$tmp/general.yaml" > "$tmp/no_groups.yaml"
expect 2 "no_groups.yaml:11: workload.chakra_groups: $tmp/general/none.json: no such file" validate "$tmp/no_groups.yaml"
printf 'base:\n  workload: {model: gpt3-13b, global_batch: 8, chakra_layout: ranks}\n  parallelism: {tp: 8}\n' > "$tmp/layout_alone.yaml"
expect 2 "layout_alone.yaml:2: workload.chakra_layout: needs workload.chakra" validate "$tmp/layout_alone.yaml"

# A SimAI/AICB workload file: the bundled example runs; a header of another job and a broken
# layer line are refused at the workload.simai line.
cp "$examples/../simai/simai.yaml" "$examples/../simai/gpt13b_tp8_dp2.txt" "$tmp/"
expect 0 "simai-packet" --experiments "$tmp/simai.yaml" --out "$tmp/simai_run"
sed 's/parallelism: {tp: 8, dp: 2}/parallelism: {tp: 4, dp: 4}/' "$tmp/simai.yaml" > "$tmp/simai_tp4.yaml"
expect 2 "simai_tp4.yaml:10: workload.simai: $tmp/gpt13b_tp8_dp2.txt: its header describes tp 8, ep 1, pp 1 on 16 GPUs; the experiment has tp 4, ep 1, pp 1 on 16" validate "$tmp/simai_tp4.yaml"
sed '5s/ALLREDUCE/ALLREDUCE_XY/' "$tmp/gpt13b_tp8_dp2.txt" > "$tmp/broken.txt"
sed 's/gpt13b_tp8_dp2.txt/broken.txt/' "$tmp/simai.yaml" > "$tmp/simai_broken.yaml"
expect 2 "simai_broken.yaml:10: workload.simai: $tmp/broken.txt:5: forward communication type 'ALLREDUCE_XY' is not" validate "$tmp/simai_broken.yaml"
sed '/simai: gpt13b_tp8_dp2.txt/a\    chakra: general/job' "$tmp/simai.yaml" > "$tmp/simai_both.yaml"
expect 2 "workload.simai: give workload.chakra or workload.simai, not both" validate "$tmp/simai_both.yaml"

# Host time knobs take durations up to 10 s.
printf 'base:\n  workload: {model: gpt3-13b, global_batch: 8, host_overhead: 20s}\n  parallelism: {tp: 8}\n' > "$tmp/host.yaml"
expect 2 "host.yaml:2: workload.host_overhead: 20s is out of range [0s, 10s]" validate "$tmp/host.yaml"

# Values the engine cannot represent: errors at their line before anything is allocated
# (a 20 s link delay wrapped a ring-slot total and crashed, 30 s looped forever, 8000 Tbps
# and 100 ms ended in bad_alloc, a start near the int64 limit never ended).
for d in 20s 30s; do
  printf 'topology: {kind: star, nics: 4, link_delay: %s}\nflows: flows.csv\n' "$d" > "$tmp/delay_$d.yaml"
  expect 2 "delay_$d.yaml:1: topology.link_delay: $d is out of range [1ns, 1s]" netsim "$tmp/delay_$d.yaml" --out "$tmp/lim"
done
printf 'topology: {kind: star, nics: 4, link_rate: 8000Tbps}\nflows: flows.csv\n' > "$tmp/rate.yaml"
expect 2 "rate.yaml:1: topology.link_rate: 8000Tbps is out of range [100Mbps, 100Tbps]" netsim "$tmp/rate.yaml" --out "$tmp/lim"
printf 'topology: {kind: star, nics: 65535}\nflows: flows.csv\n' > "$tmp/ports.yaml"
expect 2 "ports.yaml:1: topology.nics: 65535 is out of range [2, 65534]" netsim "$tmp/ports.yaml" --out "$tmp/lim"
printf 'topology: {kind: star, nics: 4}\nflows: flows.csv\nlookahead: 2us\n' > "$tmp/lookahead.yaml"
expect 2 "lookahead.yaml:3: lookahead: 2us is longer than the smallest link delay (1us)" netsim "$tmp/lookahead.yaml" --out "$tmp/lim"
printf 'src,dst,bytes,start_us\n1,0,1000,9223372036000\n' > "$tmp/late.csv"
printf 'src,dst,bytes,start_us\n1,0,9000000000000000000,0\n' > "$tmp/huge.csv"
printf '1\n1 0 3 100 1000 100000\n' > "$tmp/late.txt"
for f in late.csv huge.csv late.txt; do
  printf 'topology: {kind: star, nics: 4}\nflows: %s\n' "$f" > "$tmp/flows_$f.yaml"
done
expect 2 "late.csv:2: start 9223372036000 us is at or past the engine's time horizon (100000s)" netsim "$tmp/flows_late.csv.yaml" --out "$tmp/lim"
expect 2 "huge.csv:2: flow size 9000000000000000000 bytes is out of range [1B, 16TiB]" netsim "$tmp/flows_huge.csv.yaml" --out "$tmp/lim"
expect 2 "late.txt:2: start 100000 s is at or past the engine's time horizon" netsim "$tmp/flows_late.txt.yaml" --out "$tmp/lim"
# Packet storage is counted from the topology and refused above --max-memory (or 2^32 - 1
# link-ring slots) with its figure, before it is allocated.
printf 'topology: {kind: star, nics: 17, link_delay: 10ms}\nflows: flows.csv\n' > "$tmp/long.yaml"
expect 2 "long.yaml:1: topology: experiment 'long': its packet storage would take" netsim "$tmp/long.yaml" --out "$tmp/lim" --max-memory 256MiB
expect 2 "more than the memory budget of 256.0 MiB (--max-memory)" netsim "$tmp/long.yaml" --out "$tmp/lim" --max-memory 256MiB
printf 'topology: {kind: star, nics: 4, link_delay: 1s}\nflows: flows.csv\nnetwork: {link_ring_factor: 64}\n' > "$tmp/slots.yaml"
expect 2 "more slots than 2^32 - 1" netsim "$tmp/slots.yaml" --out "$tmp/lim" --max-memory 1000000GiB
# The same limits for sweeps, at validate and before a run builds anything.
cat "$tmp/small.yaml" > "$tmp/sweep_delay.yaml"
printf '  topology: {kind: star, nics: 4, link_delay: 20s}\n' >> "$tmp/sweep_delay.yaml"
expect 2 "sweep_delay.yaml:6: topology.link_delay: 20s is out of range [1ns, 1s]" validate "$tmp/sweep_delay.yaml"
sed 's/fidelity: analytical/fidelity: packet, link_ring_factor: 64/' "$tmp/small.yaml" > "$tmp/sweep_long.yaml"
printf '  topology: {kind: star, nics: 4, link_delay: 10ms}\n' >> "$tmp/sweep_long.yaml"
expect 2 "its packet storage would take" validate "$tmp/sweep_long.yaml" --max-memory 64MiB
expect 2 "its packet storage would take" --experiments "$tmp/sweep_long.yaml" --out "$tmp/lim_run" --max-memory 64MiB
[ ! -e "$tmp/lim_run" ] || { echo "FAIL: a refused sweep created its results folder"; fail=1; }
expect 2 "needs" validate "$tmp/small.yaml" --max-memory 1KiB
sed 's/global_batch: 4}/global_batch: 4}\n  collectives: {step_latency: 2s}/' "$tmp/small.yaml" > "$tmp/latency.yaml"
expect 2 "latency.yaml:3: collectives.step_latency: 2s is out of range [2ns, 1s]" validate "$tmp/latency.yaml"

# A small file of nested aliases ("billion laughs") is refused before anything follows
# them (it ran for minutes and took 9 GB); a sweep keeping more than 100,000 experiments is
# refused before they are built (700,000 took 13.6 GB).
{
  printf 'a: &a [x, x, x, x, x, x, x, x, x, x]\n'
  prev=a
  for n in b c d e f g h i; do printf '%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n' $n $n $prev $prev $prev $prev $prev $prev $prev $prev $prev $prev; prev=$n; done
} > "$tmp/laughs.txt"
{ cat "$tmp/laughs.txt"; cat "$tmp/small.yaml"; printf 'sweep:\n  seed: *i\n'; } > "$tmp/bomb.yaml"
expect 2 "bomb.yaml:1: the document holds more than 1000000 values once its aliases" validate "$tmp/bomb.yaml"
{ cat "$tmp/laughs.txt"; printf 'topology: {kind: star, nics: 4}\nflows: flows.csv\nname: *i\n'; } > "$tmp/bomb_net.yaml"
expect 2 "bomb_net.yaml:1: the document holds more than 1000000 values" netsim "$tmp/bomb_net.yaml" --out "$tmp/lim"
{ cat "$tmp/small.yaml"; printf 'sweep:\n  seed: [%s]\n  collectives.step_latency: [%s]\n' \
    "$(seq -s, 1 400)" "$(seq -s, -f '%gns' 1 400)"; } > "$tmp/many.yaml"
expect 2 "the sweep keeps 160000 experiments after its constraints, more than 100000" validate "$tmp/many.yaml"

# A key that is a list or a mapping is an input error at its line (it was "bad conversion",
# exit 1, with no file name).
{ cat "$tmp/small.yaml"; printf '  collectives: {[a, b]: 3}\n'; } > "$tmp/list_key.yaml"
expect 2 "list_key.yaml:6: base.collectives: a key must be a plain name, not a list or a mapping" validate "$tmp/list_key.yaml"
printf 'topology: {kind: star, nics: 4, {x: 1}: 1}\nflows: flows.csv\n' > "$tmp/map_key.yaml"
expect 2 "map_key.yaml:1: topology: a key must be a plain name" netsim "$tmp/map_key.yaml" --out "$tmp/lim"

# Variants on the CPU are cut into batches whose packet storage fits --max-memory (three
# variants, the HPCC one about 25 MiB and the others about a third of it, could have passed
# a per-variant check and still not fitted together); the results do not change.
cat > "$tmp/three.yaml" <<'YAML'
topology: {kind: star, nics: 17, link_delay: 100us}
flows: flows.csv
experiments:
  - {name: dcqcn, network: {cc: dcqcn}}
  - {name: hpcc, network: {cc: hpcc}}
  - {name: dctcp, network: {cc: dctcp}}
YAML
expect 0 "3 batches to fit --max-memory" netsim "$tmp/three.yaml" --out "$tmp/three_cut" --cpu-workers 1 --max-memory 30MiB
expect 0 "backend cpu" netsim "$tmp/three.yaml" --out "$tmp/three_one" --cpu-workers 1
cmp <(cut -d, -f1-16 "$tmp/three_cut/summary.csv") <(cut -d, -f1-16 "$tmp/three_one/summary.csv") ||
  { echo "FAIL: batches cut by --max-memory changed the results"; fail=1; }

# A netsim result that cannot be written (a file where a variant's folder goes) stops that
# batch with exit 1, naming the path and the cause; the variants written before stay.
mkdir -p "$tmp/netsim_unwritable" && touch "$tmp/netsim_unwritable/dctcp"
expect 1 "cannot create directories: Not a directory [$tmp/netsim_unwritable/dctcp]" netsim "$tmp/three.yaml" \
  --out "$tmp/netsim_unwritable" --cpu-workers 1 --max-memory 30MiB
grep -q "^hpcc," "$tmp/netsim_unwritable/summary.csv" || { echo "FAIL: the variants written before were lost"; fail=1; }

exit $fail
