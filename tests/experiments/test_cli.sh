#!/usr/bin/env bash
# @file test_cli.sh
# The multiverse command line: --help and --version succeed, unknown flags fail with a
# clear message and exit code 2. Usage: test_cli.sh <path to multiverse>
set -u
exe="$1"
fail=0
source "$(dirname "$0")/cli_expect.sh"
expect 0 "Usage: multiverse" --help
expect 0 "multiverse 0." --version
expect 2 "--bogus" --bogus
expect 2 "multiverse --help" --threads-typo 4
expect 0 "[engine]" --dump-graph text
# More devices than any machine here has: refused before anything runs, with or without a
# GPU or the CUDA build (each case names CUDA in its message).
expect 2 "CUDA" --experiments "$(cd "$(dirname "$0")/../.." && pwd)/examples/quickstart.yaml" --backend cuda --devices 1000
expect 2 "applies to the cuda backend only" --experiments "$(cd "$(dirname "$0")/../.." && pwd)/examples/quickstart.yaml" --backend cpu --devices 2
expect 2 "must be auto or a whole number" --experiments "$(cd "$(dirname "$0")/../.." && pwd)/examples/quickstart.yaml" --cpu-block 4x
expect 2 "must be auto or a whole number" --experiments "$(cd "$(dirname "$0")/../.." && pwd)/examples/quickstart.yaml" --cpu-block -3

# netsim: a valid run writes its results; every bad input is reported with file, line, key.
src_dir="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect 0 "backend cpu (2 workers of 1 thread)" netsim "$src_dir/examples/netsim/incast.yaml" --out "$tmp/ok" --threads 2
for f in summary.csv dcqcn/flows.csv hpcc/flows.csv dctcp/queues.csv; do
  [ -s "$tmp/ok/$f" ] || { echo "FAIL: missing $tmp/ok/$f"; fail=1; }
done
[ "$(wc -l < "$tmp/ok/hpcc/flows.csv")" -eq 17 ] || { echo "FAIL: hpcc/flows.csv should have 16 flows"; fail=1; }
# Its 3 variants on 2 one-thread workers (the default here) and on one worker: the same
# results, ECN marks included (each variant draws from its own random streams).
expect 0 "3 experiment(s); backend cpu" netsim "$src_dir/examples/netsim/incast.yaml" --out "$tmp/ok1" --threads 2 --cpu-workers 1
if ! diff <(cut -d, -f1-16 "$tmp/ok/summary.csv") <(cut -d, -f1-16 "$tmp/ok1/summary.csv") >/dev/null; then
  echo "FAIL: netsim gives other results on one worker than on two"; fail=1
fi
# Results are written as each variant finishes (checked every 256 steps): in one batch,
# hpcc and dctcp (last flows done at 1.49 and 1.35 ms, in the same 256 steps) are reported
# before dcqcn (1.68 ms), though dcqcn comes first in the file; the summary keeps the
# file's order.
order=$("$exe" netsim "$src_dir/examples/netsim/incast.yaml" --out "$tmp/ok2" --threads 1 --cpu-workers 1 |
  grep -oE '^  (dcqcn|hpcc|dctcp) ' | tr -d ' ' | tr '\n' ' ')
[ "$order" = "hpcc dctcp dcqcn " ] || { echo "FAIL: netsim reported its variants in the order '$order'"; fail=1; }
[ "$(cut -d, -f1 "$tmp/ok2/summary.csv" | tr '\n' ' ')" = "experiment dcqcn hpcc dctcp " ] ||
  { echo "FAIL: netsim's summary is not in file order"; fail=1; }

