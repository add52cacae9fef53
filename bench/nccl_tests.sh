#!/usr/bin/env bash
# @file nccl_tests.sh
# A simulated all_reduce_perf (bench/nccl_tests.yaml: 16 A100s on 2 servers with 16 RoCE
# NICs each, analytical, flow and packet fidelity) against the real log of that cluster in
# ../shared/external/nccl_tests_oci_a100_roce/: the busbw error per size (issue #63's check;
# bench/README.md holds the table).
# Usage: bench/nccl_tests.sh [BUILD_DIR] (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
cmake --build "$build" --target multiverse > /dev/null
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$build/experiments/multiverse" --experiments bench/nccl_tests.yaml --out "$out/run" --quiet
python3 bench/nccl_tests.py "$out/run/summary.csv" \
  ../shared/external/nccl_tests_oci_a100_roce/all_reduce_perf_2nodes_16ranks_8B-8GB.log
