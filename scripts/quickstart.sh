#!/usr/bin/env bash
# @file quickstart.sh
# Builds Multiverse and runs the bundled example sweep, examples/quickstart.yaml: every
# TP/PP/DP split of a shortened GPT-3 13B on 16 GPUs, analytical and packet level, results in
# results/quickstart, a ranked table and the report page results/quickstart/report.html.
# Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --parallel "$(nproc)" --target multiverse
./build/release/experiments/multiverse --experiments examples/quickstart.yaml --out results/quickstart --force
./build/release/experiments/multiverse report results/quickstart
