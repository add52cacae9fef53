#!/usr/bin/env bash
# @file test_kill_resume.sh
# Nothing a killed run wrote is lost (issue #68): a sweep of 12 packet-level experiments,
# batches of 2, is killed with SIGKILL at seeded random points (up to 8 times, each at a
# share of an uninterrupted run's time) and resumed until a run completes; its summaries then equal an uninterrupted run's, wall
# times (wall_s, events_per_s) aside. Usage: test_kill_resume.sh <path to multiverse>
set -u
exe=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/sweep.yaml" <<'YAML'
base:
  name: "s{seed}-{network.cc}-l{workload.model.layers}"
  workload: {model: {layers: 1, hidden: 4096, heads: 32, vocab: 512, seq: 1024}, global_batch: 32}
  parallelism: {dp: 8}
  cluster: {gpus: 8, gpus_per_server: 4, nics_per_server: 4}
  network: {fidelity: packet}
sweep:
  seed: [1, 2]
  network.cc: [dcqcn, hpcc]
  workload.model.layers: [1, 2, 3]
YAML
args=(--experiments "$tmp/sweep.yaml" --threads 1 --cpu-workers 1 --batch-size 2 --heartbeat 0 --quiet)
"$exe" "${args[@]}" --out "$tmp/straight" || { echo "FAIL: the uninterrupted run failed"; exit 1; }

RANDOM=68  # seeded: the same kill points every run
# Kill points scale with this build's speed (a sanitizer build is ten times slower): up to 8
# kills, each at a random 5-50 % of the uninterrupted run's time, then a resume that finishes.
elapsed=$( { TIMEFORMAT=%R; time "$exe" "${args[@]}" --out "$tmp/timing" > /dev/null 2>&1; } 2>&1 )
kills=0
status=1
for attempt in $(seq 1 9); do
  resume=()
  [ "$attempt" -gt 1 ] && resume=(--resume)
  "$exe" "${args[@]}" --out "$tmp/killed" "${resume[@]}" &  # multiverse itself, not a subshell
  pid=$!
  if [ "$attempt" -le 8 ]; then
    sleep "$(awk -v r=$RANDOM -v t="$elapsed" 'BEGIN { printf "%.2f", t * (0.05 + (r % 46) / 100) }')"
    if kill -9 "$pid" 2> /dev/null; then
      wait "$pid" 2> /dev/null
      kills=$((kills + 1))
      continue
    fi
  fi
  wait "$pid"
  status=$?
  break
done
[ "$status" -eq 0 ] || { echo "FAIL: no run finished after $kills kills (last exit $status)"; exit 1; }
echo "ok: finished after $kills kills"
[ "$kills" -ge 2 ] || { echo "FAIL: only $kills kills landed: the test did not interrupt the sweep"; exit 1; }
# Resuming a finished sweep runs nothing and changes nothing.
"$exe" "${args[@]}" --out "$tmp/killed" --resume || { echo "FAIL: resuming the finished sweep failed"; exit 1; }

python3 - "$tmp/straight" "$tmp/killed" <<'PY'
import csv, json, sys
wall = {"wall_s", "events_per_s"}
def rows(d):
    with open(f"{d}/summary.csv", newline="") as f:
        r = list(csv.DictReader(f))
    return [{k: v for k, v in row.items() if k not in wall} for row in r]
def experiments(d):
    e = json.load(open(f"{d}/summary.json"))["experiments"]
    return [{k: v for k, v in x.items() if k not in wall} for x in e]
a, b = sys.argv[1], sys.argv[2]
ok = True
if rows(a) != rows(b):
    print("FAIL: summary.csv differs from the uninterrupted run's"); ok = False
if experiments(a) != experiments(b):
    print("FAIL: summary.json differs from the uninterrupted run's"); ok = False
if len(rows(b)) != 12:
    print(f"FAIL: {len(rows(b))} rows, expected 12"); ok = False
print("ok: the summaries equal an uninterrupted run's" if ok else "")
sys.exit(0 if ok else 1)
PY
