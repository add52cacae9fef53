#!/usr/bin/env bash
# @file ptxas_report.sh
# Registers, stack and spills of every CUDA kernel of the training and network worlds (the
# megakernels and the kernel-per-node mode's phase kernels), as ptxas reports them: no GPU
# needed. Compiles systems/cuda for one architecture with -Xptxas=-v in BUILD_DIR and prints
# the table bench/README.md shows (bench/ptxas_table.py). About 15 min on 2 cores.
# Usage: bench/ptxas_report.sh [ARCH (default 90)] [BUILD_DIR (default build/ptxas)]
set -euo pipefail
cd "$(dirname "$0")/.."
arch="${1:-90}"
build="${2:-build/ptxas}"
command -v nvcc > /dev/null || { echo "ptxas_report.sh: nvcc not found"; exit 2; }
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMV_ENABLE_CUDA=ON -DMV_BUILD_EMU=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" "-DCMAKE_CUDA_FLAGS=-Xptxas=-v" > /dev/null
# ptxas reports only what it compiles: drop the objects so they are built again.
rm -f "$build"/systems/cuda/CMakeFiles/mv_systems_cuda.dir/*.o
cmake --build "$build" --target mv_systems_cuda --parallel "$(nproc)" > "$build/ptxas.log" 2>&1
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit with uncommitted changes"
echo "ptxas, sm_$arch, commit $commit:"
python3 bench/ptxas_table.py "$build/ptxas.log"