# A folder that holds netsim results is refused (exit 2, nothing touched); --force replaces
# its results, and a stale variant folder of this input goes with them.
before=$(md5sum < "$tmp/ok/summary.csv")
expect 2 "already holds netsim results (summary.csv); use --force" netsim "$src_dir/examples/netsim/incast.yaml" --out "$tmp/ok"
[ "$(md5sum < "$tmp/ok/summary.csv")" = "$before" ] || { echo "FAIL: a refused netsim run changed the results"; fail=1; }
: > "$tmp/ok/hpcc/stale.txt"
expect 0 "backend cpu" netsim "$src_dir/examples/netsim/incast.yaml" --out "$tmp/ok" --threads 2 --force
[ ! -e "$tmp/ok/hpcc/stale.txt" ] && [ -s "$tmp/ok/hpcc/flows.csv" ] ||
  { echo "FAIL: netsim --force did not replace the variant's folder"; fail=1; }

# Packet storage too small for the incast: the variants start again with it doubled until
# they fit, and give the results of the run with the default storage.
sed 's/pfc: {enabled: true, buffer: 32MB}/pfc: {enabled: true, buffer: 32MB}\n  switch_pool_slots: 64\n  link_ring_factor: 1/' \
  "$src_dir/examples/netsim/incast.yaml" > "$tmp/small_pool.yaml"
cp "$src_dir/examples/netsim/incast_flows.csv" "$tmp/"
expect 0 "packet storage ran out in its batch: again from the start with switch_pool_slots 128" \
  netsim "$tmp/small_pool.yaml" --out "$tmp/small_pool" --threads 2
for v in dcqcn hpcc dctcp; do
  cmp -s "$tmp/ok/$v/flows.csv" "$tmp/small_pool/$v/flows.csv" ||
    { echo "FAIL: $v with grown packet storage differs from the default run"; fail=1; }
done

# ideal_fct_ps is a lower bound that a flow alone in the idle network nearly reaches, from
# one byte (one packet) to 10 MB, one after another: every slowdown in [1, 1.01] (it was 0.96 for one byte).
printf 'src,dst,bytes,start_us\n0,15,1,0\n1,14,1000,100\n2,3,4000,200\n4,9,100000,300\n6,11,10000000,400\n' > "$tmp/lone.csv"
printf 'topology: {kind: fat_tree, k: 4, link_rate: 100Gbps, link_delay: 1us}\nflows: lone.csv\n' > "$tmp/lone.yaml"
expect 0 "5 flows, 1 experiment(s)" netsim "$tmp/lone.yaml" --out "$tmp/lone"
awk -F, 'NR > 1 && ($7 < $8 || $7 > 1.01 * $8) { print "FAIL: lone flow " $1 ": fct " $7 " ps, ideal " $8 " ps"; bad = 1 }
         END { exit bad }' "$tmp/lone/lone/flows.csv" || fail=1
for v in dcqcn hpcc dctcp; do
  awk -F, 'NR > 1 && $7 < $8 { exit 1 }' "$tmp/ok/$v/flows.csv" || { echo "FAIL: $v: a flow beat its ideal FCT"; fail=1; }
done

# The ns-3 reference's own files: flow.txt names node ids (node 0 is the switch), its flows
# start at 2 s; queues.csv covers the active period and fct.txt is the reference's format.
ns3="$src_dir/tests/network/data/ns3"
printf 'topology: {kind: file, path: %s/topo_star.txt}\nflows: %s/flow_2to1.txt\nnetwork: {cc: dctcp, whole_ns: true}\n' \
  "$ns3" "$ns3" > "$tmp/ref.yaml"
expect 0 "2 flows, 1 experiment(s)" netsim "$tmp/ref.yaml" --out "$tmp/ref"
awk -F, 'NR == 2 && ($6 < 0.95 || $6 > 1.05) { exit 1 }' "$tmp/ref/ref/queues.csv" ||
  { echo "FAIL: the bottleneck's utilisation over the active period is not about 1"; fail=1; }
[ "$(cut -d' ' -f1-5,7 "$tmp/ref/ref/fct.txt" | sort | tr '\n' ';')" = \
  "0b000201 0b000101 10000 100 10000000 1664008;0b000301 0b000101 10000 100 10000000 1664091;" ] ||
  { echo "FAIL: fct.txt:"; cat "$tmp/ref/ref/fct.txt"; fail=1; }
