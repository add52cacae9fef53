#!/usr/bin/env bash
# @file test.sh
# Builds Multiverse (both backends when nvcc is present) and runs the whole test suite.
# Installs missing Debian packages first. GPU tests report "skipped" without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --parallel "$(nproc)"
ctest --preset release --parallel "$(nproc)"
