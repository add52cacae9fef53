#!/usr/bin/env bash
# @file test_report.sh
# multiverse report (docs/report.md): the page of a sweep and of a netsim run is
# well-formed XHTML whose charts carry the results' own numbers; folders that are not
# results, malformed summaries and unwritable pages exit 2 or 1 naming the file; with
# Chromium installed (scripts/install-deps.sh), both pages render headless to a screenshot
# that is not blank, with no console message. Usage: test_report.sh <path to multiverse>
set -u
exe="$1"
fail=0
source "$(dirname "$0")/cli_expect.sh"
src_dir="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A sweep of 4 experiments (2 fidelities × 2 bucket sizes), one of them at packet level.
cat > "$tmp/sweep.yaml" <<'YAML'
base:
  name: "r-{network.fidelity}-{collectives.dp_bucket}"
  workload:
    model: {layers: 4, hidden: 512, heads: 8, vocab: 1024, seq: 512}
    global_batch: 8
  parallelism: {tp: 2, pp: 2, dp: 2}
  cluster: {gpus: 8, gpus_per_server: 4, nics_per_server: 4}
  network: {fidelity: analytical, cc: dctcp}
sweep:
  network.fidelity: [analytical, packet]
  collectives.dp_bucket: [1MiB, 4MiB]
YAML
expect 0 "" --experiments "$tmp/sweep.yaml" --out "$tmp/run" --threads 2 --quiet
expect 0 "report: $tmp/run/report.html" report "$tmp/run"
python3 - "$tmp/run" <<'PY' || fail=1
import json, sys, xml.etree.ElementTree as ET
run = sys.argv[1]
svg = "{http://www.w3.org/2000/svg}"
page = ET.parse(run + "/report.html").getroot()  # well-formed, or this raises
text = "".join(page.itertext())
summary = json.load(open(run + "/summary.json"))
rows = summary["experiments"]
problems = []
for r in rows:
    if r["name"] not in text:
        problems.append("experiment %s is not in the page" % r["name"])
charts = page.findall(".//" + svg + "svg")
# The iteration breakdown, one strip plot per swept key (2), the GPU memory.
if len(charts) != 4:
    problems.append("%d charts, expected 4" % len(charts))
# Each experiment's compute bar says the summary's compute time.
titles = [t.text for t in page.iter(svg + "title")]
for r in rows:
    want = "%s: compute %s ms" % (r["name"], ("%.6g" % r["compute_ms"]))
    if not any(t.startswith(want) for t in titles):
        problems.append("no bar titled '%s'" % want)
# One point per experiment in each strip plot.
if sum(1 for c in page.iter(svg + "circle")) != 2 * len(rows):
    problems.append("strip plots do not hold one point per experiment each")
if "Packet network" not in text:
    problems.append("no packet network table although one experiment ran at packet level")
for p in problems:
    print("FAIL: sweep report:", p)
sys.exit(1 if problems else 0)
PY

# The same sweep with --network-detail: the packet-level experiments' flows and queues.
expect 0 "" --experiments "$tmp/sweep.yaml" --out "$tmp/detail" --threads 2 --quiet --network-detail
expect 0 "report: $tmp/detail/report.html" report "$tmp/detail"
python3 - "$tmp/detail" <<'PY' || fail=1
import json, sys, xml.etree.ElementTree as ET
run = sys.argv[1]
svg = "{http://www.w3.org/2000/svg}"
page = ET.parse(run + "/report.html").getroot()
text = "".join(page.itertext())
packet = [r["name"] for r in json.load(open(run + "/summary.json"))["experiments"] if "packet" in r["name"]]
problems = []
for section in ("FCT slowdown", "Flow completion time", "Switch queues"):
    if section not in text:
        problems.append("no section '%s'" % section)
# The 4 charts of the plain sweep, 2 distributions and the queues; a line per packet-level
# experiment in each distribution.
charts = page.findall(".//" + svg + "svg")
if len(charts) != 4 + 3:
    problems.append("%d charts, expected 7" % len(charts))
