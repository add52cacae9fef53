#!/usr/bin/env bash
# @file test_adversarial.sh
# One reproducer per class of issue #68, each written from the issue's text: the run exits
# 0 or 2 with a message, within seconds (every command runs under a 30 s timeout), and
# prints nothing that drives the reader's terminal. Usage: test_adversarial.sh <multiverse>
set -u
exe=$(realpath "$1")
fail=0
source "$(dirname "$0")/cli_expect.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { timeout 30 "$exe" "$@"; }
small() {  # a sweep file of one small analytical experiment, with $1 appended
  cat > "$2" <<YAML
base:
  name: "x"
  workload: {model: {layers: 2, hidden: 256, heads: 4, vocab: 512, seq: 256}, global_batch: 4}
  parallelism: {dp: 4}
  cluster: {gpus: 4, gpus_per_server: 4, nics_per_server: 4}
  network: {fidelity: analytical}
$1
YAML
}
# XHTML pages must parse as XML.
well_formed() {
  if python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$1" 2> "$tmp/xml.txt"; then
    echo "ok: $1 is well-formed"
  else
    echo "FAIL: $1 is not well-formed XML: $(cat "$tmp/xml.txt")"; fail=1
  fi
}

# 1. Deep nesting: a constraint of 10,000 parentheses, 100,000 unary operators; a summary
#    and a manifest of 200,000 nested arrays.
small "sweep: {parallelism.dp: [4]}
constraints: [\"$(printf '(%.0s' $(seq 10000))true$(printf ')%.0s' $(seq 10000))\"]" "$tmp/parens.yaml"
expect_cmd 2 "constraints: '((((" run validate "$tmp/parens.yaml"
expect_cmd 2 "nested deeper than 256 levels" run validate "$tmp/parens.yaml"
small "sweep: {parallelism.dp: [4]}
constraints: [\"$(head -c 100000 /dev/zero | tr '\0' '!')true\"]" "$tmp/unary.yaml"
expect_cmd 2 "nested deeper than 256 levels" run validate "$tmp/unary.yaml"
mkdir -p "$tmp/deep"
python3 -c "import sys; open(sys.argv[1], 'w').write('{\"experiments\": ' + '[' * 200000 + ']' * 200000 + '}')" \
  "$tmp/deep/summary.json"
expect_cmd 2 "summary.json: JSON nested deeper than 64 levels" run report "$tmp/deep"
small "" "$tmp/ok.yaml"
expect_cmd 0 "results in $tmp/resume" run --experiments "$tmp/ok.yaml" --out "$tmp/resume"
python3 -c "import sys; open(sys.argv[1], 'w').write('{\"name\": ' + '[' * 200000 + ']' * 200000 + '}')" \
  "$tmp/resume/experiments/x/manifest.json"
expect_cmd 2 "manifest.json: not a Multiverse manifest: JSON nested deeper than 64 levels" \
  run --experiments "$tmp/ok.yaml" --out "$tmp/resume" --resume

# 2. Non-finite numbers: refused where they are read; a report whose figures overflow to
#    infinity when summed still draws a well-formed page; 'inf' in a netsim CSV is refused
#    naming the file, row and column.
small "sweep: {cluster.compute_jitter: [nan, inf]}" "$tmp/nan.yaml"
sed -i 's/name: "x"/name: "x{cluster.compute_jitter}"/' "$tmp/nan.yaml"
expect_cmd 2 "cluster.compute_jitter: expected a finite number, got 'nan'" run validate "$tmp/nan.yaml"
expect_cmd 2 "cluster.compute_jitter: expected a finite number, got 'inf'" run validate "$tmp/nan.yaml"
cp -r "$tmp/resume" "$tmp/huge"
python3 - "$tmp/huge/summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["experiments"]:
    r["compute_ms"] = r["exposed_dp_ms"] = 1e308
    r["iteration_ms"] = 1.7e308
json.dump(d, open(sys.argv[1], "w"))
PY
expect_cmd 0 "report: $tmp/huge/report.html" run report "$tmp/huge"
well_formed "$tmp/huge/report.html"
printf 'topology: {kind: star, nics: 3}\nflows: flows.csv\n' > "$tmp/net.yaml"
printf 'src,dst,bytes,start_us\n1,0,10000,0\n2,0,10000,0\n' > "$tmp/flows.csv"
expect_cmd 0 "results in $tmp/net" run netsim "$tmp/net.yaml" --out "$tmp/net" --threads 1
sed -i '2s/^\([^,]*\),\([^,]*\),[^,]*/\1,\2,inf/' "$tmp/net/net/queues.csv"
expect_cmd 2 "queues.csv: row 1, column 'max_bytes': 'inf' is not a finite number" run report "$tmp/net"

# 3. Hangs from legal values: a 1 ps step latency (a step of 0 ps), a 2 ps one (a step of
#    1 ps: minutes), a DP bucket of one parameter (millions of buckets), PFC buffers that
#    hold no packet, HPCC on routes longer than its INT record.
small "  collectives: {step_latency: 1ps}" "$tmp/step.yaml"
expect_cmd 2 "collectives.step_latency: 1ps is out of range [2ns, 1s]" run validate "$tmp/step.yaml"
small "  collectives: {step_latency: 2ps}" "$tmp/step2.yaml"
expect_cmd 2 "collectives.step_latency: 2ps is out of range [2ns, 1s]" run validate "$tmp/step2.yaml"
sed 's/parallelism: {dp: 4}/parallelism: {dp: 4, dp_bucket: 1}/' "$tmp/ok.yaml" > "$tmp/bucket.yaml"
expect_cmd 2 "DP buckets, more than the 1048576 tasks a stage's program may hold" run validate "$tmp/bucket.yaml"

printf 'topology: {kind: star, nics: 3}\nnetwork: {pfc: {buffer: 1B}}\nflows: flows.csv\n' > "$tmp/buf.yaml"
expect_cmd 2 "network.pfc.buffer: 1 B is less than a packet per port of switch node 3" run netsim "$tmp/buf.yaml" --out "$tmp/buf"
printf 'topology: {kind: star, nics: 3}\nnetwork: {pfc: {buffer: 1000B, enabled: false}}\nflows: flows.csv\n' \
  > "$tmp/buf_nopfc.yaml"
expect_cmd 2 "no flow through it would finish" run netsim "$tmp/buf_nopfc.yaml" --out "$tmp/buf"
printf 'topology: {kind: star, nics: 3}\nnetwork: {dcqcn: {rmin: 1bps}}\nflows: flows.csv\n' > "$tmp/rmin.yaml"
expect_cmd 2 "network.dcqcn.rmin: 1bps is out of range [1Mbps, 100Tbps]" run netsim "$tmp/rmin.yaml" --out "$tmp/rmin"
# A chain of six switches: HPCC's INT record holds five.
{ printf '8 6 7\n2 3 4 5 6 7\n0 2 100Gbps 0.001ms 0\n'
  for s in 2 3 4 5 6; do printf '%d %d 100Gbps 0.001ms 0\n' "$s" $((s + 1)); done
  printf '7 1 100Gbps 0.001ms 0\n'; } > "$tmp/chain.txt"
printf 'topology: {kind: file, path: chain.txt}\nnetwork: {cc: hpcc}\nflows: flow01.csv\n' > "$tmp/chain.yaml"
printf 'src,dst,bytes,start_us\n0,1,10000,0\n' > "$tmp/flow01.csv"
expect_cmd 2 "a route of this topology crosses 6 switches, and HPCC's packets record INT of at most 5" \
  run netsim "$tmp/chain.yaml" --out "$tmp/chain"
sed -i 's/hpcc/dcqcn/' "$tmp/chain.yaml"
expect_cmd 0 "results in $tmp/chain" run netsim "$tmp/chain.yaml" --out "$tmp/chain"

printf 'topology: {kind: star, nics: 3}\nnetwork: {rto: 1ps}\nflows: flows.csv\n' > "$tmp/rto.yaml"
expect_cmd 2 "network.rto: 1ps is shorter than the topology's longest idle round trip" run netsim "$tmp/rto.yaml" --out "$tmp/rto"
small "" "$tmp/bins.yaml"
sed -i 's/gpus_per_server: 4, nics_per_server: 4}/gpus_per_server: 1, nics_per_server: 1}/; s/fidelity: analytical}/fidelity: packet, link_bin: 1ps}/' \
  "$tmp/bins.yaml"
expect_cmd 2 "network.link_bin: 1ps is shorter than 1/64 of the step" run validate "$tmp/bins.yaml"
printf '1 5\n1 0 3 100 10000 2\n' > "$tmp/count.txt"
printf 'topology: {kind: star, nics: 3}\nflows: count.txt\n' > "$tmp/count.yaml"
expect_cmd 2 "count.txt:1: unexpected token '5' after the flow count" run netsim "$tmp/count.yaml" --out "$tmp/count"

# 4. Results lost: a user's experiments/ folder is never cleared, a link in a results folder
#    is never followed, a netsim variant cannot take the summary's path.
mkdir -p "$tmp/project/experiments"
echo precious > "$tmp/project/experiments/notes.txt"
expect_cmd 2 "that a sweep did not write" env -C "$tmp/project" "$exe" --experiments "$tmp/ok.yaml" --out . --force
[ "$(cat "$tmp/project/experiments/notes.txt")" = precious ] || { echo "FAIL: --force cleared a user's folder"; fail=1; }
mkdir -p "$tmp/victim"
echo keep > "$tmp/victim/manifest.json.tmp"
ln -s "$tmp/victim" "$tmp/resume/experiments/link"
rm -f "$tmp/resume/experiments/x/manifest.json"
expect_cmd 0 "results in $tmp/resume" run --experiments "$tmp/ok.yaml" --out "$tmp/resume" --resume
[ -f "$tmp/victim/manifest.json.tmp" ] || { echo "FAIL: --resume deleted a file through a link"; fail=1; }
# netsim never writes into a sweep's folder, nor --force-clears a summary it did not write.
printf 'topology: {kind: star, nics: 3}\nflows: flows.csv\nexperiments:\n  - {name: experiments}\n' > "$tmp/into.yaml"
expect_cmd 2 "holds a sweep's results (.multiverse); nothing was changed" run netsim "$tmp/into.yaml" --out "$tmp/resume" --force
[ -f "$tmp/resume/experiments/x/manifest.json" ] || { echo "FAIL: netsim --force deleted a sweep's manifest"; fail=1; }
mkdir -p "$tmp/mine" && echo "a,b" > "$tmp/mine/summary.csv"
expect_cmd 2 "holds a summary.csv netsim did not write" run netsim "$tmp/into.yaml" --out "$tmp/mine" --force
# A reordered sweep, resumed: its rows in the new order, as a run straight through.
small "sweep: {seed: [1, 2]}" "$tmp/order1.yaml"
small "sweep: {seed: [2, 1]}" "$tmp/order2.yaml"
sed -i 's/name: "x"/name: "x{seed}"/' "$tmp/order1.yaml" "$tmp/order2.yaml"
run --experiments "$tmp/order1.yaml" --out "$tmp/order" --quiet
run --experiments "$tmp/order2.yaml" --out "$tmp/order" --resume --quiet
run --experiments "$tmp/order2.yaml" --out "$tmp/order_straight" --quiet
if [ "$(cut -d, -f1-3 "$tmp/order/summary.csv")" = "$(cut -d, -f1-3 "$tmp/order_straight/summary.csv")" ]; then
  echo "ok: a reordered sweep's resumed summary is in its new order"
else
  echo "FAIL: a reordered sweep's resumed summary keeps the old order"; fail=1
fi
printf 'topology: {kind: star, nics: 3}\nflows: flows.csv\nexperiments:\n  - {name: summary.csv}\n  - {name: b}\n' \
  > "$tmp/reserved.yaml"
expect_cmd 2 "experiments[0].name: 'summary.csv' is a file netsim writes" run netsim "$tmp/reserved.yaml" --out "$tmp/r"

# A text value that is not UTF-8 is refused at validate, before anything runs.
small "" "$tmp/latin1.yaml"
sed -i "s/name: \"x\"/name: \"x\"\n  workload: {model: {layers: 2, hidden: 256, heads: 4, vocab: 512, seq: 256, name: \"caf$(printf '\351')\"}, global_batch: 4}/" \
  "$tmp/latin1.yaml"
sed -i '4d' "$tmp/latin1.yaml"
expect_cmd 2 "workload.model.name: not UTF-8 text (byte 4 of the value)" run validate "$tmp/latin1.yaml"

# 5. Output that attacks the reader: control characters in swept values reach no terminal
#    raw; labels are cut between characters in the page.
small "" "$tmp/ctrl.yaml"
# YAML's own escapes, as a shared sweep file would write them: \e (ESC), \a (BEL), \r.
printf 'sweep: {workload.model.name: ["a\\e]0;pwned\\a\\e[2Jb", "c\\rd%s"]}\n' "$(printf 'é%.0s' $(seq 60))" \
  >> "$tmp/ctrl.yaml"
sed -i 's/name: "x"/name: "x{workload.model.name}"/' "$tmp/ctrl.yaml"
expect_cmd 0 'a\x1b]0;pwned\x07\x1b[2Jb' run --experiments "$tmp/ctrl.yaml" --out "$tmp/ctrl" --threads 1
if run --experiments "$tmp/ctrl.yaml" --out "$tmp/ctrl" --threads 1 --force 2>&1 | grep -q $'[\x1b\r\a]'; then
  echo "FAIL: a control character reached the console"; fail=1
else
  echo "ok: no control character reached the console"
fi
expect_cmd 0 "report: $tmp/ctrl/report.html" run report "$tmp/ctrl"
well_formed "$tmp/ctrl/report.html"
# U+FFFE and U+FFFF are UTF-8 but no XML characters.
small "" "$tmp/nonchar.yaml"
printf 'sweep: {workload.model.name: ["a\\uFFFEb", "c\\uFFFFd"]}\n' >> "$tmp/nonchar.yaml"
sed -i 's/name: "x"/name: "x{workload.model.name}"/' "$tmp/nonchar.yaml"
expect_cmd 0 "results in $tmp/nonchar" run --experiments "$tmp/nonchar.yaml" --out "$tmp/nonchar" --threads 1
expect_cmd 0 "report: $tmp/nonchar/report.html" run report "$tmp/nonchar"
well_formed "$tmp/nonchar/report.html"
# A topology path with control characters, printed by netsim's first line.
cp "$tmp/chain.txt" "$tmp/$(printf 't\033]0;pwn\007.txt')"
printf 'topology: {kind: file, path: "t\\e]0;pwn\\a.txt"}\nflows: flow01.csv\n' > "$tmp/ctrl_net.yaml"
if run netsim "$tmp/ctrl_net.yaml" --out "$tmp/ctrl_net" 2>&1 | grep -q $'[\x1b\a]'; then
  echo "FAIL: netsim printed a control character of its topology's path"; fail=1
else
  echo "ok: netsim's output escapes its topology's path"
fi

# 6. A byte-order mark (as Windows editors write) is skipped; a header key written twice in
#    an AICB file is refused.
printf '\xef\xbb\xbf3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n' > "$tmp/bom_topo.txt"
printf 'topology: {kind: file, path: bom_topo.txt}\nflows: flows2.csv\n' > "$tmp/bom.yaml"
printf 'src,dst,bytes,start_us\n0,1,10000,0\n' > "$tmp/flows2.csv"
expect_cmd 0 "results in $tmp/bom_out" run netsim "$tmp/bom.yaml" --out "$tmp/bom_out" --threads 1
head -1 "$(dirname "$0")/../../examples/simai/gpt13b_tp8_dp2.txt" | sed 's/ ep: 1/ ep: 1 ep: 2/' > "$tmp/twice.txt"
tail -n +2 "$(dirname "$0")/../../examples/simai/gpt13b_tp8_dp2.txt" >> "$tmp/twice.txt"
cat > "$tmp/twice.yaml" <<'YAML'
base:
  workload: {model: {base: gpt3-13b, layers: 8}, global_batch: 4, seq: 2048, simai: twice.txt}
  parallelism: {tp: 8, dp: 2}
  cluster: {gpu: h100, gpus: 16, gpus_per_server: 8, nics_per_server: 8}
YAML
expect_cmd 2 "header key 'ep' written twice" run validate "$tmp/twice.yaml"

# 7. Cost cliffs: more threads than cores run as many threads as cores, with a note; a NaN
#    heartbeat is refused.
expect_cmd 0 "--threads 1024: this process may use" run --experiments "$tmp/ok.yaml" --out "$tmp/threads" --threads 1024
expect_cmd 2 "--heartbeat: must be a finite number, got 'nan'" run --experiments "$tmp/ok.yaml" --out "$tmp/hb" --heartbeat nan
exit $fail
