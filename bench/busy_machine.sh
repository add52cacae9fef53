#!/usr/bin/env bash
# @file busy_machine.sh
# How a study slows down on a busy machine (issue #21, item 5): examples/studies/
# topology_search.yaml run idle and with 2x the cores in busy loops beside it, with the
# default CPU workers (one-thread workers, no barriers) and with one worker of every thread
# (a barrier per engine phase). Prints the median and the worst of REPS runs and the ratio
# of the loaded median to the idle one.
# Usage: bench/busy_machine.sh [MULTIVERSE] [REPS]   (default build/release/experiments/multiverse, 5)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
mv=${1:-$here/build/release/experiments/multiverse}
reps=${2:-5}
study=$here/examples/studies/topology_search.yaml
cores=$(nproc)
tmp=$(mktemp -d)
pids=()
cleanup() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# times LABEL ARGS...: REPS wall times in seconds (a run over 120 s counts as 120).
times() {
  local label=$1; shift
  for _ in $(seq "$reps"); do
    local t0 t1
    t0=$(date +%s.%N)
    timeout 120 "$mv" --backend cpu --experiments "$study" --out "$tmp/out" --force --quiet "$@" > /dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
  done | sort -g > "$tmp/$label"
}
median() { sed -n "$(( (reps + 1) / 2 ))p" "$tmp/$1"; }
worst() { tail -1 "$tmp/$1"; }

times idle-auto
times idle-one --cpu-workers 1
for _ in $(seq $((2 * cores))); do sh -c 'while :; do :; done' & pids+=($!); done
sleep 2
times busy-auto
times busy-one --cpu-workers 1

echo "topology_search on $cores cores, $reps runs each; busy = $((2 * cores)) busy loops beside it"
echo "| workers | idle median s | busy median s | busy worst s | busy/idle (medians) |"
echo "|---|---|---|---|---|"
for w in auto one; do
  printf "| %s | %.2f | %.2f | %.2f | %.1f |\n" "$([ $w = auto ] && echo "auto (one thread each)" || echo "1 worker, $cores threads")" \
    "$(median idle-$w)" "$(median busy-$w)" "$(worst busy-$w)" "$(echo "$(median busy-$w) / $(median idle-$w)" | bc -l)"
done
