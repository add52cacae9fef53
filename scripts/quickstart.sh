#!/usr/bin/env bash
# @file quickstart.sh
# Builds Multiverse and runs the bundled example: a 16-to-1 incast under DCQCN, HPCC and
# DCTCP, three experiments in one batch. Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --parallel "$(nproc)" --target multiverse
./build/release/experiments/multiverse netsim examples/netsim/incast.yaml --out results/incast
