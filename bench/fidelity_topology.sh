#!/usr/bin/env bash
# @file fidelity_topology.sh
# Flow against packet fidelity on examples/studies/topology_search.yaml (a DP-heavy 32-GPU
# job on five fabrics, HPCC): the iteration and its exposed DP time at both fidelities and
# the flow level's error, per fabric (bench/README.md holds the table). ECMP collisions of
# the connections last for the job at both fidelities (docs/flow_level.md "Connections").
# Usage: bench/fidelity_topology.sh [BUILD_DIR] (default build/release); about 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
cmake --build "$build" --target multiverse > /dev/null
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
study=examples/studies/topology_search.yaml
sed 's/fidelity: flow/fidelity: packet/' "$study" > "$out/packet.yaml"
"$build/experiments/multiverse" --experiments "$study" --out "$out/flow" --quiet
"$build/experiments/multiverse" --experiments "$out/packet.yaml" --out "$out/packet" --quiet
python3 - "$out/flow/summary.csv" "$out/packet/summary.csv" <<'PY'
import csv, sys
# summary.csv has the experiment's full name first and its swept name last, both "name":
# DictReader keeps the last.
flow = {r["name"]: r for r in csv.DictReader(open(sys.argv[1]))}
packet = {r["name"]: r for r in csv.DictReader(open(sys.argv[2]))}
print("| fabric | flow iteration ms (exposed DP) | packet iteration ms (exposed DP) | flow vs packet | wall s flow / packet |")
print("|---|---|---|---|---|")
for name, f in flow.items():
    p = packet[name]
    fi, pi = float(f["iteration_ms"]), float(p["iteration_ms"])
    print("| %s | %.1f (%.1f) | %.1f (%.1f) | %+.1f %% | %.2f / %.1f |" % (
        name,
        fi, float(f["exposed_dp_ms"]), pi, float(p["exposed_dp_ms"]), 100 * (fi / pi - 1), float(f["wall_s"]), float(p["wall_s"])))
PY