if sum(1 for _ in page.iter(svg + "polyline")) != 2 * len(packet):
    problems.append("not one line per packet-level experiment in each distribution")
for p in problems:
    print("FAIL: sweep report with network detail:", p)
sys.exit(1 if problems else 0)
PY

# A netsim run with link bins: flows, queues and links of 2 variants.
expect 0 "" netsim "$src_dir/examples/netsim/fat_tree_permutation.yaml" --out "$tmp/net" --threads 2 --quiet
expect 0 "report: $tmp/page.html" report "$tmp/net" --out "$tmp/page.html"
python3 - "$tmp/net" "$tmp/page.html" <<'PY' || fail=1
import csv, sys, xml.etree.ElementTree as ET
run, html = sys.argv[1], sys.argv[2]
svg = "{http://www.w3.org/2000/svg}"
page = ET.parse(html).getroot()
variants = list(csv.DictReader(open(run + "/summary.csv")))
problems = []
charts = page.findall(".//" + svg + "svg")
# Slowdown and FCT distributions, the queues, a heat map per variant.
if len(charts) != 3 + len(variants):
    problems.append("%d charts, expected %d" % (len(charts), 3 + len(variants)))
lines = [p for p in page.iter(svg + "polyline")]
if len(lines) != 2 * len(variants):
    problems.append("%d lines, expected one per variant in each distribution" % len(lines))
cells = [c.text for c in page.iter("{http://www.w3.org/1999/xhtml}td")]
for v in variants:
    if "%.2f" % float(v["mean_slowdown"]) not in cells:
        problems.append("variant %s: mean slowdown %s not in the table" % (v["experiment"], v["mean_slowdown"]))
# Every line ends at the whole population (y = 1 is the top of the axis, the lowest y).
for p in lines:
    ys = [float(pt.split(",")[1]) for pt in p.get("points").split()]
    if ys[-1] != min(ys):
        problems.append("a distribution does not end at 1")
for p in problems:
    print("FAIL: netsim report:", p)
sys.exit(1 if problems else 0)
PY

# Folders that are not results, malformed files, an unwritable page.
expect 2 "$tmp/none: not a folder" report "$tmp/none"
mkdir -p "$tmp/empty"
expect 2 "no summary.json or summary.csv" report "$tmp/empty"
mkdir -p "$tmp/broken" && printf '{"experiments": [' > "$tmp/broken/summary.json"
expect 2 "$tmp/broken/summary.json: invalid JSON" report "$tmp/broken"
cp -r "$tmp/net" "$tmp/net_bad"
sed -i '1s/fct_ps/fct/' "$tmp/net_bad/ecmp/flows.csv"
expect 2 "$tmp/net_bad/ecmp/flows.csv:1: no column 'fct_ps'" report "$tmp/net_bad"
expect 1 "cannot write" report "$tmp/run" --out "$tmp/no/such/folder/page.html"
expect 2 "results is required" report

# The pages in a browser: a screenshot that is not blank, no console message.
if command -v chromium > /dev/null; then
  for page in "$tmp/run/report.html" "$tmp/page.html"; do
    log="$tmp/chromium.log"
    timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1600 \
      --enable-logging=stderr --v=0 --screenshot="$tmp/shot.png" "file://$page" > "$log" 2>&1
    if grep -q "CONSOLE" "$log"; then
      echo "FAIL: $page: console messages"; grep "CONSOLE" "$log"; fail=1
    fi
    python3 - "$tmp/shot.png" <<'PY' || { echo "FAIL: $page: blank or missing screenshot"; fail=1; }
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
# A blank page filters to bytes of 0 (a row like the one above) and 255 (white) only.
other = len(raw) - raw.count(0) - raw.count(255)
print("screenshot: %.1f %% of its filtered bytes carry content" % (100.0 * other / len(raw)))
sys.exit(0 if other > 0.005 * len(raw) else 1)
PY
    rm -f "$tmp/shot.png"
  done
else
  echo "skip: chromium is not installed (scripts/install-deps.sh installs it): no browser check"
fi
exit $fail