# HPCC with the reference's INT encoding, as a user writes it: the flows split unevenly
# (docs/network.md: 1639 and 1843 us); a multiplier out of range is refused.
printf 'topology: {kind: file, path: %s/topo_star.txt}\nflows: %s/flow_2to1.txt\nnetwork: {cc: hpcc, whole_ns: true, hpcc: {int_multi: 4}}\n' \
  "$ns3" "$ns3" > "$tmp/ref_hpcc.yaml"
expect 0 "2 flows, 1 experiment(s)" netsim "$tmp/ref_hpcc.yaml" --out "$tmp/ref_hpcc"
awk -F, 'NR > 1 { f[NR] = $7 / 1e6 } END { d = f[3] - f[2]; if (d < 0) d = -d; exit !(d > 150) }' \
  "$tmp/ref_hpcc/ref_hpcc/flows.csv" || { echo "FAIL: HPCC with int_multi 4 shares evenly"; fail=1; }
sed 's/int_multi: 4/int_multi: 1025/' "$tmp/ref_hpcc.yaml" > "$tmp/int_multi.yaml"
expect 2 "int_multi.yaml:3: network.hpcc.int_multi: 1025 is out of range [0, 1024]" netsim "$tmp/int_multi.yaml"
printf '1\n0 1 3 100 1000 2\n' > "$tmp/switch_id.txt"
printf 'topology: {kind: file, path: %s/topo_star.txt}\nflows: switch_id.txt\n' "$ns3" > "$tmp/switch_id.yaml"
expect 2 "switch_id.txt:2: node id 0 is a switch, not a host" netsim "$tmp/switch_id.yaml"
printf '1\n4 0 3 100 1000 0\n' > "$tmp/gen_switch.txt"
printf 'topology: {kind: star, nics: 4}\nflows: gen_switch.txt\n' > "$tmp/gen_switch.yaml"
expect 2 "gen_switch.txt:2: node id 4 is a switch, not a host" netsim "$tmp/gen_switch.yaml"

printf 'src,dst,bytes,start_us\n1,0,1000,0\n' > "$tmp/flows.csv"
cat > "$tmp/typo.yaml" <<'YAML'
topology: {kind: star, nics: 4, link_rate: 100Gbps, link_delay: 1us}
network:
  cc: hpc
  lod_balance: ecmp
  pfc: {buffer: 32XB}
flows: flows.csv
YAML
expect 2 "typo.yaml:3: network.cc: 'hpc' is not one of none, dcqcn, hpcc, dctcp (did you mean 'hpcc'?)" netsim "$tmp/typo.yaml"
expect 2 "typo.yaml:4: network.lod_balance: unknown key (did you mean 'load_balance'?)" netsim "$tmp/typo.yaml"
expect 2 "typo.yaml:5: network.pfc.buffer: bad size '32XB'" netsim "$tmp/typo.yaml"

printf 'topology: {kind: star, nics: 2\n' > "$tmp/broken.yaml"
expect 2 "broken.yaml:2: YAML syntax error" netsim "$tmp/broken.yaml"

printf '3\n1 0 3 100 1000 0\n2 0 3 100 1000 0\n' > "$tmp/truncated.txt"
printf 'topology: {kind: star, nics: 4}\nflows: truncated.txt\n' > "$tmp/trunc.yaml"
expect 2 "truncated.txt:3: the file announces 3 flows but has 2 (truncated?)" netsim "$tmp/trunc.yaml"

printf 'src,dst,bytes,start_us\n1,9,1000,0\n' > "$tmp/far.csv"
printf 'topology: {kind: star, nics: 4}\nflows: far.csv\n' > "$tmp/far.yaml"
expect 2 "far.csv:2: NIC index out of range (the topology has 4 NICs, 0..3)" netsim "$tmp/far.yaml"

