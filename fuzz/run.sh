#!/usr/bin/env bash
# @file run.sh
# Fuzzes every input reader with libFuzzer (docs/fuzzing.md): builds mv_fuzz in the
# `sanitize` preset (clang, ASan, UBSan), seeds one corpus per reader from examples/,
# tests/ and fuzz/regressions/, and runs each reader for SECONDS (default 60). Prints the
# executions per reader; exits 1 on the first crash, hang (> 10 s for one input), leak or
# sanitizer report, leaving the input under build/sanitize/fuzz/<reader>/.
# Usage: fuzz/run.sh [SECONDS] [READER...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
readers=("$@")
[ ${#readers[@]} -gt 0 ] || readers=(sweep netsim flows topology chakra_et chakra_json simai constraint report_sweep report_netsim)

if [ ! -f build/sanitize/CMakeCache.txt ]; then cmake --preset sanitize > /dev/null; fi
cmake --build --preset sanitize --target mv_fuzz --parallel "$(nproc)" > /dev/null
fuzzer=build/sanitize/fuzz/mv_fuzz
work=build/sanitize/fuzz

# Seed inputs of each reader: the project's own files of that kind.
seeds() {
  case "$1" in
    sweep) ls examples/quickstart.yaml examples/studies/*.yaml tests/experiments/data/*.yaml tests/emu/data/sweep.yaml ;;
    netsim) ls examples/netsim/*.yaml tests/emu/data/incast_bins.yaml ;;
    flows) ls examples/netsim/*.csv examples/netsim/*.txt tests/network/data/ns3/flow_*.txt ;;
    topology) ls tests/network/data/ns3/topo_*.txt tests/experiments/data/*.txt ;;
    simai) ls examples/simai/*.txt ;;
    constraint | report_sweep) ;;  # fuzz/regressions/ only
    chakra_et | chakra_json | report_netsim) ;;  # written by mv_fuzz itself (MV_FUZZ_SEEDS)
  esac
  if [ -d "fuzz/regressions/$1" ]; then ls "fuzz/regressions/$1"/*; fi
}

status=0
for reader in "${readers[@]}"; do
  corpus="$work/$reader/corpus"
  mkdir -p "$corpus"
  seeds "$reader" | while read -r f; do cp "$f" "$corpus/"; done
  log="$work/$reader/log.txt"
  if MV_FUZZ_READER="$reader" MV_FUZZ_SEEDS="$corpus" ASAN_OPTIONS=detect_leaks=1 \
    "$fuzzer" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
    -artifact_prefix="$work/$reader/" -print_final_stats=1 > "$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $reader: $runs executions in ${seconds} s, no crash"
  else
    echo "fuzz: $reader: FAILED; the input and the report are in $work/$reader/ (tail of $log below)"
    tail -30 "$log"
    status=1
  fi
done
exit $status
