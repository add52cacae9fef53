#!/usr/bin/env bash
# @file test_cli.sh
# The multiverse command line: --help and --version succeed, unknown flags fail with a
# clear message and exit code 2. Usage: test_cli.sh <path to multiverse>
set -u
exe="$1"
fail=0
expect() {  # expect <exit code> <text expected in output> <args...>
  local code="$1" text="$2"
  shift 2
  local out rc
  out=$("$exe" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then
    echo "FAIL: multiverse $* exited $rc, expected $code"; echo "$out"; fail=1
  elif ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL: multiverse $* did not print '$text'"; echo "$out"; fail=1
  else
    echo "ok: multiverse $* -> $rc"
  fi
}
expect 0 "Usage: multiverse" --help
expect 0 "multiverse 0." --version
expect 2 "--bogus" --bogus
expect 2 "multiverse --help" --threads-typo 4
expect 0 "[engine]" --dump-graph text

# netsim: a valid run writes its results; every bad input is reported with file, line, key.
src_dir="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect 0 "results in $tmp/ok" netsim "$src_dir/examples/netsim/incast.yaml" --out "$tmp/ok" --threads 2
for f in summary.csv dcqcn/flows.csv hpcc/flows.csv dctcp/queues.csv; do
  [ -s "$tmp/ok/$f" ] || { echo "FAIL: missing $tmp/ok/$f"; fail=1; }
done
[ "$(wc -l < "$tmp/ok/hpcc/flows.csv")" -eq 17 ] || { echo "FAIL: hpcc/flows.csv should have 16 flows"; fail=1; }

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
expect 2 "far.csv:2: NIC id out of range (the topology has 4 NICs)" netsim "$tmp/far.yaml"

printf 'topology: {kind: fat_tree, k: 3}\nflows: flows.csv\n' > "$tmp/odd.yaml"
expect 2 "odd.yaml:1: topology:" netsim "$tmp/odd.yaml"
expect 2 "missing.yaml: cannot open the file" netsim "$tmp/missing.yaml"

# validate: a good sweep prints its experiment count and a memory estimate; a bad one lists
# every problem with file:line: key.
data="$src_dir/tests/experiments/data"
expect 0 "good_sweep.yaml: 6 experiments (18 combinations, 12 dropped by constraints)" validate "$data/good_sweep.yaml"
expect 0 "estimated simulation memory" validate "$data/good_sweep.yaml"
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
exit $fail