printf 'topology: {kind: fat_tree, k: 3}\nflows: flows.csv\n' > "$tmp/odd.yaml"
expect 2 "odd.yaml:1: topology:" netsim "$tmp/odd.yaml"
expect 2 "missing.yaml: cannot open the file" netsim "$tmp/missing.yaml"

# validate: a good sweep prints its experiment count and a memory estimate; a bad one lists
# every problem with file:line: key.
data="$src_dir/tests/experiments/data"
expect 0 "good_sweep.yaml: 6 experiments (18 combinations, 12 dropped by constraints)" validate "$data/good_sweep.yaml"
expect 0 "per experiment (6 configurations measured" validate "$data/good_sweep.yaml"
expect 2 "bad_sweep.yaml:4: workload.model: unknown model 'gpt3-13bb'" validate "$data/bad_sweep.yaml"
expect 2 "bad_sweep.yaml:6: workload.precison: unknown key (did you mean 'precision'?)" validate "$data/bad_sweep.yaml"
expect 2 "bad_sweep.yaml:7: parallelism.tp: tensor parallelism must stay inside a server" validate "$data/bad_sweep.yaml"
expect 2 "bad_sweep.yaml:9: topology: topology too small: it has 8 NICs, the job needs 32" validate "$data/bad_sweep.yaml"
expect 2 "bad_sweep.yaml:10: network.fidelity: 'packets' is not one of packet, flow, analytical" validate "$data/bad_sweep.yaml"
expect 2 "bad_sweep.yaml:13: parallelism.pp: expected an integer, got 'three' (experiment bad_sweep-three)" validate "$data/bad_sweep.yaml"
expect 2 "multiverse: 8 problems in" validate "$data/bad_sweep.yaml"
expect 2 "broken.yaml:2: YAML syntax error" validate "$tmp/broken.yaml"
expect 2 "missing.yaml: cannot open the file" validate "$tmp/missing.yaml"
expect 2 "sweep is required" validate

# --- multiverse --experiments: results, resume, bad input, MPI ----------------------------
cat > "$tmp/tiny.yaml" <<'YAML'
base:
  name: "tiny-dp{parallelism.dp}-{network.fidelity}"
  workload:
    model: {layers: 4, hidden: 512, heads: 8, vocab: 1024, seq: 512}
    global_batch: 8
  parallelism: {tp: 2, pp: 2, dp: 2, distributed_optimizer: true}
  cluster: {gpus: 8, gpus_per_server: 4, nics_per_server: 4}
  network: {fidelity: analytical, cc: dctcp}
  collectives: {dp_bucket: 2MiB}
sweep:
  network.fidelity: [analytical, flow, packet]
YAML
expect 0 "results in $tmp/run" --experiments "$tmp/tiny.yaml" --out "$tmp/run" --threads 2
expect 0 "" --experiments "$tmp/tiny.yaml" --out "$tmp/run2" --threads 2 --quiet --trace
[ "$(wc -l < "$tmp/run/summary.csv")" -eq 4 ] || { echo "FAIL: summary.csv should have 3 rows"; fail=1; }
[ -f "$tmp/run/experiments/tiny-dp2-flow/manifest.json" ] || { echo "FAIL: no manifest"; fail=1; }
[ -s "$tmp/run2/experiments/tiny-dp2-packet/trace.json" ] || { echo "FAIL: --trace wrote no trace.json"; fail=1; }
# Network detail of a packet-level run: links.csv with network.link_bin; queues.csv, flows.csv
# and fct.txt with --network-detail; link_bin at another fidelity is refused at validate.
sed 's/  network: {fidelity: analytical, cc: dctcp}/  network: {fidelity: packet, cc: dctcp, link_bin: 20us}/; /^sweep:/,$d' \
  "$tmp/tiny.yaml" > "$tmp/links.yaml"
