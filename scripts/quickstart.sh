#!/usr/bin/env bash
# @file quickstart.sh
# Builds Multiverse and runs it on the bundled example. Installs missing Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --parallel "$(nproc)" --target multiverse
./build/release/experiments/multiverse --version
./build/release/experiments/multiverse --help