expect 0 "" --experiments "$tmp/links.yaml" --out "$tmp/run_links" --threads 2 --quiet --network-detail
for f in links.csv queues.csv flows.csv fct.txt EndToEnd.csv; do
  [ "$(wc -l < "$tmp/run_links/experiments/tiny-dp2-packet/$f")" -gt 1 ] || { echo "FAIL: no rows in $f"; fail=1; }
done
head -1 "$tmp/run_links/experiments/tiny-dp2-packet/links.csv" | grep -qx 'link,bin_start_ps,bytes,utilisation' ||
  { echo "FAIL: links.csv header"; fail=1; }
for f in queues.csv flows.csv; do
  [ ! -e "$tmp/run2/experiments/tiny-dp2-packet/$f" ] || { echo "FAIL: $f without --network-detail"; fail=1; }
done
sed 's/fidelity: packet/fidelity: flow/' "$tmp/links.yaml" > "$tmp/links_flow.yaml"
expect 2 "network.link_bin: links are recorded at packet fidelity only" validate "$tmp/links_flow.yaml"
# A packet storage run grew is remembered for the configuration: of three copies (seeds) run
# one batch after another, only the first starts again; all end with the same pool.
# (DCQCN into a 4:1 oversubscribed spine fills more than the 64 switch slots.)
sed 's/  network: {fidelity: analytical, cc: dctcp}/  network: {fidelity: packet, cc: dcqcn, switch_pool_slots: 64}/; /^sweep:/,$d' \
  "$tmp/tiny.yaml" > "$tmp/grow.yaml"
cat >> "$tmp/grow.yaml" <<'YAML'
  topology: {kind: spine_leaf, leaves: 2, nics_per_leaf: 4, spines: 1, oversubscription: 4, link_rate: 100Gbps}
sweep:
  seed: [1, 2, 3]
YAML
expect 0 "" --experiments "$tmp/grow.yaml" --out "$tmp/run_grow" --threads 1 --cpu-workers 1 --batch-size 1 --quiet
grow_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['result']['packet_storage'][sys.argv[2]])" "$@"; }
grow_restarts=""
grow_pools=""
for m in "$tmp"/run_grow/experiments/*/manifest.json; do
  grow_restarts="$grow_restarts $(grow_field "$m" restarts)"
  grow_pools="$grow_pools $(grow_field "$m" switch_pool_slots)"
done
restarted=0
for r in $grow_restarts; do [ "$r" -gt 0 ] && restarted=$((restarted + 1)); done
[ "$restarted" -eq 1 ] || { echo "FAIL: restarts per copy were$grow_restarts (one copy should restart)"; fail=1; }
[ "$(echo $grow_pools | tr ' ' '\n' | sort -u | wc -l)" -eq 1 ] && [ "${grow_pools# }" != "64 64 64" ] ||
  { echo "FAIL: switch pools$grow_pools (one grown size for all)"; fail=1; }
expect 2 "already holds results" --experiments "$tmp/tiny.yaml" --out "$tmp/run"
# Everything but the wall-time columns, which differ from run to run.
stable() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "wall_s" || $i == "events_per_s") skip[i] = 1 }
           { line = ""; for (i = 1; i <= NF; ++i) if (!(i in skip)) line = line $i ","; print line }' "$1"
}
# An interrupted sweep: one experiment's results are gone; --resume runs only that one.
cp "$tmp/run/summary.csv" "$tmp/full.csv"
rm -r "$tmp/run/experiments/tiny-dp2-flow"
expect 0 "2 already done" --experiments "$tmp/tiny.yaml" --out "$tmp/run" --resume --threads 2
if ! diff <(stable "$tmp/full.csv") <(stable "$tmp/run/summary.csv") >/dev/null; then
  echo "FAIL: the resumed summary differs from the uninterrupted one"; fail=1
fi
# Batches of one experiment each give the results of one batch of three.
expect 0 "3 batches of at most 1 experiment;" --experiments "$tmp/tiny.yaml" --out "$tmp/ones" --threads 2 --batch-size 1
if ! diff <(stable "$tmp/full.csv") <(stable "$tmp/ones/summary.csv") >/dev/null; then
  echo "FAIL: batches of one give other results than one batch"; fail=1
fi
expect 0 "1 batch; results in" --experiments "$tmp/tiny.yaml" --out "$tmp/one" --threads 2 --batch-size 0 --cpu-workers 1
# Two one-thread CPU workers (the default on 2 threads) give the results of one worker.
expect 0 "backend cpu (2 workers of 1 thread); 2 batches;" --experiments "$tmp/tiny.yaml" --out "$tmp/two" --threads 2 --batch-size 0
if ! diff <(stable "$tmp/full.csv" | sort) <(stable "$tmp/two/summary.csv" | sort) >/dev/null; then
  echo "FAIL: two CPU workers give other results than one"; fail=1
fi
# The largest of these experiments takes 4.9 MiB: an 8 MiB budget holds one at a time, so
# auto runs one worker (with both threads), 16 MiB holds two.
expect 0 "backend cpu; " --experiments "$tmp/tiny.yaml" --out "$tmp/mem8" --threads 2 --max-memory 8MiB
expect 0 "backend cpu (2 workers of 1 thread)" --experiments "$tmp/tiny.yaml" --out "$tmp/mem16" --threads 2 --max-memory 16MiB
expect 2 "--cpu-workers 3 needs at least as many CPU threads, but there are 2" --experiments "$tmp/tiny.yaml" --threads 2 --cpu-workers 3
expect 2 "--cpu-workers: must be auto or a whole number of workers from 1 to 1024" --experiments "$tmp/tiny.yaml" --cpu-workers 0
expect 2 "--batch-size: must be auto or a whole number" --experiments "$tmp/tiny.yaml" --batch-size 2.5
# Two flow-level LLaMA-2 70B experiments with the distributed optimizer in one batch: their
# fluid flows together exceed the table's first capacity (it was not sized for them).
cat > "$tmp/dopt.yaml" <<'YAML'
base:
  name: "l70-{seed}"
  workload: {model: {base: llama2-70b}, global_batch: 64, micro_batch: 1}
  parallelism: {tp: 8, pp: 8, dp: 2, distributed_optimizer: true, recompute: full}
  cluster: {gpu: h100, gpus: 128, gpus_per_server: 8, nics_per_server: 8}
  network: {fidelity: flow}
sweep: {seed: [1, 2]}
YAML
expect 0 "1 batch" --experiments "$tmp/dopt.yaml" --out "$tmp/dopt" --threads 2 --cpu-workers 1 --batch-size 0
[ "$(grep -c ',ok,' "$tmp/dopt/summary.csv")" -eq 2 ] || { echo "FAIL: a flow-level batch of two failed"; fail=1; }
cat > "$tmp/algo.yaml" <<'YAML'
base:
  workload: {model: {layers: 4, hidden: 512, heads: 8, vocab: 1024}, global_batch: 12}
  parallelism: {tp: 1, pp: 1, dp: 6}
  cluster: {gpus: 6, gpus_per_server: 1, nics_per_server: 1}
  collectives: {all_reduce: halving_doubling}
YAML
expect 2 "collectives.all_reduce: halving_doubling cannot run all_reduce over 6 ranks" --experiments "$tmp/algo.yaml" --out "$tmp/algo"
cat > "$tmp/ops.yaml" <<'YAML'
base:
  workload:
    model: {layers: 4, hidden: 512, heads: 8, vocab: 1024}
    global_batch: 8
    operator_times: {qkv: 1ms, qvk.backward: 2ms, optimizer: -1ms}
  parallelism: {dp: 8}
YAML
expect 2 "ops.yaml:5: workload.operator_times.qvk.backward: unknown key (did you mean 'qkv.backward'?)" validate "$tmp/ops.yaml"
expect 2 "ops.yaml:5: workload.operator_times.optimizer" validate "$tmp/ops.yaml"
expect 2 "missing.yaml: cannot open the file" --experiments "$tmp/missing.yaml" --out "$tmp/none"
expect 2 "--max-memory" --experiments "$tmp/tiny.yaml" --max-memory 12XB
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # In the sanitizer build, LeakSanitizer reports what OpenMPI's own libraries and plugins
  # keep after MPI_Finalize (none of it ours): leaks are not checked under mpirun.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  out=$(mpirun -np 2 --oversubscribe "$exe" --experiments "$tmp/tiny.yaml" --out "$tmp/mpi" --threads 1 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] || ! grep -qF "over 2 MPI ranks" <<<"$out"; then
    echo "FAIL: mpirun -np 2 exited $rc"; echo "$out"; fail=1
  elif ! diff <(stable "$tmp/full.csv") <(stable "$tmp/mpi/summary.csv"); then
    echo "FAIL: 2 MPI ranks give other results than 1"; fail=1
  else
    echo "ok: mpirun -np 2 multiverse --experiments gives the 1-rank results"
  fi
  # A folder another run holds: every rank stops (rank 1 used to wait for rank 0 forever).
  mkdir -p "$tmp/mpi_busy"
  out=$(timeout 120 flock "$tmp/mpi_busy/.lock" mpirun -np 2 --oversubscribe "$exe" --experiments "$tmp/tiny.yaml" \
    --out "$tmp/mpi_busy" --threads 1 2>&1)
  rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qF "is being written by another multiverse run" <<<"$out"; then
    echo "FAIL: mpirun -np 2 into a locked folder exited $rc (124: it hung)"; echo "$out"; fail=1
  else
    echo "ok: mpirun -np 2 into a locked folder stops every rank with exit 1"
  fi
fi
# --skip-infeasible: a combination with problems (tp 8 does not fit a 4-GPU server) is a
# row of status invalid carrying them, the rest runs, exit 0; without the flag the sweep is
# refused; when every combination has problems it is refused with the flag too.
cat > "$tmp/skip.yaml" <<'YAML'
base:
  name: "s-tp{parallelism.tp}"
  workload:
    model: {layers: 4, hidden: 512, heads: 8, vocab: 1024, seq: 512}
    global_batch: 8
  parallelism: {tp: 2, pp: 2, dp: 2}
  cluster: {gpus: 8, gpus_per_server: 4, nics_per_server: 4}
sweep:
  parallelism.tp: [2, 8]
YAML
expect 2 "tp (8) must divide gpus_per_server (4)" --experiments "$tmp/skip.yaml" --out "$tmp/skip_no"
expect 0 "1 invalid, not run (--skip-infeasible)" --experiments "$tmp/skip.yaml" --out "$tmp/skip" --skip-infeasible
grep -q '^s-tp8,[0-9a-f]*,8,invalid,.*tp (8) must divide gpus_per_server (4)' "$tmp/skip/summary.csv" ||
  { echo "FAIL: the infeasible combination is not an invalid row with its problem"; cat "$tmp/skip/summary.csv"; fail=1; }
grep -q '^s-tp2,[0-9a-f]*,2,ok,' "$tmp/skip/summary.csv" || { echo "FAIL: the feasible combination did not run"; fail=1; }
expect 0 "2 already done" --experiments "$tmp/skip.yaml" --out "$tmp/skip" --skip-infeasible --resume
sed 's/\[2, 8\]/[8, 16]/' "$tmp/skip.yaml" > "$tmp/skip_all.yaml"
expect 2 "heads (8) must be divisible by tp (16)" --experiments "$tmp/skip_all.yaml" --out "$tmp/skip_all" --skip-infeasible

# A manifest's config_yaml is a sweep file of its one experiment: it validates as is, and
# running it gives the same experiment (the same id: the hash of its configuration).
python3 -c 'import json, sys; sys.stdout.write(json.load(open(sys.argv[1]))["config_yaml"])' \
  "$tmp/skip/experiments/s-tp2/manifest.json" > "$tmp/again.yaml"
expect 0 "1 experiment (1 combination" validate "$tmp/again.yaml"
expect 0 "" --experiments "$tmp/again.yaml" --out "$tmp/again" --quiet
[ "$(cut -d, -f2 "$tmp/again/summary.csv" | tail -1)" = "$(grep '^s-tp2,' "$tmp/skip/summary.csv" | cut -d, -f2)" ] ||
  { echo "FAIL: the manifest's config_yaml ran another experiment (its id differs)"; fail=1; }

# A heartbeat while batches run: where each stands (simulated time of its slowest running
# experiment, against what its compute alone takes), every --heartbeat seconds when it
# changed; none with 0. 16 micro-batches per replica, so that the run lasts several beats
# (with 4 it took 0.13 s at packet level once connections and RoCE frames sped it up, and
# could end before the first beat).
cat > "$tmp/beat.yaml" <<'YAML'
base:
  name: "beat"
  workload:
    model: {base: gpt3-13b, layers: 8}
    global_batch: 128
    seq: 2048
  parallelism: {tp: 2, pp: 2, dp: 4, sp: true, recompute: selective, distributed_optimizer: true}
  cluster: {gpu: a100-80gb, gpus: 16, gpus_per_server: 8, nics_per_server: 8}
  network: {fidelity: packet, cc: hpcc}
YAML
expect 0 "... batch 1/1: 1 of 1 running, simulated " --experiments "$tmp/beat.yaml" --out "$tmp/beat" --threads 2 --heartbeat 0.1
# With the iteration its compute alone takes (a lower bound) and the time to get there.
expect 0 "ms (its compute alone): about " --experiments "$tmp/beat.yaml" --out "$tmp/beat_eta" --threads 2 --heartbeat 0.1
"$exe" --experiments "$tmp/beat.yaml" --out "$tmp/beat0" --threads 2 --heartbeat 0 | grep -q "^\.\.\. batch" &&
  { echo "FAIL: --heartbeat 0 printed a heartbeat"; fail=1; }
expect 2 "--heartbeat" --experiments "$tmp/beat.yaml" --out "$tmp/beat1" --heartbeat -1

# export-chakra writes each experiment's program as Chakra traces and its communicators;
# run as a general Chakra job they give the same iteration as the generated program.
cat > "$tmp/export.yaml" <<'YAML'
base:
  name: "x"
  workload: {model: {base: gpt3-13b, layers: 4}, global_batch: 8, seq: 1024}
  parallelism: {tp: 2, pp: 2, dp: 2, distributed_optimizer: true}
  cluster: {gpu: h100, gpus: 8, gpus_per_server: 2, nics_per_server: 1}
  network: {fidelity: flow}
YAML
expect 0 "x: 8 ranks -> $tmp/exported/x/job.<rank>.et and groups.json" export-chakra "$tmp/export.yaml" --out "$tmp/exported"
expect 2 "holds files already (--force replaces them)" export-chakra "$tmp/export.yaml" --out "$tmp/exported"
expect 0 "job.<rank>.json" export-chakra "$tmp/export.yaml" --out "$tmp/exported" --format json --force
expect 0 "x: 8 ranks" export-chakra "$tmp/export.yaml" --out "$tmp/exported" --force
sed 's#global_batch: 8,#global_batch: 8, chakra: exported/x/job, chakra_groups: exported/x/groups.json,#' \
  "$tmp/export.yaml" > "$tmp/replay.yaml"
expect 0 "" --experiments "$tmp/export.yaml" --out "$tmp/export_run" --quiet
expect 0 "" --experiments "$tmp/replay.yaml" --out "$tmp/replay_run" --quiet
a=$(cut -d, -f5 "$tmp/export_run/summary.csv" | tail -1)
b=$(cut -d, -f5 "$tmp/replay_run/summary.csv" | tail -1)
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: exported traces ran $b ms, the program $a ms"; fail=1; }
expect 2 "--format: proto not in {et,json}" export-chakra "$tmp/export.yaml" --format proto

exit $fail
